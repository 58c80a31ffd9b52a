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

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, Ordering, fence},
    },
    time::{Duration, Instant},
};

use anyhow::Result;
use syscost_common::{
    ExitRecord, KEY_FORK_CHILD, KEY_NONE, StatsEntry, ThreadSlot, TopKey, TopValue,
};

use crate::{
    collector::Snapshot,
    process::{self, ProcInfo},
    process_table::{PendingSteps, ProcessRow, ProcessTable, TopStep},
    tracer::{RunTimeStats, Tracer},
};
use syscost_report::syscall_names::SyscallId;

/// Copies of one entry tried before the previous consistent copy is used instead.
const COPY_TRIES: u32 = 10_000;

/// A sampler shared by the views of one run (the metrics endpoint's thread and the
/// main loop).
pub type SharedSampler = Arc<Mutex<Sampler>>;

/// Copies an entry when its sequence count says no update was in progress.
///
/// # Safety
/// `src` points into the live, read-only mapping of the pool.
unsafe fn copy_consistent(src: *const StatsEntry) -> Option<StatsEntry> {
    // The count is the entry's first field, 8-byte aligned.
    let seq = unsafe { &*(src as *const AtomicU64) };
    for _ in 0..COPY_TRIES {
        let before = seq.load(Ordering::Acquire);
        if before & 1 == 0 {
            let copy = unsafe { std::ptr::read_volatile(src) };
            fence(Ordering::Acquire);
            if seq.load(Ordering::Relaxed) == before {
                return Some(copy);
            }
        }
        std::hint::spin_loop();
    }
    None
}

/// A consistent copy of the entry at `src`, kept in `last` under `at`; the last one kept
/// when the entry changed without pause for `COPY_TRIES` tries; `None` when no copy was
/// ever made (the entry is left out, as if not yet used).
///
/// # Safety
/// As [`copy_consistent`].
unsafe fn copy_or_last(
    last: &mut HashMap<(u32, u32), Box<StatsEntry>>,
    at: (u32, u32),
    src: *const StatsEntry,
) -> Option<&StatsEntry> {
    match unsafe { copy_consistent(src) } {
        Some(e) => {
            let kept = last.entry(at).or_insert_with(|| Box::new(StatsEntry::ZERO));
            **kept = e;
            Some(kept)
        }
        None => last.get(&at).map(|e| &**e),
    }
}

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

/// syscost's own cost, measured in windows (see [`OwnCost`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwnCostReading {
    /// Average run time of one program run, ns.
    pub ns_per_run: f64,
    /// Share of one CPU spent in syscost's programs, percent.
    pub cpu_percent: f64,
}

impl std::fmt::Display for OwnCostReading {
    /// `95 ns/event, 0.40% CPU`: how every view shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} ns/event, {:.2}% CPU",
            self.ns_per_run, self.cpu_percent
        )
    }
}

/// Why there is no own-cost figure with CAP_BPF and CAP_PERFMON alone.
pub const NEEDS_SYS_ADMIN: &str = "n/a: BPF run-time statistics need CAP_SYS_ADMIN";

/// BPF run-time statistics make the kernel read the clock around every program run on
/// the machine (about 195 ns per traced syscall here), so they are on only for a
/// window of `WINDOW` in every `PERIOD`: a tenth of that price, and a fresh figure every
/// 10 s.
pub struct OwnCost {
    window: Option<(RunTimeStats, Instant, (u64, u64))>,
    next_window: Instant,
    last: Option<OwnCostReading>,
    /// Why there is no figure (no CAP_SYS_ADMIN, say), once known.
    unavailable: Option<String>,
    /// Program run time within windows, and the windows' wall time, ns (for the
    /// metrics endpoint's counters).
    run_ns: u64,
    measured_ns: u64,
    wanted: bool,
}

impl OwnCost {
    pub const WINDOW: Duration = Duration::from_secs(1);
    pub const PERIOD: Duration = Duration::from_secs(10);

