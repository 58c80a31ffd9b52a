//! OpenMetrics export for Prometheus (or any OpenMetrics scraper): the profiles of the
//! traced processes as counters and histograms, one series per (process, syscall).
//!
//! This module is the endpoint's state: which processes it serves and the bounded
//! series it feeds from the session's samples. A scrape shows the latest sample the
//! session published (every interval), never one of its own. `encode` writes the text
//! of a scrape, `bodies` keeps it encoded once per sample, `buckets` merges the latency
//! histograms into classic `le` buckets, `series` bounds the per-process series,
//! `server` answers HTTP (`deadline` bounds the time its clients may take).

pub mod bodies;
pub mod buckets;
mod deadline;
pub mod encode;
#[doc(hidden)]
pub mod fuzzing;
pub mod otlp;
pub mod pprof_windows;
pub mod pushes;
pub mod series;
pub mod server;
pub mod web;

use std::time::Instant;

use anyhow::Result;
use bytes::Bytes;

use self::{
    bodies::Bodies,
    encode::{Format, Scrape},
};
use crate::metrics::series::BoundedSeries;
use syscost_engine::session::{Sample, SessionHandle};
use syscost_report::profile::Target;

/// One traced process as the endpoint labels it.
#[derive(Clone, Debug)]
pub struct Source {
    pub pid: u32,
    pub comm: String,
    /// A cgroup profiled as one (`--cgroup`): its path labels the series instead.
    pub cgroup: Option<String>,
    /// Its statistics slot.
    pub slot: u32,
    pub started: Instant,
}

impl Source {
    pub fn new(pid: u32, comm: String, slot: u32) -> Self {
        Self {
            pid,
            comm,
            cgroup: None,
            slot,
            started: Instant::now(),
        }
    }

    /// A cgroup profiled as one.
    pub fn cgroup(path: String, slot: u32) -> Self {
        Self {
            cgroup: Some(path),
            ..Self::new(0, String::new(), slot)
        }
    }

    /// What its series are labelled with.
    pub fn target(&self) -> Target {
        match &self.cgroup {
            Some(path) => Target::cgroup(path),
            None => Target::process(self.pid, &self.comm),
        }
    }
}

/// What the endpoint serves: the traced processes and the programs' own cost, from the
/// latest sample the session published (every interval: N scrapes a second cost what
/// one does). After the programs are unloaded the session keeps the final figures, so
/// a process that exited keeps its final counts.
pub struct Metrics {
    session: SessionHandle,
    sources: Vec<Source>,
    /// Serve the slow-call counters (`--slow`).
    slow: bool,
    /// Bounded per-process (and per-cgroup) series, fed by the session with every
    /// sample's per-process step as it is published.
    top: Option<std::sync::Arc<std::sync::Mutex<TopSeries>>>,
    /// The latest sample's exposition, encoded once per format.
    bodies: Bodies,
    /// `--stacks`: the windows of calls by stack served as pprof.
    stack_windows: Option<pprof_windows::Windows>,
    /// `--otlp-endpoint`: what the pusher did.
    otlp: Option<std::sync::Arc<pushes::Counters>>,
}

/// The bounded series sets.
struct TopSeries {
    processes: BoundedSeries<u32>,
    cgroups: Option<BoundedSeries<syscost_report::report::top::Name>>,
}

impl Metrics {
    pub fn new(session: SessionHandle, sources: Vec<Source>) -> Self {
        // `syscost_bpf_run_seconds_total` is served.
        session.measure_own_cost();
        Self {
            session,
            sources,
            slow: false,
            top: None,
            bodies: Bodies::default(),
            stack_windows: None,
            otlp: None,
        }
    }

    /// Also serves what the OTLP pusher did (`syscost_otlp_*`).
    pub fn with_otlp(mut self, counters: std::sync::Arc<pushes::Counters>) -> Self {
        self.otlp = Some(counters);
        self
    }

    /// The session whose samples it serves.
    pub fn session(&self) -> &SessionHandle {
        &self.session
    }

    /// Also serves the calls by stack of a window as pprof ([`pprof_windows::PATH`]; the
    /// session counts them: `--stacks`).
    pub fn with_stacks(mut self, on: bool) -> Self {
        self.stack_windows = on.then(|| pprof_windows::Windows::new(self.session.clone()));
        self
    }

    /// The windows of calls by stack, with `--stacks`.
    pub fn stack_windows(&self) -> Option<&pprof_windows::Windows> {
        self.stack_windows.as_ref()
    }

    /// Also serves `syscost_slow_calls_total` and `syscost_slow_dropped_total`.
    pub fn with_slow(mut self, slow: bool) -> Self {
        self.slow = slow;
        self
    }

    /// Also serves per-process series of at most `n` processes plus `other` (and as
    /// many cgroups with `cgroups`), labelled with their pods where the session names
    /// them (`SessionOptions::name_pods`).
    pub fn with_top(mut self, n: usize, cgroups: bool) -> Self {
        let top = std::sync::Arc::new(std::sync::Mutex::new(TopSeries {
            processes: BoundedSeries::new(n),
            cgroups: cgroups.then(|| BoundedSeries::new(n)),
        }));
        // Fed by the session as it publishes (every sample's step counts once, in
        // order), for as long as this endpoint's state lives.
        let fed = std::sync::Arc::downgrade(&top);
        self.session.on_sample(move |sample| match fed.upgrade() {
            Some(top) => {
                feed(&mut syscost_engine::locks::lock(&top), sample);
                true
            }
            None => false,
        });
        self.top = Some(top);
        self
    }

