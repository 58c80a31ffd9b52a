/* Slow reads whose descriptor is closed and taken by another file (/dev/null) right
 * after each read returns: a slow call's fd must never be named after that other file.
 * Usage: fdreuse ROUNDS */
#include <fcntl.h>
#include <sys/syscall.h>
#include "in_syscall.h"
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
    struct timespec tick = {0, 100000}, ts = {0, 3000000};
    for (int i = 0; i < 10000 && !in_syscall(main_tid, "0 "); i++) nanosleep(&tick, NULL);
    nanosleep(&ts, NULL);
    write(writer_fd, "x", 1);
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
        char b;
        if (read(p[0], &b, 1) != 1) return 1;
        /* The lowest free descriptor: the pipe's read end's number, now /dev/null. */
        close(p[0]);
        int other = open("/dev/null", O_RDONLY);
        if (other != p[0]) return 2;
        pthread_join(t, NULL);
        close(other);
        close(p[1]);
    }
    return 0;
}
