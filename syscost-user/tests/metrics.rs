//! The metrics endpoint with a real Prometheus server: `syscost export` on a workload of
//! known size, Prometheus (Debian's package, started here on loopback with a scrape
//! config of its own) scrapes it, and its query API returns the exact count. Needs root
//! and prometheus (`cargo xtask setup` installs it).

mod common;

use std::{
    io::{Read as _, Write as _},
    net::TcpStream,
    process::{Command, Stdio},
    time::Duration,
};

use common::*;

/// Calls the workload makes; odd, so that no round number can pass by accident.
const CALLS: u64 = 123_457;

/// A GET on loopback; the status code and body.
fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(PATIENCE))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/openmetrics-text\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (status, _, body) = response(&raw);
    Ok((status, body))
}

/// An HTTP response's status code, head and (de-chunked) body.
fn response(raw: &str) -> (u16, String, String) {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, head.to_string(), body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query against Prometheus: the results (metric labels and value).
fn query(prometheus: &str, promql: &str) -> Vec<serde_json::Value> {
    let Ok((200, body)) = get(
        prometheus,
        &format!("/api/v1/query?query={}", percent_encode(promql)),
    ) else {
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn value(result: &serde_json::Value) -> f64 {
    result["value"][1].as_str().unwrap().parse().unwrap()
}

/// The results of `promql` once there are some, queried until [`PATIENCE`]; the test
/// fails then (or when Prometheus exits) with the last lines of its log.
fn query_until(
    web: &str,
    promql: &str,
    prometheus: &mut Reaped,
    log: &std::path::Path,
) -> Vec<serde_json::Value> {
    wait_until(
        &format!("Prometheus to have {promql}"),
        PATIENCE,
        Duration::from_millis(250),
        || {
            let r = query(web, promql);
            if !r.is_empty() {
                return Ok(r);
            }
            if let Some(status) = prometheus.try_wait().unwrap() {
                panic!(
                    "Prometheus exited ({status}) before it had {promql}; its log ends:\n{}",
                    log_tail(log)
                );
            }
            Err(format!("; its log ends:\n{}", log_tail(log)))
        },
    )
}

/// The last 20 lines of the file at `log`.
fn log_tail(log: &std::path::Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// The samples of metric `name` in exposition `text` on lines that also hold `needle`
/// (at most 10): what a failure shows of an exposition.
fn metric_lines(text: &str, name: &str, needle: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(name) && l.contains(needle))
        .take(10)
        .collect();
    if lines.is_empty() {
        format!(
            "no {name} sample with {needle:?} among the exposition's {} lines",
            text.lines().count()
        )
    } else {
        lines.join("\n")
    }
}

/// The first lines of a response's body, for a failure's message.
fn head(body: &str) -> String {
    body.lines().take(5).collect::<Vec<_>>().join("\n")
}

/// The first stderr line of a syscost command but a note about the kernel (a kernel
/// lacking a default measurement says so first).
fn first_line(err: &mut Lines) -> String {
    err.until("its first line", |l| {
        !l.starts_with("syscost: this kernel:")
    })
}

/// The loopback port process `pid` listens on: a TCP socket of its (found through its
/// fds' inodes) in LISTEN state in /proc/net/tcp. Prometheus is started on port 0 and
/// found this way, rather than given a port that was free a moment before.
fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    std::fs::read_to_string("/proc/net/tcp")
        .ok()?
        .lines()
        .skip(1)
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address, state (0A = LISTEN), inode.
            (f.get(3) == Some(&"0A") && inodes.iter().any(|i| Some(&i.as_str()) == f.get(9)))
                .then(|| u16::from_str_radix(f[1].split(':').nth(1)?, 16).ok())
                .flatten()
        })
}

/// Starts Prometheus (on a port of its choosing) with scrape configs `jobs` (YAML list
/// items under `scrape_configs:`), scraping every second; the process, its web address
/// and its log.
fn start_prometheus(t: &RootTest, jobs: &str) -> (Reaped, String, std::path::PathBuf) {
    start_prometheus_with(t, jobs, &[])
}

/// [`start_prometheus`] with more of Prometheus's flags.
fn start_prometheus_with(
    t: &RootTest,
    jobs: &str,
    flags: &[&str],
) -> (Reaped, String, std::path::PathBuf) {
    let prometheus_bin = which::which("prometheus").expect("prometheus, checked by the test");
    let config = t.path("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n{jobs}"),
    )
    .unwrap();
    let log = t.path("prometheus.log");
    let mut prometheus = dies_with_its_test(&mut Command::new(prometheus_bin), libc::SIGKILL)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", t.path("data").display()))
        .arg("--web.listen-address=127.0.0.1:0")
        .args(flags)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn_reaped();
    let web = wait_until(
        "Prometheus to listen",
        PATIENCE,
        Duration::from_millis(100),
        || {
            if let Some(status) = prometheus.try_wait().unwrap() {
                panic!(
                    "Prometheus exited ({status}); its log ends:\n{}",
                    log_tail(&log)
                );
            }
            listening_port(prometheus.id())
                .map(|port| format!("127.0.0.1:{port}"))
                .ok_or_else(|| format!("; its log ends:\n{}", log_tail(&log)))
        },
    );
    (prometheus, web, log)
}

