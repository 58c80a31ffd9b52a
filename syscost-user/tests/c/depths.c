/* Calls from many stacks over a long life, in phases: phase p (of 4) calls getppid CALLS
 * times from each of STACKS stacks of its own (phase_p, then a recursion 1 to STACKS deep
 * under it: each depth is another walk), then makes the mark (a 2 ms poll) and waits for
 * a byte on its stdin. It also waits once before the first phase. Over its life it makes
 * more (stack, syscall) entries than the calls-by-stack test's tables hold, each phase
 * fewer: only tables drained while the process lives count them all. Built with frame
 * pointers. Usage: depths STACKS CALLS (STACKS at most 16: the kernel's walk is 32
 * frames). */
#include <stdlib.h>
#include <unistd.h>

#include "stdin_wait.h"

static int calls;

/* Not a tail call (the barrier after it), so each level keeps its frame. */
__attribute__((noipa)) void down(int depth) {
    if (depth > 1) {
        down(depth - 1);
    } else {
        for (int i = 0; i < calls; i++) {
            getppid();
            __asm__ volatile("" ::: "memory");
        }
    }
    __asm__ volatile("" ::: "memory");
}

/* Four phases, four functions (noipa: not merged, not inlined). */
#define PHASE(p)                                                                        \
    __attribute__((noipa)) void phase_##p(int stacks) {                                 \
        for (int s = 0; s < stacks; s++) down(s + 1);                                   \
        __asm__ volatile("" ::: "memory");                                              \
    }
PHASE(0)
PHASE(1)
PHASE(2)
PHASE(3)

int main(int argc, char **argv) {
    if (argc != 3) {
        return 2;
    }
    int stacks = atoi(argv[1]);
    calls = atoi(argv[2]);
    if (stacks < 1 || stacks > 16 || calls < 1) {
        return 2;
    }
    void (*phases[4])(int) = {phase_0, phase_1, phase_2, phase_3};
    mark();
    wait_stdin_byte();
    for (int p = 0; p < 4; p++) {
        phases[p](stacks);
        mark();
        wait_stdin_byte();
    }
    return 0;
}
