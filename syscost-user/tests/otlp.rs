//! `export --otlp-endpoint`: an OTLP/HTTP receiver on loopback, written here, decodes
//! each push with the types of OTLP's own definitions (`opentelemetry/proto`, compiled
//! by syscost-views' build) and answers 200. The counts it receives are the workload's,
//! exactly, and the histograms' buckets add up to them; with the receiver gone the pushes
//! fail, are counted, and the figures wait; back, it receives them whole. Needs root.

mod common;

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
};

use common::*;
use prost::Message as _;
use syscost_views::metrics::otlp::proto::{
    collector::ExportMetricsServiceRequest, common as c, metrics as m,
};

/// Calls the workload makes; odd, so that no round number can pass by accident.
const CALLS: u64 = 54_321;

/// A receiver on a loopback port: every request's path and decoded body go to a channel.
/// While `away`, it takes each connection and closes it unanswered (the port stays
/// its own: nothing else can take it meanwhile).
struct Receiver {
    port: u16,
    stop: Arc<AtomicBool>,
    away: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    fn start(got: mpsc::Sender<(String, ExportMetricsServiceRequest)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let away = Arc::new(AtomicBool::new(false));
        let (stopping, gone) = (stop.clone(), away.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::Acquire) {
                    return;
                }
                match conn {
                    Ok(conn) if !gone.load(Ordering::Acquire) => answer(conn, &got),
                    _ => {}
                }
            }
        });
        Self {
            port,
            stop,
            away,
            thread: Some(thread),
        }
    }
}

impl Drop for Receiver {
    /// Stops listening: the port refuses connections from then on.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

/// Reads one HTTP/1.1 request (head, then `Content-Length` bytes), decodes its body and
/// answers 200.
fn answer(conn: TcpStream, got: &mpsc::Sender<(String, ExportMetricsServiceRequest)>) {
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return; // the stop's own connection
    }
    let mut length = 0usize;
    let mut content_type = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "content-length" => length = v.trim().parse().unwrap(),
            "content-type" => content_type = v.trim().to_string(),
            _ => {}
        }
    }
    assert_eq!(content_type, "application/x-protobuf", "{first}");
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let req = ExportMetricsServiceRequest::decode(&body[..]).expect("an OTLP metrics request");
    let path = first
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let _ = got.send((path, req));
    let mut conn = conn;
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

/// The attribute `key` of `attrs`, as a string or an integer's digits.
fn attr(attrs: &[c::KeyValue], key: &str) -> Option<String> {
    let v = attrs
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match v {
        c::any_value::Value::StringValue(s) => s.clone(),
        c::any_value::Value::IntValue(n) => n.to_string(),
        other => format!("{other:?}"),
    })
}

/// Process `pid`'s metrics in `req`.
fn metrics_of(req: &ExportMetricsServiceRequest, pid: u32) -> Option<Vec<m::Metric>> {
    let r = req.resource_metrics.iter().find(|r| {
        r.resource
            .as_ref()
            .and_then(|res| attr(&res.attributes, "process.pid"))
            == Some(pid.to_string())
    })?;
    Some(
        r.scope_metrics
            .iter()
            .flat_map(|s| s.metrics.clone())
            .collect(),
    )
}

/// The getppid point of the sum `name`, as a number.
fn getppid_point(metrics: &[m::Metric], name: &str) -> Option<f64> {
    let Some(m::metric::Data::Sum(s)) = &metrics.iter().find(|x| x.name == name)?.data else {
        return None;
    };
    let p = s
        .data_points
        .iter()
        .find(|p| attr(&p.attributes, "syscall").as_deref() == Some("getppid"))?;
    Some(match p.value? {
        m::number_data_point::Value::AsInt(n) => n as f64,
        m::number_data_point::Value::AsDouble(x) => x,
    })
}

/// Waits for a push that counts process `pid`'s `CALLS` getppid; that push.
fn until_counted(
    rx: &mpsc::Receiver<(String, ExportMetricsServiceRequest)>,
    pid: u32,
    what: &str,
) -> (String, Vec<m::Metric>) {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (path, req) = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no push counting {CALLS} getppid {what}: {e}"));
        if let Some(metrics) = metrics_of(&req, pid)
            && getppid_point(&metrics, "syscost_syscalls") == Some(CALLS as f64)
        {
            return (path, metrics);
        }
    }
}

