//! The views' side of a session: what they want from the samples ([`Want`]) and how they
//! receive them ([`Subscription`]).

use super::sample::Sample;

use crate::wake::Wake;
use anyhow::Result;
use std::{
    sync::{Arc, mpsc},
    time::Duration,
};

/// What the views want in the samples beyond the figures (each costs a read or a copy
/// per sample, so none is there unless asked).
#[derive(Clone, Copy, Debug)]
pub struct Want(pub(super) u8);

impl Want {
    /// The newest slow calls.
    pub const SLOW_CALLS: Want = Want(1);
    /// The watched threads' names (a /proc read each).
    pub const THREAD_NAMES: Want = Want(2);
    /// With `--stacks`: the calls by stack so far (the tables read, joined with the
    /// samples received).
    pub const STACKS: Want = Want(4);
    /// With `--stacks`: the kernel's tables so far, unjoined (for a window's delta).
    pub const STACK_TABLES: Want = Want(8);
}

/// The samples a session publishes, in order, for one subscriber, and a descriptor that
/// is readable while one waits: a loop waits on it (beside its input, the stop) and
/// is woken by the samples themselves, not by a clock of its own.
pub struct Subscription {
    pub(super) rx: mpsc::Receiver<Arc<Sample>>,
    pub(super) wake: Arc<Wake>,
}

impl Subscription {
    /// The next sample if one waits (never blocks).
    pub fn try_recv(&self) -> Result<Arc<Sample>, mpsc::TryRecvError> {
        // Cleared before the look: a sample sent after it sets it again.
        self.wake.clear();
        self.rx.try_recv()
    }

    /// The next sample, waiting for it at most `timeout` (for a caller that does not
    /// wait on [`Subscription::fd`], which this leaves as it is).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Arc<Sample>, mpsc::RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }

    /// Readable while a sample waits (see [`crate::wake::wait`]); after it, take them
    /// all with [`Subscription::try_recv`].
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.wake.fd()
    }
}

/// Where a sample goes to a [`Subscription`]: its channel and its wake-up.
pub(super) type Subscriber = (mpsc::Sender<Arc<Sample>>, Arc<Wake>);

/// A function every published sample is handed to; it returns whether it wants more.
pub(super) type SampleHandler = Box<dyn Fn(&Arc<Sample>) -> bool + Send>;
