//! A sample as an OTLP request: its resources, sums and exponential histograms.

use super::proto::{self, common, metrics as m, resource};
use crate::metrics::{
    buckets::{NATIVE_SCHEMA, native_counts},
    encode::Scrape,
};
use std::collections::BTreeMap;
use syscost_report::profile::Profile;

pub(super) fn kv(key: &str, value: common::any_value::Value) -> common::KeyValue {
    common::KeyValue {
        key: key.to_string(),
        value: Some(common::AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

pub(super) fn string(key: &str, value: &str) -> common::KeyValue {
    kv(
        key,
        common::any_value::Value::StringValue(value.to_string()),
    )
}

/// The resource of a traced process or cgroup.
pub(super) fn resource_of(
    p: &Profile,
    host: &str,
    kube: &[(&'static str, String)],
) -> resource::Resource {
    let mut attributes = vec![string("host.name", host)];
    // The Kubernetes pod and container its cgroup is, under OpenTelemetry's names.
    for (label, value) in kube {
        let key = match *label {
            "pod_uid" => "k8s.pod.uid",
            "pod" => "k8s.pod.name",
            "namespace" => "k8s.namespace.name",
            "container" => "k8s.container.name",
            "container_id" => "container.id",
            _ => continue,
        };
        attributes.push(string(key, value));
    }
    match &p.target.cgroup {
        Some(cg) => attributes.push(string("syscost.cgroup", cg)),
        None => {
            attributes.push(kv(
                "process.pid",
                common::any_value::Value::IntValue(i64::from(p.target.pid)),
            ));
            attributes.push(string("process.executable.name", &p.target.comm));
        }
    }
    resource::Resource {
        attributes,
        ..Default::default()
    }
}

/// A monotonic cumulative sum of one point per syscall.
pub(super) fn sum(
    name: &str,
    description: &str,
    unit: &str,
    points: Vec<m::NumberDataPoint>,
) -> m::Metric {
    m::Metric {
        name: name.to_string(),
        description: description.to_string(),
        unit: unit.to_string(),
        data: Some(m::metric::Data::Sum(m::Sum {
            data_points: points,
            aggregation_temporality: m::AggregationTemporality::Cumulative as i32,
            is_monotonic: true,
        })),
        ..Default::default()
    }
}

/// The exponential histogram buckets of a kernel histogram: (zero count, offset, counts).
/// Scale 3's bucket `i` holds (2^(i/8), 2^((i+1)/8)] seconds: the native bucket `i + 1`.
pub fn exponential_buckets(hist: &[syscost_report::latency::Bucket]) -> (u64, i32, Vec<u64>) {
    let (zero, by_index) = native_counts(hist);
    let (Some((&first, _)), Some((&last, _))) =
        (by_index.first_key_value(), by_index.last_key_value())
    else {
        return (zero, 0, Vec::new());
    };
    let mut counts = vec![0u64; (last - first + 1) as usize];
    for (i, n) in by_index {
        counts[(i - first) as usize] = n;
    }
    (zero, first - 1, counts)
}

/// Each series' start (ns since the epoch), by its process or cgroup: set at its first
/// push and kept, as a cumulative series' start must be (a start that moves reads as a
/// reset).
pub type Starts = std::collections::HashMap<String, u64>;

/// The Kubernetes labels of each process or cgroup (by `key_of`), where its cgroup is
/// a pod's container.
pub type Kube = std::collections::HashMap<String, Vec<(&'static str, String)>>;

/// What a process's or a cgroup's series are known by from push to push.
pub(super) fn key_of(p: &Profile) -> String {
    match &p.target.cgroup {
        Some(cg) => format!("cgroup {cg}"),
        None => format!("pid {}", p.target.pid),
    }
}

/// The request of `scrape`, its points stamped `now` (the sample's time, ns since the
/// epoch), each process's series starting where `starts` says (at its first push, `now`
/// less its duration).
pub fn request(
    scrape: &Scrape,
    now: u64,
    host: &str,
    starts: &mut Starts,
    kube: &Kube,
) -> proto::collector::ExportMetricsServiceRequest {
    let mut seen = std::collections::HashSet::new();
    let mut resource_metrics: Vec<m::ResourceMetrics> = scrape
        .processes
        .iter()
        .map(|p| {
            let key = key_of(p);
            seen.insert(key.clone());
            let labels = kube.get(&key).map(Vec::as_slice).unwrap_or_default();
            let start = *starts
                .entry(key)
                .or_insert_with(|| now.saturating_sub(p.duration_ns));
            let attrs = |s: &syscost_report::profile::SyscallProfile| vec![string("syscall", &s.name)];
            let point = |s, v| m::NumberDataPoint {
                attributes: attrs(s),
                start_time_unix_nano: start,
                time_unix_nano: now,
                value: Some(v),
                ..Default::default()
            };
            use m::number_data_point::Value::{AsDouble, AsInt};
            let mut metrics = vec![
                sum(
                    "syscost_syscalls",
                    "Syscalls completed, by syscall.",
                    "{call}",
                    p.syscalls
                        .iter()
                        .map(|s| point(s, AsInt(s.calls as i64)))
                        .collect(),
                ),
                sum(
                    "syscost_syscall_errors",
                    "Syscalls that returned an error, by syscall and errno.",
                    "{call}",
                    p.syscalls
                        .iter()
                        .flat_map(|s| {
                            s.errnos.iter().map(move |(errno, &n)| {
                                let mut pt = point(s, AsInt(n as i64));
                                pt.attributes.push(string("errno", errno));
                                pt
                            })
                        })
                        .collect(),
                ),
                sum(
                    "syscost_syscall",
                    "Time spent in syscalls, entry to exit, by syscall.",
                    "s",
                    p.syscalls
                        .iter()
                        .map(|s| point(s, AsDouble(s.total_ns as f64 / 1e9)))
                        .collect(),
                ),
            ];
            if p.offcpu_tracked {
                metrics.push(sum(
                    "syscost_syscall_offcpu",
                    "Of the time in syscalls, the part the thread was switched out (blocked or preempted).",
                    "s",
                    p.syscalls
                        .iter()
                        .map(|s| point(s, AsDouble(s.offcpu_ns as f64 / 1e9)))
                        .collect(),
                ));
            }
            metrics.push(m::Metric {
                name: "syscost_syscall_duration".into(),
                description: "Syscall latency, entry to exit.".into(),
                unit: "s".into(),
                data: Some(m::metric::Data::ExponentialHistogram(m::ExponentialHistogram {
                    data_points: p
                        .syscalls
                        .iter()
                        .map(|s| {
                            let (zero_count, offset, bucket_counts) =
                                exponential_buckets(&s.histogram);
                            m::ExponentialHistogramDataPoint {
                                attributes: attrs(s),
                                start_time_unix_nano: start,
                                time_unix_nano: now,
                                count: s.calls,
                                sum: Some(s.total_ns as f64 / 1e9),
                                scale: NATIVE_SCHEMA,
                                zero_count,
                                positive: Some(m::exponential_histogram_data_point::Buckets {
                                    offset,
                                    bucket_counts,
                                }),
                                min: (s.calls > 0).then(|| s.min_ns as f64 / 1e9),
                                max: (s.calls > 0).then(|| s.max_ns as f64 / 1e9),
                                ..Default::default()
                            }
                        })
                        .collect(),
                    aggregation_temporality: m::AggregationTemporality::Cumulative as i32,
                })),
                ..Default::default()
            });
            resource_metrics_of(resource_of(p, host, labels), metrics)
        })
        .collect();
    if let Some(r) = machine_resource(scrape, now, host, starts, &mut seen) {
        resource_metrics.push(r);
    }
    // A series no longer served starts anew if it comes back (a process folded into
    // `other`, then busy again): its start is forgotten, and the map stays bounded.
    starts.retain(|k, _| seen.contains(k));
    proto::collector::ExportMetricsServiceRequest { resource_metrics }
}

/// `export --top`'s (and `--per-process`'s) bounded series and the machine's counters,
/// under the host's resource: the exposition's families (`syscost_process_syscalls`,
/// `syscost_cgroup_syscall`...), each point with the series' labels as /metrics has
/// them (`pid`, `comm`, `cgroup`, the pod's) and `syscall`.
pub(super) fn machine_resource(
    scrape: &Scrape,
    now: u64,
    host: &str,
    starts: &mut Starts,
    seen: &mut std::collections::HashSet<String>,
) -> Option<m::ResourceMetrics> {
    use m::number_data_point::Value::{AsDouble, AsInt};
    let mut metrics = Vec::new();
    let mut start_of = |key: String| {
        seen.insert(key.clone());
        *starts.entry(key).or_insert(now)
    };
    for (prefix, what, series) in [
        ("syscost_process", "process", &scrape.processes_top),
        ("syscost_cgroup", "cgroup", &scrape.cgroups_top),
    ] {
        if series.is_empty() {
            continue;
        }
        type Pick = fn(&syscost_common::TopValue) -> m::number_data_point::Value;
        let families: [(&str, &str, &str, Pick); 4] = [
            ("syscalls", "Syscalls completed", "{call}", |v| {
                AsInt(v.calls as i64)
            }),
            (
                "syscall_errors",
                "Syscalls that returned an error",
                "{call}",
                |v| AsInt(v.errors as i64),
            ),
            (
                "syscall",
                "Time spent in syscalls, entry to exit",
                "s",
                |v| AsDouble(v.total_ns as f64 / 1e9),
            ),
            (
                "syscall_offcpu",
                "Of the time in syscalls, the part switched out",
                "s",
                |v| AsDouble(v.offcpu_ns as f64 / 1e9),
            ),
        ];
        for (name, help, unit, pick) in families {
            if name == "syscall_offcpu" && !scrape.offcpu_tracked {
                continue;
            }
            let mut points = Vec::new();
            for s in series {
                let key = format!(
                    "{prefix} {}",
                    s.labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                );
                let start = start_of(key);
                for (id, v) in &s.syscalls {
                    let mut attributes: Vec<common::KeyValue> =
                        s.labels.iter().map(|(k, v)| string(k, v)).collect();
                    attributes.push(string("syscall", &id.name()));
                    points.push(m::NumberDataPoint {
                        attributes,
                        start_time_unix_nano: start,
                        time_unix_nano: now,
                        value: Some(pick(v)),
                        ..Default::default()
                    });
                }
            }
            metrics.push(sum(
                &format!("{prefix}_{name}"),
                &format!("{help}, by {what} and syscall (bounded: the busiest plus other)."),
                unit,
                points,
            ));
        }
    }
    if let Some(c) = &scrape.machine {
        let start = start_of("machine".into());
        for (name, help, n) in [
            (
                "syscost_events_dropped",
                "Events the tables had no room for.",
                c.dropped,
            ),
            (
                "syscost_events_unpaired",
                "Syscall exits without a seen entry.",
                c.unpaired,
            ),
            (
                "syscost_switch_ins_unseen",
                "Calls whose return to a CPU the kernel did not report.",
                c.switch_ins_unseen,
            ),
        ] {
            metrics.push(sum(
                name,
                help,
                "{event}",
                vec![m::NumberDataPoint {
                    start_time_unix_nano: start,
                    time_unix_nano: now,
                    value: Some(AsInt(n as i64)),
                    ..Default::default()
                }],
            ));
        }
    }
    if metrics.is_empty() {
        return None;
    }
    Some(resource_metrics_of(
        resource::Resource {
            attributes: vec![string("host.name", host)],
            ..Default::default()
        },
        metrics,
    ))
}

/// `metrics` of `resource`, in syscost's instrumentation scope.
pub(super) fn resource_metrics_of(
    resource: resource::Resource,
    metrics: Vec<m::Metric>,
) -> m::ResourceMetrics {
    m::ResourceMetrics {
        resource: Some(resource),
        scope_metrics: vec![m::ScopeMetrics {
            scope: Some(common::InstrumentationScope {
                name: "syscost".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Default::default()
            }),
            metrics,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The families of the request's first resource, by name (for tests).
#[doc(hidden)]
pub fn names(req: &proto::collector::ExportMetricsServiceRequest) -> BTreeMap<String, usize> {
    req.resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .fold(BTreeMap::new(), |mut acc, m| {
            *acc.entry(m.name.clone()).or_default() += 1;
            acc
        })
}
