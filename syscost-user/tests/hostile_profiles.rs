//! Profiles a user hands `report`, `diff` and `flame`, with figures at the edges of a
//! u64: one whose sums wrap is refused in one line that names the field; one whose sums
//! just fit is shown with every percentage within 0..=100 and every total the sum of its
//! rows. Needs no privileges (the property tests of every view are the report crate's,
//! report::extremes).

mod common;

use std::path::PathBuf;

use common::*;
use syscost_report::{
    fixtures::{profile_of, syscall},
    latency,
    profile::{Profile, SyscallProfile},
    report::json,
};

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("syscost-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }

    /// `p` saved as `name`; its path.
    fn profile(&self, name: &str, p: &Profile) -> String {
        self.file(name, json::to_string(p).as_bytes())
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fails_with(args: &[&str], expected: &str) {
    let o = output(syscost().args(args));
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    assert_eq!(stderr(&o), format!("syscost: {expected}\n"), "{args:?}");
}

fn succeeds(args: &[&str]) -> String {
    let o = output(syscost().args(args));
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let text = stdout(&o);
    for word in ["NaN", "inf"] {
        assert!(!text.contains(word), "{args:?}: {word} in:\n{text}");
    }
    text
}

/// A row of syscall `name` whose calls took `(ns, calls)` each, consistent throughout.
fn row(name: &str, nr: u64, latencies: &[(u64, u64)]) -> SyscallProfile {
    let mut dense = vec![0u64; syscost_common::HISTOGRAM_BUCKETS];
    for &(ns, n) in latencies {
        dense[syscost_common::bucket_index(ns)] += n;
    }
    let calls: u64 = latencies.iter().map(|l| l.1).sum();
    let total: u64 = latencies.iter().map(|l| l.0 * l.1).sum();
    let max = latencies.iter().map(|l| l.0).max().unwrap_or(0);
    SyscallProfile {
        calls,
        total_ns: total,
        oncpu_ns: total,
        offcpu_ns: 0,
        avg_ns: total / calls.max(1),
        min_ns: latencies.iter().map(|l| l.0).min().unwrap_or(0),
        max_ns: max,
        p50_ns: max,
        p90_ns: max,
        p99_ns: max,
        histogram: latency::to_sparse(&dense),
        ..syscall(name, nr, 0, 0, 0)
    }
}

/// The `% time` and calls of each row of a strace table, and the total's calls.
fn table(text: &str) -> (Vec<(f64, u64)>, u64) {
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("% time"), "{text}");
    let end = 2 + lines[2..]
        .iter()
        .position(|l| l.starts_with("---"))
        .unwrap();
    let cols = |l: &str| -> (f64, u64) {
        let w: Vec<&str> = l.split_whitespace().collect();
        (w[0].parse().unwrap_or(0.0), w[3].parse().unwrap())
    };
    let rows = lines[2..end].iter().map(|l| cols(l)).collect();
    (rows, cols(lines[end + 1]).1)
}

/// The held-out case: two rows of 2^63 + 5 calls, each consistent (its average, its
/// histogram), whose sum wraps. It was read, and `report` printed a % time of
/// 4789968651641484.00 above a total of 28 calls (a debug build panicked); `diff`
/// summed it the same way. Refused now, naming the field; so is a top file whose
/// processes' sum wraps, and a stacks file whose values do.
#[test]
fn profiles_whose_sums_wrap_are_refused_naming_the_field() {
    let d = Scratch::new("wrapping");
    let huge = (1u64 << 63) + 5;
    let wrapping = d.profile(
        "wrapping.json",
        &profile_of(vec![
            syscall("read", 0, huge, 0, 1),
            syscall("write", 1, huge, 0, 1),
            syscall("close", 3, 18, 0, 1),
        ]),
    );
    let fine = d.profile("fine.json", &profile_of(vec![syscall("read", 0, 9, 0, 1)]));
    let refused =
        format!("{wrapping}: corrupt profile: the sum of the syscalls' calls overflows u64");
    fails_with(&["report", &wrapping], &refused);
    fails_with(&["report", "-U", "calls,name", &wrapping], &refused);
    fails_with(&["diff", &fine, &wrapping], &refused);
    fails_with(&["diff", &wrapping, &fine, &fine], &refused);

    let half = u64::MAX / 2 + 1;
    let process = |pid: u32| {
        serde_json::json!({
            "pid": pid, "comm": "a", "cgroup": "/", "exited": true, "threads": 1,
            "calls": half, "errors": 0, "total_ns": 1, "oncpu_ns": 1,
            "syscalls": [{"name": "read", "calls": half, "errors": 0, "total_ns": 1, "offcpu_ns": 0}]
        })
    };
    let top = serde_json::json!({
        "schema": 3, "duration_secs": 1.0, "offcpu_tracked": true, "dropped": 0,
        "processes": [process(1), process(2)]
    });
    let top = d.file("top.json", top.to_string().as_bytes());
    fails_with(
        &["report", &top],
        &format!("{top}: corrupt top file: the sum of the processes' calls overflows u64"),
    );

    let folded = d.file(
        "big.folded",
        format!("a;b {m}\na;c {m}\n", m = u64::MAX).as_bytes(),
    );
    fails_with(
        &[
            "flame",
            &folded,
            "-o",
            &format!("{}/big.svg", d.0.display()),
        ],
        &format!(
            "{folded}: the values of its stacks add up past u64: not a stacks file syscost wrote"
        ),
    );
}

/// Profiles whose sums just fit: every table's % time within 0..=100 and its total the
/// sum of its rows; a pair and variants compared (runs whose pooled calls pass a u64
/// get no rank test instead of a wrapped one).
#[test]
fn profiles_at_the_edge_of_u64_are_shown_and_compared() {
    let d = Scratch::new("edge");
    let half = u64::MAX / 2;
    let edge = profile_of(vec![
        syscall("read", 0, half, half / 3, 1),
        syscall("write", 1, half, 0, 1),
        syscall("close", 3, 0, 0, 0),
    ]);
    let edge = d.profile("edge.json", &edge);
    let sum = 2 * half;
    for args in [
        &["report"][..],
        &["report", "-L", "-S", "calls"],
        &["report", "--per", "write"],
        &["report", "-z"],
        &["report", "-Z"],
    ] {
        let text = succeeds(&[args, &[edge.as_str()]].concat());
        let (rows, total) = table(&text);
        assert!(rows.iter().all(|r| (0.0..=100.0).contains(&r.0)), "{text}");
        assert_eq!(
            rows.iter().map(|r| u128::from(r.1)).sum::<u128>(),
            u128::from(total),
            "{text}"
        );
        if args.len() < 2 || args[1] != "-z" && args[1] != "-Z" {
            assert_eq!(total, sum, "{text}");
        }
    }
    let text = succeeds(&["report", "-U", "time-percent,calls,name", &edge]);
    let lines: Vec<&str> = text.lines().collect();
    let end = 2 + lines[2..]
        .iter()
        .position(|l| l.starts_with("---"))
        .unwrap();
    let mut calls = 0u128;
    for l in &lines[2..end] {
        let w: Vec<&str> = l.split_whitespace().collect();
        let pct: f64 = w[0].parse().unwrap();
        assert!((0.0..=100.0).contains(&pct), "{text}");
        calls += w[1].parse::<u128>().unwrap();
    }
    assert_eq!(calls, u128::from(sum), "{text}");
    assert_eq!(
        lines[end + 1].split_whitespace().nth(1),
        Some(sum.to_string().as_str())
    );

    // A pair, both ways, in text and JSON.
    let other = d.profile(
        "other.json",
        &profile_of(vec![syscall("read", 0, 7, 0, 1_000)]),
    );
    succeeds(&["diff", &edge, &other]);
    succeeds(&["diff", &other, &edge, "--json"]);
    // Variants: two runs pooled whose calls, each in a bucket of its own, pass a u64.
    let many = half / 5 * 6;
    let run1 = d.profile(
        "run-1.json",
        &profile_of(vec![row("read", 0, &[(1, many)])]),
    );
    let run2 = d.profile(
        "run-2.json",
        &profile_of(vec![row("read", 0, &[(0, many)])]),
    );
    let base = d.profile(
        "base.json",
        &profile_of(vec![row("read", 0, &[(1, 1_000)])]),
    );
    let text = succeeds(&["diff", &format!("{run1},{run2}"), &base]);
    assert!(text.contains("read"), "{text}");
    succeeds(&["diff", "--json", &base, &format!("{run1},{run2}"), &edge]);
}
