/* Slow calls on a regular file's descriptor: each round a thread holds an exclusive
 * flock on PATH for 3 ms while the main thread's flock on its own descriptor of the
 * same file waits for it (the holder lets go 3 ms after it sees the main thread in
 * flock). With "stdin", after its rounds the main thread makes a slow call of its own
 * (stdin_wait.h's mark) and waits on its stdin, its descriptor still open: it lives
 * until the test has seen syscost report that call, that is, until syscost has
 * received (and named the descriptor of) every flock. Usage: flockwait PATH ROUNDS
 * [stdin] */
#include <fcntl.h>
#include <sys/syscall.h>
#include "in_syscall.h"
#include "stdin_wait.h"
#include <pthread.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static volatile int held;

static pid_t main_tid;

static void *holder(void *arg) {
    (void)arg;
    int fd = open(path, O_RDONLY);
    flock(fd, LOCK_EX);
    held = 1;
    /* Until the main thread waits in its flock (a loaded machine may keep it from it),
     * then 3 ms more. */
    wait_in_syscall(main_tid, SYS_flock, "flock");
    struct timespec ts = {0, 3000000};
    nanosleep(&ts, NULL);
    flock(fd, LOCK_UN);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    path = argv[1];
    int rounds = atoi(argv[2]);
    main_tid = (pid_t)syscall(SYS_gettid);
    int fd = open(path, O_RDONLY | O_CREAT, 0644);
    if (fd < 0) return 1;
    for (int i = 0; i < rounds; i++) {
        held = 0;
        pthread_t t;
        pthread_create(&t, NULL, holder, NULL);
        while (!held) { }
        flock(fd, LOCK_EX);
        flock(fd, LOCK_UN);
        pthread_join(t, NULL);
    }
    if (argc > 3 && asks_stdin(argv[3])) {
        mark();
        wait_stdin();
    }
    close(fd);
    return 0;
}
