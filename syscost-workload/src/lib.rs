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

use std::{io::Write as _, time::Instant};

mod hostile;
mod ids;
mod program;

use hostile::*;
pub use hostile::{HOSTILE_COMM, HOSTILE_FIFO};
use ids::*;
use program::*;

fn getppid_n(n: u64) {
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
}

/// A pipe: (read end, write end).
fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two fds.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe failed");
    (fds[0], fds[1])
}

/// Pins this thread to CPU `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Two threads pass a byte back and forth `n` times over pipes (two context switches a
/// round when they share a CPU); the time the rounds took.
fn pingpong(n: u64) -> std::time::Duration {
    let (a_r, a_w) = pipe();
    let (b_r, b_w) = pipe();
    let echo = std::thread::spawn(move || {
        let mut byte = 0u8;
        for _ in 0..n {
            // SAFETY: one valid byte each way.
            unsafe {
                libc::read(a_r, (&mut byte as *mut u8).cast(), 1);
                libc::write(b_w, (&byte as *const u8).cast(), 1);
            }
        }
    });
    let mut byte = 0u8;
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: one valid byte each way.
        unsafe {
            libc::write(a_w, (&byte as *const u8).cast(), 1);
            libc::read(b_r, (&mut byte as *mut u8).cast(), 1);
        }
    }
    let took = t.elapsed();
    echo.join().unwrap();
    took
}

/// The calling thread's involuntary switches so far (one getrusage call).
fn thread_nivcsw() -> i64 {
    // SAFETY: fills one rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nivcsw
}

fn arg(args: &[String], i: usize) -> u64 {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| usage())
}

/// `args` as a C argv: the strings (which the pointers point into: kept alive beside
/// them) and their pointers, ended by a null; the usage when there is none or one holds
/// a NUL.
fn c_argv(args: &[String]) -> (Vec<std::ffi::CString>, Vec<*const libc::c_char>) {
    let argv: Vec<std::ffi::CString> = args
        .iter()
        .map(|a| std::ffi::CString::new(a.as_str()).unwrap_or_else(|_| usage()))
        .collect();
    if argv.is_empty() {
        usage();
    }
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    (argv, ptrs)
}

fn usage() -> ! {
    eprintln!(
        "usage: syscost-workload [--die-with-parent] [--wait-stdin] [--hold] MODE ARGS, MODE one of: getppid close-ebadf threads threads-waiting tree-waiting churn pipe-block pingpong fork nanosleep paced slow-mix per-line seccomp sleep exit mixed-forever numbers numbers-forever leader-exit exec-thread switches program hostile exec spawn threads-at fork-at exec-at getppid-until restore-on-eof (their arguments at the top of its source)"
    );
    std::process::exit(2)
}

/// One line of stdin without its newline, `None` at its end, read a byte at a time from
/// fd 0: a buffered read could take the next line too, and a later poll of fd 0 would
/// then wait for a line already read.
fn stdin_line() -> Option<String> {
    let mut line = Vec::new();
    loop {
        let mut b = 0u8;
        // SAFETY: reads one byte into a live byte.
        match unsafe { libc::read(0, (&raw mut b).cast(), 1) } {
            1 if b == b'\n' => return Some(String::from_utf8_lossy(&line).into_owned()),
            1 => line.push(b),
            0 if line.is_empty() => return None,
            0 => return Some(String::from_utf8_lossy(&line).into_owned()),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => panic!("cannot read stdin: {}", std::io::Error::last_os_error()),
        }
    }
}

