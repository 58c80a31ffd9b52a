use super::{
    proto::{common, metrics as m},
    *,
};
use crate::metrics::{buckets::NATIVE_SCHEMA, encode::Scrape};
use syscost_report::latency::Bucket;

/// `export --top`'s series go under the host's resource with /metrics's labels, the
/// machine's counters beside them; a series gone and back starts anew.
#[test]
fn a_request_carries_the_bounded_series_and_the_machine_counters() {
    let scrape = Scrape {
        processes_top: crate::metrics::series::two_processes_one_kept(),
        offcpu_tracked: true,
        machine: Some(super::super::encode::MachineCounters {
            dropped: 3,
            unpaired: 4,
            switch_ins_unseen: 5,
        }),
        ..Scrape::default()
    };
    let mut starts = Starts::new();
    let req = request(&scrape, 1_000, "node-1", &mut starts, &Kube::new());
    assert_eq!(req.resource_metrics.len(), 1, "the host's resource alone");
    let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
    let point = |name: &str| {
        let Some(m::metric::Data::Sum(s)) = &metrics.iter().find(|x| x.name == name).unwrap().data
        else {
            panic!("{name}: a sum");
        };
        s.data_points
            .iter()
            .find(|p| {
                p.attributes.iter().any(|a| {
                    a.key == "pid"
                        && a.value
                            == Some(common::AnyValue {
                                value: Some(common::any_value::Value::StringValue("42".into())),
                            })
                })
            })
            .or(s.data_points.first())
            .cloned()
            .unwrap()
    };
    let calls = point("syscost_process_syscalls");
    assert_eq!(calls.value, Some(m::number_data_point::Value::AsInt(5)));
    let keys: Vec<&str> = calls.attributes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["pid", "comm", "syscall"]);
    assert_eq!(
        point("syscost_process_syscall_offcpu").value,
        Some(m::number_data_point::Value::AsDouble(0.5))
    );
    assert_eq!(
        point("syscost_events_unpaired").value,
        Some(m::number_data_point::Value::AsInt(4))
    );
    // Kept while served; forgotten when not, so a series back later starts anew.
    let kept = starts.len();
    request(&scrape, 2_000, "node-1", &mut starts, &Kube::new());
    assert_eq!(starts.len(), kept);
    assert!(starts.values().all(|&t| t == 1_000));
    request(
        &Scrape::default(),
        3_000,
        "node-1",
        &mut starts,
        &Kube::new(),
    );
    assert!(starts.is_empty());
}

