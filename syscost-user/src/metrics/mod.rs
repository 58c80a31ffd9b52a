//! OpenMetrics export for Prometheus (or any OpenMetrics scraper): the profiles of the
//! traced processes as counters and histograms, one series per (process, syscall).
//!
//! The text is written by `prometheus-client`; this module only says what goes in it.
//! Latency histograms are the kernel's log-linear buckets merged into classic `le`
//! buckets at powers of two, where the log-linear edges fall exactly, so every count
//! lands in the right bucket (see [`classic_buckets`]).

pub mod series;
pub mod server;

use std::time::Instant;

use anyhow::Result;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, NoLabelSet},
    metrics::MetricType,
    registry::{Registry, Unit},
};

use crate::{
    latency::Bucket,
    metrics::series::{BoundedSeries, OwnSeries},
    profile::{Profile, SyscallProfile, Target},
    session::{Sample, SessionHandle},
};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Classic bucket bounds are `2^k - 1` ns for these `k`: 127 ns to 17.2 s. A value in
/// integer nanoseconds is at most `2^k - 1` exactly when it is below `2^k`, and every
/// power of two is an edge of the kernel's buckets.
pub const BOUND_POWERS: std::ops::RangeInclusive<u32> = 7..=34;

/// The classic bucket bounds, in nanoseconds.
pub fn bucket_bounds_ns() -> impl Iterator<Item = u64> {
    BOUND_POWERS.map(|k| (1u64 << k) - 1)
}

/// Merges non-empty log-linear buckets into classic ones: `(le in seconds, count in this
/// bucket alone)`, ending with `+Inf`, as the exposition encoder takes them (it sums
/// them up into the cumulative `_bucket` series).
pub fn classic_buckets(hist: &[Bucket]) -> Vec<(f64, u64)> {
    let bounds: Vec<u64> = bucket_bounds_ns().collect();
    let mut counts = vec![0u64; bounds.len() + 1];
    for b in hist {
        // The first bound at or above the bucket's top; the bucket's bottom is above the
        // bound before it, since bounds fall on bucket edges.
        counts[bounds.partition_point(|&le| le < b.hi_ns)] += b.count;
    }
    bounds
        .iter()
        .map(|&ns| ns as f64 / 1e9)
        .chain([f64::INFINITY])
        .zip(counts)
        .collect()
}

/// What one scrape shows.
#[derive(Clone, Debug)]
pub struct Scrape {
    /// A profile per traced process, cumulative since syscost began tracing it.
    pub processes: Vec<Profile>,
    /// Run time of syscost's programs (one set for all the processes) within the
    /// windows BPF run-time statistics were on, and the windows' wall time, ns.
    pub bpf_run: Option<(u64, u64)>,
    /// Per-process series (`syscost_process_*`) of `export --top` and `--per-process`.
    pub processes_top: Vec<OwnSeries>,
    /// Per-cgroup series (`syscost_cgroup_*`) of `export --top`.
    pub cgroups_top: Vec<OwnSeries>,
    /// Whether the time switched out was measured (not with `--no-offcpu`).
    pub offcpu_tracked: bool,
    /// With `--slow`: per traced process (or cgroup), slow calls sent and slow calls the
    /// ring buffer had no room for.
    pub slow: Vec<(Target, u64, u64)>,
    /// `export --top`: the events the whole machine's tables had no room for (served
    /// without labels on every scrape, 0 included).
    pub machine_dropped: Option<u64>,
}

