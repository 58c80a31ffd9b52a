/* A short-lived process: short_work makes two 2 ms sleeps, then main spins for 1 ms
 * without a syscall (the vDSO's clock) and returns: it exits 1 ms after its last slow
 * call. */
#include <time.h>

volatile int sink;

__attribute__((noinline)) void short_work(void) {
    struct timespec ts = {0, 2000000};
    for (int i = 0; i < 2; i++) nanosleep(&ts, NULL);
    sink++;
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(void) {
    short_work();
    long end = now_ns() + 1000000;
    while (now_ns() < end) sink++;
    return 0;
}
