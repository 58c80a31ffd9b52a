/* main -> app_outer -> lib_middle -> lib_inner (libchainlib.so) -> nanosleep. With
 * "stdin" it then waits on its stdin (stdin_wait.h: until the test has seen syscost
 * report its calls) before it exits. Usage: chain-lib CALLS MICROSECONDS [stdin] */
#include <stdlib.h>
#include <time.h>

#include "stdin_wait.h"

void lib_middle(int calls, long us);
volatile int sink;

__attribute__((noinline)) void app_outer(int calls, long us) {
    lib_middle(calls, us);
    sink++;
}

int main(int argc, char **argv) {
    app_outer(argc > 1 ? atoi(argv[1]) : 5, argc > 2 ? atol(argv[2]) : 2000);
    sink++;
    /* In poll: not one of the calls the tests count. */
    if (argc > 3 && asks_stdin(argv[3])) wait_stdin();
    return 0;
}