    fn new(wanted: bool) -> Self {
        let unavailable = if !wanted {
            Some("off".to_string())
        } else if !crate::privileges::can_enable_run_stats() {
            Some(NEEDS_SYS_ADMIN.to_string())
        } else {
            None
        };
        Self {
            window: None,
            next_window: Instant::now(),
            last: None,
            unavailable,
            run_ns: 0,
            measured_ns: 0,
            wanted,
        }
    }

    /// Opens or closes the measurement window when due; `closing`: close an open window
    /// now (the programs are about to be unloaded).
    fn tick(&mut self, tracer: Option<&Tracer>, closing: bool) {
        let now = Instant::now();
        if let Some((_, opened, (t0, c0))) = &self.window {
            let elapsed = now.duration_since(*opened);
            if elapsed < Self::WINDOW && !closing {
                return;
            }
            let (t0, c0) = (*t0, *c0);
            if let Some(tracer) = tracer {
                let (t1, c1) = tracer.program_run_totals();
                let (dt, dc) = (t1.saturating_sub(t0), c1.saturating_sub(c0));
                self.run_ns += dt;
                self.measured_ns += elapsed.as_nanos() as u64;
                self.last = Some(OwnCostReading {
                    ns_per_run: if dc == 0 { 0.0 } else { dt as f64 / dc as f64 },
                    cpu_percent: 100.0 * dt as f64 / elapsed.as_nanos().max(1) as f64,
                });
            }
            self.window = None;
            self.next_window = now + Self::PERIOD - Self::WINDOW;
            return;
        }
        let Some(tracer) = tracer else { return };
        if closing || !self.wanted || self.unavailable.is_some() || now < self.next_window {
            return;
        }
        match RunTimeStats::enable() {
            Ok(stats) => self.window = Some((stats, now, tracer.program_run_totals())),
            Err(e) => self.unavailable = Some(format!("n/a: {e:#}")),
        }
    }

    /// When [`OwnCost::tick`] has something to do next: the open window's end, or the
    /// next window's start; `None` when no window will open.
    fn next_due(&self) -> Option<Instant> {
        match &self.window {
            Some((_, opened, _)) => Some(*opened + Self::WINDOW),
            None => (self.wanted && self.unavailable.is_none()).then_some(self.next_window),
        }
    }

    /// Why there is no figure and will be none (privileges, `--no-run-stats`), if so.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// The latest figure, or why there is none.
    pub fn reading(&self) -> Result<Option<OwnCostReading>, String> {
        match (&self.last, &self.unavailable) {
            (Some(r), _) => Ok(Some(*r)),
            (None, Some(why)) => Err(why.clone()),
            (None, None) => Ok(None),
        }
    }

    /// Program run time measured so far and the wall time it was measured over, ns;
    /// `None` when run-time statistics are off or unavailable.
    pub fn totals(&self) -> Option<(u64, u64)> {
        (self.wanted && self.unavailable.is_none()).then_some((self.run_ns, self.measured_ns))
    }
}

/// Reads the tracer's statistics. Owns the tracer: [`Sampler::unload`] drops the
/// programs and keeps the final figures.
pub struct Sampler {
    tracer: Option<Tracer>,
    /// The exit records (with the per-process table), and those read but not counted.
    exits: ExitQueue,
    slots: u32,
    offcpu: bool,
    features: syscost_report::profile::Features,
    /// The last consistent copy of each entry (cpu, position), for an entry that could
    /// not be copied consistently within `COPY_TRIES` (then its figures trail).
    last: HashMap<(u32, u32), Box<StatsEntry>>,
    /// The snapshots taken when the programs were unloaded.
    frozen: Option<Vec<Snapshot>>,
    /// `--stacks`' tables, read when the programs were unloaded.
    stacks: Option<crate::stacks::Raw>,
    own_cost: OwnCost,
    /// The per-process figures (`syscost top`, `export --top`, `--per-process`).
    table: ProcessTable,
    /// Steps read by [`Sampler::top_tick`] and not yet handed out (only when a view
    /// takes steps: `top`).
    pending: PendingSteps,
    steps_wanted: bool,
    top_read_at: Instant,
    names_cleaned_at: Instant,
    names: crate::process::Names,
    /// Keys of live processes handed over from the per-process table so far.
    reclaimed: u64,
    /// The per-process table's pairs in use at the last refresh, and its capacity.
    top_pairs: (usize, usize),
    /// `--stacks`' entries of the windows closed, drained from the kernel's tables.
    drained: crate::stacks::Drained,
    stack_window_at: Instant,
    /// A window swapped and not drained yet.
    stack_window_closed: Option<u32>,
}

