//! A session owns time. It holds the sampler (and through it the tracer) and the
//! slow-call reader, ticks on a clock of its own (the own-cost windows, the per-process
//! table's housekeeping), and publishes an immutable [`Sample`] every interval: every
//! slot's cumulative snapshot, the watched threads, the own cost, the per-process step
//! since the last sample, the latest slow calls. Views subscribe and render what they
//! receive; none of them reads a map or /proc for the data it shows, and two
//! subscribers see the same samples.
//!
//! By file: the session and its end here; the samples (`sample`), the views' wants and
//! subscriptions (`subscription`), the clock's thread (`clock`), the handle the views
//! hold (`handle`).

use crate::{
    call_ring::reader::Reader,
    collector::Snapshot,
    locks::lock,
    process_table::{ProcessRow, TopStep},
    sampler::Sampler,
    wake::Wake,
};
use anyhow::Result;
use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};
use syscost_report::profile::{CallStacks, SlowCall};

mod clock;
mod handle;
mod sample;
mod state;
mod subscription;

pub use self::{sample::*, state::*, subscription::*};

/// How a session runs.
#[derive(Debug, Default)]
pub struct SessionOptions {
    /// How often a sample is published.
    pub interval: Duration,
    pub watch: Watch,
    /// Each per-process row names the Kubernetes pod and container of its process's
    /// cgroup ([`syscost_report::report::top::ProcessRow::kube`]; `export --top`), from
    /// the first exit record and step on.
    pub name_pods: bool,
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

impl Session {
    /// Starts the clock; the first sample is published at once.
    pub fn start(sampler: Sampler, slow: Option<Reader>, options: SessionOptions) -> Self {
        let offcpu = sampler.offcpu_tracked();
        let features = sampler.features().clone();
        let pods = Arc::<crate::kube::Pods>::default();
        let mut sampler = sampler;
        if options.name_pods {
            sampler.name_pods(pods.clone());
        }
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
            interval: options.interval.max(SHORTEST_INTERVAL),
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
            pods,
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
            crate::by_stack::assemble(
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
