/* One call of each of a list of syscalls that between them fall in every class of
 * strace's -e trace=%CLASS, each with arguments that make it fail at once or do
 * nothing; the tests compare the rows strace and syscost show for each class. */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	syscall(SYS_read, 0, 0, 0);                    /* desc */
	syscall(SYS_stat, 0, 0);                       /* file, stat */
	syscall(SYS_lstat, 0, 0);                      /* file, lstat */
	syscall(SYS_fstat, -1, 0);                     /* desc, fstat */
	syscall(SYS_newfstatat, -1, 0, 0, 0);          /* desc, file, fstat-like */
	syscall(SYS_statfs, 0, 0);                     /* file, statfs */
	syscall(SYS_fstatfs, -1, 0);                   /* desc, fstatfs */
	syscall(SYS_poll, 0, 0, 0);                    /* desc */
	syscall(SYS_access, 0, 0);                     /* file */
	syscall(SYS_getcwd, 0, 0);                     /* file */
	syscall(SYS_mprotect, 0, 0, 0);                /* memory */
	syscall(SYS_madvise, 0, 0, 0);                 /* memory */
	syscall(SYS_rt_sigprocmask, 0, 0, 0, 0);       /* signal */
	syscall(SYS_kill, 0, 0);                       /* process, signal */
	syscall(SYS_wait4, -1, 0, 1, 0);               /* process (WNOHANG, no child) */
	syscall(SYS_getpid);                           /* pure */
	syscall(SYS_getuid);                           /* creds, pure */
	syscall(SYS_capget, 0, 0);                     /* creds */
	syscall(SYS_socket, -1, 0, 0);                 /* net */
	syscall(SYS_setsockopt, -1, 0, 0, 0, 0);       /* net */
	syscall(SYS_shmdt, 0);                         /* ipc */
	syscall(SYS_clock_gettime, 0, 0);              /* clock */
	syscall(SYS_sched_yield);                      /* none */
	return 0;
}
