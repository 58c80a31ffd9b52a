//! One scrape, written by `prometheus-client` as OpenMetrics text or, for a Prometheus
//! that asks for it (native histograms), as protobuf: this module only says what goes
//! in it.

use anyhow::Result;
use bytes::Bytes;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, NativeHistogram, NativeHistogramBuckets, NoLabelSet},
    metrics::MetricType,
    registry::{Registry, Unit},
};

use super::{
    buckets::{NATIVE_SCHEMA, classic_buckets, native_buckets},
    series::OwnSeries,
};
use syscost_report::profile::{Profile, SyscallProfile, Target};

/// The content type of the text exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the protobuf exposition (length-delimited `MetricFamily`
/// messages), the one format that carries native histograms.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// What one scrape shows.
#[derive(Clone, Debug, Default)]
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
    /// `export --top`: the whole machine's counters (served without labels on every
    /// scrape, 0 included).
    pub machine: Option<MachineCounters>,
    /// The per-process table's occupancy, wherever one is in use (`export --top`,
    /// `export --cgroup --per-process`).
    pub table: Option<TableCounters>,
    /// The number of the session's sample the scrape shows (`syscost_samples_total`:
    /// the samples taken so far), when served from one.
    pub samples: Option<u64>,
    /// With `--otlp-endpoint`: requests the receiver accepted, requests dropped, tries
    /// failed (`syscost_otlp_*`).
    pub otlp: Option<(u64, u64, u64)>,
}

/// The counters of a whole machine's tracing (`export --top`), every slot's.
#[derive(Debug, Clone, Copy, Default)]
pub struct MachineCounters {
    /// Events its tables had no room for.
    pub dropped: u64,
    /// Exits without a seen entry.
    pub unpaired: u64,
    /// Calls whose return to a CPU the kernel did not report.
    pub switch_ins_unseen: u64,
}

/// The per-process table's occupancy.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableCounters {
    /// Pairs of live processes handed over from the per-process table to make room.
    pub reclaimed: u64,
    /// The pairs in use at its last refresh.
    pub pairs: u64,
    /// The pairs it holds at most.
    pub capacity: u64,
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
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry(scrape))
        .map_err(|_| anyhow::anyhow!("cannot encode the metrics"))?;
    Ok(out)
}

/// The protobuf exposition of a scrape: the same families and samples as the text, the
/// latency histograms with their native buckets beside the classic ones.
pub fn exposition_protobuf(scrape: Scrape) -> Result<Vec<u8>> {
    prometheus_client::encoding::prometheus_protobuf::encode_to_vec(&registry(scrape))
        .map_err(|e| anyhow::anyhow!("cannot encode the metrics: {e:?}"))
}

/// A registry holding the one collector, the scrape.
fn registry(scrape: Scrape) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    registry
}

/// The endpoint's own counters: what it refused its clients. They move between samples,
/// so they are written apart and added to a sample's exposition, which is encoded once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointCounters {
    /// Connections closed as they came, the most allowed being open.
    pub connections_refused: u64,
    /// Requests answered 503 because every password check was busy (`None`: the
    /// endpoint asks for no password).
    pub password_checks_refused: Option<u64>,
}

impl Collector for EndpointCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        encoder
            .encode_descriptor(
                "syscost_scrape_connections_refused",
                "Connections to the metrics endpoint closed as they came, --metrics-max-connections being open.",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, u64, u64>(&self.connections_refused, None)?;
        if let Some(n) = self.password_checks_refused {
            encoder
                .encode_descriptor(
                    "syscost_scrape_password_checks_refused",
                    "Requests answered 503 (Retry-After) because every password check was busy.",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, u64, u64>(&n, None)?;
        }
        Ok(())
    }
}

/// The end of the text exposition.
const EOF: &[u8] = b"# EOF\n";

