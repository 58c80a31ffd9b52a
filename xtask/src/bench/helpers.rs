//! What every part of the bench uses: tracers started and stopped, workloads timed,
//! peers found, medians.

use anyhow::{Context as _, Result, bail};
use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    path::Path,
    process::{Child, Command, Stdio},
};

pub(super) fn ns_per_call(cmd: &mut Command) -> Result<f64> {
    let o = cmd
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !o.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let out = String::from_utf8_lossy(&o.stdout);
    out.lines()
        .find_map(|l| l.strip_prefix("ns_per_call="))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("no ns_per_call in {out:?}"))
}

/// The C loop built with frame pointers or without, beside the workload.
pub(super) fn c_loop(workload: &Path, fp: bool) -> std::path::PathBuf {
    workload.with_file_name(if fp {
        "getppid-loop-fp"
    } else {
        "getppid-loop-nofp"
    })
}

/// Builds the C loop both ways (`cc -O2`).
pub(super) fn build_c_loops(workload: &Path) -> Result<()> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("c/getppid_loop.c");
    for fp in [true, false] {
        let flag = if fp {
            "-fno-omit-frame-pointer"
        } else {
            "-fomit-frame-pointer"
        };
        run_quiet(
            Command::new("cc")
                .args(["-O2", flag, "-o"])
                .arg(c_loop(workload, fp))
                .arg(&source),
        )?;
    }
    Ok(())
}

pub(super) fn median(v: &[f64]) -> f64 {
    syscost_common::median(&mut v.to_vec())
}

/// Starts `cmd` and waits for a line of its output containing `ready`.
pub(super) fn start_and_wait(cmd: &mut Command, from_stderr: bool, ready: &str) -> Result<Child> {
    if from_stderr {
        cmd.stderr(Stdio::piped()).stdout(Stdio::null());
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let lines: Box<dyn std::io::BufRead> = if from_stderr {
        Box::new(BufReader::new(child.stderr.take().unwrap()))
    } else {
        Box::new(BufReader::new(child.stdout.take().unwrap()))
    };
    for line in lines.lines() {
        if line?.contains(ready) {
            return Ok(child);
        }
    }
    let _ = child.kill();
    bail!("{cmd:?} ended before it was ready")
}

pub(super) fn stop(mut child: Child) {
    // SIGTERM through kill(1) keeps xtask free of libc; closing stdin ends `syscost floor`.
    // A tracer that sleeps through it (bpftrace once slept in its epoll_wait after
    // SIGTERM, and the bench with it) gets SIGINT after 10 s, then SIGKILL.
    drop(child.stdin.take());
    for (signal, patience) in [("-TERM", 10), ("-INT", 5), ("-KILL", 5)] {
        let _ = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(patience);
        while std::time::Instant::now() < deadline {
            match child.try_wait() {
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
                _ => return,
            }
        }
        eprintln!(
            "bench: pid {} still running {patience} s after SIG{}",
            child.id(),
            &signal[1..]
        );
    }
    let _ = child.wait();
}

/// tracefs at /sys/kernel/tracing while this lives, for the peers that need it (classic
/// tracepoints); unmounted again if it was not mounted before.
pub(super) struct Tracefs {
    pub(super) mounted_here: bool,
}

impl Tracefs {
    const PATH: &'static str = "/sys/kernel/tracing";

    pub(super) fn mount() -> Result<Self> {
        let mounted = std::fs::read_to_string("/proc/self/mounts")?
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(Self::PATH));
        if !mounted {
            run_quiet(Command::new("mount").args(["-t", "tracefs", "tracefs", Self::PATH]))?;
        }
        Ok(Self {
            mounted_here: !mounted,
        })
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            let _ = Command::new("umount").arg(Self::PATH).status();
        }
    }
}

pub(super) fn run_quiet(cmd: &mut Command) -> Result<()> {
    let s = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !s.success() {
        bail!("{cmd:?} failed: {s}");
    }
    Ok(())
}

pub(super) fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// ns per getppid of the workload (`n` calls) with a peer attached to it by pid: the
/// workload waits on its stdin until `start` (given its pid) has the peer ready, then
/// the peer is interrupted (SIGINT, as a user stops it) and stopped.
pub(super) fn peer_on_pid(
    workload: &Path,
    n: &str,
    start: impl FnOnce(u32) -> Result<Child>,
) -> Result<f64> {
    peer_on_pid_cpu(workload, n, start).map(|(ns, _)| ns)
}

/// [`peer_on_pid`], and the peer's own CPU time (every thread's) from the workload's
/// start to its end, ns.
pub(super) fn peer_on_pid_cpu(
    workload: &Path,
    n: &str,
    start: impl FnOnce(u32) -> Result<Child>,
) -> Result<(f64, u64)> {
    let mut w = Command::new(workload)
        .args(["--wait-stdin", "getppid", n])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut out = BufReader::new(w.stdout.take().context("workload stdout")?);
    let mut line = String::new();
    out.read_line(&mut line)?;
    let tracefs = Tracefs::mount()?;
    let r = start(w.id()).and_then(|peer| {
        let cpu_before = cpu_of(peer.id());
        writeln!(w.stdin.as_mut().context("workload stdin")?)?;
        let mut rest = String::new();
        out.read_to_string(&mut rest)?;
        let cpu = cpu_of(peer.id()).saturating_sub(cpu_before);
        let _ = Command::new("kill")
            .args(["-INT", &peer.id().to_string()])
            .status();
        stop(peer);
        rest.lines()
            .find_map(|l| l.strip_prefix("ns_per_call="))
            .and_then(|v| v.trim().parse().ok())
            .map(|ns| (ns, cpu))
            .with_context(|| format!("no ns_per_call in {rest:?}"))
    });
    let _ = w.kill();
    let _ = w.wait();
    drop(tracefs);
    r
}

/// CPU time of every thread of process `pid` so far, ns (from schedstat).
pub(super) fn cpu_of(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|t| {
                std::fs::read_to_string(t.ok()?.path().join("schedstat"))
                    .ok()?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
        })
        .unwrap_or(0)
}

/// A tracer the bench started, stopped (then its tracefs mount dropped) however the
/// round ends: an error on the way returns early, and a `Child` dropped is not killed.
pub(super) struct Running {
    child: Option<Child>,
    tracefs: Option<Tracefs>,
}

impl Running {
    pub(super) fn new((child, tracefs): (Child, Option<Tracefs>)) -> Self {
        Self {
            child: Some(child),
            tracefs,
        }
    }

    pub(super) fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            stop(child);
        }
        self.tracefs.take();
    }
}

/// `a / b` to two places, or `n/a` where either is no cost (a figure less its idle cost
/// can come out at or below zero on a noisy host).
pub(super) fn ratio(a: f64, b: f64) -> String {
    if a > 0.0 && b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "n/a".to_string()
    }
}
