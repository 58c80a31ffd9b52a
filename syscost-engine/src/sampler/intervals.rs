//! What the views make of successive snapshots: intervals, and threads' states.

use std::time::{Duration, Instant};

use syscost_common::{KEY_FORK_CHILD, KEY_NONE, ThreadSlot};
use syscost_report::syscall_names::SyscallId;

use crate::collector::Snapshot;

/// A thread as the kernel keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadState {
    pub tid: u32,
    /// Completed syscalls since the thread was first seen, and their time.
    pub calls: u64,
    pub total_ns: u64,
    /// The syscall it is inside now and for how long so far.
    pub in_syscall: Option<(SyscallId, Duration)>,
    /// Whether it is switched out now (blocked or waiting for a CPU) inside that call.
    pub switched_out: bool,
}

/// CLOCK_MONOTONIC in ns: the clock of `bpf_ktime_get_ns`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A thread slot as the views show it, at monotonic time `now_ns`.
pub fn thread_state(t: &ThreadSlot, now_ns: u64) -> ThreadState {
    let in_syscall = (t.enter_ns != 0 && t.key != KEY_NONE && t.key != KEY_FORK_CHILD).then(|| {
        (
            SyscallId::of(t.key, t.nr),
            Duration::from_nanos(now_ns.saturating_sub(t.enter_ns)),
        )
    });
    ThreadState {
        tid: t.tid,
        calls: t.calls,
        total_ns: t.total_ns,
        switched_out: in_syscall.is_some() && t.off_since_ns != 0,
        in_syscall,
    }
}

/// Successive snapshots of one slot turned into cumulative figures (since the start or
/// the last reset) and intervals.
#[derive(Clone, Debug)]
pub struct Intervals {
    baseline: Option<Snapshot>,
    previous: Snapshot,
    previous_at: Instant,
}

/// One step of an [`Intervals`].
#[derive(Clone, Debug)]
pub struct Step {
    pub cumulative: Snapshot,
    pub interval: Snapshot,
    pub interval_secs: f64,
}

impl Intervals {
    /// Starts at `first`: what it holds counts in the first step's cumulative figures.
    pub fn new(first: Snapshot) -> Self {
        Self::new_at(first, Instant::now())
    }

    /// Starts at `first`, taken at `at`.
    pub fn new_at(first: Snapshot, at: Instant) -> Self {
        Self {
            baseline: None,
            previous: first,
            previous_at: at,
        }
    }

    /// The next step, from the newest cumulative snapshot, taken now.
    pub fn next(&mut self, now: Snapshot) -> Step {
        self.next_at(now, Instant::now())
    }

    /// The next step, from a cumulative snapshot taken at `at` (a session's sample: its
    /// interval is timed by the samples, not by when they are shown).
    pub fn next_at(&mut self, now: Snapshot, at: Instant) -> Step {
        let step = Step {
            cumulative: match &self.baseline {
                Some(b) => now.since(b),
                None => now.clone(),
            },
            interval: now.since(&self.previous),
            interval_secs: at.duration_since(self.previous_at).as_secs_f64(),
        };
        self.previous = now;
        self.previous_at = at;
        step
    }

    /// Counts from the latest snapshot on (the live view's `r`).
    pub fn reset(&mut self) {
        self.baseline = Some(self.previous.clone());
    }
}
