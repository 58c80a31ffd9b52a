//! `hostile`: names chosen to attack a terminal, for the tests of what syscost prints.

use crate::calls::getppid_n;

/// The comm `hostile` sets, and the name of its FIFO: escape sequences and a byte that
/// is not UTF-8, for the tests of what syscost prints.
pub const HOSTILE_COMM: &[u8] = b"\x1b[31mEVIL\x07";
pub const HOSTILE_FIFO: &[u8] = b"f\x1b[2J\xff\x7f\xc2\x9b\xe2\x80\xaeZ\xf4\x8f\xbe\x9b";

pub(crate) fn hostile(dir: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt as _;
    getppid_n(1);
    let comm = std::ffi::CString::new(HOSTILE_COMM).unwrap();
    // SAFETY: PR_SET_NAME with a NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, comm.as_ptr()) };
    let fifo = dir.join(std::ffi::OsStr::from_bytes(HOSTILE_FIFO));
    let path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(path.as_ptr(), 0o600) },
        0,
        "mkfifo failed"
    );
    // Made before the fork (the child makes raw syscalls only): where the reader's
    // state shows, and a buffer of its own for each read, so that the writer tells read
    // i (its second argument `bufs + i`) from the one before.
    let mut bufs = [0u8; 10];
    let base = bufs.as_mut_ptr() as usize;
    // The reader is the main thread (tid = pid).
    let reader = std::process::id();
    let state = std::ffi::CString::new(format!("/proc/{reader}/task/{reader}/syscall")).unwrap();
    let nr = libc::SYS_read.to_string().into_bytes();
    let reading: Vec<Vec<u8>> = (0..10)
        .map(|i| format!("{:#x}", base + i).into_bytes())
        .collect();
    // SAFETY: the child only calls open, pread, close, clock_gettime, nanosleep, write
    // and _exit.
    let writer = unsafe { libc::fork() };
    if writer == 0 {
        // For each read: waits until the reader is blocked inside it (its
        // /proc/PID/task/TID/syscall line: read's number, its fd, then the read's own
        // buffer), then 5 ms, then writes the byte: each read blocks at least 5 ms
        // however late either process runs. pread, not read: the writer makes no read
        // call of its own (the tests count the slow ones). 300 s at most per read.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            };
            let tick = libc::timespec {
                tv_sec: 0,
                tv_nsec: 100_000,
            };
            let mut line = [0u8; 256];
            for want in &reading {
                let mut start: libc::timespec = std::mem::zeroed();
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut start);
                loop {
                    let sfd = libc::open(state.as_ptr(), libc::O_RDONLY);
                    let n = if sfd >= 0 {
                        libc::pread(sfd, line.as_mut_ptr().cast(), line.len(), 0)
                    } else {
                        -1
                    };
                    libc::close(sfd);
                    if n > 0 {
                        // "NR FD BUF ...": no allocation in the child.
                        let mut fields = line[..n as usize].split(|&b| b == b' ');
                        let read = fields.next() == Some(&nr[..]);
                        if read && fields.nth(1) == Some(&want[..]) {
                            break;
                        }
                    }
                    let mut now: libc::timespec = std::mem::zeroed();
                    libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
                    if now.tv_sec - start.tv_sec > 300 {
                        libc::_exit(2);
                    }
                    libc::nanosleep(&tick, std::ptr::null_mut());
                }
                libc::nanosleep(&ts, std::ptr::null_mut());
                libc::write(fd, b"x".as_ptr().cast(), 1);
            }
            libc::_exit(0);
        }
    }
    // SAFETY: opens our FIFO; one byte at a time into a valid buffer.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 0, "cannot open the FIFO");
    for i in 0..10 {
        // SAFETY: one byte into bufs[i].
        assert_eq!(
            unsafe { libc::read(fd, bufs[i..].as_mut_ptr().cast(), 1) },
            1,
            "the writer ended before the read's byte"
        );
    }
    let mut status = 0;
    // SAFETY: our own child.
    unsafe { libc::waitpid(writer, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the FIFO's writer failed (status {status:#x}; 2: the reader never blocked in a read)"
    );
    // The FIFO stays, open, until the process exits: what syscost reads of the fd.
}
