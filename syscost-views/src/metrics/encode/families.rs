//! What each family of a scrape says: its name, help, unit, labels and values (the
//! syscalls', errnos', latency histograms', the machine's, the per-process table's).

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, NativeHistogram, NativeHistogramBuckets, NoLabelSet},
    metrics::MetricType,
    registry::Unit,
};

use super::{MachineCounters, Scrape, ZERO_THRESHOLD};
use crate::metrics::{
    buckets::{NATIVE_SCHEMA, classic_buckets, native_buckets},
    series::OwnSeries,
};
use syscost_report::profile::{Profile, SyscallProfile, Target};

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
