//! Slow calls (`--slow-calls`): what reporting a slow call costs in the kernel.

use super::helpers::{cpu_of, have, median};
use super::process_starts::bpf_run_stats;

use anyhow::{Context as _, Result, bail};
use std::{
    path::Path,
    process::{Child, Command, Stdio},
};

/// What a slow call costs in the kernel: the exit program's own run time (the kernel's
/// BPF statistics, exact to the ns, read with bpftool over 2 s of a run) per call, with
/// every call of the workload slow (`--slow getppid=0ns,clock_nanosleep=0ns`) against
/// none (`=1s`), for each `--stack-size`, and the baseline build's every call when
/// given (`SYSCOST_BENCH_BASELINE`). The
/// workload makes 5,000 getppid and 100 clock_nanosleep calls a second: few enough for
/// the ring buffer never to fill, so every call takes the reporting path. Beside it,
/// syscost's own CPU time per call (receiving, unwinding and naming each slow call).
pub fn slow_call_cost(syscost: &Path, workload: &Path, rounds: usize) -> Result<()> {
    // The workload's calls, every one slow (not the program's start: its loader's burst
    // would fill the ring before the window).
    const ALL_SLOW: &str = "getppid=0ns,clock_nanosleep=0ns";
    if !have("bpftool") {
        bail!("the slow-call bench reads the programs' run time with bpftool: install it");
    }
    let baseline = std::env::var_os("SYSCOST_BENCH_BASELINE").map(std::path::PathBuf::from);
    let mut ways: Vec<(String, std::path::PathBuf, Vec<&str>)> = vec![
        (
            "none slow (=1s)".into(),
            syscost.into(),
            vec!["--slow", "getppid=1s,clock_nanosleep=1s"],
        ),
        (
            "every call, --stack-size 0".into(),
            syscost.into(),
            vec!["--slow", ALL_SLOW, "--stack-size", "0"],
        ),
        (
            "every call, --stack-size 4K".into(),
            syscost.into(),
            vec!["--slow", ALL_SLOW, "--stack-size", "4K"],
        ),
        (
            "every call (16K, default)".into(),
            syscost.into(),
            vec!["--slow", ALL_SLOW],
        ),
        (
            "every call, --stack-size 32K".into(),
            syscost.into(),
            vec!["--slow", ALL_SLOW, "--stack-size", "32K"],
        ),
    ];
    if let Some(b) = &baseline {
        ways.push((
            "baseline build, every call".into(),
            b.clone(),
            vec!["--slow", ALL_SLOW],
        ));
    }
    let exit_stats = || -> Result<(u64, u64)> {
        let out = crate::setup::output(Command::new("bpftool").args(["prog", "show", "--json"]))?;
        let progs: serde_json::Value = serde_json::from_str(&out)?;
        progs
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("syscost_sys_ex"))
            })
            .and_then(|p| Some((p["run_time_ns"].as_u64()?, p["run_cnt"].as_u64()?)))
            .context("no syscost exit program with run-time statistics loaded")
    };
    let _stats = bpf_run_stats()?;
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    // syscost's own CPU time (its threads: the reader receiving and naming the calls),
    // per call.
    let mut user: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for round in 1..=rounds {
        eprintln!("bench: slow calls, round {round}/{rounds}");
        for (i, (_, binary, args)) in ways.iter().enumerate() {
            // The workload on CPU 0 beside a busy loop, syscost on CPU 1: CPU 0 never idles
            // between the workload's bursts, so the programs always run on a CPU awake
            // (otherwise how often syscost's reader wakes a CPU decides more than what
            // the programs do).
            let table =
                std::env::temp_dir().join(format!("syscost-bench-slow-{}.txt", std::process::id()));
            // Killed when this round ends, however it ends.
            struct Hog(Child);
            impl Drop for Hog {
                fn drop(&mut self) {
                    let _ = self.0.kill();
                    let _ = self.0.wait();
                }
            }
            let _hog = Hog(Command::new("taskset")
                .args(["-c", "0", "sh", "-c", "while :; do :; done"])
                .spawn()?);
            let mut child = Command::new("taskset")
                .args(["-c", "1"])
                .arg(binary)
                .arg("run")
                .args(args)
                .arg("-o")
                .arg(&table)
                .args(["--", "taskset", "-c", "0"])
                .arg(workload)
                .args(["paced", "5000", "4"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            std::thread::sleep(std::time::Duration::from_millis(1000));
            let (a, cpu_a, t_a) = (exit_stats(), cpu_of(child.id()), std::time::Instant::now());
            std::thread::sleep(std::time::Duration::from_millis(2000));
            let (b, cpu_b, t_b) = (exit_stats(), cpu_of(child.id()), std::time::Instant::now());
            let status = child.wait()?;
            if !status.success() {
                bail!("{binary:?} {args:?} failed: {status}");
            }
            let printed = std::fs::read_to_string(&table).unwrap_or_default();
            let _ = std::fs::remove_file(&table);
            if printed.contains("more not reported") {
                bail!(
                    "{binary:?} {args:?}: slow calls dropped, so not every call took the reporting path: {printed}"
                );
            }
            // Per traced call: the program runs at every exit of the machine, and the
            // others (syscost's own among them) differ between setups; the workload's
            // calls in the window are known from its pace (5,100 a second).
            let ((t0, _), (t1, _)) = (a?, b?);
            let traced = 5100.0 * t_b.duration_since(t_a).as_secs_f64();
            samples[i].push((t1 - t0) as f64 / traced);
            user[i].push(cpu_b.saturating_sub(cpu_a) as f64 / traced);
        }
    }
    let med: Vec<f64> = samples.iter().map(|s| median(s)).collect();
    println!();
    println!(
        "the exit program's run time (kernel BPF statistics, every exit of the machine) per traced call, getppid 5,000/s + clock_nanosleep 100/s: median of {rounds} rounds; no slow call dropped"
    );
    println!(
        "{:<30} {:>10} {:>16} {:>16} {:>16}",
        "setup", "ns/call", "over none slow", "rounds' range", "syscost ns/call"
    );
    for (i, (label, _, _)) in ways.iter().enumerate() {
        let lo = samples[i].iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = samples[i].iter().cloned().fold(0.0, f64::max);
        println!(
            "{label:<30} {:>10.0} {:>16.0} {:>16} {:>16.0}",
            med[i],
            med[i] - med[0],
            format!("{lo:.0}-{hi:.0}"),
            median(&user[i])
        );
    }
    Ok(())
}
