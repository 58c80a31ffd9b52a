/* main -> app_outer -> lib_middle -> lib_inner (libchainlib.so) -> nanosleep; then it
 * waits HOLD ms (0 by default, in poll) before it exits. Usage: chain-lib CALLS MICROSECONDS [HOLD] */
#include <poll.h>
#include <stdlib.h>
#include <time.h>

void lib_middle(int calls, long us);
volatile int sink;

__attribute__((noinline)) void app_outer(int calls, long us) {
    lib_middle(calls, us);
    sink++;
}

int main(int argc, char **argv) {
    app_outer(argc > 1 ? atoi(argv[1]) : 5, argc > 2 ? atol(argv[2]) : 2000);
    sink++;
    /* The hold in poll: not one of the calls the tests count. */
    int hold = argc > 3 ? atoi(argv[3]) : 0;
    if (hold > 0) poll(NULL, 0, hold);
    return 0;
}