/// Whether prometheus is installed; says the test skips when it is not.
fn has_prometheus(test: &str) -> bool {
    let found = which::which("prometheus").is_ok();
    if !found {
        skip(
            test,
            "prometheus is not installed (cargo xtask setup installs it)",
        );
    }
    found
}

/// The getppid calls of process `pid` in exposition `text` (`syscost_syscalls_total`).
fn getppid_of(text: &str, pid: u32) -> Option<f64> {
    sample_value(
        text,
        "syscost_syscalls_total",
        &[("pid", &pid.to_string()), ("syscall", "getppid")],
    )
}

/// Scrapes `endpoint` until process `pid`'s getppid series counts `calls` or more (the
/// endpoint shows the latest sample), and fails unless it counts exactly `calls`; the
/// exposition.
fn scrape_until_getppid(endpoint: &str, pid: u32, calls: u64) -> String {
    let text = scrape_until(
        endpoint,
        &format!("process {pid}'s {calls} getppid on the endpoint"),
        |text| match getppid_of(text, pid) {
            Some(n) if n >= calls as f64 => Ok(text.to_string()),
            n => Err(format!(": {n:?} so far")),
        },
    );
    assert_eq!(
        getppid_of(&text, pid),
        Some(calls as f64),
        "{}",
        metric_lines(&text, "syscost_syscalls_total", "getppid")
    );
    text
}

