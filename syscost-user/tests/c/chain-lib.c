/* main -> app_outer -> lib_middle -> lib_inner (libchainlib.so) -> nanosleep.
 * Usage: chain-lib CALLS MICROSECONDS */
#include <stdlib.h>

void lib_middle(int calls, long us);
volatile int sink;

__attribute__((noinline)) void app_outer(int calls, long us) {
    lib_middle(calls, us);
    sink++;
}

int main(int argc, char **argv) {
    app_outer(argc > 1 ? atoi(argv[1]) : 5, argc > 2 ? atol(argv[2]) : 2000);
    sink++;
    return 0;
}
