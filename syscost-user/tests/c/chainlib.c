/* A shared library of the tests' own, without frame pointers: lib_middle -> lib_inner
 * -> nanosleep. */
#include <time.h>

volatile int lib_sink;

__attribute__((noinline)) void lib_inner(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    lib_sink++;
}

__attribute__((noinline)) void lib_middle(int calls, long us) {
    for (int i = 0; i < calls; i++) lib_inner(us);
    lib_sink++;
}
