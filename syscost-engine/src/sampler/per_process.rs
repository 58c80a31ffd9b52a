//! The per-process table (`top`, `export --top`, `--per-process`): its refreshes, its
//! steps, and the exit records read on a thread of their own and counted from a copy of
//! the table.

use std::{
    collections::HashMap,
    sync::{Mutex, Weak},
    time::{Duration, Instant},
};

use anyhow::Result;
use syscost_common::{ExitRecord, TopKey, TopValue};

use super::state::Sampler;
use crate::{
    process::{self, ProcInfo},
    process_table::{PendingSteps, ProcessRow, ProcessTable, TopStep},
    tracer::Tracer,
};

/// Exit records queued at most: past them the reader leaves the rest in the kernel's
/// ring until they are counted (a full ring counts its records as unsent; their
/// processes are then counted when a refresh finds them gone).
pub(super) const EXITS_QUEUED: usize = 8192;
/// How long an exit record waits at most before it is counted.
pub(super) const EXITS_WAIT: Duration = Duration::from_secs(1);
/// How often [`Sampler::top_tick`] reads the per-process table.
pub(super) const TOP_READ_EVERY: Duration = Duration::from_secs(1);

/// How often the exit-record reader reads the ring and looks at how full the table is:
/// the kernel's ring holds about 26,000 records (1 MB of 40-byte entries), more than
/// two seconds of a machine starting 10,000 processes a second.
pub(super) const EXITS_READ_EVERY: Duration = Duration::from_millis(50);

/// Whether the queued exits are to be counted now rather than at the next refresh:
/// `queued` records, the oldest read `waited` ago, `made` pairs made in the table since
/// the last copy, which left `free` pairs of room. Due when a third of that room has
/// been taken (a churn of processes fills the table with pairs that are freed only once
/// counted: the rest is room for the time the reader takes to come round), when the
/// queue is full, or after [`EXITS_WAIT`].
pub(super) fn settle_due(queued: usize, waited: Duration, made: usize, free: usize) -> bool {
    queued > 0 && (queued >= EXITS_QUEUED || made * 3 >= free || waited >= EXITS_WAIT)
}

/// Takes the pairs of the exited processes `tgids` (in their queue's order) out of
/// `table`: each one's pairs, by key, in that order. A tgid queued twice (its pid
/// reused in between) gets its pairs with its first record: the kernel's table summed
/// both under the same keys. Returned in one vector, the first tgid's pairs then the
/// second's, with where each tgid's end (`ends[i]`; the i-th's start at `ends[i - 1]`):
/// a few allocations for any number of exits.
pub(super) fn take_exited(
    table: &mut Vec<(TopKey, TopValue)>,
    tgids: &[u32],
) -> (Vec<(TopKey, TopValue)>, Vec<usize>) {
    let mut first: HashMap<u32, usize> = HashMap::with_capacity(tgids.len());
    for (i, &t) in tgids.iter().enumerate() {
        first.entry(t).or_insert(i);
    }
    let mut taken: Vec<(usize, TopKey, TopValue)> = Vec::new();
    table.retain(|(k, v)| match first.get(&k.tgid) {
        Some(&i) => {
            taken.push((i, *k, *v));
            false
        }
        None => true,
    });
    taken.sort_unstable_by_key(|(i, k, _)| (*i, k.key));
    let mut ends = Vec::with_capacity(tgids.len());
    let mut at = 0;
    for i in 0..tgids.len() {
        while taken.get(at).is_some_and(|(j, _, _)| *j == i) {
            at += 1;
        }
        ends.push(at);
    }
    (taken.into_iter().map(|(_, k, v)| (k, v)).collect(), ends)
}

/// Steps a key of the per-process table must have stayed unchanged in before it may be
/// reclaimed (an interval each: 30 s at the default).
pub(super) const IDLE_STEPS: u32 = 30;

