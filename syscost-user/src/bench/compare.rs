//! `syscost compare`: the same workload bare, under syscost, under `strace -f -c` and
//! (when it works here) under `perf trace -s`, interleaved over several rounds, with the
//! slow-down of each. With a command, also each tool's latency per syscall side by side.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::{micro::BenchRow, strace_parse};
use crate::cli::CompareArgs;
use syscost_report::{profile::Profile, report::json, units::human_ns};

/// A way of running the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Way {
    Bare,
    Syscost,
    Strace,
    Perf,
}

impl Way {
    pub fn label(self) -> &'static str {
        match self {
            Way::Bare => "bare",
            Way::Syscost => "syscost",
            Way::Strace => "strace -f -c",
            Way::Perf => "perf trace -s",
        }
    }
}

/// Median of a sample (0 for none).
fn median(v: &[f64]) -> f64 {
    syscost_common::median(&mut v.to_vec())
}

/// One micro-benchmark row: median ns per call for each way that ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareRow {
    pub name: String,
    pub ns: Vec<(Way, f64)>,
}

impl CompareRow {
    fn get(&self, way: Way) -> Option<f64> {
        self.ns.iter().find(|(w, _)| *w == way).map(|(_, v)| *v)
    }
}

/// The per-row table: ns per call of each way and the slow-down against bare.
pub fn render_rows(rows: &[CompareRow], ways: &[Way]) -> String {
    let mut out = format!("{:<26}", "ns per call (median)");
    for w in ways {
        out.push_str(&format!(" {:>13}", w.label()));
    }
    for w in ways.iter().skip(1) {
        out.push_str(&format!(
            " {:>10}",
            format!("{} x", w.label().split(' ').next().unwrap_or(""))
        ));
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!("{:<26}", r.name));
        for w in ways {
            match r.get(*w) {
                Some(v) => out.push_str(&format!(" {v:>13.1}")),
                None => out.push_str(&format!(" {:>13}", "-")),
            }
        }
        let bare = r.get(Way::Bare).unwrap_or(0.0);
        for w in ways.iter().skip(1) {
            match r.get(*w) {
                Some(v) if bare > 0.0 => out.push_str(&format!(" {:>9.1}x", v / bare)),
                _ => out.push_str(&format!(" {:>10}", "-")),
            }
        }
        out.push('\n');
    }
    out
}

/// One syscall's latency as each tool reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyRow {
    pub name: String,
    pub calls: u64,
    pub syscost_avg_ns: u64,
    pub syscost_p50_ns: u64,
    /// strace's usecs/call, in ns (strace prints whole microseconds).
    pub strace_ns: Option<u64>,
}

/// Syscalls of `profile` (busiest first, at most `limit`) with strace's figure beside.
pub fn latency_rows(
    profile: &Profile,
    strace: &[strace_parse::StraceRow],
    limit: usize,
) -> Vec<LatencyRow> {
    let mut by_time: Vec<_> = profile.syscalls.iter().collect();
    by_time.sort_by_key(|s| std::cmp::Reverse(s.total_ns));
    by_time
        .into_iter()
        .take(limit)
        .map(|s| LatencyRow {
            name: s.name.clone(),
            calls: s.calls,
            syscost_avg_ns: s.avg_ns,
            syscost_p50_ns: s.p50_ns,
            strace_ns: strace
                .iter()
                .find(|r| r.name == s.name)
                .map(|r| (r.seconds * 1e9 / r.calls.max(1) as f64).round() as u64),
        })
        .collect()
}

pub fn render_latency(rows: &[LatencyRow]) -> String {
    let mut out = format!(
        "{:<18} {:>9} {:>12} {:>12} {:>14} {:>9}\n",
        "syscall", "calls", "syscost avg", "syscost p50", "strace -w avg", "inflated"
    );
    for r in rows {
        let (st, x) = match r.strace_ns {
            Some(ns) if r.syscost_avg_ns > 0 => (
                human_ns(ns),
                format!("{:.1}x", ns as f64 / r.syscost_avg_ns as f64),
            ),
            Some(ns) => (human_ns(ns), "-".into()),
            None => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "{:<18} {:>9} {:>12} {:>12} {:>14} {:>9}\n",
            r.name,
            r.calls,
            human_ns(r.syscost_avg_ns),
            human_ns(r.syscost_p50_ns),
            st,
            x
        ));
    }
    out
}

const TRACEFS: &str = "/sys/kernel/tracing";

/// Whether tracefs is mounted at its usual place.
fn tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split_whitespace().nth(1) == Some(TRACEFS))
    })
}

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The command line of `way` around `workload`; `out` receives the tool's own summary.
fn wrap(way: Way, exe: &Path, workload: &[String], out: &Path) -> Command {
    let (tool, flags): (&std::ffi::OsStr, &[&str]) = match way {
        Way::Bare => {
            let mut c = Command::new(&workload[0]);
            c.args(&workload[1..]);
            return c;
        }
        Way::Syscost => (exe.as_os_str(), &["run", "-o", "/dev/null", "--json"]),
        Way::Strace => ("strace".as_ref(), &["-f", "-c", "-w", "-o"]),
        Way::Perf => ("perf".as_ref(), &["trace", "-s", "-o"]),
    };
    let mut c = Command::new(tool);
    c.args(flags).arg(out).arg("--").args(workload);
    c
}

