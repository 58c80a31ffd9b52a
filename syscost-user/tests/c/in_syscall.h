/* Waits until thread TID of this process is in syscall NR (SYS_read, SYS_flock: the
 * numbers of the architecture it is built for, read from /proc/self/task/TID/syscall,
 * whose line starts with the number): the stack tests' programs let a call go only once
 * it waits, whatever keeps the thread from it on a loaded or emulated machine. A wait
 * that runs out (300 s) ends the program with status 3 and a line on stderr: the test
 * that runs it fails saying so, instead of going on with a call that never waited. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* glibc's (errno.h declares it under _GNU_SOURCE): the name the failures start with. */
extern char *program_invocation_short_name;

/* Whether thread TID is in the syscall whose line starts with PREFIX ("63 "). */
static inline int in_syscall(pid_t tid, const char *prefix) {
    char p[64], b[32] = {0};
    snprintf(p, sizeof p, "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    size_t len = strlen(prefix);
    return n > (ssize_t)len && strncmp(b, prefix, len) == 0;
}

static inline long monotonic_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec;
}

/* Polls (every 100 us) until thread TID is in syscall NR, called NAME in the failure. */
static inline void wait_in_syscall(pid_t tid, long nr, const char *name) {
    char prefix[24];
    snprintf(prefix, sizeof prefix, "%ld ", nr);
    struct timespec tick = {0, 100000};
    long deadline = monotonic_s() + 300;
    while (!in_syscall(tid, prefix)) {
        if (monotonic_s() >= deadline) {
            fprintf(stderr, "%s: thread %d not seen waiting in %s (syscall %ld) within 300 s\n",
                    program_invocation_short_name, (int)tid, name, nr);
            exit(3);
        }
        nanosleep(&tick, NULL);
    }
}