/// How long a `--stacks` window lasts: the kernel's tables hold what one window's calls
/// made (a second of a busy machine's processes and stacks), not the run's.
fn stack_window() -> Duration {
    // The tests' way to make windows short: debug builds only, swapped 20 times a
    // second at the most however short they ask.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("SYSCOST_STACKS_WINDOW_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Duration::from_millis(ms).max(Duration::from_millis(50));
    }
    Duration::from_secs(1)
}

/// Exit records read and not yet counted: counting them takes a copy of the per-process
/// table (one syscall per 512 pairs, however many processes exited), so they wait for
/// the next refresh, or until [`settle_due`] says the table would fill meanwhile.
struct ExitQueue {
    ring: Option<aya::maps::RingBuf<aya::maps::MapData>>,
    /// Each queued process's tgid and its name and cgroup, named as its record was read
    /// (a short-lived container's cgroup may be gone a second later).
    queue: Vec<(u32, ProcInfo)>,
    /// When the oldest queued record was read.
    oldest: Instant,
    /// At the last copy of the table: the pairs the kernel side had made so far
    /// (`counter::TOP_MADE`), and the pairs left in the table once it was counted.
    made_at_copy: u64,
    in_use_at_copy: usize,
    /// Set when the programs are unloaded or the sampler dropped: the reader's thread,
    /// which waits on the ring with no deadline while no record waits, then ends.
    ended: Arc<crate::wake::Wake>,
}

impl Drop for ExitQueue {
    fn drop(&mut self) {
        self.ended.set();
    }
}

/// Exit records queued at most: past them the reader leaves the rest in the kernel's
/// ring until they are counted (a full ring counts its records as unsent; their
/// processes are then counted when a refresh finds them gone).
const EXITS_QUEUED: usize = 8192;
/// How long an exit record waits at most before it is counted.
const EXITS_WAIT: Duration = Duration::from_secs(1);
/// How often [`Sampler::top_tick`] reads the per-process table.
const TOP_READ_EVERY: Duration = Duration::from_secs(1);

/// How often the exit-record reader reads the ring and looks at how full the table is:
/// the kernel's ring holds about 26,000 records (1 MB of 40-byte entries), more than
/// two seconds of a machine starting 10,000 processes a second.
const EXITS_READ_EVERY: Duration = Duration::from_millis(50);

/// Whether the queued exits are to be counted now rather than at the next refresh:
/// `queued` records, the oldest read `waited` ago, `made` pairs made in the table since
/// the last copy, which left `free` pairs of room. Due when a third of that room has
/// been taken (a churn of processes fills the table with pairs that are freed only once
/// counted: the rest is room for the time the reader takes to come round), when the
/// queue is full, or after [`EXITS_WAIT`].
fn settle_due(queued: usize, waited: Duration, made: usize, free: usize) -> bool {
    queued > 0 && (queued >= EXITS_QUEUED || made * 3 >= free || waited >= EXITS_WAIT)
}