    /// The exposition in `format` of the latest sample, encoded at the first scrape
    /// that asks for it.
    pub fn exposition(&self, format: Format) -> Result<Bytes> {
        let sample = self.session.latest();
        self.bodies.get(sample.seq, format, || {
            let scrape = self.scrape_of(&sample)?;
            Ok(match format {
                Format::Text => Bytes::from(encode::exposition(scrape)?),
                Format::Protobuf => Bytes::from(encode::exposition_protobuf(scrape)?),
            })
        })
    }

    /// Everything, as the latest sample says.
    pub fn scrape(&self) -> Result<Scrape> {
        self.scrape_of(&self.session.latest())
    }

    /// Everything, as `sample` says (the bounded series as the samples up to it, at
    /// least, fed them).
    fn scrape_of(&self, sample: &Sample) -> Result<Scrape> {
        let snaps = &sample.snapshots;
        let offcpu = self.session.offcpu_tracked();
        let features = self.session.features().clone();
        let bpf_run = sample.own_cost_totals;
        let (processes_top, cgroups_top) = match &self.top {
            Some(top) => {
                let top = syscost_engine::locks::lock(top);
                (
                    top.processes.series(vec![
                        ("pid", "other".into()),
                        ("comm", String::new()),
                        ("cgroup", String::new()),
                    ]),
                    top.cgroups
                        .as_ref()
                        .map(|c| c.series(vec![("cgroup", "other".into())]))
                        .unwrap_or_default(),
                )
            }
            None => (Vec::new(), Vec::new()),
        };
        let processes = self
            .sources
            .iter()
            .map(|s| {
                snaps
                    .get(s.slot as usize)
                    .cloned()
                    .unwrap_or_default()
                    .to_profile(
                        s.target(),
                        sample.taken.saturating_duration_since(s.started).as_nanos() as u64,
                        offcpu,
                    )
                    .map(|p| p.with_features(&features))
            })
            .collect::<Result<_>>()?;
        let slow = if self.slow {
            self.sources
                .iter()
                .map(|s| {
                    let c = snaps
                        .get(s.slot as usize)
                        .map(|x| x.counters)
                        .unwrap_or_default();
                    (
                        s.target(),
                        c[syscost_common::counter::SLOW as usize],
                        c[syscost_common::counter::DROPPED_SLOW as usize],
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        // `export --top`: the machine's counters, every slot's (the drill-down's too).
        let machine = (self.sources.is_empty() && self.top.is_some()).then(|| {
            let sum =
                |f: fn(&syscost_engine::collector::Snapshot) -> u64| snaps.iter().map(f).sum();
            encode::MachineCounters {
                dropped: sum(syscost_engine::collector::Snapshot::dropped),
                unpaired: sum(syscost_engine::collector::Snapshot::unpaired),
                switch_ins_unseen: sum(syscost_engine::collector::Snapshot::switch_ins_unseen),
            }
        });
        // The per-process table's occupancy (`--top`, `--cgroup --per-process`), once
        // loaded.
        let table =
            (self.top.is_some() && sample.top_pairs.1 > 0).then_some(encode::TableCounters {
                reclaimed: sample.top_reclaimed,
                pairs: sample.top_pairs.0 as u64,
                capacity: sample.top_pairs.1 as u64,
            });
        Ok(Scrape {
            processes,
            bpf_run,
            processes_top,
            cgroups_top,
            offcpu_tracked: offcpu,
            slow,
            machine,
            table,
            samples: Some(sample.seq),
            otlp: self.otlp.as_ref().map(|c| {
                use std::sync::atomic::Ordering::Relaxed;
                (
                    c.sent.load(Relaxed),
                    c.dropped.load(Relaxed),
                    c.failures.load(Relaxed),
                )
            }),
        })
    }
}

/// A sample's per-process step into the bounded series. A process's or a cgroup's
/// series also names the Kubernetes pod and container its cgroup is, where it is one
/// (`pod_uid`, `container_id`, and `namespace`, `pod`, `container`), as the engine's
/// process table named the row.
fn feed(top: &mut TopSeries, sample: &Sample) {
    let TopSeries { processes, cgroups } = top;
    let with_kube = |mut labels: Vec<(&'static str, String)>,
                     r: &syscost_engine::process_table::ProcessRow| {
        labels.extend(r.kube.iter().cloned());
        labels
    };
    let step = &sample.top;
    let now = sample.taken;
    processes.add(
        &step.interval,
        |r| r.pid,
        |r| {
            with_kube(
                vec![
                    ("pid", r.pid.to_string()),
                    ("comm", r.comm.to_string()),
                    ("cgroup", r.cgroup.to_string()),
                ],
                r,
            )
        },
        &step.exited,
        now,
    );
    if let Some(c) = cgroups.as_mut() {
        c.add(
            &syscost_report::report::top::sums::by_cgroup(&step.interval),
            |r| r.cgroup.clone(),
            |r| with_kube(vec![("cgroup", r.cgroup.to_string())], r),
            &[],
            now,
        );
    }
}