impl Sampler {
    /// Reads the exit records that have come (plain memory reads of the ring, no
    /// syscall) and counts their processes' last figures when `settle_due` says so
    /// (see `Sampler::settle_exits`). Called by the exit-record reader every
    /// `EXITS_READ_EVERY`; a refresh counts whatever waits too.
    pub fn drain_exits(&mut self) -> Result<()> {
        self.read_exit_ring();
        if self.exits.queue.is_empty() {
            return Ok(());
        }
        let Some(tracer) = self.tracer.as_ref() else {
            return Ok(());
        };
        // Unreadable, the counter says nothing was made: the queue waits for the second
        // or the refresh.
        let made = tracer.top_made().unwrap_or(self.exits.made_at_copy);
        if !settle_due(
            self.exits.queue.len(),
            self.exits.oldest.elapsed(),
            made.saturating_sub(self.exits.made_at_copy) as usize,
            tracer
                .top_capacity()
                .saturating_sub(self.exits.in_use_at_copy),
        ) {
            return Ok(());
        }
        let mut table = tracer.top_table()?;
        self.settle_exits(&mut table, made)
    }

    /// Moves the records in the exit ring to the queue, each process named as it comes.
    fn read_exit_ring(&mut self) {
        let Some(ring) = self.exits.ring.as_mut() else {
            return;
        };
        while self.exits.queue.len() < EXITS_QUEUED
            && let Some(item) = ring.next()
        {
            if item.len() < std::mem::size_of::<ExitRecord>() {
                continue;
            }
            // SAFETY: the kernel wrote a whole ExitRecord; read_unaligned copies it.
            let r = unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<ExitRecord>()) };
            drop(item);
            if self.exits.queue.is_empty() {
                self.exits.oldest = Instant::now();
            }
            let info = ProcInfo::of_record(&r.info, &mut self.names);
            self.exits.queue.push((r.tgid, info));
        }
    }

    /// Counts the queued exited processes' last figures from `table`, a copy of the
    /// per-process table read after their records (every thread of each had made its
    /// last call by then, so the copy holds their final figures): their keys are taken
    /// out of `table` and deleted from the kernel's, all in one syscall, so the kernel's
    /// table holds only the processes alive. What is left in `table` is the live
    /// processes' (and those gone whose records have not come). `made`: the pairs the
    /// kernel side had made when the copy was taken (read before it). When the keys
    /// cannot be deleted the records stay queued for the next copy.
    fn settle_exits(&mut self, table: &mut Vec<(TopKey, TopValue)>, made: u64) -> Result<()> {
        let tgids: Vec<u32> = self.exits.queue.iter().map(|(t, _)| *t).collect();
        let (finals, ends) = take_exited(table, &tgids);
        if let Some(tracer) = self.tracer.as_mut() {
            let keys: Vec<TopKey> = finals.iter().map(|(k, _)| *k).collect();
            if let Err(e) = tracer.delete_top(&keys) {
                // The copy's pairs go back: the next copy counts them.
                table.extend(finals);
                return Err(e);
            }
        }
        // The table as this copy left it (a refresh lowers it by what it deletes more).
        self.exits.made_at_copy = made;
        self.exits.in_use_at_copy = table.len();
        let mut step = TopStep::default();
        let mut start = 0;
        for ((tgid, info), end) in std::mem::take(&mut self.exits.queue).into_iter().zip(ends) {
            self.table.exit(tgid, info, &finals[start..end], &mut step);
            start = end;
        }
        if self.steps_wanted {
            self.pending.absorb(step);
        }
        Ok(())
    }

    /// The per-process steps are taken (by the session, every sample): what comes
    /// between two of them (exit records among it) is kept for the next.
    pub fn with_steps(mut self) -> Self {
        self.steps_wanted = true;
        self
    }

    /// The per-process rows carry the pod and container of each process's cgroup from
    /// now on, from `pods` (a session's: `SessionOptions::name_pods`).
    pub fn name_pods(&mut self, pods: std::sync::Arc<crate::kube::Pods>) {
        self.names.name_pods(pods);
    }

    /// No per-process totals since the start (`export --top`, which runs for days and
    /// only needs the steps).
    pub fn without_top_totals(mut self) -> Self {
        self.table = ProcessTable::new(false);
        self
    }

    /// The next step of the per-process figures: every process with syscalls since the
    /// last step (since the last [`Sampler::top_tick`] too, once a step was asked for).
    /// Processes that have exited are counted one last time, then deleted from the
    /// kernel's table.
    pub fn top_step(&mut self) -> Result<TopStep> {
        self.steps_wanted = true;
        self.top_refresh()?;
        Ok(self.pending.take())
    }

    /// The last step before the programs are unloaded: a second read of the table right
    /// after the first, so that a process the first found gone and whose record did not
    /// come (none could be sent) is counted too, not left for a step that never comes;
    /// a third when records came during the second.
    pub fn top_final_step(&mut self) -> Result<TopStep> {
        self.top_refresh()?;
        self.steps_wanted = true;
        self.top_refresh()?;
        // Records that came while the last refresh ran (processes it found gone, their
        // records on the way): one more refresh counts them.
        self.read_exit_ring();
        if !self.exits.queue.is_empty() {
            self.top_refresh()?;
        }
        Ok(self.pending.take())
    }

    /// Reads the per-process table every `TOP_READ_EVERY` when it is loaded, keeping
    /// it clear of exited processes in modes that show it only at the end
    /// (`--per-process`) or not for a while (`top`'s drill-down): call it when
    /// [`Sampler::next_due`] says.
    pub fn top_tick(&mut self) {
        let loaded = self.tracer.as_ref().is_some_and(Tracer::per_process_loaded);
        if loaded
            && self.top_read_at.elapsed() >= TOP_READ_EVERY
            && let Err(e) = self.top_refresh()
        {
            log::warn!("cannot read the per-process table: {e:#}");
        }
    }

    fn top_refresh(&mut self) -> Result<()> {
        if !self.tracer.as_ref().is_some_and(Tracer::per_process_loaded) {
            return Ok(());
        }
        self.top_read_at = Instant::now();
        // The records read before the copy of the table are counted from it; any that
        // come after wait for the next copy.
        self.read_exit_ring();
        let Some(tracer) = self.tracer.as_ref() else {
            return Ok(());
        };
        let made = tracer.top_made().unwrap_or(self.exits.made_at_copy);
        let mut table = tracer.top_table()?;
        self.settle_exits(&mut table, made)?;
        let Some(tracer) = self.tracer.as_mut() else {
            return Ok(());
        };
        let t = &*tracer;
        let names = &mut self.names;
        // One read of /proc/PID/status a process a step: whether it lives (a process
        // /proc cannot tell about counts as alive) and its threads.
        let step = self.table.step(
            &table,
            |pid| match process::status(pid) {
                (process::Liveness::Gone, _) => None,
                (_, threads) => Some(threads),
            },
            |pid| ProcInfo::read(pid, || t.process_name(pid), names),
        );
        tracer.forget_top(&step.forget)?;
        let in_use = table.len().saturating_sub(step.forget.len());
        if self.steps_wanted {
            self.pending.absorb(step);
        }
        // A table more than half full with keys of live processes: the keys idle longest
        // are handed over (their figures counted) down to half full, so that a busy
        // process's new calls find room however long the others live.
        let capacity = tracer.top_capacity();
        self.top_pairs = (in_use, capacity);
        if in_use * 2 > capacity {
            let mut idle = self.table.idle_keys(IDLE_STEPS);
            idle.truncate(in_use.saturating_sub(capacity / 2));
            if !idle.is_empty() {
                let finals = tracer.reclaim_top(&idle)?;
                self.reclaimed += finals.len() as u64;
                self.top_pairs.0 = in_use.saturating_sub(finals.len());
                let step = self.table.reclaimed(&finals);
                if self.steps_wanted {
                    self.pending.absorb(step);
                }
            }
        }
        self.exits.in_use_at_copy = self.top_pairs.0;
        // Names of processes gone without a call in the table (killed while blocked).
        if self.names_cleaned_at.elapsed() >= Duration::from_secs(10) {
            self.names_cleaned_at = Instant::now();
            tracer.forget_names(|pid| !process::alive(pid))?;
        }
        Ok(())
    }

    /// Keys of live processes reclaimed from the per-process table so far (see
    /// [`Sampler::top_step`]).
    pub fn top_reclaimed(&self) -> u64 {
        self.reclaimed
    }

    /// The per-process table's pairs in use at its last refresh, and its capacity.
    pub fn top_pairs(&self) -> (usize, usize) {
        self.top_pairs
    }

    /// Per-process totals since the start (or [`Sampler::reset_top`]).
    pub fn top_totals(&self) -> Vec<ProcessRow> {
        self.table.totals()
    }

    /// Starts the per-process totals again.
    pub fn reset_top(&mut self) {
        self.table.reset();
    }

    /// `syscost top`'s drill-down: process `tgid`'s calls also get full statistics (in
    /// the first slot with a pool) from now on; 0 stops.
    pub fn drill(&mut self, tgid: u32) -> Result<()> {
        // No steps are kept while drilled (the totals are): the top view takes one
        // afresh when it comes back.
        self.steps_wanted = tgid == 0;
        self.pending = PendingSteps::default();
        match self.tracer.as_mut() {
            Some(t) => t.drill(tgid),
            None => Ok(()),
        }
    }
}

