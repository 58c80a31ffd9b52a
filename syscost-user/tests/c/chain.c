/* main -> chain_outer -> chain_inner -> nanosleep (glibc: clock_nanosleep), built
 * without frame pointers: the slow-call stack tests' known call chain. Each call is
 * followed by work, so no call becomes a jump; then it waits HOLD ms (0 by default, in
 * poll) before it exits. Usage: chain CALLS MICROSECONDS [HOLD] */
#include <poll.h>
#include <stdlib.h>
#include <time.h>

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
    /* The hold in poll: not one of the calls the tests count. */
    int hold = argc > 3 ? atoi(argv[3]) : 0;
    if (hold > 0) poll(NULL, 0, hold);
    return 0;
}
