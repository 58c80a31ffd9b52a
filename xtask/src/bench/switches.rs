//! Context switches: what off-CPU accounting and kernel stacks add per switch.

use super::helpers::{median, ns_per_call};

use anyhow::Result;
use std::{path::Path, process::Command};

/// The off-CPU program runs on every context switch of the machine: its cost on a
/// workload that does little else (two threads passing a byte over pipes).
pub(super) fn switch_cost(
    syscost: &Path,
    workload: &Path,
    rounds: usize,
    round_trips: u64,
) -> Result<()> {
    let n = round_trips.max(1000).to_string();
    let ways: [(&str, &[&str]); 5] = [
        ("untraced", &[]),
        (
            "syscost --no-offcpu",
            &["run", "--no-offcpu", "-o", "/dev/null", "--"],
        ),
        ("syscost (off-CPU on)", &["run", "-o", "/dev/null", "--"]),
        (
            "syscost --slow 1s",
            &["run", "--slow", "1s", "-o", "/dev/null", "--"],
        ),
        (
            "  with --kernel-stacks",
            &[
                "run",
                "--slow",
                "1s",
                "--kernel-stacks",
                "-o",
                "/dev/null",
                "--",
            ],
        ),
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for round in 1..=rounds {
        eprintln!("bench: context switches, round {round}/{rounds}");
        for (i, (_, args)) in ways.iter().enumerate() {
            // Both threads on one CPU: a context switch each hand-over, without the noise
            // of cross-CPU wake-ups.
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", "0"]);
            if !args.is_empty() {
                cmd.arg(syscost).args(*args);
            }
            cmd.arg(workload);
            samples[i].push(ns_per_call(cmd.args(["pingpong", &n]))?);
        }
    }
    let med: Vec<f64> = samples.iter().map(|s| median(s)).collect();
    println!();
    println!(
        "pipe ping-pong between two threads on one CPU (2 context switches and 4 syscalls a round), ns per round: median of {rounds} rounds, {n} rounds each"
    );
    println!("{:<26} {:>10} {:>10}", "setup", "median", "added");
    for (i, (label, _)) in ways.iter().enumerate() {
        println!("{label:<26} {:>10.0} {:>10.0}", med[i], med[i] - med[0]);
    }
    println!(
        "off-CPU accounting adds {:.0} ns per round ({:.0} ns per context switch)",
        med[2] - med[1],
        (med[2] - med[1]) / 2.0
    );
    println!(
        "--slow adds {:.0} ns per round over off-CPU on; --kernel-stacks (a stack walk per blocking switch inside a call) {:.0} more",
        med[3] - med[2],
        med[4] - med[3]
    );
    Ok(())
}