/// The four counter families of a bounded series set: `PREFIX_syscalls_total`,
/// `_syscall_errors_total`, `_syscall_seconds_total`, `_syscall_offcpu_seconds_total`.
fn encode_top(
    encoder: &mut DescriptorEncoder,
    prefix: &str,
    what: &str,
    series: &[OwnSeries],
    offcpu: bool,
) -> std::fmt::Result {
    type Pick = fn(&syscost_common::TopValue) -> f64;
    let families: [(&str, String, Option<Unit>, Pick); 4] = [
        (
            "syscalls",
            format!("Syscalls completed, by {what} and syscall (bounded: the busiest plus other)."),
            None,
            |v| v.calls as f64,
        ),
        (
            "syscall_errors",
            format!("Syscalls that returned an error, by {what} and syscall."),
            None,
            |v| v.errors as f64,
        ),
        (
            "syscall",
            format!("Time spent in syscalls, entry to exit, by {what} and syscall."),
            Some(Unit::Seconds),
            |v| v.total_ns as f64 / 1e9,
        ),
        (
            "syscall_offcpu",
            format!("Of the time in syscalls, the part switched out, by {what} and syscall."),
            Some(Unit::Seconds),
            |v| v.offcpu_ns as f64 / 1e9,
        ),
    ];
    for (name, help, unit, pick) in families {
        if name == "syscall_offcpu" && !offcpu {
            continue;
        }
        let full = format!("{prefix}_{name}");
        let mut family =
            encoder.encode_descriptor(&full, &help, unit.as_ref(), MetricType::Counter)?;
        for s in series {
            for (id, v) in &s.syscalls {
                let mut labels = s.labels.clone();
                labels.push(("syscall", id.name()));
                let value = pick(v);
                if unit.is_some() {
                    family
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, f64, u64>(&value, None)?;
                } else {
                    family
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, u64, u64>(&(value as u64), None)?;
                }
            }
        }
    }
    Ok(())
}

/// The OpenMetrics text of a scrape (ending in `# EOF`).
pub fn exposition(scrape: Scrape) -> Result<String> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)
        .map_err(|_| anyhow::anyhow!("cannot encode the metrics"))?;
    Ok(out)
}

/// A process's labels (pid, comm), or a cgroup's (cgroup).
fn process_labels(t: &Target) -> Vec<(&'static str, String)> {
    match &t.cgroup {
        Some(cg) => vec![("cgroup", cg.clone())],
        None => vec![("pid", t.pid.to_string()), ("comm", t.comm.clone())],
    }
}

fn syscall_labels(t: &Target, s: &SyscallProfile) -> Vec<(&'static str, String)> {
    let mut l = process_labels(t);
    l.push(("syscall", s.name.clone()));
    l
}

impl Scrape {
    fn syscalls(&self) -> impl Iterator<Item = (&Target, &SyscallProfile)> {
        self.processes
            .iter()
            .flat_map(|p| p.syscalls.iter().map(move |s| (&p.target, s)))
    }

    /// One counter family with a sample per syscall.
    fn per_syscall<V: prometheus_client::encoding::EncodeCounterValue>(
        &self,
        encoder: &mut DescriptorEncoder,
        (name, help, unit): (&str, &str, Option<&Unit>),
        value: impl Fn(&Profile, &SyscallProfile) -> Option<V>,
    ) -> std::fmt::Result {
        let mut family = encoder.encode_descriptor(name, help, unit, MetricType::Counter)?;
        for p in &self.processes {
            for s in &p.syscalls {
                if let Some(v) = value(p, s) {
                    family
                        .encode_family(&syscall_labels(&p.target, s))?
                        .encode_counter::<NoLabelSet, V, u64>(&v, None)?;
                }
            }
        }
        Ok(())
    }

