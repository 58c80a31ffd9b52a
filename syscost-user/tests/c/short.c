/* A short-lived process: short_work makes two 2 ms sleeps, then main spins for 1 ms
 * without a syscall (the vDSO's clock) and returns: it exits 1 ms after its last slow
 * call. With "stdin", between the two sleeps it reads one byte from its stdin: the test
 * writes it once syscost has reported the first sleep, so that the process's mappings
 * are known to have been read (at its first slow call) before it goes on to its last
 * call and its exit, on a machine of any speed. Usage: short [stdin] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "stdin_wait.h"

volatile int sink;
static int handshake;

__attribute__((noinline)) void short_work(void) {
    struct timespec ts = {0, 2000000};
    for (int i = 0; i < 2; i++) {
        nanosleep(&ts, NULL);
        char b;
        if (i == 0 && handshake && read(0, &b, 1) != 1) {
            fprintf(stderr, "short: its stdin ended before the test let it go on\n");
            exit(4);
        }
    }
    sink++;
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
    handshake = argc > 1 && asks_stdin(argv[1]);
    short_work();
    long end = now_ns() + 1000000;
    while (now_ns() < end) sink++;
    return 0;
}
