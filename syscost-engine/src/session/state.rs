//! What a session is made of: the state its clock and its handles share, and what it
//! watches.

use super::sample::Sample;
use super::subscription::{SampleHandler, Subscriber};

use crate::{
    call_ring::reader::{Reader, SlowLog},
    sampler::SharedSampler,
    wake::Wake,
};
use std::{
    os::fd::OwnedFd,
    path::PathBuf,
    sync::{Arc, Mutex, atomic::AtomicBool},
    thread::JoinHandle,
    time::Duration,
};
use syscost_report::profile::Features;

/// Whose threads the samples describe.
#[derive(Debug, Default)]
pub enum Watch {
    /// Nobody's (`top`, `export`).
    #[default]
    Nothing,
    /// A process: its threads, and whether it has exited (through its pidfd).
    Process { pid: u32, pidfd: OwnedFd },
    /// A cgroup's directory: the threads in it and in its descendants.
    Cgroup(PathBuf),
}

/// "No end", where a timer needs a time all the same (one never awaited, a century).
pub const NO_END: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The interval between samples unless a command is told otherwise (`-i`).
pub const INTERVAL: Duration = Duration::from_secs(1);

/// The shortest interval: a table or a screen more often than that is unreadable, and
/// each sample reads the maps.
pub const SHORTEST_INTERVAL: Duration = Duration::from_millis(100);

pub(super) struct Shared {
    pub(super) sampler: SharedSampler,
    pub(super) slow_log: Option<Arc<Mutex<SlowLog>>>,
    /// `--stacks`' samples as the reader names them.
    pub(super) stack_samples: Option<Arc<Mutex<crate::by_stack::Samples>>>,
    pub(super) watch: Mutex<Watch>,
    pub(super) interval: Duration,
    pub(super) latest: Mutex<Arc<Sample>>,
    pub(super) subscribers: Mutex<Vec<Subscriber>>,
    /// Functions every sample is handed to as it is published (see
    /// [`SessionHandle::on_sample`]).
    pub(super) handlers: Mutex<Vec<SampleHandler>>,
    /// Held while a sample is taken and sent, so samples go out in order.
    pub(super) publishing: Mutex<u64>,
    /// A process drilled into (`top`): no per-process steps meanwhile.
    pub(super) drilled: AtomicBool,
    /// Open the own-cost windows: a view shows the own cost (they cost every traced
    /// syscall while open, so not for `run` or a text mode).
    pub(super) own_cost: AtomicBool,
    /// [`Want`] bits.
    pub(super) wants: std::sync::atomic::AtomicU8,
    /// Set to end the clock, which waits on `wake` between its steps (so the end does
    /// not wait for a step).
    pub(super) stop: AtomicBool,
    /// Wakes the clock: the end, or a change of what it watches or measures.
    pub(super) wake: Wake,
    /// Counts the changes of `watch` (the clock watches the new process's exit).
    pub(super) watch_generation: std::sync::atomic::AtomicU64,
    pub(super) offcpu: bool,
    pub(super) features: Features,
    /// The pods and containers of cgroups, named for the views (`SessionHandle::pod_labels`) and
    /// the per-process rows (`SessionOptions::name_pods`).
    pub(super) pods: Arc<crate::kube::Pods>,
}

/// The owner of the sampler, the slow-call reader and the clock.
pub struct Session {
    pub(super) shared: Arc<Shared>,
    pub(super) clock: Option<JoinHandle<()>>,
    pub(super) slow: Option<Reader>,
}

/// What a view holds of a session: samples and requests, nothing that ends it.
#[derive(Clone)]
pub struct SessionHandle {
    pub(super) shared: Arc<Shared>,
}