/// Runs `cmd`, returning its stdout and wall time; an error says what failed.
fn run_timed(mut cmd: Command, quiet_stdout: bool) -> Result<(String, f64)> {
    if quiet_stdout {
        cmd.stdout(Stdio::null());
    }
    let t = Instant::now();
    let o = cmd
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let secs = t.elapsed().as_secs_f64();
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        bail!("{}", err.lines().last().unwrap_or("failed").trim());
    }
    Ok((String::from_utf8_lossy(&o.stdout).into_owned(), secs))
}

#[derive(Serialize)]
struct CompareJson {
    ways: Vec<Way>,
    skipped: Vec<String>,
    rows: Vec<CompareRow>,
    wall_secs: Vec<(Way, f64)>,
    latency: Vec<LatencyRow>,
}

/// `syscost compare`: the text (or JSON) to print.
pub fn compare(args: &CompareArgs) -> Result<String> {
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    syscost_engine::privileges::check()?;
    let exe = std::env::current_exe().context("cannot find the syscost executable")?;
    let mut ways = vec![Way::Bare, Way::Syscost];
    let mut skipped = Vec::new();
    if have("strace") {
        ways.push(Way::Strace);
    } else {
        skipped.push("strace is not installed: no strace column".to_string());
    }
    if have("perf") {
        ways.push(Way::Perf);
    } else {
        skipped.push("perf is not installed: no perf column".to_string());
    }
    let micro = args.command.is_empty();
    let workload: Vec<String> = if micro {
        let mut w = vec![
            exe.display().to_string(),
            "bench".into(),
            "--json".into(),
            "--reps".into(),
            args.reps.to_string(),
        ];
        if let Some(cpu) = args.cpu {
            w.extend(["--cpu".into(), cpu.to_string()]);
        }
        w
    } else {
        let program = crate::program::find_program(&args.command[0])?;
        std::iter::once(program.display().to_string())
            .chain(args.command[1..].iter().cloned())
            .collect()
    };
    let dir = private_dir("syscost-compare")?;
    let tracefs_before = tracefs_mounted();
    let result = rounds(args, &exe, &workload, &dir, &mut ways, &mut skipped, micro);
    let _ = std::fs::remove_dir_all(&dir);
    // perf trace mounts tracefs when it is missing and leaves it mounted: undo that.
    if !tracefs_before && tracefs_mounted() {
        let path = std::ffi::CString::new(TRACEFS).expect("no NUL");
        // SAFETY: unmounts a path given as a valid C string.
        if unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } != 0 {
            eprintln!(
                "syscost: perf left {TRACEFS} mounted and it cannot be unmounted: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let (rows, wall, latency) = result?;
    if args.json {
        let j = CompareJson {
            ways: ways.clone(),
            skipped,
            rows,
            wall_secs: wall,
            latency,
        };
        return Ok(serde_json::to_string_pretty(&j)?);
    }
    let mut out = String::new();
    for s in &skipped {
        out.push_str(&format!("note: {s}\n"));
    }
    out.push_str(&if args.rounds == 1 {
        "1 round\n".to_string()
    } else {
        format!("{} rounds, interleaved; medians\n", args.rounds)
    });
    if micro {
        out.push_str(&render_rows(&rows, &ways));
    } else {
        let bare = wall
            .iter()
            .find(|(w, _)| *w == Way::Bare)
            .map_or(0.0, |(_, v)| *v);
        out.push_str(&format!(
            "{:<14} {:>10} {:>9}\n",
            "way", "wall time", "slowdown"
        ));
        for (w, secs) in &wall {
            out.push_str(&format!(
                "{:<14} {:>9.3}s {:>8.2}x\n",
                w.label(),
                secs,
                secs / bare.max(1e-9)
            ));
        }
        if !latency.is_empty() {
            out.push_str("\nlatency per syscall as each tool reports it (last round):\n");
            out.push_str(&render_latency(&latency));
        }
    }
    Ok(out)
}

/// A new directory of mode 0700 in the temporary directory, under a name no one can
/// have made first (mkdtemp): the runs' outputs go there, written by root (strace's and
/// perf's too, which follow a link they find).
fn private_dir(prefix: &str) -> Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt as _;
    let template = std::env::temp_dir().join(format!("{prefix}-XXXXXX"));
    let mut bytes = std::ffi::CString::new(template.into_os_string().into_vec())
        .context("the temporary directory's path has a NUL byte")?
        .into_bytes_with_nul();
    // SAFETY: a NUL-terminated template mkdtemp fills in place.
    if unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) }.is_null() {
        return Err(std::io::Error::last_os_error()).context("cannot make a temporary directory");
    }
    bytes.pop();
    Ok(std::path::PathBuf::from(std::ffi::OsString::from_vec(
        bytes,
    )))
}

