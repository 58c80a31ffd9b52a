//! The one place that reads the kernel side's statistics: consistent snapshots of every
//! process slot, the threads' state, the intervals between snapshots, and syscost's own
//! measured cost. Views (the live view, the text tables, the metrics endpoint) get
//! snapshots from here and never touch a map.
//!
//! Consistency: each statistics entry is written by one CPU under a sequence count (odd
//! while an update is in progress). An entry is copied from the shared mapping between
//! two reads of its count and kept only when both are the same even number, so every
//! copy is the entry's state between two of its updates: its calls match its histogram
//! and its errors its errno counts. A snapshot sums such copies, so it holds exactly the
//! calls completed on each CPU up to the moment that CPU's entry was copied; a call
//! being recorded at that moment is left for the next snapshot (at most one per CPU and
//! syscall). Counts only grow, so later snapshots never hold less, and every interval is
//! itself a valid profile. Once the target has exited nothing is in flight and the
//! figures are exact.
//!
//! The sampler's parts: `consistent` (the copy of an entry between two updates),
//! `own_cost` (the programs' run time in windows), `per_process` (the per-process table
//! and the exit records), `stack_window` (`--stacks`' windows), `intervals` (what the
//! views make of successive snapshots: intervals, threads' states).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use anyhow::Result;

use crate::{
    collector::Snapshot,
    process_table::{PendingSteps, ProcessTable},
    tracer::Tracer,
};

mod consistent;
mod intervals;
mod own_cost;
mod per_process;
mod stack_window;
mod state;
#[cfg(test)]
mod tests;

use self::{
    consistent::copy_or_last,
    per_process::{TOP_READ_EVERY, read_exits},
    stack_window::stack_window,
    state::ExitQueue,
};
pub use self::{
    intervals::{Intervals, Step, ThreadState, monotonic_ns, thread_state},
    own_cost::{NEEDS_SYS_ADMIN, OwnCost, OwnCostReading},
    state::{Sampler, SharedSampler},
};

impl Sampler {
    /// A sampler of `tracer`; `run_stats`: measure syscost's own cost.
    pub fn new(mut tracer: Tracer, run_stats: bool) -> Self {
        let exits = if tracer.per_process_loaded() {
            tracer
                .take_exit_ring()
                .map_err(|e| log::warn!("exit records unavailable: {e:#}"))
                .ok()
        } else {
            None
        };
        Self {
            exits: ExitQueue {
                ring: exits,
                queue: Vec::new(),
                oldest: Instant::now(),
                made_at_copy: 0,
                in_use_at_copy: 0,
                ended: Arc::new(crate::wake::Wake::new()),
            },
            slots: tracer.slots(),
            offcpu: tracer.offcpu_tracked(),
            features: tracer.features().clone(),
            tracer: Some(tracer),
            last: HashMap::new(),
            final_stack_tables: None,
            frozen: None,
            own_cost: OwnCost::new(run_stats),
            table: ProcessTable::new(true),
            pending: PendingSteps::default(),
            steps_wanted: false,
            top_read_at: Instant::now(),
            names_cleaned_at: Instant::now(),
            names: Default::default(),
            reclaimed: 0,
            top_pairs: (0, 0),
            drained: Default::default(),
            stack_window_at: Instant::now(),
            stack_window_closed: None,
        }
    }

    /// Shares it between threads. With the per-process table, a thread of its own reads
    /// the exit records as they come (see [`Sampler::drain_exits`]).
    pub fn shared(self) -> SharedSampler {
        let reads_exits = self.exits.ring.is_some();
        let shared = Arc::new(Mutex::new(self));
        if reads_exits {
            read_exits(Arc::downgrade(&shared));
        }
        shared
    }

    /// Whether the off-CPU split is measured.
    pub fn offcpu_tracked(&self) -> bool {
        self.offcpu
    }

    /// The features the programs have on, and the default ones this kernel lacks.
    pub fn features(&self) -> &syscost_report::profile::Features {
        &self.features
    }