/// The workload's CALLS getppid under `syscost export -p` (with `extra`), run to its end:
/// the export, its endpoint (once it serves the workload's final counts), and the
/// workload's pid, whose final counts stay on the endpoint.
fn getppid_exported(extra: &[&str]) -> (Reaped, String, u32) {
    let mut work = Command::new(workload_path())
        .args(["--wait-stdin", "getppid", &CALLS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(work.stdout.take().unwrap(), "stdout");
    assert_eq!(out.next().unwrap().unwrap(), "ready");
    let (export, endpoint) = start_export(&work.id().to_string(), extra);
    writeln!(work.stdin.take().unwrap(), "go").unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    let pid = work.id();
    assert!(work.wait_exit().success());
    scrape_until_getppid(&endpoint, pid, CALLS);
    (export, endpoint, pid)
}

#[test]
fn prometheus_scrapes_the_exact_count() {
    let Some(t) = root_test!() else {
        return;
    };
    if !has_prometheus("prometheus_scrapes_the_exact_count") {
        return;
    }

    let (export, endpoint, pid) = getppid_exported(&["--run-stats"]);
    let (status, text) = get(&endpoint, "/metrics").unwrap();
    assert_eq!(status, 200, "{}", head(&text));
    let line = format!(
        "syscost_syscalls_total{{pid=\"{}\",comm=\"syscost-workloa\",syscall=\"getppid\"}} {CALLS}\n",
        pid
    );
    assert!(
        text.contains(&line),
        "{line} not in the exposition; its getppid samples:\n{}",
        metric_lines(&text, "syscost_syscalls_total", "getppid")
    );
    assert_eq!(get(&endpoint, "/").unwrap().0, 404);

    let (mut prometheus, web, log) = start_prometheus(
        &t,
        &format!("  - job_name: syscost\n    static_configs:\n      - targets: ['{endpoint}']\n"),
    );

    // The workload had ended before Prometheus started: its first scrape has the final
    // figures.
    let promql = "syscost_syscalls_total{job=\"syscost\",syscall=\"getppid\"}";
    let results = query_until(&web, promql, &mut prometheus, &log);
    assert_eq!(
        results.len(),
        1,
        "one series per (process, syscall): {} series, the first {:?}",
        results.len(),
        &results[..results.len().min(3)]
    );
    assert_eq!(value(&results[0]), CALLS as f64, "{}", results[0]);
    assert_eq!(results[0]["metric"]["pid"], pid.to_string());
    assert_eq!(results[0]["metric"]["comm"], "syscost-workloa");

    // The histogram holds the same calls, and PromQL reads a p99 from it: within the
    // bucket that holds the 99th percentile's call (a bucket's bounds, not a time,
    // whatever the machine's speed).
    let count = query_until(
        &web,
        "syscost_syscall_duration_seconds_count{syscall=\"getppid\"}",
        &mut prometheus,
        &log,
    );
    assert_eq!(value(&count[0]), CALLS as f64, "{}", count[0]);
    let mut buckets: Vec<(f64, f64)> = query_until(
        &web,
        "syscost_syscall_duration_seconds_bucket{syscall=\"getppid\"}",
        &mut prometheus,
        &log,
    )
    .iter()
    .map(|b| {
        let le = b["metric"]["le"].as_str().unwrap_or_default();
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse()
                .unwrap_or_else(|_| panic!("a bucket's le {le:?}"))
        };
        (le, value(b))
    })
    .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let last = *buckets.last().unwrap();
    assert_eq!(last, (f64::INFINITY, CALLS as f64), "the +Inf bucket");
    let p99 = query_until(
        &web,
        "histogram_quantile(0.99, syscost_syscall_duration_seconds_bucket{syscall=\"getppid\"})",
        &mut prometheus,
        &log,
    );
    let p99 = value(&p99[0]);
    // As histogram_quantile finds it: the first bucket holding the rank's call; its
    // lower bound is the bucket's before (0 for the first), and in the +Inf bucket the
    // answer is the highest finite bound.
    let rank = 0.99 * CALLS as f64;
    let i = buckets.iter().position(|b| b.1 >= rank).unwrap();
    let (lower, upper) = match i {
        _ if buckets[i].0.is_infinite() => (buckets[i - 1].0, buckets[i - 1].0),
        0 => (0.0, buckets[0].0),
        _ => (buckets[i - 1].0, buckets[i].0),
    };
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-9);
    assert!(
        p99 > 0.0 && ((lower..=upper).contains(&p99) || near(p99, lower) || near(p99, upper)),
        "getppid p99 of {p99} s, not in its bucket ({lower} s, {upper} s]; the buckets \
         around: {:?}",
        &buckets[i.saturating_sub(2)..(i + 2).min(buckets.len())]
    );
    // And plausible: a getppid is not a tenth of a second in 99 of 100 calls, even on a
    // loaded or emulated machine (where one is a few hundred microseconds at worst).
    assert!(p99 < 0.1, "getppid p99 of {p99} s");

    // Its own cost, from the kernel's run-time statistics, measured in windows (the
    // programs run for every syscall on the machine, so each window has some).
    wait_until(
        "a measured own cost",
        PATIENCE,
        Duration::from_millis(500),
        || {
            let own = query(&web, "syscost_bpf_run_seconds_total");
            let measured = query(&web, "syscost_bpf_measured_seconds_total");
            match (own.first().map(value), measured.first().map(value)) {
                (Some(o), Some(m)) if o > 0.0 && m > o => Ok(()),
                other => Err(format!(": {other:?}")),
            }
        },
    );

    end_cleanly(export, prometheus);
}

/// Prometheus with native histograms on asks for protobuf and gets the latency
/// histograms as native ones too: their count is the calls', exactly, their sum the
/// classic histogram's, and their p99 falls where the classic buckets put it, give or
/// take the native bucket's error.
#[test]
fn prometheus_reads_native_histograms() {
    let Some(t) = root_test!() else {
        return;
    };
    if !has_prometheus("prometheus_reads_native_histograms") {
        return;
    }
    let (export, endpoint, pid) = getppid_exported(&[]);

    // The classic histogram as the text has it (the workload has ended: final figures).
    let (status, text) = get(&endpoint, "/metrics").unwrap();
    assert_eq!(status, 200, "{}", head(&text));
    let sample = |name: &str, le: Option<&str>| -> Option<f64> {
        let labels = format!(
            "{{pid=\"{}\",comm=\"syscost-workloa\",syscall=\"getppid\"{}}} ",
            pid,
            le.map(|le| format!(",le=\"{le}\"")).unwrap_or_default()
        );
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(labels.as_str()))
            .map(|v| v.parse().unwrap())
    };
    let classic_sum = sample("syscost_syscall_duration_seconds_sum", None).expect("the sum");
    let mut classic: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| {
            l.starts_with("syscost_syscall_duration_seconds_bucket{")
                && l.contains("syscall=\"getppid\"")
        })
        .map(|l| {
            let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            (le, l.rsplit(' ').next().unwrap().parse().unwrap())
        })
        .collect();
    classic.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        classic.last().map(|b| b.1),
        Some(CALLS as f64),
        "{}",
        head(&text)
    );

    let (mut prometheus, web, log) = start_prometheus_with(
        &t,
        &format!("  - job_name: syscost\n    static_configs:\n      - targets: ['{endpoint}']\n"),
        &["--enable-feature=native-histograms"],
    );
    // histogram_count and histogram_sum read native histograms alone.
    let count = query_until(
        &web,
        "histogram_count(syscost_syscall_duration_seconds{syscall=\"getppid\"})",
        &mut prometheus,
        &log,
    );
    assert_eq!(count.len(), 1, "{count:?}");
    assert_eq!(value(&count[0]), CALLS as f64, "{}", count[0]);
    let sum = query_until(
        &web,
        "histogram_sum(syscost_syscall_duration_seconds{syscall=\"getppid\"})",
        &mut prometheus,
        &log,
    );
    let sum = value(&sum[0]);
    assert!(
        (sum - classic_sum).abs() <= 1e-9 * classic_sum,
        "native sum {sum}, classic {classic_sum}"
    );
    let p99 = query_until(
        &web,
        "histogram_quantile(0.99, syscost_syscall_duration_seconds{syscall=\"getppid\"})",
        &mut prometheus,
        &log,
    );
    let p99 = value(&p99[0]);
    // The classic bucket that holds the 99th percentile's call, widened by the native
    // buckets' error (a call is counted within 1.16 of its latency).
    let rank = 0.99 * CALLS as f64;
    let i = classic.iter().position(|b| b.1 >= rank).unwrap();
    let lower = if i == 0 { 0.0 } else { classic[i - 1].0 };
    let upper = classic[i].0;
    assert!(
        p99 >= lower / 1.16 && p99 <= upper * 1.16,
        "native p99 of {p99} s outside the classic bucket ({lower} s, {upper} s] give or take 16%"
    );

    end_cleanly(export, prometheus);
}

