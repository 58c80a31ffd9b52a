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

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// SIGINT, SIGTERM and SIGHUP caught into a flag, for a loop that sleeps between steps.
pub struct Stop(());

impl Stop {
    pub fn catch() -> anyhow::Result<Self> {
        STOP.store(false, std::sync::atomic::Ordering::Relaxed);
        catch(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], on_stop);
        Ok(Self(()))
    }

    /// Sleeps until `until`; true when a signal came first.
    pub fn wait_until(&self, until: std::time::Instant) -> bool {
        loop {
            if STOP.load(std::sync::atomic::Ordering::Relaxed) {
                return true;
            }
            let now = std::time::Instant::now();
            if now >= until {
                return false;
            }
            std::thread::sleep((until - now).min(std::time::Duration::from_millis(50)));
        }
    }
}
