/* Slow reads whose descriptor is closed and taken by another file (/dev/null, in one
 * dup2) right after each read returns: a slow call's fd must never be named after that
 * other file.
 * With "stdin", after its rounds it makes a slow call of its own (stdin_wait.h's mark)
 * and waits on its stdin: it lives until the test has seen syscost report that call,
 * that is, until syscost has received every read. Usage: fdreuse ROUNDS [stdin] */
#include <fcntl.h>
#include <sys/syscall.h>
#include "in_syscall.h"
#include "stdin_wait.h"
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int writer_fd;
static pid_t main_tid;

static void *writer(void *arg) {
    (void)arg;
    /* Until the main thread waits in its read (a loaded machine may keep it from it),
     * then 3 ms more. */
    wait_in_syscall(main_tid, SYS_read, "read");
    struct timespec ts = {0, 3000000};
    nanosleep(&ts, NULL);
    if (write(writer_fd, "x", 1) != 1) exit(1);
    return NULL;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    main_tid = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < rounds; i++) {
        int p[2];
        if (pipe(p) != 0) return 1;
        writer_fd = p[1];
        pthread_t t;
        pthread_create(&t, NULL, writer, NULL);
        int other = open("/dev/null", O_RDONLY);
        if (other < 0) return 2;
        char b;
        if (read(p[0], &b, 1) != 1) return 1;
        /* The pipe's read end closed and its number given to /dev/null at once (dup2):
         * nothing between the two that a reader of the descriptor could take for
         * anything but another file. */
        if (dup2(other, p[0]) != p[0]) return 2;
        pthread_join(t, NULL);
        close(p[0]);
        close(other);
        close(p[1]);
    }
    if (argc > 2 && asks_stdin(argv[2])) {
        mark();
        wait_stdin();
    }
    return 0;
}
