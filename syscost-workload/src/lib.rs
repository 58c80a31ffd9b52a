//! A workload with a known number of syscalls, for syscost's own tests.
//!
//! ```text
//! syscost-workload [--die-with-parent] [--wait-stdin] MODE ARGS...
//!   getppid N          N getppid calls; prints ns_per_call=<own timing>
//!   close-ebadf N      N close(-1) calls, each failing with EBADF
//!   threads K N        K threads, N getppid calls each (and one gettid); prints
//!                      tids=<the threads' ids>
//!   churn R K N        R rounds of K short-lived threads, N getppid calls each
//!   threads-waiting K N  K threads started first, each blocked reading a pipe; prints
//!                      `ready` and waits for a line on stdin, then lets them go: N
//!                      getppid calls each (every thread exists before a tracer
//!                      attached to the waiting process)
//!   tree-waiting C N   C child processes, each with a child of its own, started first,
//!                      every one blocked reading a pipe; prints `ready` and waits for
//!                      a line on stdin, then lets them go: N getppid calls each (2*C*N
//!                      in all, none by this process), each child waiting for its own
//!   pipe-block N MS    N readv calls on a pipe, each blocked until a writer thread
//!                      writes MS ms later; prints mean_ns=<own timing of the readv>
//!   pingpong N         two threads pass a byte back and forth N times over pipes
//!                      (two context switches a round); prints ns_per_call=<per round>
//!   fork C N           C child processes, N getppid calls each
//!   nanosleep N US     N nanosleep calls of US microseconds; prints mean_ns=<own timing>
//!   paced RATE SECS    RATE getppid calls a second (bursts every 10 ms, absolute
//!                      deadlines) for SECS seconds, plus 100 clock_nanosleep a second
//!   slow-mix           20,000 getppid; 200 nanosleep of 2 ms from the function
//!                      `syscost_test_slow_sleep`; 50 reads of a pipe from
//!                      `syscost_test_slow_read`, each blocked at least 20 ms: a
//!                      forked child (asked through another pipe, waiting in poll)
//!                      writes a byte 20 ms after it sees the read begin;
//!                      then spins 0.5 s and calls exit_group (with --hold: waits)
//!   seccomp N          installs a seccomp filter that refuses getppid with EPERM,
//!                      then makes N getppid calls (the kernel skips each: its exit is
//!                      reported, not its entry)
//!   per-line N         for each line read on stdin, N getppid calls, then prints
//!                      `done`; exits at the end of stdin (waits in 50 ms polls)
//!   sleep MS           sleeps MS milliseconds (one nanosleep)
//!   exit CODE          exits with CODE
//!   mixed-forever K    K threads calling close(-1) and getppid in a loop until killed
//!   numbers N A B ...  N calls each of the raw syscall numbers A, B, ... (ENOSYS), half
//!                      of them on CPU 0 and half on CPU 1
//!   numbers-forever A B  the raw syscall numbers A..B in turn, until killed
//!   leader-exit N      the main thread exits first (SYS_exit); another thread then
//!                      makes N getppid calls and ends the process
//!   exec-thread N      a second thread execs this program with `getppid N`
//!   switches N         two threads on CPU 0 each call sched_yield N times, then
//!                      pass a byte over pipes N times; prints the process's own
//!                      nvcsw= and nivcsw= (getrusage) at the end, and yield_nivcsw=,
//!                      the two threads' own involuntary switches over their yields
//!   program ABI N PATH writes a static program (ABI x86_64, i386, aarch64 or arm)
//!                      that makes N getppid calls (N may be 0) and exits 0: no
//!                      loader, no libc; with N > 0 the 64-bit ones also make one each
//!                      of getpid, gettid, getuid, getgid, geteuid, getegid, getpgrp
//!                      (arm64: getpgid(0)) and getsid
//!   hostile DIR        names chosen to attack a terminal: one getppid under the name
//!                      it was exec'd by, then comm set to ESC[31mEVIL BEL (prctl),
//!                      then 10 reads of a FIFO made in DIR under the name
//!                      "f ESC[2J 0xff DEL U+009B U+202E Z U+10FF9B" (control bytes, a
//!                      byte that is not UTF-8, a C1 control, a direction override,
//!                      the code point that stands for byte 0x9b, as UTF-8),
//!                      each blocked at least 5 ms: a forked child waits until the
//!                      read is blocked (its /proc/PID/task/TID/syscall line), then
//!                      5 ms, then writes a byte; the child makes no read call
//!                      (the FIFO stays in DIR, open until the process exits)
//!   exec PROG ARGS...  runs PROG in a child forked with nothing between the fork and
//!                      the execve (as `syscost run` starts its command); prints
//!                      child=<pid> and exits with the child's status
//!   spawn C N          C child processes one after the other, each exec'ing the
//!                      static program `syscost-getppid` (this architecture's) making N getppid
//!                      (ten distinct syscalls in all); prints per_process_ns=<own
//!                      timing of fork, exec, exit, wait> and cpu_per_process_ns=<its
//!                      and the children's CPU time per process>
//!   threads-at TID K N K threads made with clone3 and `set_tid` (needs CAP_SYS_ADMIN
//!                      and TID+K below pid_max), at ids TID, TID+1, ... (an id taken:
//!                      the next one up, 100 at most), N getppid calls and one gettid
//!                      each; prints tids=<the threads' ids>
//!   fork-at PID N      a child process made with clone3 and `set_tid`, at pid PID (taken:
//!                      the next one up, 100 at most), that makes N getppid calls and
//!                      exits; once it is reaped prints child=<its pid>, then waits for a
//!                      line on stdin (or its end) and exits
//!   exec-at PID PROG ARGS...  PROG run in a child made with clone3 and `set_tid` at
//!                      exactly PID (exits 3, saying so, when PID is taken); prints
//!                      child=<pid> and exits with the child's status
//!   getppid-until K    K threads calling getppid until a line on stdin (or its end);
//!                      prints calls=<the calls they made>
//!   restore-on-eof FILE VALUE  a restorer: in a session of its own (setsid), deaf to
//!                      SIGINT, SIGHUP, SIGTERM and SIGPIPE, prints `ready`, reads stdin
//!                      to its end (its writer closed it, or died), then writes VALUE to
//!                      FILE; exits 0, or 1 when the write failed
//! ```
//! With `--wait-stdin` it prints `ready` and waits for a line on stdin before the work
//! (the end of stdin instead ends it, status 1: its test is gone);
//! with `--hold` (after `--wait-stdin`, if both) it prints `done` after the work and waits
//! (in poll) for another line (or the end of stdin) before it exits.
//! With `--die-with-parent` (first, before the other flags) it is killed (SIGKILL) when
//! the thread that started it ends, a test killed outright included: an endless mode
//! then does not outlive its test (it makes two getppid calls at its start).

