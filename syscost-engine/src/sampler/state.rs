//! The sampler's state: what it owns and keeps between reads.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use syscost_common::StatsEntry;

use super::own_cost::OwnCost;
use crate::{
    collector::Snapshot,
    process::ProcInfo,
    process_table::{PendingSteps, ProcessTable},
    tracer::Tracer,
};

/// A sampler shared by the views of one run (the metrics endpoint's thread and the
/// main loop).
pub type SharedSampler = Arc<Mutex<Sampler>>;

/// Reads the tracer's statistics. Owns the tracer: [`Sampler::unload`] drops the
/// programs and keeps the final figures.
pub struct Sampler {
    pub(super) tracer: Option<Tracer>,
    /// The exit records (with the per-process table), and those read but not counted.
    pub(super) exits: ExitQueue,
    pub(super) slots: u32,
    pub(super) offcpu: bool,
    pub(super) features: syscost_report::profile::Features,
    /// The last consistent copy of each entry (cpu, position), for an entry that could
    /// not be copied consistently within `COPY_TRIES` (then its figures trail).
    pub(super) last: HashMap<(u32, u32), Box<StatsEntry>>,
    /// The snapshots taken when the programs were unloaded.
    pub(super) frozen: Option<Vec<Snapshot>>,
    /// `--stacks`' tables, read when the programs were unloaded.
    pub(super) final_stack_tables: Option<crate::by_stack::Raw>,
    pub(super) own_cost: OwnCost,
    /// The per-process figures (`syscost top`, `export --top`, `--per-process`).
    pub(super) table: ProcessTable,
    /// Steps read by [`Sampler::top_tick`] and not yet handed out (only when a view
    /// takes steps: `top`).
    pub(super) pending: PendingSteps,
    pub(super) steps_wanted: bool,
    pub(super) top_read_at: Instant,
    pub(super) names_cleaned_at: Instant,
    pub(super) names: crate::process::Names,
    /// Keys of live processes handed over from the per-process table so far.
    pub(super) reclaimed: u64,
    /// The per-process table's pairs in use at the last refresh, and its capacity.
    pub(super) top_pairs: (usize, usize),
    /// `--stacks`' entries of the windows closed, drained from the kernel's tables.
    pub(super) drained: crate::by_stack::Drained,
    pub(super) stack_window_at: Instant,
    /// A window swapped and not drained yet.
    pub(super) stack_window_closed: Option<u32>,
}

/// Exit records read and not yet counted: counting them takes a copy of the per-process
/// table (one syscall per 512 pairs, however many processes exited), so they wait for
/// the next refresh, or until [`settle_due`] says the table would fill meanwhile.
pub(super) struct ExitQueue {
    pub(super) ring: Option<aya::maps::RingBuf<aya::maps::MapData>>,
    /// Each queued process's tgid and its name and cgroup, named as its record was read
    /// (a short-lived container's cgroup may be gone a second later).
    pub(super) queue: Vec<(u32, ProcInfo)>,
    /// When the oldest queued record was read.
    pub(super) oldest: Instant,
    /// At the last copy of the table: the pairs the kernel side had made so far
    /// (`counter::TOP_MADE`), and the pairs left in the table once it was counted.
    pub(super) made_at_copy: u64,
    pub(super) in_use_at_copy: usize,
    /// Set when the programs are unloaded or the sampler dropped: the reader's thread,
    /// which waits on the ring with no deadline while no record waits, then ends.
    pub(super) ended: Arc<crate::wake::Wake>,
}

impl Drop for ExitQueue {
    fn drop(&mut self) {
        self.ended.set();
    }
}
