//! A session owns time. It holds the sampler (and through it the tracer) and the
//! slow-call reader, ticks on a clock of its own (the own-cost windows, the per-process
//! table's housekeeping), and publishes an immutable [`Sample`] every interval: every
//! slot's cumulative snapshot, the watched threads, the own cost, the per-process step
//! since the last sample, the latest slow calls. Views subscribe and render what they
//! receive; none of them reads a map or /proc for the data it shows, and two
//! subscribers see the same samples.

use std::{
    os::fd::OwnedFd,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::Result;

use crate::{
    collector::Snapshot,
    locks::lock,
    process_table::{ProcessRow, TopStep},
    sampler::{OwnCostReading, Sampler, SharedSampler, ThreadState},
    slow::reader::{Reader, SlowLog},
    wake::Wake,
};
use syscost_report::profile::{CallStacks, Features, SlowCall};

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
    /// [`SessionHandle::want_thread_names`]), and how many threads there are.
    pub threads: Vec<ThreadInfo>,
    pub thread_count: usize,
    /// The watched process has exited.
    pub exited: bool,
    /// Taken because an interval ended (the clock's tick, which may come with the
    /// watched process's exit); not a sample asked for ([`SessionHandle::sample_now`]) or
    /// taken at an event between ticks (the watched process's exit, an own-cost window
    /// closed), which a view printing intervals does not print.
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
    /// With `--slow`, once a view asked for them ([`Want::SLOW_CALLS`]): the newest
    /// slow calls (at most 200, newest first) and how many have been received.
    pub slow: Option<(Vec<SlowCall>, u64)>,
    /// With `--stacks`, once a view asked for them ([`Want::STACKS`]): the calls by
    /// stack so far.
    pub stacks: Option<Arc<CallStacks>>,
    /// With `--stacks`, once a view asked for them ([`Want::STACK_TABLES`]): the
    /// kernel's tables so far, as read (two of them make a window's calls by stack:
    /// [`crate::stacks::Raw::since`], [`SessionHandle::assemble_stacks`]).
    pub stack_tables: Option<Arc<crate::stacks::Raw>>,
    /// The programs were unloaded before it was taken: its figures are final.
    pub unloaded: bool,
}