    /// One counter family with a sample per process.
    fn per_process<V: prometheus_client::encoding::EncodeCounterValue>(
        &self,
        encoder: &mut DescriptorEncoder,
        (name, help, unit): (&str, &str, Option<&Unit>),
        value: impl Fn(&Profile) -> V,
    ) -> std::fmt::Result {
        let mut family = encoder.encode_descriptor(name, help, unit, MetricType::Counter)?;
        for p in &self.processes {
            family
                .encode_family(&process_labels(&p.target))?
                .encode_counter::<NoLabelSet, V, u64>(&value(p), None)?;
        }
        Ok(())
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let seconds = Unit::Seconds;
        self.per_syscall(
            &mut encoder,
            ("syscost_syscalls", "Syscalls completed, by syscall.", None),
            |_, s| Some(s.calls),
        )?;
        {
            let mut family = encoder.encode_descriptor(
                "syscost_syscall_errors",
                "Syscalls that returned an error, by syscall and errno.",
                None,
                MetricType::Counter,
            )?;
            for (t, s) in self.syscalls() {
                for (errno, &n) in &s.errnos {
                    let mut labels = syscall_labels(t, s);
                    labels.push(("errno", errno.clone()));
                    family
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, u64, u64>(&n, None)?;
                }
            }
        }
        self.per_syscall(
            &mut encoder,
            (
                "syscost_syscall",
                "Time spent in syscalls, entry to exit, by syscall.",
                Some(&seconds),
            ),
            |_, s| Some(s.total_ns as f64 / 1e9),
        )?;
        self.per_syscall(
            &mut encoder,
            (
                "syscost_syscall_offcpu",
                "Of the time in syscalls, the part the thread was switched out (blocked or preempted).",
                Some(&seconds),
            ),
            |p, s| p.offcpu_tracked.then(|| s.offcpu_ns as f64 / 1e9),
        )?;
        {
            let mut family = encoder.encode_descriptor(
                "syscost_syscall_duration",
                "Syscall latency, entry to exit.",
                Some(&seconds),
                MetricType::Histogram,
            )?;
            for (t, s) in self.syscalls() {
                family
                    .encode_family(&syscall_labels(t, s))?
                    .encode_histogram::<NoLabelSet>(
                        s.total_ns as f64 / 1e9,
                        s.calls,
                        &classic_buckets(&s.histogram),
                        None,
                    )?;
            }
        }
        if let Some((run_ns, measured_ns)) = self.bpf_run {
            encoder
                .encode_descriptor(
                    "syscost_bpf_run",
                    "Run time of syscost's kernel programs, for all the processes it traces, within the windows BPF run-time statistics were on.",
                    Some(&seconds),
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, f64, u64>(&(run_ns as f64 / 1e9), None)?;
            encoder
                .encode_descriptor(
                    "syscost_bpf_measured",
                    "Wall time of the windows in which syscost_bpf_run_seconds_total was measured (1 s in every 10 s).",
                    Some(&seconds),
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, f64, u64>(&(measured_ns as f64 / 1e9), None)?;
        }
        {
            let mut family = encoder.encode_descriptor(
                "syscost_events_dropped",
                "Events syscost's tables had no room for (a thread, a syscall entry, a followed child, a process's per-process figures), not counted.",
                None,
                MetricType::Counter,
            )?;
            for p in &self.processes {
                family
                    .encode_family(&process_labels(&p.target))?
                    .encode_counter::<NoLabelSet, u64, u64>(&p.dropped, None)?;
            }
            if let Some(d) = self.machine_dropped {
                family
                    .encode_family(&Vec::<(&str, String)>::new())?
                    .encode_counter::<NoLabelSet, u64, u64>(&d, None)?;
            }
        }
        self.per_process(
            &mut encoder,
            (
                "syscost_events_unpaired",
                "Syscall exits without a recorded entry (in flight when tracing began).",
                None,
            ),
            |p| p.unpaired,
        )?;
        let offcpu = self.offcpu_tracked;
        for (name, help, pick) in [
            (
                "syscost_slow_calls",
                "Calls at least as slow as --slow, sent one by one.",
                (|s: &(Target, u64, u64)| s.1) as fn(&(Target, u64, u64)) -> u64,
            ),
            (
                "syscost_slow_dropped",
                "Slow calls the ring buffer had no room for (counted, not reported one by one).",
                |s| s.2,
            ),
        ] {
            if self.slow.is_empty() {
                break;
            }
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for s in &self.slow {
                family
                    .encode_family(&process_labels(&s.0))?
                    .encode_counter::<NoLabelSet, u64, u64>(&pick(s), None)?;
            }
        }
        if !self.processes_top.is_empty() {
            encode_top(
                &mut encoder,
                "syscost_process",
                "process",
                &self.processes_top,
                offcpu,
            )?;
        }
        if !self.cgroups_top.is_empty() {
            encode_top(
                &mut encoder,
                "syscost_cgroup",
                "cgroup",
                &self.cgroups_top,
                offcpu,
            )?;
        }
        Ok(())
    }
}

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

/// What the endpoint serves: the traced processes and the programs' own cost, from a
/// sample the session takes at each scrape. After the programs are unloaded the session
/// keeps the final figures, so a process that exited keeps its final counts.
pub struct Metrics {
    session: SessionHandle,
    sources: Vec<Source>,
    /// Serve the slow-call counters (`--slow`).
    slow: bool,
    /// Bounded per-process (and per-cgroup) series, fed from every sample's
    /// per-process step.
    top: Option<std::sync::Mutex<TopSeries>>,
}

/// The bounded series sets and the samples they are fed from.
struct TopSeries {
    processes: BoundedSeries,
    cgroups: Option<BoundedSeries>,
    samples: std::sync::mpsc::Receiver<std::sync::Arc<Sample>>,
}

impl Metrics {
    pub fn new(session: SessionHandle, sources: Vec<Source>) -> Self {
        Self {
            session,
            sources,
            slow: false,
            top: None,
        }
    }

    /// Also serves `syscost_slow_calls_total` and `syscost_slow_dropped_total`.
    pub fn with_slow(mut self, slow: bool) -> Self {
        self.slow = slow;
        self
    }

    /// Also serves per-process series of at most `n` processes plus `other` (and as
    /// many cgroups with `cgroups`).
    pub fn with_top(mut self, n: usize, cgroups: bool) -> Self {
        self.top = Some(std::sync::Mutex::new(TopSeries {
            processes: BoundedSeries::new(n),
            cgroups: cgroups.then(|| BoundedSeries::new(n)),
            samples: self.session.subscribe(),
        }));
        self
    }

    /// Feeds the per-process series the samples published since the last call (call
    /// it a few times a second: the samples wait in a queue until then).
    pub fn tick(&self) {
        if let Some(top) = &self.top {
            feed(&mut crate::locks::lock(top));
        }
    }

    /// Everything, as a sample taken now says.
    pub fn scrape(&self) -> Result<Scrape> {
        let sample = self.session.sample_now()?;
        let snaps = &sample.snapshots;
        let offcpu = self.session.offcpu_tracked();
        let features = self.session.features().clone();
        let bpf_run = sample.own_cost_totals;
        let (processes_top, cgroups_top) = match &self.top {
            Some(top) => {
                let mut top = crate::locks::lock(top);
                feed(&mut top);
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
                    .to_profile(s.target(), s.started.elapsed().as_nanos() as u64, offcpu)
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
        let machine_dropped = (self.sources.is_empty() && self.top.is_some())
            .then(|| snaps.first().map_or(0, |s| s.dropped()));
        Ok(Scrape {
            processes,
            bpf_run,
            processes_top,
            cgroups_top,
            offcpu_tracked: offcpu,
            slow,
            machine_dropped,
        })
    }
}

/// Every sample's per-process step, in order, into the bounded series.
fn feed(top: &mut TopSeries) {
    while let Ok(sample) = top.samples.try_recv() {
        let step = &sample.top;
        let now = sample.taken;
        top.processes.add(
            &step.interval,
            |r| r.pid.to_string(),
            |r| {
                vec![
                    ("pid", r.pid.to_string()),
                    ("comm", r.comm.clone()),
                    ("cgroup", r.cgroup.clone()),
                ]
            },
            &step
                .exited
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>(),
            now,
        );
        if let Some(c) = top.cgroups.as_mut() {
            c.add(
                &crate::process_table::sums::by_cgroup(&step.interval),
                |r| r.cgroup.clone(),
                |r| vec![("cgroup", r.cgroup.clone())],
                &[],
                now,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use syscost_common::{
        HISTOGRAM_BUCKETS,
        latency_bucket::{bucket_lower, bucket_upper},
    };

    use super::*;
    use crate::latency;

    #[test]
    fn every_bound_falls_on_a_bucket_edge() {
        for le in bucket_bounds_ns() {
            for i in 0..HISTOGRAM_BUCKETS {
                let (lo, hi) = (bucket_lower(i), bucket_upper(i));
                assert!(hi <= le || lo > le, "bucket {lo}..={hi} straddles le={le}");
            }
        }
    }

    #[test]
    fn merging_puts_each_bucket_under_its_bound() {
        let hist = vec![
            Bucket {
                lo_ns: 120,
                hi_ns: 127,
                count: 3,
            },
            Bucket {
                lo_ns: 128,
                hi_ns: 143,
                count: 5,
            },
            Bucket {
                lo_ns: 240,
                hi_ns: 255,
                count: 7,
            },
            Bucket {
                lo_ns: 1 << 40,
                hi_ns: u64::MAX,
                count: 1,
            },
        ];
        let merged = classic_buckets(&hist);
        assert_eq!(merged.len(), BOUND_POWERS.count() + 1);
        assert_eq!(merged[0], (127e-9, 3));
        assert_eq!(merged[1], (255e-9, 12));
        assert!(merged[2..merged.len() - 1].iter().all(|&(_, c)| c == 0));
        assert_eq!(merged.last(), Some(&(f64::INFINITY, 1)));
    }

    proptest! {
        /// Any kernel histogram: the merged buckets hold every call, and the cumulative
        /// count at each bound is exactly the number of calls at or below it.
        #[test]
        fn merging_keeps_counts_exact(values in proptest::collection::vec(0u64..(1 << 36), 0..200)) {
            let mut dense = vec![0u64; HISTOGRAM_BUCKETS];
            for &v in &values {
                dense[syscost_common::bucket_index(v)] += 1;
            }
            let merged = classic_buckets(&latency::to_sparse(&dense));
            prop_assert_eq!(merged.iter().map(|&(_, c)| c).sum::<u64>(), values.len() as u64);
            let mut cumulative = 0;
            for ((le, c), bound) in merged.iter().zip(bucket_bounds_ns()) {
                cumulative += c;
                prop_assert_eq!(*le, bound as f64 / 1e9);
                let at_or_below = values.iter().filter(|&&v| v <= bound).count() as u64;
                prop_assert_eq!(cumulative, at_or_below, "le={}", bound);
            }
        }
    }

    fn syscall(
        name: &str,
        calls: u64,
        errnos: &[(&str, u64)],
        hist: Vec<Bucket>,
    ) -> SyscallProfile {
        let total_ns = hist.iter().map(|b| b.count * b.lo_ns).sum();
        SyscallProfile {
            name: name.into(),
            nr: 0,
            calls,
            errors: errnos.iter().map(|e| e.1).sum(),
            errnos: errnos
                .iter()
                .map(|&(e, n)| (e.to_string(), n))
                .collect::<BTreeMap<_, _>>(),
            total_ns,
            oncpu_ns: total_ns - total_ns / 4,
            offcpu_ns: total_ns / 4,
            voluntary_switches: 0,
            involuntary_switches: 0,
            avg_ns: total_ns / calls,
            min_ns: hist.first().map_or(0, |b| b.lo_ns),
            max_ns: hist.last().map_or(0, |b| b.hi_ns),
            p50_ns: 0,
            p90_ns: 0,
            p99_ns: 0,
            histogram: hist,
        }
    }

    /// The live view's echo-server profile, with syscalls whose errnos and buckets
    /// exercise the exposition.
    fn server_profile() -> Profile {
        Profile {
            syscalls: vec![
                syscall(
                    "close",
                    4,
                    &[("EBADF", 1)],
                    vec![
                        Bucket {
                            lo_ns: 1000,
                            hi_ns: 1023,
                            count: 3,
                        },
                        Bucket {
                            lo_ns: 24576,
                            hi_ns: 26623,
                            count: 1,
                        },
                    ],
                ),
                syscall(
                    "getppid",
                    2,
                    &[],
                    vec![Bucket {
                        lo_ns: 240,
                        hi_ns: 255,
                        count: 2,
                    }],
                ),
            ],
            ..crate::tui::app::tests::server_profile(1)
        }
    }

    #[test]
    fn bounded_series_in_the_exposition() {
        let mut b = crate::metrics::series::BoundedSeries::new(1);
        let mut row = crate::process_table::ProcessRow {
            pid: 42,
            comm: "app".into(),
            cgroup: "/x".into(),
            ..Default::default()
        };
        row.syscalls.insert(
            crate::syscall_names::SyscallId::native(110),
            syscost_common::TopValue {
                calls: 5,
                errors: 1,
                total_ns: 2_000_000_000,
                offcpu_ns: 500_000_000,
            },
        );
        let other = crate::process_table::ProcessRow {
            pid: 43,
            ..row.clone()
        };
        b.add(
            &[row, other],
            |r| r.pid.to_string(),
            |r| vec![("pid", r.pid.to_string()), ("comm", r.comm.clone())],
            &[],
            Instant::now(),
        );
        let series = b.series(vec![("pid", "other".into()), ("comm", String::new())]);
        let scrape = |offcpu_tracked| Scrape {
            processes: Vec::new(),
            bpf_run: None,
            processes_top: series.clone(),
            cgroups_top: Vec::new(),
            offcpu_tracked,
            slow: Vec::new(),
            machine_dropped: Some(3),
        };
        let text = exposition(scrape(true)).unwrap();
        for line in [
            "syscost_process_syscalls_total{pid=\"42\",comm=\"app\",syscall=\"getppid\"} 5",
            "syscost_process_syscalls_total{pid=\"other\",comm=\"\",syscall=\"getppid\"} 5",
            "syscost_process_syscall_errors_total{pid=\"42\",comm=\"app\",syscall=\"getppid\"} 1",
            "syscost_process_syscall_seconds_total{pid=\"42\",comm=\"app\",syscall=\"getppid\"} 2.0",
            "syscost_process_syscall_offcpu_seconds_total{pid=\"42\",comm=\"app\",syscall=\"getppid\"} 0.5",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        // The machine's dropped events, unlabelled, whatever the series.
        assert!(
            text.contains("\nsyscost_events_dropped_total 3\n"),
            "{text}"
        );
        let text = exposition(scrape(false)).unwrap();
        assert!(!text.contains("syscost_process_syscall_offcpu"), "{text}");
    }

    #[test]
    fn exposition_of_a_profile() {
        insta::assert_snapshot!(
            exposition(Scrape {
                processes_top: Vec::new(),
                cgroups_top: Vec::new(),
                offcpu_tracked: true,
                slow: Vec::new(),
                machine_dropped: None,
                processes: vec![server_profile()],
                bpf_run: Some((1_500_000, 1_000_000_000)),
            })
            .unwrap()
        );
    }

    #[test]
    fn exposition_without_run_stats_or_offcpu() {
        let mut p = server_profile();
        p.offcpu_tracked = false;
        let text = exposition(Scrape {
            processes_top: Vec::new(),
            cgroups_top: Vec::new(),
            offcpu_tracked: true,
            slow: Vec::new(),
            machine_dropped: None,
            processes: vec![p],
            bpf_run: None,
        })
        .unwrap();
        assert!(!text.contains("syscost_bpf_run_seconds_total"), "{text}");
        assert!(
            !text.contains("syscost_syscall_offcpu_seconds_total{"),
            "{text}"
        );
        assert!(
            text.contains(
                "syscost_syscalls_total{pid=\"4242\",comm=\"echo-server\",syscall=\"close\"} 4"
            ),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn two_processes_keep_their_own_series() {
        let a = server_profile();
        let mut b = server_profile();
        b.target.pid = 7;
        b.syscalls[1].calls = 9;
        let text = exposition(Scrape {
            processes_top: Vec::new(),
            cgroups_top: Vec::new(),
            offcpu_tracked: true,
            slow: Vec::new(),
            machine_dropped: None,
            processes: vec![a, b],
            bpf_run: Some((1, 1_000_000_000)),
        })
        .unwrap();
        assert!(
            text.contains(
                "syscost_syscalls_total{pid=\"4242\",comm=\"echo-server\",syscall=\"getppid\"} 2\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "syscost_syscalls_total{pid=\"7\",comm=\"echo-server\",syscall=\"getppid\"} 9\n"
            ),
            "{text}"
        );
        // One descriptor per family, however many processes.
        assert_eq!(text.matches("# TYPE syscost_syscalls counter").count(), 1);
        // The programs' cost is one figure for all the processes.
        assert_eq!(
            text.matches("\nsyscost_bpf_run_seconds_total 1e-9\n")
                .count(),
            1,
            "{text}"
        );
    }
}