/// Reads exit records on a thread of its own while the sampler lives and is loaded: the
/// ring does not fill while the records are counted, and the exited processes' keys are
/// freed before the table does (a process-churning machine makes thousands a second).
/// After each reading it lets [`EXITS_READ_EVERY`] pass, so a churn is read in batches,
/// not with a wake-up per process; while records wait to be counted it reads again then
/// (whether the table fills is looked at as often as before), and while none does it
/// sleeps until one comes (the kernel wakes the ring's reader at the first record after
/// it caught up): an idle machine costs it nothing.
pub(super) fn read_exits(sampler: Weak<Mutex<Sampler>>) {
    use std::os::fd::AsFd as _;
    use std::os::fd::AsRawFd as _;
    let (ring, ended) = {
        let Some(shared) = sampler.upgrade() else {
            return;
        };
        let s = crate::locks::lock(&shared);
        let Some(ring) = s.exits.ring.as_ref() else {
            return;
        };
        // A descriptor of its own to sleep on; without one (out of descriptors) it
        // reads every EXITS_READ_EVERY, as a timer would.
        let ring = ring
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| log::warn!("the exit-record reader reads on a timer: {e}"))
            .ok();
        (ring, s.exits.ended.clone())
    };
    let spawned = std::thread::Builder::new()
        .name("syscost-exits".into())
        .spawn(move || {
            loop {
                let waiting = {
                    let Some(shared) = sampler.upgrade() else {
                        return;
                    };
                    let mut s = crate::locks::lock(&shared);
                    if !s.loaded() {
                        return;
                    }
                    if let Err(e) = s.drain_exits() {
                        log::warn!("cannot read exited processes' figures: {e:#}");
                    }
                    !s.exits.queue.is_empty()
                };
                std::thread::sleep(EXITS_READ_EVERY);
                // (Without an eventfd for the end, the wait looks again within 50 ms.)
                match &ring {
                    Some(ring) if !waiting => {
                        crate::wake::wait(&[ring.as_raw_fd(), ended.fd()], None);
                    }
                    _ => {}
                }
            }
        });
    if let Err(e) = spawned {
        log::warn!("cannot start the exit-record reader: {e}");
    }
}