use std::io::Write as _;

mod calls;
mod hostile;
mod ids;
mod processes;
mod program;
mod slow;
mod support;
mod threads;

use hostile::*;
pub use hostile::{HOSTILE_COMM, HOSTILE_FIFO};
use ids::*;
use program::*;
use support::*;

pub fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--die-with-parent") {
        args.remove(0);
        let parent = std::os::unix::process::parent_id();
        // SAFETY: prctl with integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        assert_eq!(r, 0, "prctl: {}", std::io::Error::last_os_error());
        // The parent already gone (before the prctl): this process is an orphan.
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(1);
        }
    }
    if args.first().map(String::as_str) == Some("--wait-stdin") {
        args.remove(0);
        println!("ready");
        std::io::stdout().flush().unwrap();
        // The end of stdin before the line: whoever would have started the work is gone
        // (a test killed outright), and an endless mode must not outlive it.
        if stdin_line().is_none() {
            eprintln!("syscost-workload: stdin ended before the line that starts the work");
            std::process::exit(1);
        }
    }
    let hold = args.first().map(String::as_str) == Some("--hold");
    if hold {
        args.remove(0);
        HOLD.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    work(&args);
    if hold {
        println!("done");
        std::io::stdout().flush().unwrap();
        // Waits in poll, not in read: the read that follows finds the line there, so the
        // work's own reads are the only slow ones.
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, no timeout.
        unsafe { libc::poll(&mut fd, 1, -1) };
        stdin_line();
    }
}

fn work(args: &[String]) {
    match args.first().map(String::as_str) {
        Some("program") => {
            let abi = match args.get(1).map(String::as_str) {
                Some("x86_64") => Abi::X86_64,
                Some("i386") => Abi::I386,
                Some("aarch64") => Abi::Aarch64,
                Some("arm") => Abi::Arm,
                _ => usage(),
            };
            let path = args.get(3).unwrap_or_else(|| usage());
            write_program(std::path::Path::new(path), abi, arg(args, 2) as u32);
        }
        Some("hostile") => hostile(std::path::Path::new(args.get(1).unwrap_or_else(|| usage()))),
        Some("exec") => processes::exec_mode(args),
        Some("spawn") => processes::spawn_mode(args),
        Some("getppid") => calls::getppid_mode(args),
        Some("close-ebadf") => calls::close_ebadf(args),
        Some("threads") => threads::threads_mode(args),
        Some("threads-waiting") => threads::threads_waiting(args),
        Some("tree-waiting") => processes::tree_waiting(args),
        Some("churn") => processes::churn_mode(args),
        Some("pipe-block") => threads::pipe_block(args),
        Some("pingpong") => threads::pingpong_mode(args),
        Some("fork") => processes::fork_mode(args),
        Some("nanosleep") => calls::nanosleep_mode(args),
        Some("mixed-forever") => calls::mixed_forever(args),
        Some("numbers") => calls::numbers_mode(args),
        Some("numbers-forever") => calls::numbers_forever(args),
        Some("leader-exit") => processes::leader_exit(args),
        Some("exec-thread") => processes::exec_thread(args),
        Some("switches") => threads::switches_mode(args),
        Some("paced") => calls::paced_mode(args),
        Some("slow-mix") => slow::slow_mix(),
        Some("per-line") => calls::per_line(args),
        Some("seccomp") => calls::seccomp_mode(args),
        Some("threads-at") => threads_at_mode(args),
        Some("fork-at") => fork_at_mode(args),
        Some("exec-at") => exec_at_mode(args),
        Some("getppid-until") => calls::getppid_until_mode(args),
        Some("restore-on-eof") => calls::restore_on_eof_mode(args),
        Some("sleep") => std::thread::sleep(std::time::Duration::from_millis(arg(args, 1))),
        Some("exit") => std::process::exit(arg(args, 1) as i32),
        _ => usage(),
    }
}
