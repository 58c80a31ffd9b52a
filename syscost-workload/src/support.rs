//! What the modes share: their arguments and usage, pipes, CPU pinning, forks and
//! spawns made without the C library's wrappers, CPU time read.

use std::time::Instant;

use crate::program::{Abi, write_program};

/// A pipe: (read end, write end).
pub(crate) fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two fds.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe failed");
    (fds[0], fds[1])
}

/// Pins this thread to CPU `cpu`.
pub(crate) fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Two threads pass a byte back and forth `n` times over pipes (two context switches a
/// round when they share a CPU); the time the rounds took.
pub(crate) fn pingpong(n: u64) -> std::time::Duration {
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
pub(crate) fn thread_nivcsw() -> i64 {
    // SAFETY: fills one rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nivcsw
}

pub(crate) fn arg(args: &[String], i: usize) -> u64 {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| usage())
}

/// `args` as a C argv: the strings (which the pointers point into: kept alive beside
/// them) and their pointers, ended by a null; the usage when there is none or one holds
/// a NUL.
pub(crate) fn c_argv(args: &[String]) -> (Vec<std::ffi::CString>, Vec<*const libc::c_char>) {
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

pub(crate) fn usage() -> ! {
    eprintln!(
        "usage: syscost-workload [--die-with-parent] [--wait-stdin] [--hold] MODE ARGS, MODE one of: getppid close-ebadf threads threads-waiting tree-waiting churn pipe-block pingpong fork nanosleep paced slow-mix per-line seccomp sleep exit mixed-forever numbers numbers-forever leader-exit exec-thread switches program hostile exec spawn threads-at fork-at exec-at getppid-until restore-on-eof (their arguments at the top of its source)"
    );
    std::process::exit(2)
}

/// One line of stdin without its newline, `None` at its end, read a byte at a time from
/// fd 0: a buffered read could take the next line too, and a later poll of fd 0 would
/// then wait for a line already read.
pub(crate) fn stdin_line() -> Option<String> {
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
pub(crate) fn await_state(what: &str, mut reached: impl FnMut() -> bool) {
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
pub(crate) static HOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a `/proc/PID/syscall` line says the task is blocked in read(2) (x86_64's
/// number 0, arm64's 63).
pub(crate) fn in_read(syscall_line: &str) -> bool {
    syscall_line.split_whitespace().next() == Some(libc::SYS_read.to_string().as_str())
}

/// fork(2) as the raw syscall (arm64 has no fork: clone with SIGCHLD and nothing
/// shared, as glibc's fork makes it there).
///
/// # Safety
/// As fork: the child may only call async-signal-safe functions.
pub(crate) unsafe fn raw_fork() -> i32 {
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
pub(crate) fn spawn(c: u64, n: u32) -> (std::time::Duration, u64) {
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
pub(crate) fn cpu_ns() -> u64 {
    let ns = |who| {
        // SAFETY: getrusage fills one rusage.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    ns(libc::RUSAGE_SELF) + ns(libc::RUSAGE_CHILDREN)
}
