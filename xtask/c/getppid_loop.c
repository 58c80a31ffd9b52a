/* getppid in a loop, four calls deep (main, outer, middle, leaf), for the calls-by-stack
 * rows of `cargo xtask bench`: built -O2 with frame pointers and without, so that the
 * stack walk of each call costs what it costs in C programs built either way. The same
 * command line as syscost-workload's getppid: [--wait-stdin] getppid N, then
 * ns_per_call=<its own timing>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void leaf(long n) {
    for (long i = 0; i < n; i++) {
        syscall(SYS_getppid);
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void middle(long n) {
    leaf(n);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void outer(long n) {
    middle(n);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
    int a = 1, wait = 0;
    if (argc > a && strcmp(argv[a], "--wait-stdin") == 0) {
        wait = 1;
        a++;
    }
    if (argc != a + 2 || strcmp(argv[a], "getppid") != 0) {
        fprintf(stderr, "usage: %s [--wait-stdin] getppid N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[a + 1]);
    if (n <= 0) {
        fprintf(stderr, "N must be a positive count\n");
        return 2;
    }
    if (wait) {
        char line[16];
        printf("pid=%d\n", (int)getpid());
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    outer(n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("ns_per_call=%.1f\n",
           ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n);
    return 0;
}
