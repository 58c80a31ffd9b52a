//! `cargo xtask bench`: what tracing costs the traced program, measured side by side in
//! one run. The workload times its own getppid loop; it runs bare, under `syscost run`
//! and under `strace -f -c`, interleaved over several rounds, and the medians are
//! compared. A benchmark, not a test: it prints figures and asserts nothing.

use std::{path::Path, process::Command};

use anyhow::{Context as _, Result, bail};

/// One way of running the workload.
struct Setup {
    name: &'static str,
    /// Calls per round: strace stops the tracee twice per call, so it gets fewer.
    calls: u64,
    samples: Vec<f64>,
}

fn ns_per_call(cmd: &mut Command) -> Result<f64> {
    let o = cmd
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

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

pub fn bench(root: &Path, rounds: usize, calls: u64) -> Result<()> {
    let syscost = root.join("target/release/syscost");
    let workload = root.join("target/release/syscost-workload");
    let mut setups = vec![
        Setup {
            name: "untraced",
            calls,
            samples: vec![],
        },
        Setup {
            name: "syscost run",
            calls,
            samples: vec![],
        },
        Setup {
            name: "strace -f -c",
            calls: (calls / 20).max(1000),
            samples: vec![],
        },
    ];
    for round in 1..=rounds {
        eprintln!("bench: round {round}/{rounds}");
        for s in &mut setups {
            let n = s.calls.to_string();
            let v = match s.name {
                "untraced" => ns_per_call(Command::new(&workload).args(["getppid", &n]))?,
                "syscost run" => ns_per_call(
                    Command::new(&syscost)
                        .args(["run", "-o", "/dev/null", "--"])
                        .arg(&workload)
                        .args(["getppid", &n]),
                )?,
                _ => ns_per_call(
                    Command::new("strace")
                        .args(["-f", "-c", "-o", "/dev/null"])
                        .arg(&workload)
                        .args(["getppid", &n]),
                )?,
            };
            s.samples.push(v);
        }
    }
    let base = median(&setups[0].samples);
    println!(
        "getppid, ns per call: median of {rounds} interleaved rounds ({calls} calls; strace {})",
        setups[2].calls
    );
    println!(
        "{:<14} {:>10} {:>10} {:>10} {:>12} {:>10}",
        "setup", "median", "min", "max", "added ns", "slowdown"
    );
    for s in &setups {
        let m = median(&s.samples);
        let min = s.samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = s.samples.iter().copied().fold(0.0, f64::max);
        println!(
            "{:<14} {:>10.0} {:>10.0} {:>10.0} {:>12.0} {:>9.1}x",
            s.name,
            m,
            min,
            max,
            m - base,
            m / base
        );
    }
    let added = |i: usize| median(&setups[i].samples) - base;
    println!(
        "strace adds {:.0}x what syscost adds per call",
        added(2) / added(1).max(1.0)
    );
    Ok(())
}