/// Polls `reached` every millisecond until it holds; after 300 s (a slow emulated CPU
/// included) says what it waited for and exits 1, so a test waiting on this workload
/// fails rather than hangs.
fn await_state(what: &str, mut reached: impl FnMut() -> bool) {
    let deadline = Instant::now() + std::time::Duration::from_secs(300);
    while !reached() {
        if Instant::now() > deadline {
            eprintln!("syscost-workload: timed out waiting for {what}");
            std::process::exit(1);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `--hold` was given: the work's own end waits for main's.
static HOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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

/// Whether a `/proc/PID/syscall` line says the task is blocked in read(2) (x86_64's
/// number 0, arm64's 63).
fn in_read(syscall_line: &str) -> bool {
    syscall_line.split_whitespace().next() == Some(libc::SYS_read.to_string().as_str())
}

/// fork(2) as the raw syscall (arm64 has no fork: clone with SIGCHLD and nothing
/// shared, as glibc's fork makes it there).
///
/// # Safety
/// As fork: the child may only call async-signal-safe functions.
unsafe fn raw_fork() -> i32 {
    #[cfg(target_arch = "x86_64")]
    let pid = unsafe { libc::syscall(libc::SYS_fork) };
    #[cfg(target_arch = "aarch64")]
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) };
    pid as i32
}

/// `c` children one after the other, each exec'ing a static program making `n` getppid:
/// fork, exec and exit with nothing else in between (raw fork, no loader, no libc in the
/// child). The time each took, fork to reaped, and the CPU time each took (this
/// process's and the child's, ns).
fn spawn(c: u64, n: u32) -> (std::time::Duration, u64) {
    let dir = std::env::temp_dir().join(format!("syscost-spawn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("syscost-getppid");
    write_program(&exe, Abi::NATIVE, n);
    let path = std::ffi::CString::new(exe.to_str().unwrap()).unwrap();
    let argv = [path.as_ptr(), std::ptr::null()];
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let t = Instant::now();
    let cpu0 = cpu_ns();
    for _ in 0..c {
        // SAFETY: the child only calls execve and _exit.
        let pid = unsafe { raw_fork() };
        if pid == 0 {
            unsafe {
                libc::syscall(
                    libc::SYS_execve,
                    path.as_ptr(),
                    argv.as_ptr(),
                    envp.as_ptr(),
                );
                libc::syscall(libc::SYS_exit_group, 127);
            }
        }
        assert!(pid > 0, "fork failed: {}", std::io::Error::last_os_error());
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child {pid}: status {status:#x}"
        );
    }
    let took = t.elapsed();
    std::fs::remove_dir_all(&dir).unwrap();
    (took / c.max(1) as u32, (cpu_ns() - cpu0) / c.max(1))
}

/// CPU time of this process and its reaped children, ns.
fn cpu_ns() -> u64 {
    let ns = |who| {
        // SAFETY: getrusage fills one rusage.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    ns(libc::RUSAGE_SELF) + ns(libc::RUSAGE_CHILDREN)
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
        Some("exec") => {
            let (_argv, ptrs) = c_argv(&args[1..]);
            // The child gets the dispositions `syscost run` gives a command: SIGPIPE at
            // its default (Rust's runtime ignores it here), the rest as inherited. Set
            // here, before the fork: the child makes no call but its execve.
            // SAFETY: one disposition, to its default.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            unsafe extern "C" {
                static environ: *const *const libc::c_char;
            }
            // SAFETY: the child only calls execve and exit_group.
            let pid = unsafe { raw_fork() };
            if pid == 0 {
                unsafe {
                    libc::syscall(libc::SYS_execve, ptrs[0], ptrs.as_ptr(), environ);
                    libc::syscall(libc::SYS_exit_group, 127);
                }
            }
            assert!(pid > 0, "fork failed: {}", std::io::Error::last_os_error());
            println!("child={pid}");
            std::io::stdout().flush().unwrap();
            let mut status = 0;
            // SAFETY: waits for our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            std::process::exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            });
        }
        Some("spawn") => {
            let (per, cpu) = spawn(arg(args, 1), arg(args, 2) as u32);
            println!("per_process_ns={}", per.as_nanos());
            println!("cpu_per_process_ns={cpu}");
        }
        Some("getppid") => {
            let n = arg(args, 1);
            let t = Instant::now();
            getppid_n(n);
            println!(
                "ns_per_call={:.1}",
                t.elapsed().as_nanos() as f64 / n.max(1) as f64
            );
        }
        Some("close-ebadf") => {
            for _ in 0..arg(args, 1) {
                // SAFETY: closing an invalid fd only returns EBADF.
                unsafe { libc::close(-1) };
            }
        }
        Some("threads") => {
            let n = arg(args, 2);
            let threads: Vec<_> = (0..arg(args, 1))
                .map(|_| {
                    std::thread::spawn(move || {
                        getppid_n(n);
                        // SAFETY: gettid cannot fail.
                        unsafe { libc::gettid() }
                    })
                })
                .collect();
            let tids: Vec<String> = threads
                .into_iter()
                .map(|t| t.join().unwrap().to_string())
                .collect();
            println!("tids={}", tids.join(","));
        }
        Some("threads-waiting") => {
            let n = arg(args, 2);
            let k = arg(args, 1);
            let (r, w) = pipe();
            let threads: Vec<_> = (0..k)
                .map(|_| {
                    std::thread::spawn(move || {
                        let mut b = 0u8;
                        // SAFETY: one byte into a valid buffer.
                        assert_eq!(unsafe { libc::read(r, (&mut b as *mut u8).cast(), 1) }, 1);
                        getppid_n(n);
                    })
                })
                .collect();
            // Every thread blocked in its read (as /proc says) before `ready`.
            let me = std::process::id().to_string();
            let blocked = || {
                std::fs::read_dir("/proc/self/task")
                    .unwrap()
                    .filter_map(|e| {
                        let e = e.ok()?;
                        (e.file_name() != me.as_str()).then(|| {
                            std::fs::read_to_string(e.path().join("syscall"))
                                .is_ok_and(|s| in_read(&s))
                        })
                    })
                    .filter(|&b| b)
                    .count()
            };
            await_state("every thread blocked in its read", || {
                blocked() >= k as usize
            });
            println!("ready");
            std::io::stdout().flush().unwrap();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
            let go = vec![b'x'; k as usize];
            // SAFETY: k bytes from a valid buffer.
            assert_eq!(
                unsafe { libc::write(w, go.as_ptr().cast(), go.len()) },
                k as isize
            );
            for t in threads {
                t.join().unwrap();
            }
        }
        Some("tree-waiting") => {
            let (c, n) = (arg(args, 1), arg(args, 2));
            let (r, w) = pipe();
            let mut pids = Vec::new();
            for _ in 0..c {
                // SAFETY: the child makes raw calls only, then _exit.
                match unsafe { libc::fork() } {
                    0 => unsafe {
                        let grandchild = libc::fork();
                        let mut b = 0u8;
                        if libc::read(r, (&mut b as *mut u8).cast(), 1) != 1 {
                            libc::_exit(1);
                        }
                        getppid_n(n);
                        if grandchild > 0 {
                            let mut status = 0;
                            libc::waitpid(grandchild, &mut status, 0);
                        }
                        libc::_exit(0);
                    },
                    pid if pid > 0 => pids.push(pid),
                    _ => panic!("fork failed: {}", std::io::Error::last_os_error()),
                }
            }
            // Every process of the tree blocked in its read before `ready`.
            let tree = || -> Vec<u32> {
                let mut all: Vec<u32> = pids.iter().map(|&p| p as u32).collect();
                for &p in &pids {
                    let children = std::fs::read_to_string(format!("/proc/{p}/task/{p}/children"))
                        .unwrap_or_default();
                    all.extend(
                        children
                            .split_whitespace()
                            .filter_map(|s| s.parse::<u32>().ok()),
                    );
                }
                all
            };
            await_state("every process of the tree blocked in its read", || {
                let t = tree();
                let blocked = t
                    .iter()
                    .filter(|p| {
                        std::fs::read_to_string(format!("/proc/{p}/syscall"))
                            .is_ok_and(|s| in_read(&s))
                    })
                    .count();
                t.len() == 2 * c as usize && blocked == t.len()
            });
            println!("ready");
            std::io::stdout().flush().unwrap();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
            let go = vec![b'x'; 2 * c as usize];
            // SAFETY: 2c bytes from a valid buffer.
            assert_eq!(
                unsafe { libc::write(w, go.as_ptr().cast(), go.len()) },
                go.len() as isize
            );
            for p in pids {
                let mut status = 0;
                // SAFETY: waits for a child of this process.
                unsafe { libc::waitpid(p, &mut status, 0) };
                assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            }
        }
        Some("churn") => {
            let (k, n) = (arg(args, 2), arg(args, 3));
            for _ in 0..arg(args, 1) {
                let threads: Vec<_> = (0..k)
                    .map(|_| std::thread::spawn(move || getppid_n(n)))
                    .collect();
                for t in threads {
                    t.join().unwrap();
                }
            }
        }
        Some("pipe-block") => {
            let (n, ms) = (arg(args, 1), arg(args, 2));
            let (r, w) = pipe();
            let writer = std::thread::spawn(move || {
                for _ in 0..n {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    // SAFETY: one byte from a valid buffer.
                    unsafe { libc::write(w, b"x".as_ptr().cast(), 1) };
                }
            });
            let mut byte = 0u8;
            let iov = libc::iovec {
                iov_base: (&mut byte as *mut u8).cast(),
                iov_len: 1,
            };
            let mut total = 0u128;
            for _ in 0..n {
                let t = Instant::now();
                // SAFETY: one iovec of one valid byte.
                unsafe { libc::readv(r, &iov, 1) };
                total += t.elapsed().as_nanos();
            }
            writer.join().unwrap();
            println!("mean_ns={}", total / u128::from(n.max(1)));
        }
        Some("pingpong") => {
            let n = arg(args, 1);
            let ns = pingpong(n).as_nanos() as f64 / n.max(1) as f64;
            println!("ns_per_call={ns:.1}");
        }
        Some("fork") => {
            let n = arg(args, 2);
            let mut children = Vec::new();
            for _ in 0..arg(args, 1) {
                // SAFETY: the child only makes raw syscalls and _exits.
                match unsafe { libc::fork() } {
                    0 => {
                        getppid_n(n);
                        unsafe { libc::_exit(0) };
                    }
                    pid if pid > 0 => children.push(pid),
                    _ => panic!("fork failed: {}", std::io::Error::last_os_error()),
                }
            }
            for pid in children {
                let mut status = 0;
                // SAFETY: waits for our own child.
                unsafe { libc::waitpid(pid, &mut status, 0) };
            }
        }
        Some("nanosleep") => {
            let (n, us) = (arg(args, 1), arg(args, 2));
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: (us * 1000) as i64,
            };
            let mut total = 0u128;
            for _ in 0..n {
                let t = Instant::now();
                // SAFETY: valid timespec, no remainder wanted.
                unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
                total += t.elapsed().as_nanos();
            }
            println!("mean_ns={}", total / u128::from(n.max(1)));
        }
        Some("mixed-forever") => {
            for _ in 0..arg(args, 1) {
                std::thread::spawn(|| {
                    loop {
                        // SAFETY: close(-1) fails with EBADF; getppid cannot fail.
                        unsafe {
                            libc::close(-1);
                            libc::syscall(libc::SYS_getppid);
                        }
                    }
                });
            }
            // The threads never end: the process runs until it is killed.
            loop {
                std::thread::park();
            }
        }
        Some("numbers") => {
            let n = arg(args, 1);
            let numbers: Vec<i64> = (2..args.len()).map(|i| arg(args, i) as i64).collect();
            let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
            for &nr in &numbers {
                // Half the calls on each of two CPUs: each CPU's statistics see the number.
                for half in 0..2 {
                    pin(half % cpus);
                    for _ in 0..n / 2 + (n % 2) * half as u64 {
                        // SAFETY: a number the kernel does not know returns ENOSYS.
                        unsafe { libc::syscall(nr) };
                    }
                }
            }
        }
        Some("numbers-forever") => {
            let (from, to) = (arg(args, 1) as i64, arg(args, 2) as i64);
            loop {
                for nr in from..to {
                    // SAFETY: a number the kernel does not know returns ENOSYS.
                    unsafe { libc::syscall(nr) };
                }
            }
        }
        Some("leader-exit") => {
            let n = arg(args, 1);
            std::thread::spawn(move || {
                // Wait until the leader has gone (its /proc status says zombie).
                await_state("the leader's exit", || {
                    std::fs::read_to_string("/proc/self/status")
                        .unwrap_or_default()
                        .contains("State:\tZ")
                });
                getppid_n(n);
                // SAFETY: ends the whole process.
                unsafe { libc::syscall(libc::SYS_exit_group, 0) };
            });
            // SAFETY: ends the main thread only; the other one goes on.
            unsafe { libc::syscall(libc::SYS_exit, 0) };
        }
        Some("exec-thread") => {
            let n = arg(args, 1).to_string();
            let t = std::thread::spawn(move || {
                let exe = std::ffi::CString::new("/proc/self/exe").unwrap();
                let argv: Vec<std::ffi::CString> = ["syscost-workload", "getppid", &n]
                    .iter()
                    .map(|a| std::ffi::CString::new(*a).unwrap())
                    .collect();
                let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
                ptrs.push(std::ptr::null());
                // SAFETY: valid path and argv; on success this thread becomes the process.
                unsafe { libc::execv(exe.as_ptr(), ptrs.as_ptr()) };
                panic!("exec failed: {}", std::io::Error::last_os_error());
            });
            t.join().unwrap();
        }
        Some("switches") => {
            let n = arg(args, 1);
            // CPU 0 for this thread and the threads it starts.
            pin(0);
            // Both threads start yielding once both exist: a thread yielding alone does
            // not switch (seen on an emulated CPU, where starting a thread is slow).
            let both = std::sync::Arc::new(std::sync::Barrier::new(2));
            let theirs = both.clone();
            // Each thread's own involuntary switches over its yields (the kernel's
            // count, RUSAGE_THREAD): how many of the yields switched depends on the
            // scheduler and the machine's speed, and the test compares with this.
            let yielder = std::thread::spawn(move || {
                theirs.wait();
                let before = thread_nivcsw();
                for _ in 0..n {
                    // SAFETY: no arguments.
                    unsafe { libc::sched_yield() };
                }
                thread_nivcsw() - before
            });
            both.wait();
            let before = thread_nivcsw();
            for _ in 0..n {
                // SAFETY: no arguments.
                unsafe { libc::sched_yield() };
            }
            let mine = thread_nivcsw() - before;
            let theirs = yielder.join().unwrap();
            pingpong(n);
            // SAFETY: fills one rusage.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
            println!("nvcsw={}", ru.ru_nvcsw);
            println!("nivcsw={}", ru.ru_nivcsw);
            println!("yield_nivcsw={}", mine + theirs);
        }
        Some("paced") => {
            // RATE getppid calls a second, in bursts every 10 ms of the monotonic clock
            // (absolute deadlines: the rate does not drift with the calls' own time),
            // for SECS seconds; plus the 100 clock_nanosleep calls a second that pace it.
            let (rate, secs) = (arg(args, 1), arg(args, 2));
            let per_tick = rate / 100;
            let mut next = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: fills one timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut next) };
            for _ in 0..secs * 100 {
                getppid_n(per_tick);
                next.tv_nsec += 10_000_000;
                if next.tv_nsec >= 1_000_000_000 {
                    next.tv_nsec -= 1_000_000_000;
                    next.tv_sec += 1;
                }
                // SAFETY: sleeps until an absolute time; EINTR only shortens one tick.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &next,
                        std::ptr::null_mut(),
                    )
                };
            }
        }
        Some("slow-mix") => slow_mix(),
        Some("per-line") => {
            let n = arg(args, 1);
            loop {
                // Waits in poll, 50 ms at a time: a poll call every 50 ms keeps the
                // process among those with calls in any interval.
                let mut pfd = libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                if unsafe { libc::poll(&mut pfd, 1, 50) } == 0 {
                    continue;
                }
                if stdin_line().is_none() {
                    break;
                }
                getppid_n(n);
                println!("done");
                std::io::stdout().flush().unwrap();
            }
        }
        Some("seccomp") => {
            // nr == getppid ? ERRNO(EPERM) : ALLOW, on the syscall number at offset 0.
            let filter = [
                libc::sock_filter {
                    code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                    jt: 0,
                    jf: 0,
                    k: 0,
                },
                libc::sock_filter {
                    code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 1,
                    k: libc::SYS_getppid as u32,
                },
                libc::sock_filter {
                    code: (libc::BPF_RET | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
                },
                libc::sock_filter {
                    code: (libc::BPF_RET | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ALLOW,
                },
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut _,
            };
            // SAFETY: a valid filter program that outlives the calls.
            unsafe {
                assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
                assert_eq!(
                    libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog),
                    0
                );
            }
            for _ in 0..arg(args, 1) {
                // SAFETY: getppid has no arguments; the filter makes it fail.
                assert_eq!(unsafe { libc::syscall(libc::SYS_getppid) }, -1);
            }
        }
        Some("threads-at") => threads_at_mode(args),
        Some("fork-at") => fork_at_mode(args),
        Some("exec-at") => exec_at_mode(args),
        Some("getppid-until") => getppid_until_mode(args),
        Some("restore-on-eof") => restore_on_eof_mode(args),
        Some("sleep") => std::thread::sleep(std::time::Duration::from_millis(arg(args, 1))),
        Some("exit") => std::process::exit(arg(args, 1) as i32),
        _ => usage(),
    }
}

