/* The stack tests' handshake with a program that must live until syscost has received
 * its slow calls (their process's mappings and descriptors are read as each arrives):
 * asked to (an argument "stdin"), the program waits after its calls until its stdin is
 * written to or closed, which the test does once syscost has reported the calls it
 * awaits. The test's own deadline ends the program if that never comes. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's (errno.h declares it under _GNU_SOURCE): the name the failures start with. */
extern char *program_invocation_short_name;

/* Whether ARG asks for the handshake. */
static inline int asks_stdin(const char *arg) {
    return arg != NULL && strcmp(arg, "stdin") == 0;
}

/* A slow call the test can await, made after all the calls it counts: a 2 ms poll of
 * nothing (poll, or ppoll where there is no poll), above the tests' 1 ms threshold on
 * any machine. syscost receives a program's calls in the order they end, so once it
 * reports this one it has received every call made before it. */
static inline void mark(void) {
    poll(NULL, 0, 2);
}

/* Waits (poll of fd 0, no timeout) until stdin has data or is closed. */
static inline void wait_stdin(void) {
    struct pollfd p = {0, POLLIN, 0};
    for (;;) {
        int n = poll(&p, 1, -1);
        if (n > 0) return;
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "%s: poll of stdin: %s\n", program_invocation_short_name,
                    strerror(errno));
            exit(4);
        }
    }
}

/* Waits until one byte comes on stdin, and takes it: a gate the test opens once per
 * phase. Stdin closed first: the test gave up; the program ends (status 5). */
static inline void wait_stdin_byte(void) {
    char c;
    for (;;) {
        ssize_t n = read(0, &c, 1);
        if (n == 1) return;
        if (n == 0) exit(5);
        if (errno != EINTR) {
            fprintf(stderr, "%s: read of stdin: %s\n", program_invocation_short_name,
                    strerror(errno));
            exit(4);
        }
    }
}
