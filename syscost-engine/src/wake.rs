//! Waits on events, not on time: a thread of syscost sleeps until something it waits
//! for happens (a sample published, a stop asked, a record in a ring, a process gone)
//! or its next deadline, never on a short poll. [`Wake`] is an event one thread sets
//! and another waits on beside other descriptors; [`wait`] is the wait itself.

use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// How soon a wait on a [`Wake`] that has no eventfd ends to let its caller look again.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// An event set by [`Wake::set`] and waited on through [`Wake::fd`] (an eventfd: it
/// stays readable until [`Wake::clear`], so a set before the wait is not lost).
#[derive(Debug)]
pub struct Wake {
    /// `None` when no eventfd could be made (out of descriptors): the event is then
    /// never seen, and a [`wait`] on it ends within [`LOOK_AGAIN`] for its caller to
    /// look for itself.
    fd: Option<OwnedFd>,
}

impl Default for Wake {
    fn default() -> Self {
        Self::new()
    }
}

impl Wake {
    pub fn new() -> Self {
        // SAFETY: eventfd returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            log::warn!(
                "eventfd: {}: waits look again every 50 ms",
                std::io::Error::last_os_error()
            );
            return Self { fd: None };
        }
        // SAFETY: a descriptor of our own from here on.
        Self {
            fd: Some(unsafe { OwnedFd::from_raw_fd(fd) }),
        }
    }

    /// Sets the event (whoever waits on it wakes).
    pub fn set(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd. It can fail only when
        // the counter is near 2^64, when it is set anyway.
        unsafe { libc::write(self.fd(), (&raw const one).cast(), 8) };
    }

    /// Clears the event; whether it was set.
    pub fn clear(&self) -> bool {
        let mut n = 0u64;
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd.
        (unsafe { libc::read(self.fd(), (&raw mut n).cast(), 8) }) == 8
    }

    /// The descriptor that is readable while the event is set (-1 without one, which
    /// [`wait`] takes as "look again soon").
    pub fn fd(&self) -> RawFd {
        self.fd.as_ref().map_or(-1, |fd| fd.as_raw_fd())
    }
}

/// Waits until one of `fds` is readable (or hung up), or `until` passes (`None`: no end).
/// Returns, for each of `fds` in order, whether it was; all false at the deadline or at
/// a signal (the caller looks at what it waits for and waits again). A negative
/// descriptor among `fds` (a [`Wake`] without an eventfd) cannot wake it: the wait then
/// ends within `LOOK_AGAIN`, and the caller looks for itself.
pub fn wait(fds: &[RawFd], until: Option<Instant>) -> Vec<bool> {
    wait_or_hangup(fds, &[], until)
}

/// [`wait`], also ended by a hang-up of one of `hangup` (a terminal gone: read by
/// another thread, only its end is waited for); the result covers `fds` then `hangup`.
pub fn wait_or_hangup(fds: &[RawFd], hangup: &[RawFd], until: Option<Instant>) -> Vec<bool> {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| (fd, libc::POLLIN))
        .chain(hangup.iter().map(|&fd| (fd, 0)))
        .map(|(fd, events)| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    let until = match fds.iter().any(|&fd| fd < 0) {
        true => {
            let soon = Instant::now() + LOOK_AGAIN;
            Some(until.map_or(soon, |u| u.min(soon)))
        }
        false => until,
    };
    let timeout = until.map(|u| {
        let left = u.saturating_duration_since(Instant::now());
        libc::timespec {
            tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        }
    });
    // SAFETY: `polled` is a live array of its length; the timeout lives across the call.
    let n = unsafe {
        libc::ppoll(
            polled.as_mut_ptr(),
            polled.len() as libc::nfds_t,
            timeout.as_ref().map_or(std::ptr::null(), |t| t),
            std::ptr::null(),
        )
    };
    polled
        .iter()
        .map(|p| {
            n > 0
                && p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_wake_set_before_the_wait_is_seen_and_cleared_once() {
        let w = Wake::new();
        assert!(w.fd() >= 0, "an eventfd");
        assert!(!w.clear(), "a new event is clear");
        w.set();
        w.set();
        // Set before the wait: seen at once, however long the deadline.
        let far = Instant::now() + Duration::from_secs(300);
        assert_eq!(wait(&[w.fd()], Some(far)), vec![true]);
        assert!(w.clear());
        assert!(!w.clear(), "two sets clear at once");
        // Clear: the wait ends at its deadline, with nothing readable.
        assert_eq!(wait(&[w.fd()], Some(Instant::now())), vec![false]);
    }

    #[test]
    fn a_wake_without_an_eventfd_ends_a_wait_with_no_deadline_to_look_again() {
        let none = Wake { fd: None };
        assert_eq!(none.fd(), -1);
        let w = Wake::new();
        // No deadline and nothing set: only the descriptor that cannot wake ends it,
        // and it says nothing is readable.
        assert_eq!(wait(&[w.fd(), none.fd()], None), vec![false, false]);
    }

    #[test]
    fn a_wake_set_by_another_thread_ends_a_wait_with_no_deadline() {
        let w = std::sync::Arc::new(Wake::new());
        let setter = {
            let w = w.clone();
            std::thread::spawn(move || w.set())
        };
        let other = Wake::new();
        // A deadline no machine's speed reaches: only the set ends the wait in time.
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut seen = vec![false, false];
        while !seen[1] && Instant::now() < deadline {
            seen = wait(&[other.fd(), w.fd()], Some(deadline));
        }
        assert!(seen[1], "the set did not end the wait within 300 s");
        assert!(!seen[0], "the other event was never set");
        setter.join().unwrap();
    }
}
