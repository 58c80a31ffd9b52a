/* A churn process of `cargo xtask soak`: no libc, no loader (a few KB, copied under
 * hundreds of names). argv: RENAMES SEQ. A few getppid, an open, read and close of
 * /dev/null, a close that fails (EBADF); then RENAMES times: its comm set to
 * "sk-rSEQ.K" (prctl PR_SET_NAME) and 10 getppid under that name; then exit_group(0). */
#include <asm/unistd.h>
#define AT_FDCWD (-100)
#define PR_SET_NAME 15

static long sc(long n, long a, long b, long c)
{
#if defined(__x86_64__)
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
#else
#error "x86_64 and aarch64 only"
#endif
}

static void getppids(int n)
{
	for (int i = 0; i < n; i++)
		sc(__NR_getppid, 0, 0, 0);
}

static long number(const char *s)
{
	long v = 0;
	while (s && *s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return v;
}

__attribute__((noreturn, used)) void cmain(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	long renames = argc > 1 ? number(argv[1]) : 0;
	const char *seq = argc > 2 ? argv[2] : "0";
	char buf[1];
	getppids(20);
	long fd = sc(__NR_openat, AT_FDCWD, (long)"/dev/null", 0);
	sc(__NR_read, fd, (long)buf, 1);
	sc(__NR_close, fd, 0, 0);
	sc(__NR_close, -1, 0, 0);
	for (long k = 0; k < renames; k++) {
		char name[16];
		int i = 0;
		name[i++] = 's';
		name[i++] = 'k';
		name[i++] = '-';
		name[i++] = 'r';
		for (const char *p = seq; *p && i < 12; p++)
			name[i++] = *p;
		name[i++] = '.';
		name[i++] = (char)('0' + k % 10);
		name[i] = 0;
		sc(__NR_prctl, PR_SET_NAME, (long)name, 0);
		getppids(10);
	}
	sc(__NR_exit_group, 0, 0, 0);
	for (;;)
		;
}

#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n xor %ebp, %ebp\n mov %rsp, %rdi\n and $-16, %rsp\n call cmain\n hlt\n");
#else
__asm__(".text\n.global _start\n_start:\n mov x29, #0\n mov x0, sp\n bl cmain\n");
#endif
