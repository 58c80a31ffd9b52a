/* Three call sites of getppid, 1,000, 2,000 and 3,000 calls (site_a, site_b, site_c, each
 * its own function, called once from main): the calls-by-stack test counts each site's
 * calls under its own stack and names its function. Built twice: with frame pointers
 * (sites-fp) and without (sites, the usual -O2). With "stdin", it then makes the mark
 * (a 2 ms poll) and waits on its stdin, so that it lives until syscost has received the
 * samples of its stacks. Usage: sites [stdin] */
#include <unistd.h>

#include "stdin_wait.h"

/* Each loop's count is its own constant: the compiler cannot fold the three into one. */
__attribute__((noinline, noclone)) void site_a(void) {
    for (int i = 0; i < 1000; i++) {
        getppid();
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline, noclone)) void site_b(void) {
    for (int i = 0; i < 2000; i++) {
        getppid();
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline, noclone)) void site_c(void) {
    for (int i = 0; i < 3000; i++) {
        getppid();
        __asm__ volatile("" ::: "memory");
    }
}

int main(int argc, char **argv) {
    site_a();
    site_b();
    site_c();
    if (argc > 1 && asks_stdin(argv[1])) {
        mark();
        wait_stdin();
    }
    return 0;
}