    /// Cumulative snapshots of every slot, made of consistent entries.
    pub fn snapshots(&mut self) -> Result<Vec<Snapshot>> {
        // The own-cost windows follow [`Sampler::tick`] only: a window opened here would
        // stay open (and cost every program run on the machine) in a mode that never
        // ticks.
        let Some(tracer) = self.tracer.as_mut() else {
            return Ok(self.frozen.clone().unwrap_or_default());
        };
        tracer.flush_log();
        let tracer = &*tracer;
        let mut snaps = vec![Snapshot::empty(); self.slots as usize];
        for (cpu, used) in (0..).zip(tracer.pool_in_use()?) {
            for i in 0..used {
                let Some(src) = tracer.pool_entry(cpu, i) else {
                    continue;
                };
                // SAFETY: `src` is an element of the tracer's live mapping.
                let Some(entry) = (unsafe { copy_or_last(&mut self.last, (cpu, i), src) }) else {
                    continue;
                };
                if let Some(snap) = snaps.get_mut(entry.slot as usize) {
                    snap.add_entry(entry);
                }
            }
        }
        for (slot, snap) in (0..).zip(snaps.iter_mut()) {
            snap.counters = tracer.counters(slot)?;
        }
        Ok(snaps)
    }

    /// The cumulative snapshot of one slot.
    pub fn snapshot(&mut self, slot: u32) -> Result<Snapshot> {
        Ok(self
            .snapshots()?
            .into_iter()
            .nth(slot as usize)
            .unwrap_or_else(Snapshot::empty))
    }

    /// Takes the final snapshots, then detaches and unloads the programs; the final
    /// figures stay readable.
    pub fn unload(&mut self) -> Result<()> {
        if let Some(tracer) = &self.tracer {
            // A table that cannot be read costs the stacks, never the profile.
            let drained = &self.drained;
            let stacks = self
                .features
                .on
                .contains(&"stacks")
                .then(|| tracer.stack_tables().map(|raw| drained.joined(raw)))
                .and_then(|r| {
                    r.map_err(|e| {
                        eprintln!("syscost: --stacks: the calls by stack were not read: {e:#}")
                    })
                    .ok()
                });
            let last = self.snapshots()?;
            self.own_cost.tick(self.tracer.as_ref(), true);
            self.frozen = Some(last);
            self.final_stack_tables = stacks;
            self.tracer = None;
            self.exits.ended.set();
        }
        Ok(())
    }

    /// Whether the programs are still loaded.
    pub fn loaded(&self) -> bool {
        self.tracer.is_some()
    }

    /// Opens or closes the own-cost window when due (see [`Sampler::next_due`]), or
    /// never called (no window is opened then).
    pub fn tick(&mut self) {
        self.own_cost.tick(self.tracer.as_ref(), false);
    }

    /// When the clock has housekeeping to do next: an own-cost window to open or close
    /// (`own_cost`: the windows are wanted), the per-process table's reading
    /// ([`Sampler::top_tick`]), a `--stacks` window to swap; `None` when nothing is due
    /// but the samples.
    pub fn next_due(&self, own_cost: bool) -> Option<Instant> {
        let tracer = self.tracer.as_ref()?;
        let own = own_cost.then(|| self.own_cost.next_due()).flatten();
        let top = tracer
            .per_process_loaded()
            .then(|| self.top_read_at + TOP_READ_EVERY);
        let stacks = (self.features.on.contains(&"stacks") && self.stack_window_closed.is_none())
            .then(|| self.stack_window_at + stack_window());
        [own, top, stacks].into_iter().flatten().min()
    }

    /// syscost's own measured cost.
    pub fn own_cost(&self) -> &OwnCost {
        &self.own_cost
    }

    /// The kernel's state of these threads (those it has a slot for).
    pub fn threads(&self, tids: &[u32]) -> Vec<ThreadState> {
        let Some(tracer) = self.tracer.as_ref() else {
            return Vec::new();
        };
        let now = monotonic_ns();
        tids.iter()
            .filter_map(|&tid| tracer.thread(tid))
            .map(|t| thread_state(&t, now))
            .collect()
    }
}
