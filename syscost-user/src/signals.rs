//! Signal handlers for the loops that poll a flag (the live view, the lab server):
//! installed without SA_RESTART, so a blocking call returns EINTR and the loop looks.

/// Installs `handler` for each of `signals`. The handler must be async-signal-safe
/// (these set an atomic flag and nothing else).
pub fn catch(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    for &sig in signals {
        // SAFETY: a zeroed sigaction with only the handler set (no flags, empty mask).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The write end of the pipe a caught signal writes a byte to, waking [`Stop::wait_until`].
static WAKE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
    let fd = WAKE.load(std::sync::atomic::Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write is async-signal-safe; a full pipe (EAGAIN) already wakes.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
}

/// SIGINT, SIGTERM and SIGHUP caught into a flag, for a loop that waits between steps:
/// the wait ends at the signal, not at its next step.
pub struct Stop {
    /// The read end of the pipe the handler writes to (the pipe lives as long as the
    /// process, so the handler never writes to a descriptor closed or reused).
    read: std::os::fd::RawFd,
}

impl Stop {
    pub fn catch() -> anyhow::Result<Self> {
        use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
        static PIPE: std::sync::OnceLock<Result<(OwnedFd, OwnedFd), String>> =
            std::sync::OnceLock::new();
        let pipe = PIPE.get_or_init(|| {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills two fds, owned from here on.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
                return Err(format!("pipe2: {}", std::io::Error::last_os_error()));
            }
            Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        });
        let (read, write) = pipe.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        STOP.store(false, std::sync::atomic::Ordering::Relaxed);
        WAKE.store(write.as_raw_fd(), std::sync::atomic::Ordering::Relaxed);
        catch(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], on_stop);
        Ok(Self {
            read: read.as_raw_fd(),
        })
    }

    /// Waits until `until`; true when a signal came first.
    pub fn wait_until(&self, until: std::time::Instant) -> bool {
        loop {
            if STOP.load(std::sync::atomic::Ordering::Relaxed) {
                return true;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            let timeout = libc::timespec {
                tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            };
            let mut p = libc::pollfd {
                fd: self.read,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd for the process's pipe; no signal mask.
            unsafe { libc::ppoll(&mut p, 1, &timeout, std::ptr::null()) };
        }
    }
}