/// Takes the pairs of the exited processes `tgids` (in their queue's order) out of
/// `table`: each one's pairs, by key, in that order. A tgid queued twice (its pid
/// reused in between) gets its pairs with its first record: the kernel's table summed
/// both under the same keys. Returned in one vector, the first tgid's pairs then the
/// second's, with where each tgid's end (`ends[i]`; the i-th's start at `ends[i - 1]`):
/// a few allocations for any number of exits.
fn take_exited(
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
const IDLE_STEPS: u32 = 30;

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
            stacks: None,
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

    /// Reads the exit records that have come (plain memory reads of the ring, no
    /// syscall) and counts their processes' last figures when [`settle_due`] says so
    /// (see [`Sampler::settle_exits`]). Called by the exit-record reader every
    /// [`EXITS_READ_EVERY`]; a refresh counts whatever waits too.
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
            self.stacks = stacks;
            self.tracer = None;
            self.exits.ended.set();
        }
        Ok(())
    }

    /// `--stacks`' tables now (as read when the programs were unloaded, once they are);
    /// `None` without `--stacks`.
    pub fn stack_tables(&self) -> Result<Option<crate::stacks::Raw>> {
        if !self.features.on.contains(&"stacks") {
            return Ok(None);
        }
        match &self.tracer {
            Some(t) => t.stack_tables().map(|raw| Some(self.drained.joined(raw))),
            None => Ok(self.stacks.clone()),
        }
    }

    /// With `--stacks`, once a window has passed: swaps the window the programs count
    /// in (see [`Tracer::swap_stack_window`]). The caller waits on what is returned, with
    /// this sampler unlocked (an RCU grace period), then calls
    /// [`Sampler::drain_stack_window`]. Call it when [`Sampler::next_due`] says.
    pub fn swap_stack_window(&mut self) -> Option<std::sync::Arc<crate::tracer::GracePeriod>> {
        if !self.features.on.contains(&"stacks")
            || self.stack_window_closed.is_some()
            || self.stack_window_at.elapsed() < stack_window()
        {
            return None;
        }
        self.stack_window_at = Instant::now();
        match self.tracer.as_mut()?.swap_stack_window() {
            Ok(Some((closed, wait))) => {
                self.stack_window_closed = Some(closed);
                Some(wait)
            }
            Ok(None) => None,
            Err(e) => {
                log::warn!("{e:#}");
                None
            }
        }
    }

    /// Drains the window [`Sampler::swap_stack_window`] closed, once its wait has
    /// returned: its entries are kept here, the kernel's tables emptied of them.
    /// `waited`: whether the wait returned (without it, nothing is drained: the window's
    /// entries stay, and the next swap counts in them again).
    pub fn drain_stack_window(&mut self, waited: bool) {
        let Some(closed) = self.stack_window_closed.take() else {
            return;
        };
        let Some(tracer) = self.tracer.as_mut() else {
            return;
        };
        if !waited {
            return;
        }
        match tracer.drain_stack_window(closed) {
            Ok(raw) if !raw.calls.is_empty() || !raw.frames.is_empty() => {
                if log::log_enabled!(log::Level::Debug) {
                    let pids: std::collections::BTreeSet<u32> =
                        raw.calls.iter().map(|(k, _)| k.tgid).collect();
                    let shown: Vec<String> = pids.iter().take(32).map(u32::to_string).collect();
                    log::debug!(
                        "--stacks: window {closed} drained, {} entries and {} walks: pids {}{}",
                        raw.calls.len(),
                        raw.frames.len(),
                        shown.join(" "),
                        if pids.len() > 32 { " ..." } else { "" }
                    );
                }
                self.drained.keep(raw);
            }
            Ok(_) => log::debug!("--stacks: window {closed} drained, empty"),
            Err(e) => log::warn!("cannot drain the calls-by-stack window: {e:#}"),
        }
    }

    /// `--stacks`' tables as read when the programs were unloaded (`None` before, or
    /// without `--stacks`).
    pub fn take_stacks(&mut self) -> Option<crate::stacks::Raw> {
        self.stacks.take()
    }

    /// The per-process steps are taken (by the session, every sample): what comes
    /// between two of them (exit records among it) is kept for the next.
    pub fn with_steps(mut self) -> Self {
        self.steps_wanted = true;
        self
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

    /// Reads the per-process table every [`TOP_READ_EVERY`] when it is loaded, keeping
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

/// Reads exit records on a thread of its own while the sampler lives and is loaded: the
/// ring does not fill while the records are counted, and the exited processes' keys are
/// freed before the table does (a process-churning machine makes thousands a second).
/// After each reading it lets [`EXITS_READ_EVERY`] pass, so a churn is read in batches,
/// not with a wake-up per process; while records wait to be counted it reads again then
/// (whether the table fills is looked at as often as before), and while none does it
/// sleeps until one comes (the kernel wakes the ring's reader at the first record after
/// it caught up): an idle machine costs it nothing.
fn read_exits(sampler: Weak<Mutex<Sampler>>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each exited process takes its own pairs out of the copy, by key; a pid queued
    /// twice takes them with its first record; the rest of the copy stays.
    #[test]
    fn exited_processes_take_their_own_pairs() {
        let k = |tgid, key| TopKey { tgid, key };
        let v = |calls| TopValue {
            calls,
            ..Default::default()
        };
        let mut table = vec![
            (k(7, 3), v(1)),
            (k(5, 1), v(2)),
            (k(7, 1), v(3)),
            (k(9, 2), v(4)),
            (k(5, 4), v(5)),
        ];
        let (pairs, ends) = take_exited(&mut table, &[7, 5, 7, 8]);
        assert_eq!(ends, vec![2, 4, 4, 4]);
        assert_eq!(pairs[..2], [(k(7, 1), v(3)), (k(7, 3), v(1))]);
        assert_eq!(pairs[2..4], [(k(5, 1), v(2)), (k(5, 4), v(5))]);
        assert_eq!(pairs.len(), 4, "the pid's second record and 8 have none");
        assert_eq!(table, vec![(k(9, 2), v(4))]);
    }

    /// The queued exits wait for the refresh unless the table fills, the queue is full
    /// or the oldest has waited a second; nothing queued is never due.
    #[test]
    fn exits_are_counted_early_only_when_the_table_fills_or_they_waited() {
        let soon = Duration::from_millis(100);
        assert!(!settle_due(0, EXITS_WAIT, 16_384, 0), "nothing queued");
        assert!(!settle_due(10, soon, 100, 15_000));
        assert!(
            settle_due(10, soon, 5_000, 15_000),
            "a third of the room taken"
        );
        assert!(!settle_due(10, soon, 4_999, 15_000));
        assert!(settle_due(10, soon, 0, 0), "no room left");
        assert!(settle_due(1, EXITS_WAIT, 0, 15_000), "waited a second");
        assert!(settle_due(EXITS_QUEUED, soon, 0, 15_000), "the queue full");
    }
    use syscost_common::syscall_key;

    /// A writer that updates an entry the way the kernel side does (sequence count odd
    /// while the figures change, each figure written on its own) on another thread,
    /// without pause, and a reader copying it at the same time: every copy kept is
    /// whole (its calls are its histogram's sum, its errors its errno counts, its time
    /// `calls` times the step), and the copies only grow.
    #[test]
    fn copies_made_against_a_racing_writer_are_whole() {
        use std::sync::atomic::AtomicBool;
        const NS: u64 = 1_000;
        struct Shared(std::cell::UnsafeCell<StatsEntry>);
        // SAFETY: the writer writes through volatile stores under the sequence count,
        // the reader reads through copy_consistent: the protocol under test.
        unsafe impl Sync for Shared {}
        let shared = Arc::new(Shared(std::cell::UnsafeCell::new(StatsEntry::ZERO)));
        let stop = Arc::new(AtomicBool::new(false));
        // Reader and writer on CPUs of their own where there are two: a real race, not
        // one thread preempting the other.
        let pin = |cpu: usize| {
            if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
                // SAFETY: a zeroed cpu_set_t with one CPU set, for this thread.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
            }
        };
        let writer = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::spawn(move || {
                pin(1);
                let e = shared.0.get();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    // SAFETY: this thread is the entry's only writer.
                    unsafe {
                        let seq = std::ptr::addr_of_mut!((*e).seq);
                        let s = seq.read_volatile();
                        seq.write_volatile(s + 1);
                        fence(Ordering::Release);
                        std::ptr::addr_of_mut!((*e).calls).write_volatile(n);
                        // Spread the figures out so a torn copy is likely to be seen.
                        std::hint::spin_loop();
                        let b = (n % 7) as usize;
                        let h = std::ptr::addr_of_mut!((*e).hist[b]);
                        h.write_volatile(h.read_volatile() + 1);
                        std::ptr::addr_of_mut!((*e).total_ns).write_volatile(n * NS);
                        if n.is_multiple_of(2) {
                            std::ptr::addr_of_mut!((*e).errors).write_volatile(n / 2);
                            std::ptr::addr_of_mut!((*e).errno_counts[0]).write_volatile(n / 2);
                        }
                        fence(Ordering::Release);
                        seq.write_volatile(s + 2);
                    }
                }
                n
            })
        };
        pin(0);
        let mut last = HashMap::new();
        let (mut kept, mut same, mut previous) = (0u64, 0u64, 0u64);
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline || kept < 1000 {
            // SAFETY: the entry outlives the reads; it is written only under the count.
            let Some(c) = (unsafe { copy_or_last(&mut last, (0, 0), shared.0.get()) }) else {
                continue;
            };
            let hist: u64 = c.hist.iter().sum();
            assert_eq!(c.seq % 2, 0, "a copy made during an update");
            assert_eq!(hist, c.calls, "torn copy: histogram against calls");
            assert_eq!(c.total_ns, c.calls * NS, "torn copy: time against calls");
            assert_eq!(c.errors, c.calls / 2, "torn copy: errors against calls");
            assert_eq!(
                c.errno_counts[0], c.errors,
                "torn copy: errnos against errors"
            );
            assert!(
                c.calls >= previous,
                "went back from {previous} to {}",
                c.calls
            );
            if c.calls == previous {
                same += 1;
            }
            previous = c.calls;
            kept += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().unwrap();
        assert!(
            written > 1000 && previous > 0,
            "{written} updates, last copy {previous}"
        );
        // The race was real: the reader saw the figures move between copies.
        assert!(same < kept, "{kept} copies, all the same");
    }

    /// An entry whose update never ends (its count stays odd) is read as its last
    /// consistent copy; one never copied whole is left out.
    #[test]
    fn an_entry_that_never_settles_is_read_as_its_last_copy() {
        let mut last = HashMap::new();
        let mut e = StatsEntry {
            calls: 5,
            seq: 2,
            ..StatsEntry::ZERO
        };
        // SAFETY: a local entry.
        unsafe {
            assert_eq!(copy_or_last(&mut last, (1, 3), &e).unwrap().calls, 5);
            e.seq = 3;
            e.calls = 6;
            assert_eq!(copy_or_last(&mut last, (1, 3), &e).unwrap().calls, 5);
            assert!(copy_or_last(&mut last, (0, 0), &e).is_none());
            e.seq = 4;
            assert_eq!(copy_or_last(&mut last, (1, 3), &e).unwrap().calls, 6);
        }
    }

    #[test]
    fn copies_only_between_updates() {
        let mut e = StatsEntry {
            calls: 3,
            ..StatsEntry::ZERO
        };
        assert_eq!(unsafe { copy_consistent(&e) }.unwrap().calls, 3);
        e.seq = 7; // an update in progress, for ever
        assert!(unsafe { copy_consistent(&e) }.is_none());
        e.seq = 8;
        assert_eq!(unsafe { copy_consistent(&e) }.unwrap().seq, 8);
    }

    #[test]
    fn a_thread_inside_a_syscall() {
        let t = ThreadSlot {
            tid: 7,
            key: syscall_key(syscost_common::abi::NATIVE, 0),
            nr: 0,
            enter_ns: 1_000,
            calls: 5,
            ..ThreadSlot::EMPTY
        };
        let s = thread_state(&t, 2_001_000);
        assert_eq!(
            s.in_syscall,
            Some((SyscallId::native(0), Duration::from_millis(2)))
        );
        let idle = thread_state(&ThreadSlot { enter_ns: 0, ..t }, 5);
        assert_eq!((idle.in_syscall, idle.calls), (None, 5));
    }

    #[test]
    fn series_steps_and_reset() {
        let id = SyscallId::native(39);
        let mut snap = Snapshot::empty();
        snap.record(id, 100, None);
        let mut series = Intervals::new(snap.clone());
        snap.record(id, 100, None);
        snap.record(id, 100, None);
        let step = series.next(snap.clone());
        assert_eq!(step.cumulative.syscalls[&id].calls, 3);
        assert_eq!(step.interval.syscalls[&id].calls, 2);
        series.reset();
        snap.record(id, 100, None);
        let step = series.next(snap);
        assert_eq!(step.cumulative.syscalls[&id].calls, 1);
        assert_eq!(step.interval.syscalls[&id].calls, 1);
    }
}