/// `body`, a sample's exposition in `format`, with the endpoint's `counters` added: the
/// text's families before its `# EOF`, protobuf's messages after the others. The answer
/// is the body (or all of it but its `# EOF`), shared, not copied, and a tail: a scrape
/// costs the counters' encoding, whatever the size of the sample's.
pub fn with_endpoint_counters(
    format: Format,
    body: &Bytes,
    counters: EndpointCounters,
) -> Result<(Bytes, Bytes)> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(counters));
    match format {
        Format::Text => {
            let mut tail = String::new();
            prometheus_client::encoding::text::encode(&mut tail, &registry)
                .map_err(|_| anyhow::anyhow!("cannot encode the endpoint's counters"))?;
            let head = match body.strip_suffix(EOF) {
                Some(head) => body.slice(..head.len()),
                None => body.clone(),
            };
            Ok((head, Bytes::from(tail)))
        }
        Format::Protobuf => {
            let tail =
                prometheus_client::encoding::prometheus_protobuf::encode_to_vec(&registry)
                    .map_err(|e| anyhow::anyhow!("cannot encode the endpoint's counters: {e:?}"))?;
            Ok((body.clone(), Bytes::from(tail)))
        }
    }
}

/// The native histograms' zero bucket: 2^-128 s, as Prometheus's own clients use, so
/// that it holds the calls of 0 ns alone (latencies are whole nanoseconds).
const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// The formats of the exposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Protobuf,
}

