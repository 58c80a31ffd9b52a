//! What a session publishes: a [`Sample`] of every slot, thread and step.

use crate::{
    collector::Snapshot,
    process_table::TopStep,
    sampler::{OwnCostReading, ThreadState},
};
use anyhow::Result;
use std::{sync::Arc, time::Instant};
use syscost_report::profile::{CallStacks, SlowCall};

/// A thread of the watched process (or cgroup) as the kernel keeps it, with its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    pub state: ThreadState,
    pub comm: String,
}

/// What the session saw at one moment. Immutable once published.
#[derive(Debug)]
pub struct Sample {
    /// 1 for the first sample, one more for each after it.
    pub seq: u64,
    pub taken: Instant,
    /// When the sample before it was taken: `top` is the per-process step since then.
    pub since: Instant,
    /// Every slot's figures since the programs were loaded.
    pub snapshots: Vec<Snapshot>,
    /// The watched threads the kernel has a slot for (their names once a view asked,
    /// [`SessionHandle::want_thread_names`](super::SessionHandle::want_thread_names)),
    /// and how many threads there are.
    pub threads: Vec<ThreadInfo>,
    pub thread_count: usize,
    /// The watched process has exited.
    pub exited: bool,
    /// Taken because an interval ended (the clock's tick, which may come with the
    /// watched process's exit); not a sample asked for
    /// ([`SessionHandle::sample_now`](super::SessionHandle::sample_now)) or taken at an
    /// event between ticks (the watched process's exit, an own-cost window closed),
    /// which a view printing intervals does not print.
    pub due: bool,
    /// syscost's own cost: the latest figure, or why there is none; and the program run
    /// time measured so far with the wall time it was measured over, ns.
    pub own_cost: Result<Option<OwnCostReading>, String>,
    pub own_cost_totals: Option<(u64, u64)>,
    /// (process, syscall) pairs of live processes handed over from the per-process
    /// table so far to make room (see `Sampler::top_step`).
    pub top_reclaimed: u64,
    /// The per-process table's pairs in use at its last refresh, and its capacity.
    pub top_pairs: (usize, usize),
    /// The per-process figures since the previous sample (empty without the table, and
    /// while a process is drilled into).
    pub top: TopStep,
    /// With `--slow`, once a view asked for them
    /// ([`Want::SLOW_CALLS`](super::Want::SLOW_CALLS)): the newest slow calls (at most
    /// 200, newest first) and how many have been received.
    pub slow: Option<(Vec<SlowCall>, u64)>,
    /// With `--stacks`, once a view asked for them
    /// ([`Want::STACKS`](super::Want::STACKS)): the calls by stack so far.
    pub stacks: Option<Arc<CallStacks>>,
    /// With `--stacks`, once a view asked for them
    /// ([`Want::STACK_TABLES`](super::Want::STACK_TABLES)): the kernel's tables so far,
    /// as read (two of them make a window's calls by stack: [`crate::by_stack::Raw::since`],
    /// [`SessionHandle::assemble_stacks`](super::SessionHandle::assemble_stacks)).
    pub stack_tables: Option<Arc<crate::by_stack::Raw>>,
    /// The programs were unloaded before it was taken: its figures are final.
    pub unloaded: bool,
}

/// The snapshot of `slot` in `snapshots` (empty when there is no such slot).
pub(super) fn slot_of(snapshots: &[Snapshot], slot: u32) -> Snapshot {
    snapshots
        .get(slot as usize)
        .cloned()
        .unwrap_or_else(Snapshot::empty)
}

impl Sample {
    /// The snapshot of `slot` (empty when there is no such slot).
    pub fn snapshot(&self, slot: u32) -> Snapshot {
        slot_of(&self.snapshots, slot)
    }
}
