//! How syscost stops: [`Stop`] catches SIGINT, SIGTERM and SIGHUP for every command
//! (the live views, the text modes, the services, `run`, which passes them on), as a
//! flag, a wait and a readable descriptor that says which signal came. Also what a
//! command syscost starts gets back of the dispositions syscost was started with, and
//! the plain handlers of the lab's server (installed without SA_RESTART, so a blocking
//! call returns EINTR and the loop looks).

/// The signals syscost catches for itself, whose dispositions a command it starts must
/// get back (an exec resets a caught signal to its default, not to what it was).
const CAUGHT: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Which of [`CAUGHT`] syscost was started with ignored (`nohup`, a background job of a
/// shell without job control), one bit per signal number.
static INHERITED_IGNORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Notes the dispositions syscost was started with, before it catches any signal: the
/// first thing `main` does.
pub fn note_inherited() {
    let mut ignored = 0u64;
    for sig in CAUGHT {
        // SAFETY: reads the disposition only (no new action).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0
            && old.sa_sigaction == libc::SIG_IGN
        {
            ignored |= 1 << sig;
        }
    }
    INHERITED_IGNORED.store(ignored, std::sync::atomic::Ordering::Relaxed);
}

/// The dispositions a command started by syscost gets before its exec, as it would have
/// had without syscost: the signals syscost was started with ignored ignored again, and
/// SIGPIPE at its default (Rust's runtime ignores it in syscost, as std's `Command`
/// undoes in its children). Only `sigaction` calls: safe between a fork and an exec.
pub struct ChildDispositions {
    ignored: u64,
}

impl ChildDispositions {
    /// Prepared before the fork.
    pub fn inherited() -> Self {
        Self {
            ignored: INHERITED_IGNORED.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Sets them, in the forked child (async-signal-safe).
    pub fn apply(&self) {
        // SAFETY: sigaction with a zeroed action is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGPIPE, &sa, std::ptr::null_mut());
            sa.sa_sigaction = libc::SIG_IGN;
            for sig in CAUGHT {
                if self.ignored & (1 << sig) != 0 {
                    libc::sigaction(sig, &sa, std::ptr::null_mut());
                }
            }
        }
    }
}

/// Installs `handler` for each of `signals`. The handler must be async-signal-safe
/// (these set an atomic flag and nothing else).
pub fn catch(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    install(signals, handler, 0);
}

fn install(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int), flags: libc::c_int) {
    for &sig in signals {
        // SAFETY: a zeroed sigaction with only the handler and `flags` set (empty mask).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = flags;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The write end of the pipe a caught signal writes a byte to, waking [`Stop::wait`].
static WAKE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
/// The signals are passed on to a command (`run`): they do not stop syscost itself
/// until it is [`exiting`].
static FORWARDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// syscost is finishing (its last figures, the programs unloaded, the report).
static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Signals that stopped syscost since [`Stop::catch`] (for `run`, those since it began
/// to finish): the second ends it at once.
static STOPS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The terminal's settings before a live view changed them, for a signal that ends
/// syscost at once to put back (written before the view takes the terminal, read only
/// by the handler once `TERMINAL_SAVED` says so).
struct SavedTerminal(std::cell::UnsafeCell<libc::termios>);
// SAFETY: written by one thread before TERMINAL_SAVED is set (release), read by the
// handler after it sees the flag (acquire), never written while the flag is set.
unsafe impl Sync for SavedTerminal {}
static TERMINAL: SavedTerminal =
    SavedTerminal(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));
static TERMINAL_SAVED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A live view is about to take the terminal on standard output: its settings are kept
/// for `on_stop` to restore should a signal end syscost at once.
pub fn terminal_taken() {
    use std::sync::atomic::Ordering;
    if TERMINAL_SAVED.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: tcgetattr fills the termios; no reader looks while the flag is clear.
    if unsafe { libc::tcgetattr(libc::STDOUT_FILENO, TERMINAL.0.get()) } == 0 {
        TERMINAL_SAVED.store(true, Ordering::Release);
    }
}

/// The live view gave the terminal back (restored it itself).
pub fn terminal_given_back() {
    TERMINAL_SAVED.store(false, std::sync::atomic::Ordering::Release);
}

/// `run` passes the signals on to its command: they do not count toward syscost's own
/// stop until it is [`exiting`] (a command that ignores Ctrl-C, a REPL, takes as many as
/// it likes).
pub fn forwarding() {
    FORWARDING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// syscost is finishing: for `run`, the signals count from now on (two end it at
/// once).
pub fn exiting() {
    EXITING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Ends syscost now, from a signal handler: the terminal restored (its settings, the
/// main screen, the cursor), a line on stderr, and the exit status of a death by
/// `sig`. The kernel frees syscost's programs and maps as its descriptors close.
fn end_now(sig: libc::c_int) -> ! {
    use std::sync::atomic::Ordering;
    // SAFETY: tcsetattr, write and _exit are async-signal-safe; the termios was written
    // before the flag was set and is not written while it is.
    unsafe {
        if TERMINAL_SAVED.load(Ordering::Acquire) {
            libc::tcsetattr(libc::STDOUT_FILENO, libc::TCSANOW, TERMINAL.0.get());
            // The main screen back, the cursor shown, mouse reports off.
            let reset = b"\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l";
            libc::write(libc::STDOUT_FILENO, reset.as_ptr().cast(), reset.len());
        }
        // A file being written at that moment is not left half-written.
        syscost_report::output::abandon();
        let line = b"syscost: ended at once by a second signal: no report\n";
        libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len());
        libc::_exit(128 + sig)
    }
}

extern "C" fn on_stop(sig: libc::c_int) {
    use std::sync::atomic::Ordering;
    // The second signal that stops syscost ends it at once: a hung end (a join that
    // waits, a view that hangs) is never more than two Ctrl-C away. A signal `run` passes
    // on to its command counts only once syscost is finishing.
    let counts = !FORWARDING.load(Ordering::Relaxed) || EXITING.load(Ordering::Relaxed);
    if counts && STOPS.fetch_add(1, Ordering::Relaxed) >= 1 {
        end_now(sig);
    }
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
    let fd = WAKE.load(std::sync::atomic::Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write is async-signal-safe; a full pipe (EAGAIN) already wakes. The
        // byte is the signal's number (all three are below 256).
        unsafe { libc::write(fd, [sig as u8].as_ptr().cast(), 1) };
    }
}

/// SIGINT, SIGTERM and SIGHUP caught, the one way syscost learns it is told to stop:
/// [`Stop::stopped`] for a loop that polls, [`Stop::wait`] for one that waits
/// between steps (the wait ends at the signal, not at its next step), and
/// [`Stop::fd`] with [`Stop::next_signal`] for an event loop, or for `run`, which
/// passes each signal on to its command.
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
        STOPS.store(0, std::sync::atomic::Ordering::Relaxed);
        FORWARDING.store(false, std::sync::atomic::Ordering::Relaxed);
        WAKE.store(write.as_raw_fd(), std::sync::atomic::Ordering::Relaxed);
        let stop = Self {
            read: read.as_raw_fd(),
        };
        // Signals of an earlier catch (the pipe lives as long as the process) are done.
        while stop.next_signal().is_some() {}
        // SA_RESTART: a blocking call the signal interrupts (a waitpid, a read of a pipe)
        // goes on; the waits that must end at a signal (poll, ppoll, epoll_wait) return
        // EINTR all the same, and the pipe wakes those that do not.
        install(
            &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP],
            on_stop,
            libc::SA_RESTART,
        );
        Ok(stop)
    }

    /// Whether a signal came since [`Stop::catch`].
    pub fn stopped(&self) -> bool {
        STOP.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The descriptor that is readable while a signal waits to be taken by
    /// [`Stop::next_signal`] (non-blocking; for an event loop to wait on).
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.read
    }

    /// The next signal that came, in order, if one waits (never blocks).
    pub fn next_signal(&self) -> Option<libc::c_int> {
        let mut b = 0u8;
        // SAFETY: reads one byte from the process's non-blocking pipe into a live byte.
        (unsafe { libc::read(self.read, (&raw mut b).cast(), 1) } == 1)
            .then_some(libc::c_int::from(b))
    }

    /// Waits until a signal comes (true) or `until` passes (`None`: no end).
    pub fn wait(&self, until: Option<std::time::Instant>) -> bool {
        loop {
            if STOP.load(std::sync::atomic::Ordering::Relaxed) {
                return true;
            }
            if until.is_some_and(|u| std::time::Instant::now() >= u) {
                return false;
            }
            crate::wake::wait(&[self.read], until);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blocking call a stop signal interrupts goes on (SA_RESTART): `run`'s wait for
    /// its command to stop, and its read of the exec status, must not fail or hang at a
    /// Ctrl-C that comes while they wait.
    #[test]
    fn stop_signals_restart_the_calls_they_interrupt() {
        let _stop = Stop::catch().expect("catch");
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: reads the current action into a zeroed struct.
            let sa = unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut sa);
                sa
            };
            assert_eq!(
                sa.sa_sigaction, on_stop as *const () as usize,
                "signal {sig}"
            );
            assert_ne!(sa.sa_flags & libc::SA_RESTART, 0, "signal {sig}");
        }
    }
}
