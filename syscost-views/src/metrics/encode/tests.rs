use std::collections::BTreeMap;

use super::*;

use crate::metrics::buckets::NATIVE_SCHEMA;
use syscost_report::{latency::Bucket, profile::SyscallProfile};

fn syscall(name: &str, calls: u64, errnos: &[(&str, u64)], hist: Vec<Bucket>) -> SyscallProfile {
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
