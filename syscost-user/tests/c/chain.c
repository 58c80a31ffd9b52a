/* main -> chain_outer -> chain_inner -> nanosleep (glibc: clock_nanosleep), built
 * without frame pointers: the slow-call stack tests' known call chain. Each call is
 * followed by work, so no call becomes a jump. With "stdin" it then waits on its stdin
 * (stdin_wait.h: until the test has seen syscost report its calls) before it exits.
 * Usage: chain CALLS MICROSECONDS [stdin] */
#include <stdlib.h>
#include <time.h>

#include "stdin_wait.h"

volatile int sink;

__attribute__((noinline)) void chain_inner(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    sink++;
}

__attribute__((noinline)) void chain_outer(int calls, long us) {
    for (int i = 0; i < calls; i++) chain_inner(us);
    sink++;
}

int main(int argc, char **argv) {
    chain_outer(argc > 1 ? atoi(argv[1]) : 5, argc > 2 ? atol(argv[2]) : 2000);
    sink++;
    /* In poll: not one of the calls the tests count. */
    if (argc > 3 && asks_stdin(argv[3])) wait_stdin();
    return 0;
}