type RoundsResult = (Vec<CompareRow>, Vec<(Way, f64)>, Vec<LatencyRow>);

fn rounds(
    args: &CompareArgs,
    exe: &Path,
    workload: &[String],
    dir: &Path,
    ways: &mut Vec<Way>,
    skipped: &mut Vec<String>,
    micro: bool,
) -> Result<RoundsResult> {
    let mut samples: Vec<(Way, Vec<BenchRow>)> = Vec::new();
    let mut wall: Vec<(Way, Vec<f64>)> = Vec::new();
    let mut last_profile = None;
    let mut last_strace = Vec::new();
    for round in 1..=args.rounds {
        eprintln!("compare: round {round}/{}", args.rounds);
        let mut failed = Vec::new();
        for &way in ways.iter() {
            let out = dir.join(format!("{way:?}.out"));
            match run_timed(wrap(way, exe, workload, &out), !micro) {
                Ok((stdout, secs)) => {
                    if micro {
                        let rows: Vec<BenchRow> =
                            serde_json::from_str(&stdout).with_context(|| {
                                format!("{}: the micro-benchmark printed no JSON", way.label())
                            })?;
                        samples.push((way, rows));
                    }
                    wall.push((way, vec![secs]));
                    match way {
                        Way::Syscost => last_profile = Some(json::read(&out)?),
                        Way::Strace => {
                            last_strace = strace_parse::parse(
                                &std::fs::read_to_string(&out).unwrap_or_default(),
                            )
                        }
                        _ => {}
                    }
                }
                Err(e) if matches!(way, Way::Perf | Way::Strace) => {
                    skipped.push(format!(
                        "{} failed here ({e}): no {} column",
                        way.label(),
                        way.label()
                    ));
                    failed.push(way);
                }
                Err(e) => return Err(e).with_context(|| format!("{} run failed", way.label())),
            }
        }
        ways.retain(|w| !failed.contains(w));
    }
    let names: Vec<String> = samples
        .first()
        .map(|(_, r)| r.iter().map(|x| x.name.clone()).collect())
        .unwrap_or_default();
    let rows = names
        .iter()
        .map(|name| CompareRow {
            name: name.clone(),
            ns: ways
                .iter()
                .map(|&w| {
                    let v: Vec<f64> = samples
                        .iter()
                        .filter(|(sw, _)| *sw == w)
                        .filter_map(|(_, rows)| {
                            rows.iter().find(|r| &r.name == name).map(|r| r.ns_per_call)
                        })
                        .collect();
                    (w, median(&v))
                })
                .collect(),
        })
        .collect();
    let wall = ways
        .iter()
        .map(|&w| {
            let v: Vec<f64> = wall
                .iter()
                .filter(|(x, _)| *x == w)
                .flat_map(|(_, v)| v.clone())
                .collect();
            (w, median(&v))
        })
        .collect();
    let latency = match (&last_profile, micro) {
        (Some(p), false) => latency_rows(p, &last_strace, 15),
        _ => Vec::new(),
    };
    Ok((rows, wall, latency))
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscost_report::fixtures::server_profile;

    #[test]
    fn medians_and_row_table() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[]), 0.0);
        let rows = vec![
            CompareRow {
                name: "getpid() raw syscall".into(),
                ns: vec![
                    (Way::Bare, 200.0),
                    (Way::Syscost, 550.0),
                    (Way::Strace, 200_000.0),
                ],
            },
            CompareRow {
                name: "clock_gettime(MONOTONIC)".into(),
                ns: vec![(Way::Bare, 20.0), (Way::Syscost, 20.0)],
            },
        ];
        let text = render_rows(&rows, &[Way::Bare, Way::Syscost, Way::Strace]);
        let expected = "\
ns per call (median)                bare       syscost  strace -f -c  syscost x   strace x
getpid() raw syscall               200.0         550.0      200000.0       2.8x    1000.0x
clock_gettime(MONOTONIC)            20.0          20.0             -       1.0x          -
";
        assert_eq!(text, expected);
    }

    #[test]
    fn latency_side_by_side() {
        let p = server_profile(1);
        let strace =
            strace_parse::parse(" 10.00    0.069000          69      1000           close\n");
        let rows = latency_rows(&p, &strace, 2);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "close");
        assert_eq!(rows[0].strace_ns, Some(69_000));
        assert_eq!(rows[1].strace_ns, None);
        let text = render_latency(&rows);
        assert!(
            text.contains(
                "close                   1000       6.30us       6.30us         69.0us     11.0x\n"
            ),
            "{text}"
        );
    }
}