#[test]
fn otlp_pushes_the_exact_counts_and_waits_out_a_receiver_away() {
    let Some(_t) = root_test!() else {
        return;
    };
    let (tx, rx) = mpsc::channel();
    let receiver = Receiver::start(tx);
    let port = receiver.port;
    let mut work = Command::new(workload_path())
        .args(["--wait-stdin", "getppid", &CALLS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(work.stdout.take().unwrap(), "stdout");
    assert_eq!(out.line().as_deref(), Some("ready"));
    let pid = work.id();
    let (mut export, first, mut err) = started(
        syscost()
            .args([
                "export",
                "-p",
                &pid.to_string(),
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .arg("--otlp-endpoint")
            .arg(format!("http://127.0.0.1:{port}")),
    );
    let endpoint = endpoint_in(&first);
    let next = err.line().unwrap_or_default();
    assert_eq!(
        next,
        format!(
            "syscost: pushing the metrics to http://127.0.0.1:{port}/v1/metrics over OTLP/HTTP at every sample"
        )
    );
    writeln!(work.stdin.take().unwrap(), "go").unwrap();
    assert!(out.line().unwrap().starts_with("ns_per_call="));
    assert!(work.wait_exit().success());

    let (path, metrics) = until_counted(&rx, pid, "from the start");
    assert_eq!(path, "/v1/metrics");
    // A cumulative series keeps its start from push to push (one that moves is a reset).
    let start_of = |metrics: &[m::Metric]| match &metrics
        .iter()
        .find(|x| x.name == "syscost_syscalls")
        .and_then(|x| x.data.clone())
    {
        Some(m::metric::Data::Sum(s)) => s.data_points[0].start_time_unix_nano,
        other => panic!("no syscost_syscalls sum: {other:?}"),
    };
    let (_, next) = until_counted(&rx, pid, "in the next push");
    assert_eq!(start_of(&next), start_of(&metrics));
    // The histogram: the same calls, its buckets adding up to them, its sum the time's.
    let hist = metrics
        .iter()
        .find(|x| x.name == "syscost_syscall_duration")
        .and_then(|x| match &x.data {
            Some(m::metric::Data::ExponentialHistogram(h)) => h
                .data_points
                .iter()
                .find(|p| attr(&p.attributes, "syscall").as_deref() == Some("getppid"))
                .cloned(),
            _ => None,
        })
        .expect("getppid's exponential histogram");
    assert_eq!(hist.count, CALLS);
    assert_eq!(hist.scale, 3);
    let buckets = hist.positive.as_ref().unwrap();
    assert_eq!(
        buckets.bucket_counts.iter().sum::<u64>() + hist.zero_count,
        CALLS
    );
    // The first and last buckets are those of the fastest and slowest calls: the scale-3
    // bucket holding the middle of the kernel bucket each is in (its native bucket less
    // one), exactly.
    let expected = |seconds: f64| {
        use syscost_common::latency_bucket::{bucket_index, bucket_lower, bucket_upper};
        let i = bucket_index((seconds * 1e9).round() as u64);
        let middle = (bucket_lower(i) as f64 + bucket_upper(i) as f64) / 2.0 / 1e9;
        (middle.log2() * 8.0).ceil() as i32 - 1
    };
    let first = buckets.offset + buckets.bucket_counts.iter().position(|&n| n > 0).unwrap() as i32;
    let last = buckets.offset + buckets.bucket_counts.iter().rposition(|&n| n > 0).unwrap() as i32;
    let (min, max) = (hist.min.unwrap(), hist.max.unwrap());
    assert_eq!(first, expected(min), "the first bucket, of min {min} s");
    assert_eq!(last, expected(max), "the last bucket, of max {max} s");
    let time = getppid_point(&metrics, "syscost_syscall").expect("getppid's time");
    assert_eq!(hist.sum, Some(time));
    // The same figures as the endpoint serves.
    let text = scrape_text(&endpoint);
    let served = sample_value(
        &text,
        "syscost_syscall_seconds_total",
        &[("pid", &pid.to_string()), ("syscall", "getppid")],
    );
    assert_eq!(served, Some(time), "the endpoint's time, to the nanosecond");

    // The receiver goes away: tries fail, newer figures replace the waiting ones.
    receiver.away.store(true, Ordering::Release);
    scrape_until(&endpoint, "failed and dropped pushes counted", |text| {
        let n = |name| sample_value(text, name, &[]).unwrap_or(0.0);
        let (failures, dropped) = (
            n("syscost_otlp_export_failures_total"),
            n("syscost_otlp_exports_dropped_total"),
        );
        if failures >= 1.0 && dropped >= 1.0 {
            Ok(())
        } else {
            Err(format!(": failures {failures}, dropped {dropped}"))
        }
    });
    err.until("the line that says the receiver is away", |l| {
        l.starts_with(&format!(
            "syscost: OTLP: cannot push to http://127.0.0.1:{port}/v1/metrics: "
        ))
    });
    // Back: it receives the figures whole (every push carries them all).
    while rx.try_recv().is_ok() {}
    receiver.away.store(false, Ordering::Release);
    until_counted(&rx, pid, "after the receiver came back");
    err.until("the line that says the receiver is back", |l| {
        l == format!("syscost: OTLP: http://127.0.0.1:{port}/v1/metrics accepts the metrics again")
    });
    // SAFETY: signals the process this test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGINT) };
    assert!(export.wait_exit().success());
}

#[test]
fn an_otlp_endpoint_syscost_cannot_push_to_is_refused_at_once() {
    for (args, why) in [
        (["-p", "1", "https://127.0.0.1:4318"], "plain HTTP only"),
        (["-p", "1", "127.0.0.1:4318"], "no http:// scheme"),
    ] {
        let o = output(
            syscost()
                .arg("export")
                .args(&args[..2])
                .args(["--otlp-endpoint", args[2]]),
        );
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    }
}

/// `export --top --otlp-endpoint`: the bounded per-process series and the machine's
/// counters under the host's resource, with /metrics's labels.
#[test]
fn otlp_pushes_the_machines_series_under_top() {
    let Some(_t) = root_test!() else {
        return;
    };
    let (tx, rx) = mpsc::channel();
    let receiver = Receiver::start(tx);
    let (mut export, _first, _err) = started(
        syscost()
            .args(["export", "--top", "--metrics-addr", "127.0.0.1:0"])
            .arg("--otlp-endpoint")
            .arg(format!("http://127.0.0.1:{}", receiver.port)),
    );
    // Something on the machine makes syscalls: a push comes with the process series.
    let deadline = std::time::Instant::now() + PATIENCE;
    let metrics = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (_, req) = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no push with syscost_process_syscalls: {e}"));
        let metrics: Vec<m::Metric> = req
            .resource_metrics
            .iter()
            .flat_map(|r| r.scope_metrics.iter().flat_map(|s| s.metrics.clone()))
            .collect();
        if metrics.iter().any(|x| x.name == "syscost_process_syscalls") {
            assert_eq!(req.resource_metrics.len(), 1, "the host's resource alone");
            let r = req.resource_metrics[0].resource.as_ref().unwrap();
            assert!(attr(&r.attributes, "host.name").is_some());
            break metrics;
        }
    };
    let Some(m::metric::Data::Sum(calls)) = &metrics
        .iter()
        .find(|x| x.name == "syscost_process_syscalls")
        .unwrap()
        .data
    else {
        panic!("syscost_process_syscalls: a sum");
    };
    assert!(!calls.data_points.is_empty());
    for p in &calls.data_points {
        for key in ["pid", "comm", "cgroup", "syscall"] {
            assert!(
                attr(&p.attributes, key).is_some(),
                "{key} in {:?}",
                p.attributes
            );
        }
    }
    for name in ["syscost_events_dropped", "syscost_events_unpaired"] {
        assert!(metrics.iter().any(|x| x.name == name), "{name}");
    }
    // SAFETY: signals the process this test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGINT) };
    assert!(export.wait_exit().success());
}