/// The format an `Accept` header asks for: protobuf when it names the delimited
/// `io.prometheus.client.MetricFamily` with a quality above every text type's (as a
/// Prometheus with native histograms on asks), text otherwise.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut protobuf, mut text) = (None::<f64>, None::<f64>);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut q, mut proto, mut delimited) = (1.0, false, false);
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match (
                k.trim().to_ascii_lowercase().as_str(),
                v.trim().trim_matches('"'),
            ) {
                ("q", v) => q = v.parse().unwrap_or(0.0),
                ("proto", "io.prometheus.client.MetricFamily") => proto = true,
                ("encoding", "delimited") => delimited = true,
                _ => {}
            }
        }
        let best = |slot: &mut Option<f64>| *slot = Some(slot.map_or(q, |b: f64| b.max(q)));
        match media.as_str() {
            "application/vnd.google.protobuf" if proto && delimited => best(&mut protobuf),
            "application/openmetrics-text" | "text/plain" | "text/*" | "*/*" => best(&mut text),
            _ => {}
        }
    }
    match (protobuf, text) {
        (Some(p), t) if p > 0.0 && p > t.unwrap_or(0.0) => Format::Protobuf,
        _ => Format::Text,
    }
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
    /// A counter family with a sample per process and, for `export --top`, the machine's
    /// unlabelled one.
    fn per_process_and_machine(
        &self,
        encoder: &mut DescriptorEncoder,
        (name, help, unit): (&str, &str, Option<&Unit>),
        value: impl Fn(&Profile) -> u64,
        machine: impl Fn(&MachineCounters) -> u64,
    ) -> std::fmt::Result {
        let mut family = encoder.encode_descriptor(name, help, unit, MetricType::Counter)?;
        for p in &self.processes {
            family
                .encode_family(&process_labels(&p.target))?
                .encode_counter::<NoLabelSet, u64, u64>(&value(p), None)?;
        }
        if let Some(m) = &self.machine {
            family
                .encode_family(&Vec::<(&str, String)>::new())?
                .encode_counter::<NoLabelSet, u64, u64>(&machine(m), None)?;
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
                let native = native_buckets(&s.histogram);
                family
                    .encode_family(&syscall_labels(t, s))?
                    .encode_histogram_with_native::<NoLabelSet>(
                        s.total_ns as f64 / 1e9,
                        s.calls,
                        &classic_buckets(&s.histogram),
                        None,
                        NativeHistogram {
                            schema: NATIVE_SCHEMA,
                            zero_threshold: ZERO_THRESHOLD,
                            zero_count: native.zero_count,
                            negative: NativeHistogramBuckets {
                                spans: &[],
                                deltas: &[],
                            },
                            positive: NativeHistogramBuckets {
                                spans: &native.spans,
                                deltas: &native.deltas,
                            },
                            created: None,
                        },
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
            if let Some(m) = &self.machine {
                family
                    .encode_family(&Vec::<(&str, String)>::new())?
                    .encode_counter::<NoLabelSet, u64, u64>(&m.dropped, None)?;
            }
        }
        self.per_process_and_machine(
            &mut encoder,
            (
                "syscost_events_unpaired",
                "Syscall exits without a recorded entry (in flight when tracing began).",
                None,
            ),
            |p| p.unpaired,
            |m| m.unpaired,
        )?;
        self.per_process_and_machine(
            &mut encoder,
            (
                "syscost_switch_ins_unseen",
                "Calls whose return to a CPU the kernel did not report: their time from that switch-out counts as switched out (an upper bound).",
                None,
            ),
            |p| p.switch_ins_unseen,
            |m| m.switch_ins_unseen,
        )?;
        if let Some(t) = &self.table {
            encoder
                .encode_descriptor(
                    "syscost_top_pairs_reclaimed",
                    "Process-syscall pairs of live processes, unchanged over the table's last 30 refreshes (30 s or less), handed over from the per-process table (their figures counted) to keep half of it free.",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, u64, u64>(&t.reclaimed, None)?;
            for (name, help, value) in [
                (
                    "syscost_top_pairs",
                    "Process-syscall pairs in the per-process table at its last refresh.",
                    t.pairs,
                ),
                (
                    "syscost_top_pairs_capacity",
                    "Process-syscall pairs the per-process table holds at most (beyond, calls are dropped, counted in syscost_events_dropped_total).",
                    t.capacity,
                ),
            ] {
                encoder
                    .encode_descriptor(name, help, None, MetricType::Gauge)?
                    .encode_gauge(&value)?;
            }
        }
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
        if let Some(seq) = self.samples {
            encoder
                .encode_descriptor(
                    "syscost_samples",
                    "Samples syscost has taken of its counters (one every -i, 1 s unless told): every other series is the latest's.",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, u64, u64>(&seq, None)?;
        }
        if let Some((sent, dropped, failures)) = self.otlp {
            for (name, help, n) in [
                (
                    "syscost_otlp_exports",
                    "Pushes of the metrics the OTLP receiver accepted (--otlp-endpoint).",
                    sent,
                ),
                (
                    "syscost_otlp_exports_dropped",
                    "Pushes never accepted: replaced by newer figures while the receiver was away, or refused for good.",
                    dropped,
                ),
                (
                    "syscost_otlp_export_failures",
                    "Tries to push that failed (each retried while its figures are the newest).",
                    failures,
                ),
            ] {
                encoder
                    .encode_descriptor(name, help, None, MetricType::Counter)?
                    .encode_counter::<NoLabelSet, u64, u64>(&n, None)?;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    use syscost_report::latency::Bucket;

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
            ..syscost_report::fixtures::server_profile(1)
        }
    }

    #[test]
    fn bounded_series_in_the_exposition() {
        let series = crate::metrics::series::two_processes_one_kept();
        let scrape = |offcpu_tracked| Scrape {
            processes: Vec::new(),
            bpf_run: None,
            processes_top: series.clone(),
            cgroups_top: Vec::new(),
            offcpu_tracked,
            slow: Vec::new(),
            machine: Some(MachineCounters {
                dropped: 3,
                unpaired: 4,
                switch_ins_unseen: 5,
            }),
            table: Some(TableCounters {
                reclaimed: 6,
                pairs: 70,
                capacity: 128,
            }),
            samples: None,
            otlp: None,
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
        // The machine's counters, unlabelled, whatever the series.
        for line in [
            "\nsyscost_events_dropped_total 3\n",
            "\nsyscost_events_unpaired_total 4\n",
            "\nsyscost_top_pairs_reclaimed_total 6\n",
            "\nsyscost_top_pairs 70\n",
            "\nsyscost_top_pairs_capacity 128\n",
            "\nsyscost_switch_ins_unseen_total 5\n",
        ] {
            assert!(text.contains(line), "{line:?} missing:\n{text}");
        }
        let text = exposition(scrape(false)).unwrap();
        assert!(!text.contains("syscost_process_syscall_offcpu"), "{text}");
    }

    /// A scrape of these profiles alone (no --top series, no slow calls).
    fn of_profiles(processes: Vec<Profile>, bpf_run: Option<(u64, u64)>) -> Scrape {
        Scrape {
            processes_top: Vec::new(),
            cgroups_top: Vec::new(),
            offcpu_tracked: true,
            slow: Vec::new(),
            machine: None,
            table: None,
            samples: None,
            otlp: None,
            processes,
            bpf_run,
        }
    }

    /// What the OTLP pusher did is served with `--otlp-endpoint` alone.
    #[test]
    fn the_otlp_counters_are_served_when_pushing() {
        let body = exposition(of_profiles(vec![server_profile()], None)).unwrap();
        assert!(!body.contains("syscost_otlp"), "{body}");
        let body = exposition(Scrape {
            otlp: Some((7, 2, 3)),
            ..of_profiles(vec![server_profile()], None)
        })
        .unwrap();
        for line in [
            "syscost_otlp_exports_total 7",
            "syscost_otlp_exports_dropped_total 2",
            "syscost_otlp_export_failures_total 3",
        ] {
            assert!(body.contains(&format!("\n{line}\n")), "{line}: {body}");
        }
    }

    #[test]
    fn exposition_of_a_profile() {
        insta::assert_snapshot!(
            exposition(of_profiles(
                vec![server_profile()],
                Some((1_500_000, 1_000_000_000))
            ))
            .unwrap()
        );
    }

    /// What Prometheus 2.42 sends: with `--enable-feature=native-histograms`, and without.
    const NATIVE_ACCEPT: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    const TEXT_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn protobuf_only_when_asked_above_text() {
        assert_eq!(negotiate(Some(NATIVE_ACCEPT)), Format::Protobuf);
        assert_eq!(negotiate(Some(TEXT_ACCEPT)), Format::Text);
        assert_eq!(negotiate(None), Format::Text);
        assert_eq!(negotiate(Some("*/*")), Format::Text);
        // Protobuf that is not the delimited MetricFamily, or ranked below text.
        assert_eq!(
            negotiate(Some(
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily"
            )),
            Format::Text
        );
        assert_eq!(
            negotiate(Some(
                "text/plain;q=0.9, application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; q=0.5"
            )),
            Format::Text
        );
        assert_eq!(
            negotiate(Some(
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0"
            )),
            Format::Text
        );
    }

    #[test]
    fn protobuf_carries_the_native_and_the_classic_buckets() {
        use prometheus_client::encoding::prometheus_protobuf::{encode, prometheus_data_model};
        let scrape = of_profiles(vec![server_profile()], None);
        let families = encode(&registry(scrape.clone())).unwrap();
        // The same families as the text, by name.
        let text = exposition(scrape.clone()).unwrap();
        assert_eq!(families.len(), text.matches("# TYPE ").count());
        // Each family's samples by their exact names (a histogram's: _bucket, _sum, _count).
        let sample_names: std::collections::BTreeSet<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect();
        for f in &families {
            let histogram = f.r#type == prometheus_data_model::MetricType::Histogram as i32;
            let named = if histogram {
                ["_bucket", "_sum", "_count"]
                    .iter()
                    .all(|s| sample_names.contains(format!("{}{s}", f.name).as_str()))
            } else {
                sample_names.contains(f.name.as_str())
            };
            assert!(named, "{} not in the text: {sample_names:?}", f.name);
        }
        let durations = families
            .iter()
            .find(|f| f.name == "syscost_syscall_duration_seconds")
            .expect("the latency family");
        assert_eq!(
            durations.r#type,
            prometheus_data_model::MetricType::Histogram as i32
        );
        assert_eq!(durations.metric.len(), scrape.processes[0].syscalls.len());
        for (m, s) in durations.metric.iter().zip(&scrape.processes[0].syscalls) {
            let h = m.histogram.as_ref().unwrap();
            assert_eq!(h.schema, NATIVE_SCHEMA);
            assert_eq!(h.sample_count, s.calls);
            let native: i64 = h
                .positive_delta
                .iter()
                .scan(0i64, |c, d| {
                    *c += d;
                    Some(*c)
                })
                .sum();
            assert_eq!(native as u64 + h.zero_count, s.calls, "{}", s.name);
            assert_eq!(h.bucket.last().map(|b| b.cumulative_count), Some(s.calls));
        }
        assert!(!exposition_protobuf(scrape).unwrap().is_empty());
    }

    #[test]
    fn exposition_without_run_stats_or_offcpu() {
        let mut p = server_profile();
        p.offcpu_tracked = false;
        let text = exposition(of_profiles(vec![p], None)).unwrap();
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

    /// The endpoint's counters go in before the text's one `# EOF`, after protobuf's
    /// messages; the sample's number is a counter of its own.
    #[test]
    fn the_endpoint_counters_are_added_to_a_sample_exposition() {
        let scrape = Scrape {
            samples: Some(17),
            ..of_profiles(vec![server_profile()], None)
        };
        let body = exposition(scrape.clone()).unwrap();
        assert!(body.contains("\nsyscost_samples_total 17\n"), "{body}");
        let counters = EndpointCounters {
            connections_refused: 3,
            password_checks_refused: None,
        };
        let joined = |(head, tail): (Bytes, Bytes)| [head, tail].concat();
        let text_body = Bytes::from(body.clone());
        let text = String::from_utf8(joined(
            with_endpoint_counters(Format::Text, &text_body, counters).unwrap(),
        ))
        .unwrap();
        assert!(text.starts_with(body.strip_suffix("# EOF\n").unwrap()));
        assert!(
            text.ends_with("\nsyscost_scrape_connections_refused_total 3\n# EOF\n"),
            "{text}"
        );
        assert_eq!(text.matches("# EOF").count(), 1);
        assert!(!text.contains("password_checks"), "{text}");
        let text = String::from_utf8(joined(
            with_endpoint_counters(
                Format::Text,
                &text_body,
                EndpointCounters {
                    password_checks_refused: Some(5),
                    ..counters
                },
            )
            .unwrap(),
        ))
        .unwrap();
        assert!(
            text.contains("\nsyscost_scrape_password_checks_refused_total 5\n"),
            "{text}"
        );
        let proto = exposition_protobuf(scrape).unwrap();
        let proto = Bytes::from(proto);
        let (head, tail) = with_endpoint_counters(Format::Protobuf, &proto, counters).unwrap();
        assert_eq!(head, proto, "the body itself");
        // Read back as a scraper reads it: length-delimited MetricFamily messages, the
        // body's then the counter's.
        let families = |mut bytes: &[u8]| {
            use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::MetricFamily;
            use prost::Message as _;
            let mut names = Vec::new();
            while !bytes.is_empty() {
                let family = MetricFamily::decode_length_delimited(&mut bytes)
                    .expect("a length-delimited MetricFamily");
                names.push(family.name);
            }
            names
        };
        let alone = families(&proto);
        let answer = families(&[head, tail].concat());
        assert_eq!(answer.len(), alone.len() + 1, "{answer:?}");
        assert_eq!(answer[..alone.len()], alone[..]);
        assert!(
            answer
                .last()
                .unwrap()
                .starts_with("syscost_scrape_connections_refused"),
            "{answer:?}"
        );
    }

    #[test]
    fn two_processes_keep_their_own_series() {
        let a = server_profile();
        let mut b = server_profile();
        b.target.pid = 7;
        b.syscalls[1].calls = 9;
        let text = exposition(of_profiles(vec![a, b], Some((1, 1_000_000_000)))).unwrap();
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