/// nanosleep from a function of a known name: the `syscall` (`svc`) instruction is in it, so it
/// is the innermost frame of the call's user stack.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn syscost_test_slow_sleep(ts: *const libc::timespec) -> i64 {
    let ret: i64;
    // SAFETY: nanosleep(ts, NULL) with a valid timespec.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_nanosleep => ret,
            in("rdi") ts,
            in("rsi") 0usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack)
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc #0",
            in("x8") libc::SYS_nanosleep,
            inlateout("x0") ts => ret,
            in("x1") 0usize,
            options(nostack)
        );
    }
    ret
}

/// read(fd, buf, 1) from a function of a known name.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn syscost_test_slow_read(fd: i32, buf: *mut u8) -> i64 {
    let ret: i64;
    // SAFETY: read of one byte into a valid buffer.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_read => ret,
            in("rdi") fd as i64,
            in("rsi") buf,
            in("rdx") 1usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack)
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc #0",
            in("x8") libc::SYS_read,
            inlateout("x0") fd as i64 => ret,
            in("x1") buf,
            in("x2") 1usize,
            options(nostack)
        );
    }
    ret
}

/// The `--slow` test's workload: 250 calls of 1 ms or more among 20,000 fast ones, and
/// no other slow call in this process (the writer is a child process; the process ends
/// with exit_group, which does not return).
fn slow_mix() {
    getppid_n(20_000);
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 2_000_000,
    };
    for _ in 0..200 {
        assert_eq!(syscost_test_slow_sleep(&ts), 0);
    }
    // The writer is a child process (not traced by `attach -p`, and idle while it
    // waits): for each round the reader sends a byte on `go`, the child waits until the
    // reader is inside its read of `data`, sleeps 20 ms and answers, so each read of
    // `data` blocks at least 20 ms however late either process runs, and no thread of
    // this process spins or sleeps beside it. The child waits for `go` in poll, not in
    // a read: under `run` (which follows it) a delay of the reader makes no slow read.
    let (mut go, mut data) = ([0i32; 2], [0i32; 2]);
    // SAFETY: fill two fds each.
    assert_eq!(unsafe { libc::pipe(go.as_mut_ptr()) }, 0);
    assert_eq!(unsafe { libc::pipe(data.as_mut_ptr()) }, 0);
    // Made before the fork: the child only makes raw syscalls.
    let reader = std::process::id();
    let syscall_file =
        std::ffi::CString::new(format!("/proc/{reader}/task/{reader}/syscall")).unwrap();
    let in_read = format!("{} ", libc::SYS_read).into_bytes();
    // SAFETY: the child uses raw syscalls only, then _exit.
    match unsafe { libc::fork() } {
        0 => unsafe {
            let wait = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            let mut b = [0u8; 1];
            let mut line = [0u8; 64];
            for _ in 0..50 {
                let mut pfd = libc::pollfd {
                    fd: go[0],
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut pfd, 1, -1) != 1
                    || libc::read(go[0], b.as_mut_ptr().cast(), 1) != 1
                {
                    libc::_exit(1);
                }
                // The reader inside its read: looked at every millisecond (in poll, not
                // nanosleep: the tests count the child's 50 sleeps), for 300 s at most.
                let mut tries = 300_000;
                loop {
                    let fd = libc::open(syscall_file.as_ptr(), libc::O_RDONLY);
                    let n = if fd >= 0 {
                        libc::read(fd, line.as_mut_ptr().cast(), line.len())
                    } else {
                        -1
                    };
                    libc::close(fd);
                    if n >= in_read.len() as isize && line.starts_with(&in_read) {
                        break;
                    }
                    tries -= 1;
                    if tries == 0 {
                        libc::_exit(2);
                    }
                    libc::poll(std::ptr::null_mut(), 0, 1);
                }
                libc::nanosleep(&wait, std::ptr::null_mut());
                libc::write(data[1], b"x".as_ptr().cast(), 1);
            }
            libc::_exit(0);
        },
        pid if pid > 0 => {}
        _ => panic!("fork failed: {}", std::io::Error::last_os_error()),
    }
    let mut b = [0u8; 1];
    for _ in 0..50 {
        // SAFETY: one byte into our pipe.
        unsafe { libc::write(go[1], b"g".as_ptr().cast(), 1) };
        assert_eq!(syscost_test_slow_read(data[0], b.as_mut_ptr()), 1);
    }
    // Held (--hold): main waits to be told to go, the process stays as long as asked.
    if HOLD.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    // Alive a little longer, without a syscall, so that its fds and maps are still there
    // when the last calls are read.
    let t = Instant::now();
    while t.elapsed() < std::time::Duration::from_millis(500) {
        std::hint::spin_loop();
    }
    // SAFETY: ends the process without a join.
    unsafe { libc::syscall(libc::SYS_exit_group, 0) };
}

