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
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
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
    Ok((status, body))
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

#[test]
fn prometheus_scrapes_the_exact_count() {
    let Some(t) = root_test!() else {
        return;
    };
    let Ok(prometheus_bin) = which::which("prometheus") else {
        skip(
            "prometheus_scrapes_the_exact_count",
            "prometheus is not installed (cargo xtask setup installs it)",
        );
        return;
    };

    let mut work = Command::new(workload_path())
        .args(["--wait-stdin", "getppid", &CALLS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(work.stdout.take().unwrap(), "stdout");
    assert_eq!(out.next().unwrap().unwrap(), "ready");

    let (mut export, endpoint) = start_export(&work.id().to_string(), &[]);

    // The workload runs to the end; its final counts stay on the endpoint.
    writeln!(work.stdin.take().unwrap(), "go").unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    assert!(work.wait_exit().success());
    let (status, text) = get(&endpoint, "/metrics").unwrap();
    assert_eq!(status, 200, "{}", head(&text));
    let line = format!(
        "syscost_syscalls_total{{pid=\"{}\",comm=\"syscost-workloa\",syscall=\"getppid\"}} {CALLS}\n",
        work.id()
    );
    assert!(
        text.contains(&line),
        "{line} not in the exposition; its getppid samples:\n{}",
        metric_lines(&text, "syscost_syscalls_total", "getppid")
    );
    assert_eq!(get(&endpoint, "/").unwrap().0, 404);

    let config = t.path("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: syscost\n    static_configs:\n      - targets: ['{endpoint}']\n"
        ),
    )
    .unwrap();
    let log = t.path("prometheus.log");
    let mut prometheus = dies_with_its_test(&mut Command::new(prometheus_bin), libc::SIGKILL)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", t.path("data").display()))
        .arg("--web.listen-address=127.0.0.1:0")
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
    assert_eq!(results[0]["metric"]["pid"], work.id().to_string());
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

    // SIGTERM ends the export cleanly; the programs are gone (checked on drop).
    // SAFETY: signals the process this test started.
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
    let (mut export, endpoint) = start_export(&pids.join(","), &["--no-run-stats"]);
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
    let (status, text) = get(&endpoint, "/metrics").unwrap();
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
        !text.contains("syscost_bpf_run_seconds_total{"),
        "--no-run-stats: {}",
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

/// A `--wait-stdin --hold` workload behind `stdin`/`stdout`: starts it, waits for the
/// work to be done, returns the endpoint's text, and lets it exit.
fn scrape_while_held(
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    endpoint: &str,
) -> String {
    let mut stdin = stdin;
    let mut out = Lines::of(stdout, "the workload's stdout");
    assert_eq!(out.next().unwrap().unwrap(), "ready");
    writeln!(stdin, "go").unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    assert_eq!(out.next().unwrap().unwrap(), "done");
    let (status, text) = get(endpoint, "/metrics").unwrap();
    assert_eq!(status, 200, "{}", head(&text));
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