/// SIGTERM ends the export cleanly (the programs are gone: checked on drop), and
/// Prometheus.
fn end_cleanly(mut export: Reaped, mut prometheus: Reaped) {
    // SAFETY: signals the processes the test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGTERM) };
    assert!(export.wait_exit().success());
    // SAFETY: as above.
    unsafe { libc::kill(prometheus.id() as i32, libc::SIGTERM) };
    prometheus.wait_exit();
}

/// Starts `syscost export -p PIDS` on a free port; the process and its endpoint.
fn start_export(pids: &str, extra: &[&str]) -> (Reaped, String) {
    let mut export = syscost()
        .args(["export", "-p", pids, "--metrics-addr", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(export.stderr.take().unwrap(), "stderr");
    let first = first_line(&mut err);
    let endpoint = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics; Ctrl-C to stop"))
        .unwrap_or_else(|| panic!("no endpoint in {first:?}"))
        .to_string();
    // The rest of stderr is drained so that exit lines never block syscost.
    std::thread::spawn(move || err.for_each(drop));
    (export, endpoint)
}

#[test]
fn each_process_has_its_own_exact_series_from_one_set_of_programs() {
    let Some(_t) = root_test!() else {
        return;
    };
    let counts = [1_001u64, 2_345];
    let mut works: Vec<Reaped> = counts
        .iter()
        .map(|n| {
            Command::new(workload_path())
                .args(["--wait-stdin", "getppid", &n.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn_reaped()
        })
        .collect();
    let mut outs: Vec<_> = works
        .iter_mut()
        .map(|w| Lines::of(w.stdout.take().unwrap(), "stdout"))
        .collect();
    for out in &mut outs {
        assert_eq!(out.next().unwrap().unwrap(), "ready");
    }
    let pids: Vec<String> = works.iter().map(|w| w.id().to_string()).collect();
    let before = loaded_syscost_programs();
    let (mut export, endpoint) = start_export(&pids.join(","), &[]);
    // One set of programs for both processes.
    let enters = loaded_syscost_programs()
        .into_iter()
        .filter(|p| p.1.starts_with("syscost_sys_ent") && !before.contains(p))
        .count();
    assert_eq!(enters, 1, "programs on sys_enter for two processes");
    for (w, out) in works.iter_mut().zip(&mut outs) {
        writeln!(w.stdin.take().unwrap(), "go").unwrap();
        assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
        assert!(w.wait_exit().success());
    }
    // Once both counts are on the endpoint (it shows the latest sample).
    let (status, text) = wait_until(
        "both processes' final counts on the endpoint",
        PATIENCE,
        Duration::from_millis(50),
        || {
            let (status, text) = get(&endpoint, "/metrics").map_err(|e| format!(": {e}"))?;
            let reached = works
                .iter()
                .zip(counts)
                .all(|(w, n)| getppid_of(&text, w.id()).is_some_and(|v| v >= n as f64));
            if reached {
                Ok((status, text))
            } else {
                Err(format!(
                    ":\n{}",
                    metric_lines(&text, "syscost_syscalls_total", "getppid")
                ))
            }
        },
    );
    assert_eq!(status, 200, "{}", head(&text));
    for (pid, n) in pids.iter().zip(counts) {
        let line = format!(
            "syscost_syscalls_total{{pid=\"{pid}\",comm=\"syscost-workloa\",syscall=\"getppid\"}} {n}\n"
        );
        assert!(
            text.contains(&line),
            "{line} not in the exposition; its getppid samples:\n{}",
            metric_lines(&text, "syscost_syscalls_total", "getppid")
        );
        let histogram_count = format!(
            "syscost_syscall_duration_seconds_count{{pid=\"{pid}\",comm=\"syscost-workloa\",syscall=\"getppid\"}} {n}\n"
        );
        assert!(
            text.contains(&histogram_count),
            "{histogram_count} not in the exposition; its getppid counts:\n{}",
            metric_lines(&text, "syscost_syscall_duration_seconds_count", "getppid")
        );
    }
    assert!(
        !text.contains("syscost_bpf_run_seconds"),
        "own cost without --run-stats: {}",
        metric_lines(&text, "syscost_bpf_run", "")
    );
    // SAFETY: signals the process this test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGINT) };
    assert!(export.wait_exit().success());
}

/// The endpoint a `--metrics-addr` command announced on stderr.
fn announced(err: &mut Lines) -> String {
    let line = first_line(err);
    line.strip_prefix("syscost: metrics at http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no endpoint in {line:?}"))
        .to_string()
}

/// A `--wait-stdin --hold` workload behind `stdin`/`stdout` making `calls` getppid:
/// starts it, waits for the work to be done, returns the endpoint's text once its
/// getppid series counts them all (it shows the latest sample), and lets it exit.
fn scrape_while_held(
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    endpoint: &str,
    calls: u64,
) -> String {
    let mut stdin = stdin;
    let mut out = Lines::of(stdout, "the workload's stdout");
    assert_eq!(out.next().unwrap().unwrap(), "ready");
    writeln!(stdin, "go").unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    assert_eq!(out.next().unwrap().unwrap(), "done");
    let text = scrape_until(
        endpoint,
        &format!("{calls} getppid on the endpoint"),
        |text| match sample_value(text, "syscost_syscalls_total", &[("syscall", "getppid")]) {
            Some(n) if n >= calls as f64 => Ok(text.to_string()),
            n => Err(format!(": {n:?} so far")),
        },
    );
    writeln!(stdin).unwrap();
    text
}

#[test]
fn run_and_attach_serve_while_they_trace() {
    let Some(_t) = root_test!() else {
        return;
    };
    let n = 4_321;
    let mut run = syscost()
        .args([
            "run",
            "-o",
            "/dev/null",
            "--metrics-addr",
            "127.0.0.1:0",
            "--",
        ])
        .args([
            workload_path(),
            "--wait-stdin",
            "--hold",
            "getppid",
            &n.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(run.stderr.take().unwrap(), "stderr");
    let endpoint = announced(&mut err);
    let text = scrape_while_held(
        run.stdin.take().unwrap(),
        run.stdout.take().unwrap(),
        &endpoint,
        n,
    );
    // The kernel's comm (15 bytes of the file name), as attach and export label it.
    assert!(
        text.contains(&format!(
            ",comm=\"syscost-workloa\",syscall=\"getppid\"}} {n}\n"
        )),
        "no getppid sample of {n}; the getppid samples:\n{}",
        metric_lines(&text, "syscost_syscalls_total", "getppid")
    );
    assert!(run.wait_exit().success());

    let m = 5_432;
    let mut work = Command::new(workload_path())
        .args(["--wait-stdin", "--hold", "getppid", &m.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut attach = syscost()
        .args(["attach", "--no-tui", "-p", &work.id().to_string()])
        .args(["--metrics-addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(attach.stderr.take().unwrap(), "stderr");
    let endpoint = announced(&mut err);
    assert!(
        err.next()
            .unwrap()
            .unwrap()
            .starts_with("syscost: tracing process")
    );
    let text = scrape_while_held(
        work.stdin.take().unwrap(),
        work.stdout.take().unwrap(),
        &endpoint,
        m,
    );
    let line = format!(
        "syscost_syscalls_total{{pid=\"{}\",comm=\"syscost-workloa\",syscall=\"getppid\"}} {m}\n",
        work.id()
    );
    assert!(
        text.contains(&line),
        "{line} not in the exposition; its getppid samples:\n{}",
        metric_lines(&text, "syscost_syscalls_total", "getppid")
    );
    assert!(work.wait_exit().success());
    assert!(attach.wait_exit().success());
}

/// A certificate authority and a certificate it signed for 127.0.0.1 and localhost,
/// written under `t`: the CA's file, the certificate's and the key's.
fn tls_files(t: &RootTest) -> [std::path::PathBuf; 3] {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let files = [t.path("ca.pem"), t.path("tls.crt"), t.path("tls.key")];
    std::fs::write(&files[0], ca_cert.pem()).unwrap();
    std::fs::write(&files[1], cert.pem()).unwrap();
    std::fs::write(&files[2], key.serialize_pem()).unwrap();
    files
}

/// A GET of /metrics over TLS (the server verified against `ca`), with basic
/// authentication when `user` is given: the status, the headers and the body.
fn get_tls(addr: &str, ca: &std::path::Path, user: Option<(&str, &str)>) -> (u16, String, String) {
    get_tls_path(addr, ca, user, "/metrics")
}

/// [`get_tls`] of `path`.
fn get_tls_path(
    addr: &str,
    ca: &std::path::Path,
    user: Option<(&str, &str)>,
    path: &str,
) -> (u16, String, String) {
    use base64::Engine as _;
    use rustls::pki_types::{CertificateDer, pem::PemObject as _};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(ca).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let auth = user.map_or(String::new(), |(u, p)| {
        format!(
            "Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        )
    });
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    // A server that closes without close_notify ends the read with an error once all
    // was read.
    let _ = tls.read_to_end(&mut raw);
    response(&String::from_utf8_lossy(&raw))
}

/// `--web.config.file` as the exporters take it: TLS and a bcrypt password. The real
/// Prometheus scrapes the exact count over TLS with the password, and a job without it
/// is refused (401); plain HTTP on the port is answered as Go's servers answer it; a new
/// password in the file applies from the next request.
#[test]
fn prometheus_scrapes_over_tls_with_basic_auth() {
    let Some(t) = root_test!() else {
        return;
    };
    if !has_prometheus("prometheus_scrapes_over_tls_with_basic_auth") {
        return;
    }
    let [ca, cert, key] = tls_files(&t);
    let web_config = t.path("web.yml");
    let write_web = |password: &str| {
        // Replaced whole, as an editor or a configuration manager does.
        let next = t.path("web.yml.new");
        std::fs::write(
            &next,
            format!(
                "tls_server_config:\n  cert_file: {}\n  key_file: {}\nbasic_auth_users:\n  prometheus: {}\n",
                cert.display(),
                key.display(),
                bcrypt::hash(password, 6).unwrap()
            ),
        )
        .unwrap();
        std::fs::rename(&next, &web_config).unwrap();
    };
    write_web("s3cret");

    let calls = 7_654u64;
    let mut work = Command::new(workload_path())
        .args(["--wait-stdin", "getppid", &calls.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(work.stdout.take().unwrap(), "stdout");
    assert_eq!(out.next().unwrap().unwrap(), "ready");
    let mut export = syscost()
        .args([
            "export",
            "-p",
            &work.id().to_string(),
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .arg("--web.config.file")
        .arg(&web_config)
        .arg("--stacks")
        .arg(t.path("tls.pb.gz"))
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(export.stderr.take().unwrap(), "stderr");
    let first = first_line(&mut err);
    let endpoint = first
        .split("https://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics; Ctrl-C to stop"))
        .unwrap_or_else(|| panic!("no https endpoint in {first:?}"))
        .to_string();
    std::thread::spawn(move || err.for_each(drop));
    writeln!(work.stdin.take().unwrap(), "go").unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    assert!(work.wait_exit().success());

    // Plain HTTP on the TLS port.
    let mut plain = TcpStream::connect(&endpoint).unwrap();
    plain.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(plain, "GET /metrics HTTP/1.1\r\nHost: {endpoint}\r\n\r\n").unwrap();
    let mut answer = String::new();
    plain.read_to_string(&mut answer).unwrap();
    assert_eq!(
        answer,
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    // TLS without the password, with a wrong one, with the right one.
    for user in [
        None,
        Some(("prometheus", "wrong")),
        Some(("nobody", "s3cret")),
    ] {
        let (status, head, body) = get_tls(&endpoint, &ca, user);
        assert_eq!(status, 401, "{user:?}: {head}\n{body}");
        assert!(
            head.to_ascii_lowercase()
                .contains("www-authenticate: basic"),
            "{head}"
        );
        assert!(!body.contains("syscost_syscalls_total"), "{body}");
        // The calls by stack are behind the same password.
        let (status, head, _) =
            get_tls_path(&endpoint, &ca, user, "/debug/pprof/syscalls?seconds=1");
        assert_eq!(status, 401, "{user:?}: {head}");
    }
    let (status, head, _) = get_tls_path(
        &endpoint,
        &ca,
        Some(("prometheus", "s3cret")),
        "/debug/pprof/syscalls?seconds=1",
    );
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/octet-stream"),
        "{head}"
    );
    let line = format!(
        "syscost_syscalls_total{{pid=\"{}\",comm=\"syscost-workloa\",syscall=\"getppid\"}} {calls}\n",
        work.id()
    );
    // Once the final count is on the endpoint (it shows the latest sample).
    let (status, head, body) = wait_until(
        "the final count over TLS",
        PATIENCE,
        Duration::from_millis(50),
        || {
            let (status, head, body) = get_tls(&endpoint, &ca, Some(("prometheus", "s3cret")));
            match getppid_of(&body, work.id()) {
                Some(n) if n >= calls as f64 => Ok((status, head, body)),
                n => Err(format!(": {status}, {n:?} getppid so far")),
            }
        },
    );
    assert_eq!(status, 200, "{head}\n{}", crate::head(&body));
    assert!(
        body.contains(&line),
        "{line} not in the exposition; its getppid samples:\n{}",
        metric_lines(&body, "syscost_syscalls_total", "getppid")
    );

    // Prometheus: with the CA and the password, and a job without the password.
    let tls = format!(
        "    scheme: https\n    tls_config:\n      ca_file: {}\n",
        ca.display()
    );
    let targets = format!("    static_configs:\n      - targets: ['{endpoint}']\n");
    let (mut prometheus, web, log) = start_prometheus(
        &t,
        &format!(
            "  - job_name: syscost\n{tls}    basic_auth:\n      username: prometheus\n      password: s3cret\n{targets}\
             \x20 - job_name: nopassword\n{tls}{targets}"
        ),
    );
    let promql = "syscost_syscalls_total{job=\"syscost\",syscall=\"getppid\"}";
    let results = query_until(&web, promql, &mut prometheus, &log);
    assert_eq!(value(&results[0]), calls as f64, "{}", results[0]);
    let up = query_until(&web, "up{job=\"nopassword\"}", &mut prometheus, &log);
    assert_eq!(
        value(&up[0]),
        0.0,
        "scraped without the password: {}",
        up[0]
    );
    let refused = wait_until(
        "Prometheus to report why the job without a password is down",
        PATIENCE,
        Duration::from_millis(250),
        || {
            let (_, body) = get(&web, "/api/v1/targets").map_err(|e| e.to_string())?;
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            v["data"]["activeTargets"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| t["labels"]["job"] == "nopassword")
                .and_then(|t| t["lastError"].as_str())
                .filter(|e| !e.is_empty())
                .map(str::to_string)
                .ok_or_else(|| format!(": {}", crate::head(&body)))
        },
    );
    assert!(refused.contains("401"), "{refused}");

    // A new password: the old one is refused from the next request on.
    write_web("n3w");
    let (status, head, _) = get_tls(&endpoint, &ca, Some(("prometheus", "s3cret")));
    assert_eq!(status, 401, "the old password after the change: {head}");
    let (status, head, body) = get_tls(&endpoint, &ca, Some(("prometheus", "n3w")));
    assert_eq!(status, 200, "the new password: {head}");
    assert!(body.contains(&line), "{}", crate::head(&body));

    end_cleanly(export, prometheus);
}

/// The Grafana dashboard in deploy/grafana: every panel's query, run against the real
/// Prometheus scraping an `export -p` (a paced workload and one making failing calls,
/// with --run-stats) and an `export --top`, returns data: at least one series with a
/// finite value. Grafana's variables are given what it would give them (`$instance`:
/// all, `$__rate_interval`: a range that holds several scrapes and own-cost windows).
#[test]
fn every_dashboard_panel_has_data() {
    let Some(t) = root_test!() else {
        return;
    };
    if !has_prometheus("every_dashboard_panel_has_data") {
        return;
    }
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/grafana/syscost.json"
        ))
        .unwrap(),
    )
    .expect("the dashboard is JSON");
    let queries: Vec<(String, String)> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap_or_default().to_string();
            p["targets"]
                .as_array()
                .expect("each panel has targets")
                .iter()
                .map(move |t| (title.clone(), t["expr"].as_str().unwrap().to_string()))
        })
        .collect();
    assert!(queries.len() >= 8, "{queries:?}");

    let mut paced = Command::new(workload_path())
        .args(["--die-with-parent", "--wait-stdin", "paced", "2000", "600"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut failing = Command::new(workload_path())
        .args(["--wait-stdin", "close-ebadf", "1000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut paced_out = Lines::of(paced.stdout.take().unwrap(), "stdout");
    let mut failing_out = Lines::of(failing.stdout.take().unwrap(), "stdout");
    // close-ebadf prints nothing after its work: it exits.
    assert_eq!(paced_out.next().unwrap().unwrap(), "ready");
    assert_eq!(failing_out.next().unwrap().unwrap(), "ready");
    let (mut export, endpoint) = start_export(
        &format!("{},{}", paced.id(), failing.id()),
        &["--run-stats"],
    );
    let mut top = syscost()
        .args(["export", "--top", "--metrics-addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut top_err = Lines::of(top.stderr.take().unwrap(), "stderr");
    let top_endpoint = endpoint_in(&first_line(&mut top_err));
    std::thread::spawn(move || top_err.for_each(drop));
    writeln!(paced.stdin.take().unwrap(), "go").unwrap();
    writeln!(failing.stdin.take().unwrap(), "go").unwrap();
    assert!(failing.wait_exit().success());

    let (mut prometheus, web, log) = start_prometheus(
        &t,
        &format!(
            "  - job_name: syscost\n    static_configs:\n      - targets: ['{endpoint}', '{top_endpoint}']\n"
        ),
    );
    for (title, expr) in &queries {
        let promql = expr
            .replace("$instance", ".*")
            .replace("$__rate_interval", "30s");
        assert!(
            !promql.contains('$'),
            "{title}: a variable left in {promql}"
        );
        wait_until(
            &format!("panel {title:?} to have data: {promql}"),
            PATIENCE,
            Duration::from_millis(500),
            || {
                if let Some(status) = prometheus.try_wait().unwrap() {
                    panic!(
                        "Prometheus exited ({status}); its log ends:\n{}",
                        log_tail(&log)
                    );
                }
                let results = query(&web, &promql);
                if results.iter().any(|r| value(r).is_finite()) {
                    Ok(())
                } else {
                    Err(format!(": {:?}", &results[..results.len().min(3)]))
                }
            },
        );
    }
    // The errors panel names the errno: all 1,000 once Prometheus scraped the exit's
    // sample.
    let errors = query_until(
        &web,
        "sum by (syscall, errno) (syscost_syscall_errors_total{syscall=\"close\"}) >= 1000",
        &mut prometheus,
        &log,
    );
    assert!(
        errors
            .iter()
            .any(|r| r["metric"]["errno"] == "EBADF" && value(r) == 1000.0),
        "{errors:?}"
    );

    // docs/metrics.md's queries: each is PromQL this Prometheus takes, and each that
    // reads no native histogram has data here (this Prometheus keeps the classic
    // buckets; one that keeps native ones drops them, see the docs), asked of the
    // paced workload's getppid where the docs' asks of close (a rate needs calls in
    // its window: close-ebadf's have ended).
    // Every metric a query names is one the endpoints serve (Prometheus takes an unknown
    // name without a word).
    let served = [&endpoint, &top_endpoint]
        .map(|e| get(e, "/metrics").expect("a scrape").1)
        .join("\n");
    for docs in docs_queries() {
        for name in docs
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("syscost_"))
        {
            // A sample of it (`name{...} V`, `name V`) or its family's type line.
            let sample = |l: &str| {
                l.strip_prefix(name)
                    .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
            };
            assert!(
                served
                    .lines()
                    .any(|l| sample(l) || l.starts_with(&format!("# TYPE {name} "))),
                "docs/metrics.md's {docs}: the endpoints serve no {name}"
            );
        }
        let promql = docs.replace("syscall=\"close\"", "syscall=\"getppid\"");
        let (status, body) = get(
            &web,
            &format!("/api/v1/query?query={}", percent_encode(&promql)),
        )
        .unwrap();
        assert_eq!(status, 200, "docs/metrics.md's {docs}: {body}");
        if promql.contains("histogram_quantile") && !promql.contains("_bucket") {
            continue;
        }
        wait_until(
            &format!("docs/metrics.md's query to have data: {promql}"),
            PATIENCE,
            Duration::from_millis(500),
            || {
                let results = query(&web, &promql);
                if results.iter().any(|r| value(r).is_finite()) {
                    Ok(())
                } else {
                    Err(format!(": {:?}", &results[..results.len().min(3)]))
                }
            },
        );
    }

    for p in [&export, &top, &prometheus] {
        // SAFETY: signals the processes this test started.
        unsafe { libc::kill(p.id() as i32, libc::SIGTERM) };
    }
    assert!(export.wait_exit().success());
    assert!(top.wait_exit().success());
    prometheus.wait_exit();
}

/// The PromQL blocks of docs/metrics.md, each on one line.
fn docs_queries() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .unwrap();
    let queries: Vec<String> = text
        .split("```promql\n")
        .skip(1)
        .map(|b| {
            b.split("```")
                .next()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert!(queries.len() >= 5, "{queries:?}");
    queries
}