#[test]
fn endpoints_read_as_otlp_http_gives_them() {
    assert_eq!(
        parse_endpoint("http://collector:4318").unwrap().to_string(),
        "http://collector:4318/v1/metrics"
    );
    assert_eq!(
        parse_endpoint("http://127.0.0.1").unwrap().to_string(),
        "http://127.0.0.1:4318/v1/metrics"
    );
    assert_eq!(
        parse_endpoint("http://c:4318/?tenant=a").unwrap().path,
        "/v1/metrics?tenant=a"
    );
    let v6 = parse_endpoint("http://[::1]:9000/otlp/v1/metrics?tenant=a").unwrap();
    assert_eq!(
        v6,
        Endpoint {
            host: "::1".into(),
            port: 9000,
            path: "/otlp/v1/metrics?tenant=a".into()
        }
    );
    assert_eq!(v6.to_string(), "http://[::1]:9000/otlp/v1/metrics?tenant=a");
    for (bad, why) in [
        ("https://c:4318", "plain HTTP only"),
        ("c:4318", "no http:// scheme"),
        ("http://", "not a URL"),
    ] {
        let e = parse_endpoint(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

/// Scale 3's bucket i is the native bucket i + 1: a call of 1 s (native bucket 0,
/// (2^(-1/8), 1] s) is in bucket -1; zeros in the zero bucket; counts add up.
#[test]
fn exponential_buckets_are_the_native_ones_one_index_down() {
    let hist = [
        Bucket {
            lo_ns: 0,
            hi_ns: 0,
            count: 2,
        },
        Bucket {
            lo_ns: 999_000_000,
            hi_ns: 1_000_000_000,
            count: 5,
        },
        Bucket {
            lo_ns: 3_900_000_000,
            hi_ns: 4_000_000_000,
            count: 1,
        },
    ];
    let (zero, offset, counts) = exponential_buckets(&hist);
    assert_eq!(zero, 2);
    assert_eq!(offset, -1);
    // 4 s: native bucket 16 ((2^(15/8), 2^2] s), so scale 3's bucket 15.
    assert_eq!(counts.len(), 17);
    assert_eq!((counts[0], counts[16]), (5, 1));
    assert_eq!(counts.iter().sum::<u64>() + zero, 8);
    let base = 2f64.powf(2f64.powi(-NATIVE_SCHEMA));
    for (i, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        let idx = offset + i as i32;
        let (lo, hi) = (base.powi(idx), base.powi(idx + 1));
        let at = if n == 5 { 0.9995 } else { 3.95 };
        assert!(lo < at && at <= hi, "{at} s in ({lo}, {hi}]");
    }
}

#[test]
fn a_request_holds_a_resource_per_process_with_the_families() {
    let p = syscost_report::fixtures::server_profile(1);
    let scrape = Scrape {
        processes: vec![p.clone()],
        ..Scrape::default()
    };
    let mut starts = Starts::new();
    let kube = Kube::from([(
        key_of(&p),
        vec![
            ("pod_uid", "0f1e".to_string()),
            ("namespace", "shop".to_string()),
            ("pod", "cart-1".to_string()),
            ("container", "cart".to_string()),
            ("container_id", "3b2e".to_string()),
        ],
    )]);
    let req = request(&scrape, 2_000_000_000_000, "node-1", &mut starts, &kube);
    // A later push keeps each series' start.
    let later = request(&scrape, 3_000_000_000_000, "node-1", &mut starts, &kube);
    let start_of = |r: &proto::collector::ExportMetricsServiceRequest| match &r.resource_metrics[0]
        .scope_metrics[0]
        .metrics[0]
        .data
    {
        Some(m::metric::Data::Sum(s)) => s.data_points[0].start_time_unix_nano,
        _ => panic!("a sum first"),
    };
    assert_eq!(start_of(&later), start_of(&req));
    assert_eq!(start_of(&req), 2_000_000_000_000 - p.duration_ns);
    assert_eq!(req.resource_metrics.len(), 1);
    let r = req.resource_metrics[0].resource.as_ref().unwrap();
    let attr = |k: &str| r.attributes.iter().find(|a| a.key == k).cloned();
    assert!(attr("host.name").is_some() && attr("process.pid").is_some());
    // The pod under OpenTelemetry's names.
    let value = |k: &str| match attr(k).and_then(|a| a.value?.value) {
        Some(common::any_value::Value::StringValue(s)) => s,
        other => panic!("{k}: {other:?}"),
    };
    assert_eq!(
        [
            "k8s.pod.uid",
            "k8s.namespace.name",
            "k8s.pod.name",
            "k8s.container.name",
            "container.id"
        ]
        .map(value),
        ["0f1e", "shop", "cart-1", "cart", "3b2e"]
    );
    let names = names(&req);
    assert!(names.contains_key("syscost_syscalls"), "{names:?}");
    assert!(names.contains_key("syscost_syscall_duration"), "{names:?}");
    let bytes = req.encode_to_vec();
    let back = proto::collector::ExportMetricsServiceRequest::decode(&bytes[..]).unwrap();
    assert_eq!(back, req);
    // Each histogram point's buckets and zeros add up to its count.
    for m in &req.resource_metrics[0].scope_metrics[0].metrics {
        if let Some(m::metric::Data::ExponentialHistogram(h)) = &m.data {
            for pt in &h.data_points {
                let buckets: u64 = pt.positive.as_ref().unwrap().bucket_counts.iter().sum();
                assert_eq!(buckets + pt.zero_count, pt.count);
            }
        }
    }
}
