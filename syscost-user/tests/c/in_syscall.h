/* Whether thread TID of this process is in the syscall whose number /proc/self/task/TID/syscall
 * starts with (e.g. "0 " for read, "73 " for flock on x86_64): the stack tests' programs
 * let a call go only once it waits, whatever keeps the thread from it on a loaded machine. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int in_syscall(pid_t tid, const char *nr) {
    char p[64], b[16] = {0};
    snprintf(p, sizeof p, "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    size_t len = strlen(nr);
    return n > (ssize_t)len && strncmp(b, nr, len) == 0;
}