/// `getppid-until K`: K threads calling getppid until a line on stdin (or its end);
/// prints calls=<the calls they made>.
fn getppid_until_mode(args: &[String]) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = (0..arg(args, 1))
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut calls = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    getppid_n(1);
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    stdin_line();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let calls: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    println!("calls={calls}");
}

/// `restore-on-eof FILE VALUE`: in a session of its own, deaf to SIGINT, SIGHUP, SIGTERM
/// and SIGPIPE, prints `ready`, reads stdin to its end, then writes VALUE to FILE (exit
/// 0; 1 when the write failed).
fn restore_on_eof_mode(args: &[String]) -> ! {
    let (Some(file), Some(value)) = (args.get(1), args.get(2)) else {
        usage()
    };
    // SAFETY: setsid and signal take no pointers.
    unsafe {
        if libc::setsid() < 0 {
            eprintln!(
                "syscost-workload: setsid: {}",
                std::io::Error::last_os_error()
            );
            std::process::exit(1);
        }
        for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGTERM, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reads into a live buffer.
        match unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) } {
            0 => break,
            r if r > 0 => {}
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => break,
        }
    }
    match std::fs::write(file, value) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "syscost-workload: cannot write {value} to {file}: {e}"
            );
            std::process::exit(1)
        }
    }
}
