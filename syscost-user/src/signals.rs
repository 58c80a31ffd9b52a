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
