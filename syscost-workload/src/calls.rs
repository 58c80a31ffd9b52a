//! The modes that make known numbers of calls: getppid, close of a bad fd, nanosleep,
//! mixed and numbered calls, paced calls, calls per line of input, seccomp.

use crate::support::*;
use std::{io::Write as _, time::Instant};

/// `getppid`: see the modes at the top of the crate.
pub(super) fn getppid_mode(args: &[String]) {
    let n = arg(args, 1);
    let t = Instant::now();
    getppid_n(n);
    println!(
        "ns_per_call={:.1}",
        t.elapsed().as_nanos() as f64 / n.max(1) as f64
    );
}

/// `close-ebadf`: see the modes at the top of the crate.
pub(super) fn close_ebadf(args: &[String]) {
    for _ in 0..arg(args, 1) {
        // SAFETY: closing an invalid fd only returns EBADF.
        unsafe { libc::close(-1) };
    }
}

/// `nanosleep`: see the modes at the top of the crate.
pub(super) fn nanosleep_mode(args: &[String]) {
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

/// `mixed-forever`: see the modes at the top of the crate.
pub(super) fn mixed_forever(args: &[String]) {
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

/// `numbers`: see the modes at the top of the crate.
pub(super) fn numbers_mode(args: &[String]) {
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

/// `numbers-forever`: see the modes at the top of the crate.
pub(super) fn numbers_forever(args: &[String]) {
    let (from, to) = (arg(args, 1) as i64, arg(args, 2) as i64);
    loop {
        for nr in from..to {
            // SAFETY: a number the kernel does not know returns ENOSYS.
            unsafe { libc::syscall(nr) };
        }
    }
}

/// `paced`: see the modes at the top of the crate.
pub(super) fn paced_mode(args: &[String]) {
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

/// `per-line`: see the modes at the top of the crate.
pub(super) fn per_line(args: &[String]) {
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

/// `seccomp`: see the modes at the top of the crate.
pub(super) fn seccomp_mode(args: &[String]) {
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

/// `getppid-until K`: K threads calling getppid until a line on stdin (or its end);
/// prints calls=<the calls they made>.
pub(super) fn getppid_until_mode(args: &[String]) {
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
pub(super) fn restore_on_eof_mode(args: &[String]) -> ! {
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

pub(crate) fn getppid_n(n: u64) {
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
}
