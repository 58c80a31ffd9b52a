/* The churn of `cargo xtask soak`: RATE process starts a second (absolute deadlines),
 * each a fork+exec+exit of one of NBIN copies of the churn program (BINDIR/NAME-%04d),
 * started straight into one of NCG cgroups (clone3 with CLONE_INTO_CGROUP, CGDIR/c%03d);
 * one start in RENAME_EVERY runs the program with RENAMES renames. At most MAXLIVE
 * alive at once. Killed (SIGKILL) with the process that started it, and its children with
 * it; SIGTERM or SIGINT ends it after its children. Prints a line a second:
 * `t=SECS starts=N renamed=N failed=N bad_exits=N late=N live=N`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_stop(int sig) { (void)sig; stop = 1; }

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static unsigned long live, bad;

static void reaped(int status)
{
	live--;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bad++;
}

int main(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: %s RATE BINDIR NAME NBIN CGDIR NCG RENAME_EVERY RENAMES MAXLIVE\n", argv[0]);
		return 2;
	}
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 1;
	double rate = atof(argv[1]);
	const char *bindir = argv[2], *name = argv[3], *cgdir = argv[5];
	int nbin = atoi(argv[4]), ncg = atoi(argv[6]), rename_every = atoi(argv[7]);
	const char *renames = argv[8];
	unsigned long maxlive = strtoul(argv[9], NULL, 10);
	if (rate <= 0 || nbin <= 0 || ncg <= 0 || maxlive == 0)
		return 2;
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int *cg = calloc(ncg, sizeof *cg);
	char **bins = calloc(nbin, sizeof *bins);
	for (int i = 0; i < ncg; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/c%03d", cgdir, i);
		cg[i] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg[i] < 0) {
			fprintf(stderr, "churn: cannot open %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	for (int i = 0; i < nbin; i++)
		if (asprintf(&bins[i], "%s/%s-%04d", bindir, name, i) < 0)
			return 1;
	char *envp[] = { NULL };
	unsigned long starts = 0, renamed = 0, failed = 0, late = 0;
	double t0 = now(), next_line = t0 + 1;
	while (!stop) {
		/* Start number `starts` is due at t0 + starts / rate; one more than a second late
		 * moves the schedule (counted as late) rather than bursting to catch up. */
		double due = t0 + starts / rate, t = now();
		if (t - due > 1.0) {
			late++;
			t0 += t - due;
			due = t;
		}
		if (due > t) {
			struct timespec ts = { (time_t)due, (long)((due - (time_t)due) * 1e9) };
			if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				continue;
		}
		int status;
		pid_t p;
		while ((p = waitpid(-1, &status, WNOHANG)) > 0)
			reaped(status);
		while (live >= maxlive && (p = waitpid(-1, &status, 0)) > 0)
			reaped(status);
		char seq[24];
		snprintf(seq, sizeof seq, "%lu", starts);
		int rename = rename_every > 0 && starts % rename_every == 0;
		char *cargv[] = { bins[starts % nbin], rename ? (char *)renames : "0", seq, NULL };
		struct clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.flags = CLONE_INTO_CGROUP;
		ca.exit_signal = SIGCHLD;
		/* A stride prime to NCG: a binary meets many cgroups over the run. */
		ca.cgroup = cg[(starts * 7919u) % ncg];
		long pid = syscall(SYS_clone3, &ca, sizeof ca);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			execve(cargv[0], cargv, envp);
			_exit(127);
		}
		if (pid < 0) {
			failed++;
			if (starts == 0 && failed == 1)
				fprintf(stderr, "churn: clone3 into a cgroup failed: %s\n", strerror(errno));
		} else {
			live++;
			renamed += rename;
		}
		starts++;
		if (now() >= next_line) {
			printf("t=%.0f starts=%lu renamed=%lu failed=%lu bad_exits=%lu late=%lu live=%lu\n",
			       now() - t0, starts, renamed, failed, bad, late, live);
			fflush(stdout);
			next_line += 1;
		}
	}
	int status;
	while (live > 0 && waitpid(-1, &status, 0) > 0)
		reaped(status);
	printf("done starts=%lu renamed=%lu failed=%lu bad_exits=%lu late=%lu live=%lu\n",
	       starts, renamed, failed, bad, late, live);
	return 0;
}
