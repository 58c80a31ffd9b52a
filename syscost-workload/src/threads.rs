//! The modes that run threads: threads calling, threads waiting, context switches, a
//! blocked pipe, ping-pong.

use crate::{calls::getppid_n, support::*};
use std::{io::Write as _, time::Instant};

/// `threads`: see the modes at the top of the crate.
pub(super) fn threads_mode(args: &[String]) {
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

/// `threads-waiting`: see the modes at the top of the crate.
pub(super) fn threads_waiting(args: &[String]) {
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
                    std::fs::read_to_string(e.path().join("syscall")).is_ok_and(|s| in_read(&s))
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

/// `pipe-block`: see the modes at the top of the crate.
pub(super) fn pipe_block(args: &[String]) {
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

/// `pingpong`: see the modes at the top of the crate.
pub(super) fn pingpong_mode(args: &[String]) {
    let n = arg(args, 1);
    let ns = pingpong(n).as_nanos() as f64 / n.max(1) as f64;
    println!("ns_per_call={ns:.1}");
}

/// `switches`: see the modes at the top of the crate.
pub(super) fn switches_mode(args: &[String]) {
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
