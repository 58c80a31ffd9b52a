//! `slow-mix`: slow calls from functions of known names, for the slow-call and stack
//! tests.

use crate::{calls::getppid_n, support::*};
use std::time::Instant;

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
pub(super) fn slow_mix() {
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
