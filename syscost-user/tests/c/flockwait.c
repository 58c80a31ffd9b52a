/* Slow calls on a regular file's descriptor: each round a thread holds an exclusive
 * flock on PATH for 3 ms while the main thread's flock on its own descriptor of the
 * same file waits for it; then it waits 200 ms before it exits. Usage: flockwait PATH
 * ROUNDS */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static volatile int held;

static void *holder(void *arg) {
    (void)arg;
    int fd = open(path, O_RDONLY);
    flock(fd, LOCK_EX);
    held = 1;
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
    /* The descriptor stays open a while after the last call: it is read while open. */
    struct timespec end = {0, 200000000};
    nanosleep(&end, NULL);
    return 0;
}