/// The snapshot of `slot` in `snapshots` (empty when there is no such slot).
fn slot_of(snapshots: &[Snapshot], slot: u32) -> Snapshot {
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

/// How a session runs.
#[derive(Debug, Default)]
pub struct SessionOptions {
    /// How often a sample is published.
    pub interval: Duration,
    pub watch: Watch,
}

/// The figures when the session ended: the last snapshots, the per-process totals and
/// the slow calls.
#[derive(Debug)]
pub struct Finished {
    pub snapshots: Vec<Snapshot>,
    pub top_totals: Vec<ProcessRow>,
    /// Slow calls kept, and those received but not kept; `None` without `--slow`.
    pub slow: Option<(Vec<SlowCall>, u64)>,
    /// With `--stacks`: every call by the user stack it was made from.
    pub stacks: Option<CallStacks>,
}

impl Finished {
    /// The final snapshot of `slot` (empty when there is no such slot).
    pub fn snapshot(&self, slot: u32) -> Snapshot {
        slot_of(&self.snapshots, slot)
    }
}

/// "No end", where a timer needs a time all the same (one never awaited, a century).
pub const NO_END: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The interval between samples unless a command is told otherwise (`-i`).
pub const INTERVAL: Duration = Duration::from_secs(1);
/// The shortest interval: a table or a screen more often than that is unreadable, and
/// each sample reads the maps.
pub const INTERVAL_FLOOR: Duration = Duration::from_millis(100);

/// What the views want in the samples beyond the figures (each costs a read or a copy
/// per sample, so none is there unless asked).
#[derive(Clone, Copy, Debug)]
pub struct Want(u8);

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

struct Shared {
    sampler: SharedSampler,
    slow_log: Option<Arc<Mutex<SlowLog>>>,
    /// `--stacks`' samples as the reader names them.
    stack_samples: Option<Arc<Mutex<crate::stacks::Samples>>>,
    watch: Mutex<Watch>,
    interval: Duration,
    latest: Mutex<Arc<Sample>>,
    subscribers: Mutex<Vec<Subscriber>>,
    /// Functions every sample is handed to as it is published (see
    /// [`SessionHandle::on_sample`]).
    handlers: Mutex<Vec<SampleHandler>>,
    /// Held while a sample is taken and sent, so samples go out in order.
    publishing: Mutex<u64>,
    /// A process drilled into (`top`): no per-process steps meanwhile.
    drilled: AtomicBool,
    /// Open the own-cost windows: a view shows the own cost (they cost every traced
    /// syscall while open, so not for `run` or a text mode).
    own_cost: AtomicBool,
    /// [`Want`] bits.
    wants: std::sync::atomic::AtomicU8,
    /// Set to end the clock, which waits on `wake` between its steps (so the end does
    /// not wait for a step).
    stop: AtomicBool,
    /// Wakes the clock: the end, or a change of what it watches or measures.
    wake: Wake,
    /// Counts the changes of `watch` (the clock watches the new process's exit).
    watch_generation: std::sync::atomic::AtomicU64,
    offcpu: bool,
    features: Features,
}

/// The owner of the sampler, the slow-call reader and the clock.
pub struct Session {
    shared: Arc<Shared>,
    clock: Option<JoinHandle<()>>,
    slow: Option<Reader>,
}

/// What a view holds of a session: samples and requests, nothing that ends it.
#[derive(Clone)]
pub struct SessionHandle {
    shared: Arc<Shared>,
}

impl Session {
    /// Starts the clock; the first sample is published at once.
    pub fn start(sampler: Sampler, slow: Option<Reader>, options: SessionOptions) -> Self {
        let offcpu = sampler.offcpu_tracked();
        let features = sampler.features().clone();
        let sampler = sampler.shared();
        let now = Instant::now();
        let empty = Arc::new(Sample {
            seq: 0,
            taken: now,
            since: now,
            snapshots: Vec::new(),
            threads: Vec::new(),
            thread_count: 0,
            exited: false,
            due: false,
            own_cost: Ok(None),
            own_cost_totals: None,
            top_reclaimed: 0,
            top_pairs: (0, 0),
            top: TopStep::default(),
            slow: None,
            stacks: None,
            stack_tables: None,
            unloaded: false,
        });
        let wake = Wake::new();
        let shared = Arc::new(Shared {
            sampler,
            slow_log: slow.as_ref().map(Reader::log),
            stack_samples: slow.as_ref().map(Reader::samples),
            watch: Mutex::new(options.watch),
            interval: options.interval.max(INTERVAL_FLOOR),
            latest: Mutex::new(empty),
            subscribers: Mutex::new(Vec::new()),
            handlers: Mutex::new(Vec::new()),
            publishing: Mutex::new(0),
            drilled: AtomicBool::new(false),
            own_cost: AtomicBool::new(false),
            wants: std::sync::atomic::AtomicU8::new(0),
            stop: AtomicBool::new(false),
            wake,
            watch_generation: std::sync::atomic::AtomicU64::new(0),
            offcpu,
            features,
        });
        // The first sample takes no per-process step: nobody can have subscribed yet,
        // and the first step a subscriber gets counts from the load.
        if let Err(e) = shared.publish_with(false, false) {
            log::warn!("cannot take the first sample: {e:#}");
        }
        let clock = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("syscost-session".into())
                .spawn(move || shared.run_clock())
                .map_err(|e| log::warn!("cannot start the session's clock: {e}"))
                .ok()
        };
        Self {
            shared,
            clock,
            slow,
        }
    }

    /// A handle for views and the metrics endpoint.
    pub fn handle(&self) -> SessionHandle {
        SessionHandle {
            shared: self.shared.clone(),
        }
    }

    /// Stops the clock, takes the last per-process step and the final snapshots, unloads
    /// the programs, and drains the slow calls still in the ring.
    pub fn finish(mut self) -> Result<Finished> {
        // A signal from now on ends syscost at once: nothing here may hold it.
        crate::signals::exiting();
        // The tests' way to make the end hang (debug builds only).
        #[cfg(debug_assertions)]
        if std::env::var("SYSCOST_TEST_FAULT").is_ok_and(|f| f == "hang-finish") {
            eprintln!("syscost: test fault: the end hangs");
            loop {
                std::thread::park();
            }
        }
        self.stop_clock();
        let (snapshots, top_totals, raw_stacks) = {
            let mut s = lock(&self.shared.sampler);
            s.top_final_step()?;
            let totals = s.top_totals();
            s.unload()?;
            (s.snapshots()?, totals, s.take_stacks())
        };
        // A last sample for views still holding a handle (the metrics endpoint serves
        // the final figures until syscost stops).
        self.shared.publish()?;
        let (slow, samples) = match self.slow.take().map(Reader::into_parts) {
            Some((calls, samples)) => (Some(calls), samples),
            None => (None, Default::default()),
        };
        let stacks = raw_stacks.map(|raw| {
            crate::stacks::assemble(
                &raw,
                &samples,
                crate::process::comm_of,
                crate::cgroup::of_process,
            )
        });
        Ok(Finished {
            snapshots,
            top_totals,
            slow: slow.filter(|_| self.shared.features.on.contains(&"slow")),
            stacks,
        })
    }

    fn stop_clock(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.set();
        if let Some(c) = self.clock.take() {
            let _ = c.join();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop_clock();
    }
}

impl SessionHandle {
    /// Every sample published from now on, in order.
    pub fn subscribe(&self) -> Subscription {
        let (tx, rx) = mpsc::channel();
        let wake = Arc::new(Wake::new());
        lock(&self.shared.subscribers).push((tx, wake.clone()));
        Subscription { rx, wake }
    }

    /// Hands every sample published from now on to `handler`, on the thread that
    /// publishes it (the session's clock, or a caller of [`SessionHandle::sample_now`]),
    /// until it returns false. For a view that keeps a state of its own fed by the
    /// samples: it is fed as time passes, without a clock of its own. `handler` must
    /// not take a sample itself.
    pub fn on_sample(&self, handler: impl Fn(&Arc<Sample>) -> bool + Send + 'static) {
        lock(&self.shared.handlers).push(Box::new(handler));
    }

    /// The latest sample published: every interval, at once when the watched process
    /// exits or an own-cost window closes, and by [`SessionHandle::sample_now`] and
    /// [`SessionHandle::unload`] (after which the final figures stay). The handlers of
    /// [`SessionHandle::on_sample`] have had it by then.
    pub fn latest(&self) -> Arc<Sample> {
        lock(&self.shared.latest).clone()
    }

    /// A sample taken now, published to every subscriber like the clock's (a text
    /// table at its own interval, the end of a view, an exit a view must show at once).
    /// Each reads every map and takes a per-process step: a view that answers clients
    /// (the metrics endpoint) serves [`SessionHandle::latest`] instead.
    pub fn sample_now(&self) -> Result<Arc<Sample>> {
        self.shared.publish()
    }

    pub fn offcpu_tracked(&self) -> bool {
        self.shared.offcpu
    }

    pub fn features(&self) -> &Features {
        &self.shared.features
    }

    /// A view shows syscost's own cost: the session opens the own-cost windows from
    /// now on (BPF run-time statistics for 1 s in every 10; see `sampler::OwnCost`).
    pub fn measure_own_cost(&self) {
        self.shared.own_cost.store(true, Ordering::Release);
        self.shared.wake.set();
    }

    /// Adds `want` to what the samples carry from now on.
    pub fn want(&self, want: Want) {
        self.set_want(want, true);
    }

    /// Whether the samples carry the watched threads' names (the live view's thread
    /// list is shown).
    pub fn want_thread_names(&self, on: bool) {
        self.set_want(Want::THREAD_NAMES, on);
    }

    /// Adds `want` to what the samples carry from now on, or takes it away.
    fn set_want(&self, want: Want, on: bool) {
        if on {
            self.shared.wants.fetch_or(want.0, Ordering::AcqRel);
        } else {
            self.shared.wants.fetch_and(!want.0, Ordering::AcqRel);
        }
    }

    /// Whether the samples carry the calls by stack (the live view's callers pane is
    /// shown): each costs a read of the kernel's tables.
    pub fn want_stacks(&self, on: bool) {
        self.set_want(Want::STACKS, on);
    }

    /// Whether the samples carry the kernel's stack tables ([`Want::STACK_TABLES`]): a
    /// window of the metrics endpoint's stacks is open.
    pub fn want_stack_tables(&self, on: bool) {
        self.set_want(Want::STACK_TABLES, on);
    }

    /// The calls by stack of `raw` (a sample's tables, or the difference of two), named
    /// with the samples received so far.
    pub fn assemble_stacks(&self, raw: &crate::stacks::Raw) -> CallStacks {
        // The processes' cgroups read first: the samples' lock is not held over /proc.
        let cgroups: std::collections::HashMap<u32, Option<String>> = raw
            .calls
            .iter()
            .map(|(k, _)| k.tgid)
            .filter(|&tgid| tgid != 0)
            .collect::<std::collections::HashSet<u32>>()
            .into_iter()
            .map(|tgid| (tgid, crate::cgroup::of_process(tgid)))
            .collect();
        let none = crate::stacks::Samples::default();
        let samples = self.shared.stack_samples.as_ref().map(|s| lock(s));
        crate::stacks::assemble(
            raw,
            samples.as_deref().unwrap_or(&none),
            crate::process::comm_of,
            |tgid| cgroups.get(&tgid).cloned().flatten(),
        )
    }

    /// The interval between the clock's samples.
    pub fn interval(&self) -> Duration {
        self.shared.interval
    }

    /// Why there is no own-cost figure and will be none, if so.
    pub fn own_cost_unavailable(&self) -> Option<String> {
        lock(&self.shared.sampler)
            .own_cost()
            .unavailable()
            .map(str::to_string)
    }

    /// Samples describe these threads from now on.
    pub fn watch(&self, watch: Watch) {
        *lock(&self.shared.watch) = watch;
        self.shared.watch_generation.fetch_add(1, Ordering::AcqRel);
        self.shared.wake.set();
    }

    /// `top`'s drill-down: process `tgid`'s calls also get full statistics (in the
    /// drill-down slot) from now on; 0 stops, and the per-process steps start again
    /// from that moment.
    pub fn drill(&self, tgid: u32) -> Result<()> {
        let mut s = lock(&self.shared.sampler);
        s.drill(tgid)?;
        self.shared.drilled.store(tgid != 0, Ordering::Release);
        if tgid == 0 {
            // What happened while drilled is in the totals; the steps start from now.
            s.top_step()?;
        }
        Ok(())
    }

    /// Unloads the programs now (nothing is left to trace), keeping the final figures
    /// for the samples that follow; whether they were still loaded.
    pub fn unload(&self) -> Result<bool> {
        let loaded = {
            let mut s = lock(&self.shared.sampler);
            let loaded = s.loaded();
            s.unload()?;
            loaded
        };
        self.shared.publish()?;
        Ok(loaded)
    }
}

impl Shared {
    /// Publishes at a fixed rate (every `interval` from the start, one sample for
    /// intervals missed), at once when the watched process exits or an own-cost window
    /// closes, and keeps the own-cost windows and the per-process table's housekeeping
    /// going in between (a sample reads the table itself, so it is not read twice).
    fn run_clock(&self) {
        let mut next = Instant::now() + self.interval;
        // The watch's generation, and whether a sample said its process exited.
        let mut watched = (u64::MAX, false);
        loop {
            // Cleared before the look at `stop`: a stop set after it sets it again.
            self.wake.clear();
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            let generation = self.watch_generation.load(Ordering::Acquire);
            if watched.0 != generation {
                watched = (generation, false);
            }
            // The watched process's pidfd (a copy: `watch` may replace it meanwhile),
            // while no sample has said it exited: it is readable once it has.
            let pidfd = match &*lock(&self.watch) {
                Watch::Process { pidfd, .. } if !watched.1 => pidfd.try_clone().ok(),
                _ => None,
            };
            let exiting = pidfd.as_ref().is_some_and(crate::process::has_exited);
            let now = Instant::now();
            // An own-cost window closed: its figures go out at once, not up to an
            // interval later (the endpoint serves the latest sample).
            let (window_closed, due) = {
                let mut s = lock(&self.sampler);
                let own_cost = self.own_cost.load(Ordering::Acquire);
                let before = s.own_cost().totals();
                if own_cost {
                    s.tick();
                }
                if now < next && !exiting {
                    s.top_tick();
                }
                let swapped = s.swap_stack_window();
                let changed = s.own_cost().totals() != before;
                drop(s);
                // The wait (an RCU grace period) with the sampler unlocked, the drain
                // with it locked.
                if let Some(wait) = swapped {
                    let waited = wait
                        .wait()
                        .map_err(|e| log::warn!("--stacks: cannot wait to drain a window: {e}"))
                        .is_ok();
                    lock(&self.sampler).drain_stack_window(waited);
                }
                (changed, lock(&self.sampler).next_due(own_cost))
            };
            if window_closed
                && now < next
                && !exiting
                && let Err(e) = self.publish()
            {
                log::warn!("cannot take a sample: {e:#}");
            }
            if now >= next || exiting {
                match self.publish_with(true, now >= next) {
                    Ok(_) => watched.1 |= exiting,
                    Err(e) => log::warn!("cannot take a sample: {e:#}"),
                }
                if now >= next {
                    next += self.interval;
                    if next <= now {
                        next = now + self.interval;
                    }
                }
            }
            // Asleep until the next sample or housekeeping is due, the end, a change
            // asked, or the watched process's exit (it is sampled at once).
            let mut until = due.map_or(next, |d| d.min(next));
            let mut fds = vec![self.wake.fd()];
            if !exiting {
                fds.extend(pidfd.as_ref().map(std::os::fd::AsRawFd::as_raw_fd));
            }
            // An exit whose sample failed is sampled again 50 ms later, not sooner
            // (housekeeping waits meanwhile).
            if exiting {
                until = Instant::now() + Duration::from_millis(50);
            }
            crate::wake::wait(&fds, Some(until));
        }
    }

    /// Takes a sample, keeps it as the latest and sends it to every subscriber.
    fn publish(&self) -> Result<Arc<Sample>> {
        self.publish_with(true, false)
    }

    /// [`Shared::publish`]; `step`: take the per-process step into it; `due`: an
    /// interval ended ([`Sample::due`]).
    fn publish_with(&self, step: bool, due: bool) -> Result<Arc<Sample>> {
        let mut seq = lock(&self.publishing);
        let wants = self.wants.load(Ordering::Acquire);
        let (tids, exited) = match &*lock(&self.watch) {
            Watch::Nothing => (Vec::new(), false),
            Watch::Process { pid, pidfd } => (task_ids(*pid), crate::process::has_exited(pidfd)),
            Watch::Cgroup(dir) => (cgroup_threads(dir), false),
        };
        let (
            snapshots,
            states,
            own_cost,
            own_cost_totals,
            top,
            raw_stacks,
            top_reclaimed,
            top_pairs,
            unloaded,
        ) = {
            let mut s = lock(&self.sampler);
            let snapshots = s.snapshots()?;
            let raw_stacks = if wants & (Want::STACKS.0 | Want::STACK_TABLES.0) != 0 {
                s.stack_tables()?
            } else {
                None
            };
            let top = if step && s.loaded() && !self.drilled.load(Ordering::Acquire) {
                s.top_step()?
            } else {
                TopStep::default()
            };
            (
                snapshots,
                s.threads(&tids),
                s.own_cost().reading(),
                s.own_cost().totals(),
                top,
                raw_stacks,
                s.top_reclaimed(),
                s.top_pairs(),
                !s.loaded(),
            )
        };
        let names = wants & Want::THREAD_NAMES.0 != 0;
        let threads = states
            .into_iter()
            .map(|state| ThreadInfo {
                comm: if names {
                    crate::process::comm_of(state.tid).unwrap_or_default()
                } else {
                    String::new()
                },
                state,
            })
            .collect();
        let slow_wanted = wants & Want::SLOW_CALLS.0 != 0;
        let slow = self.slow_log.as_ref().filter(|_| slow_wanted).map(|log| {
            let log = lock(log);
            (
                log.calls.iter().rev().take(200).cloned().collect(),
                log.calls.len() as u64 + log.evicted,
            )
        });
        let stacks = raw_stacks
            .as_ref()
            .filter(|_| wants & Want::STACKS.0 != 0)
            .map(|raw| {
                let none = crate::stacks::Samples::default();
                let samples = self.stack_samples.as_ref().map(|s| lock(s));
                // The live view's pane names no cgroup: no /proc read per sample for it.
                Arc::new(crate::stacks::assemble(
                    raw,
                    samples.as_deref().unwrap_or(&none),
                    crate::process::comm_of,
                    |_| None,
                ))
            });
        let stack_tables = raw_stacks
            .filter(|_| wants & Want::STACK_TABLES.0 != 0)
            .map(Arc::new);
        *seq += 1;
        let since = lock(&self.latest).taken;
        let sample = Arc::new(Sample {
            seq: *seq,
            taken: Instant::now(),
            since,
            snapshots,
            threads,
            thread_count: tids.len(),
            exited,
            due,
            own_cost,
            own_cost_totals,
            top_reclaimed,
            top_pairs,
            top,
            slow,
            stacks,
            stack_tables,
            unloaded,
        });
        // The handlers first: a view that reads the latest sample (the metrics endpoint)
        // then finds what they keep fed with it at least.
        lock(&self.handlers).retain(|h| h(&sample));
        *lock(&self.latest) = sample.clone();
        lock(&self.subscribers).retain(|(tx, wake)| {
            let sent = tx.send(sample.clone()).is_ok();
            if sent {
                wake.set();
            }
            sent
        });
        Ok(sample)
    }
}

/// The samples a session publishes, in order, for one subscriber, and a descriptor that
/// is readable while one waits: a loop waits on it (beside its input, the stop) and
/// is woken by the samples themselves, not by a clock of its own.
pub struct Subscription {
    rx: mpsc::Receiver<Arc<Sample>>,
    wake: Arc<Wake>,
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
type Subscriber = (mpsc::Sender<Arc<Sample>>, Arc<Wake>);

/// A function every published sample is handed to; it returns whether it wants more.
type SampleHandler = Box<dyn Fn(&Arc<Sample>) -> bool + Send>;

/// The threads of process `pid` now.
fn task_ids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The threads of a cgroup and its descendants.
fn cgroup_threads(dir: &std::path::Path) -> Vec<u32> {
    let mut tids: Vec<u32> = std::fs::read_to_string(dir.join("cgroup.threads"))
        .map(|s| s.lines().filter_map(|l| l.parse().ok()).collect())
        .unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                tids.extend(cgroup_threads(&e.path()));
            }
        }
    }
    tids
}
