//! Start-up (`--start-up`): the wall time to the first traced call, and a refresh's CPU.

use super::helpers::{Tracefs, have, median, start_and_wait, stop};

use anyhow::{Context as _, Result, bail};
use std::{
    io::{BufRead as _, BufReader, Write as _},
    path::Path,
    process::{Command, Stdio},
};

/// How long a start takes, wall time, medians of `rounds` interleaved rounds:
/// `syscost run -- /bin/true` against `/bin/true` bare and under `strace -c`, and from
/// the exec of `syscost attach -p PID` (of `syscount -p PID`) to its line saying it
/// traces.
pub fn start_up_cost(syscost: &Path, workload: &Path, rounds: usize, peers: bool) -> Result<()> {
    let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e3;
    let whole = |cmd: &mut Command| -> Result<f64> {
        let t = std::time::Instant::now();
        let s = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("cannot run {cmd:?}"))?;
        let took = ms(t);
        if !s.success() {
            bail!("{cmd:?} failed: {s}");
        }
        Ok(took)
    };
    // From the exec to the line that says it traces, of a tracer of a workload waiting
    // on stdin (released with its line, one getppid, once the tracer is stopped).
    let to_line = |tracer: &mut Command, from_stderr: bool, line: &str| -> Result<f64> {
        let mut w = Command::new(workload)
            .args(["--wait-stdin", "getppid", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start the workload")?;
        let mut out = BufReader::new(w.stdout.take().unwrap());
        let mut ready = String::new();
        out.read_line(&mut ready)?;
        let t = std::time::Instant::now();
        let child = start_and_wait(tracer.arg(w.id().to_string()), from_stderr, line);
        let took = ms(t);
        let child = child?;
        stop(child);
        // Its line: one getppid, then it ends.
        if let Some(mut stdin) = w.stdin.take() {
            let _ = writeln!(stdin);
        }
        // Read to its end: the workload writes its figure as it ends.
        let _ = std::io::copy(&mut out, &mut std::io::sink());
        let _ = w.wait();
        Ok(took)
    };
    let strace = peers && have("strace");
    let syscount = peers && have("syscount");
    // syscount attaches classic tracepoints, which need tracefs.
    let _tracefs = if syscount {
        Some(Tracefs::mount()?)
    } else {
        None
    };
    let baseline = std::env::var("SYSCOST_BENCH_BASELINE").ok();
    let mut ways: Vec<&str> = vec!["/bin/true", "syscost run -- /bin/true"];
    if baseline.is_some() {
        ways.push("baseline build's run -- /bin/true");
    }
    if strace {
        ways.push("strace -c /bin/true");
    }
    ways.push("syscost attach -p: to its tracing line");
    if baseline.is_some() {
        ways.push("baseline build's attach -p: to its line");
    }
    if syscount {
        ways.push("syscount -p: to its tracing line");
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for round in 1..=rounds {
        eprintln!("bench: start-up round {round}/{rounds}");
        for (i, way) in ways.iter().enumerate() {
            let took = match *way {
                "/bin/true" => whole(&mut Command::new("/bin/true"))?,
                "syscost run -- /bin/true" => whole(Command::new(syscost).args([
                    "run",
                    "-o",
                    "/dev/null",
                    "--",
                    "/bin/true",
                ]))?,
                "strace -c /bin/true" => {
                    whole(Command::new("strace").args(["-c", "-o", "/dev/null", "/bin/true"]))?
                }
                "syscost attach -p: to its tracing line" => to_line(
                    Command::new(syscost).args(["attach", "--no-tui", "-p"]),
                    true,
                    "syscost: tracing",
                )?,
                "baseline build's run -- /bin/true" => {
                    whole(Command::new(baseline.as_deref().unwrap_or_default()).args([
                        "run",
                        "-o",
                        "/dev/null",
                        "--",
                        "/bin/true",
                    ]))?
                }
                "baseline build's attach -p: to its line" => to_line(
                    Command::new(baseline.as_deref().unwrap_or_default())
                        .args(["attach", "--no-tui", "-p"]),
                    true,
                    "syscost: tracing",
                )?,
                _ => to_line(
                    Command::new("stdbuf").args(["-oL", "syscount", "-p"]),
                    false,
                    "Tracing syscalls",
                )?,
            };
            samples[i].push(took);
        }
    }
    println!("\nstart-up, wall ms: median of {rounds} interleaved rounds");
    println!("{:<40} {:>8} {:>8} {:>8}", "what", "median", "min", "max");
    let med: Vec<f64> = samples.iter().map(|s| median(s)).collect();
    for (i, way) in ways.iter().enumerate() {
        let min = samples[i].iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples[i].iter().copied().fold(0.0, f64::max);
        println!("{:<40} {:>8.1} {:>8.1} {:>8.1}", way, med[i], min, max);
    }
    let at = |w: &str| ways.iter().position(|x| *x == w).map(|i| med[i]);
    println!(
        "syscost run -- /bin/true adds {:.1} ms to /bin/true",
        med[1] - med[0]
    );
    if let Some(b) = at("baseline build's run -- /bin/true") {
        println!("the baseline build's run adds {:.1} ms", b - med[0]);
    }
    if let (Some(own), Some(sc)) = (
        at("syscost attach -p: to its tracing line"),
        at("syscount -p: to its tracing line"),
    ) {
        println!(
            "syscost attach ready / syscount ready: {:.2}",
            own / sc.max(1e-3)
        );
    } else if peers {
        println!("note: syscount (libbpf-tools) not installed: skipped");
    }
    Ok(())
}

/// What one refresh of the statistics costs syscost, with 50 distinct syscalls in use (a
/// target cycling through 50 numbers the kernel answers with ENOSYS).
pub(super) fn refresh_cost(syscost: &Path, workload: &Path) -> Result<()> {
    let mut target = Command::new(workload)
        .args(["numbers-forever", "600", "650"])
        .spawn()
        .context("cannot start the workload")?;
    let o = Command::new(syscost)
        .args([
            "refresh-cost",
            "-p",
            &target.id().to_string(),
            "--refreshes",
            "500",
        ])
        .output();
    let _ = target.kill();
    let _ = target.wait();
    let o = o.context("cannot run syscost refresh-cost")?;
    if !o.status.success() {
        bail!(
            "syscost refresh-cost failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    println!();
    print!("{}", String::from_utf8_lossy(&o.stdout));
    Ok(())
}
