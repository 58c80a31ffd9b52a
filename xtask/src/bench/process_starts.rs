//! Process starts (`--process-starts`): the CPU a tracer adds per process started, and
//! its own cost per start with its kernel programs' run time.

use super::helpers::{Running, Tracefs, cpu_of, have, median, ratio, start_and_wait};

use anyhow::{Context as _, Result, bail};
use std::{
    path::Path,
    process::{Child, Command},
};

/// The baseline build's row (`SYSCOST_BENCH_BASELINE`).
const BASELINE_WAY: &str = "baseline build's top";

/// What the whole-machine modes add to a process start: fork, exec of a static program
/// that only exits, exit, and the parent's wait (fork, execve, exit_group and wait4;
/// the fork, exec and exit hooks; one per-process pair and the exit record), beside no
/// tracer, the baseline build's `top` when given (`SYSCOST_BENCH_BASELINE`) and
/// libbpf-tools `syscount -P`. CPU time, not wall time (on a shared VM wall time drifts
/// more than what is measured): the workload's own and its children's (the kernel
/// programs run there), plus the tracer's, per process (read 2.5 s after the last
/// start, so that work deferred to a refresh counts too; the idle tracer's ticks in
/// that time count as well, alike for every tracer).
pub fn process_start_cost(
    syscost: &Path,
    workload: &Path,
    rounds: usize,
    peers: bool,
) -> Result<()> {
    const STARTS: u64 = 2000;
    let syscount = peers && have("syscount");
    let baseline = std::env::var_os("SYSCOST_BENCH_BASELINE");
    let mut ways: Vec<&str> = vec!["untraced", "syscost top", "syscost export --top"];
    if baseline.is_some() {
        ways.push(BASELINE_WAY);
    }
    if syscount {
        ways.extend(["syscount -P", "syscount -L -P"]);
    }
    // The limit of any latency design on every process (`syscost floor minimal`): what a
    // process start costs a tracer that keeps nothing but one histogram bucket a call.
    ways.push(MINIMAL_WAY);
    // (wall ns, workload CPU ns) per process start.
    let starts = || -> Result<(f64, f64)> {
        let o = Command::new(workload)
            .args(["spawn", &STARTS.to_string(), "0"])
            .output()
            .context("cannot run the workload")?;
        let out = String::from_utf8_lossy(&o.stdout);
        let get = |key: &str| -> Result<f64> {
            out.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.trim().parse().ok())
                .with_context(|| format!("no {key} from the workload: {out}"))
        };
        Ok((get("per_process_ns")?, get("cpu_per_process_ns")?))
    };
    // The tracer of a way, started and ready; the tracefs mount syscount needs.
    let start_tracer = |way: &str| -> Result<(Child, Option<Tracefs>)> {
        Ok(match way {
            "syscost top" | BASELINE_WAY => {
                let bin = if way == "syscost top" {
                    syscost.as_os_str().to_owned()
                } else {
                    baseline.clone().unwrap_or_default()
                };
                let t = start_and_wait(
                    Command::new(bin).args(["top", "--no-tui", "-i", "1"]),
                    true,
                    "watching the machine",
                )?;
                (t, None)
            }
            MINIMAL_WAY => {
                let t = start_and_wait(
                    Command::new(syscost).args(["floor", "minimal"]),
                    false,
                    "floor programs attached",
                )?;
                (t, None)
            }
            "syscost export --top" => {
                let t = start_and_wait(
                    Command::new(syscost).args([
                        "export",
                        "--top",
                        "--metrics-addr",
                        "127.0.0.1:0",
                    ]),
                    true,
                    "Ctrl-C to stop",
                )?;
                (t, None)
            }
            _ => {
                let tracefs = Tracefs::mount()?;
                // stdbuf execs syscount (same pid): its own CPU is what is read.
                let mut args = vec!["-oL", "syscount", "-P"];
                if way == "syscount -L -P" {
                    args.push("-L");
                }
                let t = start_and_wait(
                    Command::new("stdbuf").args(&args),
                    false,
                    "Tracing syscalls",
                )?;
                (t, Some(tracefs))
            }
        })
    };
    // (wall, workload CPU, tracer CPU) per process start.
    let traced = |way: &str| -> Result<(f64, f64, f64)> {
        let tracer = Running::new(start_tracer(way)?);
        let before = cpu_of(tracer.id());
        let r = starts();
        // The tracer's work for these processes, however deferred (a refresh a second).
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let after = cpu_of(tracer.id());
        drop(tracer);
        let (wall, cpu) = r?;
        Ok((
            wall,
            cpu,
            after.saturating_sub(before) as f64 / STARTS as f64,
        ))
    };
    let mut samples: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); ways.len()];
    for round in 1..=rounds {
        eprintln!("bench: process starts, round {round}/{rounds}");
        for (i, way) in ways.iter().enumerate() {
            let r = match *way {
                "untraced" => starts().map(|(w, c)| (w, c, 0.0)),
                way => traced(way),
            };
            samples[i].push(r?);
        }
    }
    let med = |i: usize, f: fn(&(f64, f64, f64)) -> f64| {
        median(&samples[i].iter().map(f).collect::<Vec<_>>())
    };
    let base_cpu = med(0, |s| s.1);
    println!();
    println!(
        "process starts (fork, execve of a static program that only exits, wait4: 4 syscalls), ns per process: median of {rounds} rounds, {STARTS} processes each"
    );
    println!(
        "{:<24} {:>10} {:>14} {:>12} {:>12}",
        "setup", "wall", "workload CPU", "tracer CPU", "CPU added"
    );
    let mut added = Vec::new();
    for (i, way) in ways.iter().enumerate() {
        let (wall, cpu, tracer) = (med(i, |s| s.0), med(i, |s| s.1), med(i, |s| s.2));
        let add = cpu - base_cpu + tracer;
        added.push(add);
        println!("{way:<24} {wall:>10.0} {cpu:>14.0} {tracer:>12.0} {add:>12.0}");
    }
    let at = |name: &str| ways.iter().position(|w| *w == name);
    if let Some(b) = at(BASELINE_WAY) {
        println!(
            "syscost-top CPU added / baseline's per process start: {:.2}",
            added[1] / added[b].max(1.0)
        );
    }
    // The untraced rounds' own spread of workload CPU: a peer that adds less gives no
    // ratio.
    let spread = {
        let u: Vec<f64> = samples[0].iter().map(|s| s.1).collect();
        u.iter().copied().fold(0.0, f64::max) - u.iter().copied().fold(f64::INFINITY, f64::min)
    };
    for peer in ["syscount -P", "syscount -L -P"] {
        match at(peer) {
            Some(sc) if added[sc] > spread.max(1.0) => println!(
                "CPU added per process start / {peer}'s: syscost top {:.2}, export --top {:.2}",
                added[1] / added[sc],
                added[2] / added[sc]
            ),
            Some(sc) => println!(
                "CPU added per process start / {peer}'s: no ratio ({peer} added {:.0} ns, within the untraced rounds' spread of {spread:.0}: see the own costs below)",
                added[sc]
            ),
            None => {}
        }
    }
    own_cost_per_start(&ways[1..], rounds, STARTS, &starts, &start_tracer)
}

/// The process-start setup of the minimal latency program on every thread of the machine.
pub(super) const MINIMAL_WAY: &str = "minimal latency program";

/// Starts the tracer a process-start setup names, ready, with the tracefs mount it needs.
pub(super) type StartTracer<'a> = dyn Fn(&str) -> Result<(Child, Option<Tracefs>)> + 'a;

/// Each tracer's own cost per process start, measured apart (the kernel's run-time
/// statistics add two clock reads to every program run, so they stay off in the rounds
/// above): its CPU plus its kernel programs' run time (`kernel.bpf_stats_enabled`, the
/// programs it loaded, read with bpftool), medians of `rounds` rounds; for syscost
/// top, each program's run time per start and its xlated size. Each is given twice: as
/// read over the starts and the 2.5 s after them, and less the same tracer's cost over
/// an idle window just before (2.5 s, scaled to the starts' window): over 2,000 starts,
/// a tracer's ticks and the machine's other syscalls in that time weigh as much as the
/// starts.
pub(super) fn own_cost_per_start(
    ways: &[&str],
    rounds: usize,
    starts_n: u64,
    starts: &dyn Fn() -> Result<(f64, f64)>,
    start_tracer: &StartTracer,
) -> Result<()> {
    if !have("bpftool") {
        println!(
            "note: bpftool not installed: the tracers' kernel-side cost per start is not read"
        );
        return Ok(());
    }
    let _stats = bpf_run_stats()?;
    // Per round and way: (tracer CPU, programs' run time) per start as read, and the
    // same less the way's idle cost over as long; per program (name, xlated) of the
    // first way, its idle-subtracted run time per start.
    let mut samples: Vec<Vec<[(f64, f64); 2]>> = vec![Vec::new(); ways.len()];
    // Per program of the first way (syscost top) and of the baseline build's top: its
    // xlated size and run time per start less idle, by round.
    let baseline = ways.iter().position(|w| *w == BASELINE_WAY);
    let mut per_program: [std::collections::BTreeMap<String, (u64, Vec<f64>)>; 2] =
        Default::default();
    let per_start = |ns: f64| ns / starts_n as f64;
    for round in 1..=rounds {
        eprintln!("bench: own cost per process start, round {round}/{rounds}");
        for (i, way) in ways.iter().enumerate() {
            let earlier = programs()?;
            let tracer = Running::new(start_tracer(way)?);
            let ours = || -> Result<std::collections::HashMap<u64, ProgramRun>> {
                Ok(programs()?
                    .into_iter()
                    .filter(|(id, _)| !earlier.contains_key(id))
                    .collect())
            };
            // The tracer idle first, as long as the starts' wait after them: what it
            // costs with no process starting (its ticks, the machine's other syscalls),
            // once what it does after it is ready (its first samples) has passed.
            std::thread::sleep(std::time::Duration::from_secs(1));
            let idle_programs = ours()?;
            let idle_cpu = cpu_of(tracer.id());
            let idle_from = std::time::Instant::now();
            std::thread::sleep(std::time::Duration::from_millis(2500));
            let before = ours()?;
            let cpu_before = cpu_of(tracer.id());
            let idle_for = idle_from.elapsed();
            let busy_from = std::time::Instant::now();
            let r = starts();
            std::thread::sleep(std::time::Duration::from_millis(2500));
            let cpu_after = cpu_of(tracer.id());
            let after = ours()?;
            let busy_for = busy_from.elapsed();
            drop(tracer);
            r?;
            // The idle window's cost scaled to the busy window's length.
            let scale = busy_for.as_secs_f64() / idle_for.as_secs_f64();
            let ran = |from: &std::collections::HashMap<u64, ProgramRun>,
                       to: &std::collections::HashMap<u64, ProgramRun>,
                       id: u64| {
                to.get(&id)
                    .map_or(0, |p| p.run_ns)
                    .saturating_sub(from.get(&id).map_or(0, |p| p.run_ns))
            };
            let (mut run_ns, mut idle_run_ns) = (0u64, 0u64);
            for (id, p) in &after {
                let busy = ran(&before, &after, *id);
                let idle = ran(&idle_programs, &before, *id);
                run_ns += busy;
                idle_run_ns += idle;
                let side = if i == 0 {
                    Some(0)
                } else if Some(i) == baseline {
                    Some(1)
                } else {
                    None
                };
                if let Some(side) = side {
                    let e = per_program[side].entry(p.name.clone()).or_default();
                    e.0 = p.xlated;
                    e.1.push(per_start(busy as f64 - idle as f64 * scale));
                }
            }
            let cpu = cpu_after.saturating_sub(cpu_before) as f64;
            let idle_cpu = cpu_before.saturating_sub(idle_cpu) as f64;
            samples[i].push([
                (per_start(cpu), per_start(run_ns as f64)),
                (
                    per_start(cpu - idle_cpu * scale),
                    per_start(run_ns as f64 - idle_run_ns as f64 * scale),
                ),
            ]);
        }
    }
    let mut own = Vec::new();
    for (k, heading) in [
        "(both over the starts and the 2.5 s after them, divided by the starts: the machine's other syscalls in that time count too, alike for every tracer; own cost is the median of the rounds' sums)",
        "less each tracer's idle cost: its CPU and its programs' run time over 2.5 s with no start just before, scaled to the starts' window (its ticks and the machine's other syscalls taken out)",
    ]
    .into_iter()
    .enumerate()
    {
        println!();
        println!(
            "own cost per process start: the tracer's CPU and its kernel programs' run time (kernel.bpf_stats_enabled), ns, median of {rounds} rounds, {starts_n} processes each"
        );
        println!("{heading}");
        println!(
            "{:<24} {:>12} {:>12} {:>12}",
            "tracer", "its CPU", "programs", "own cost"
        );
        own.clear();
        for (i, way) in ways.iter().enumerate() {
            let pick = |f: fn(&(f64, f64)) -> f64| {
                median(&samples[i].iter().map(|s| f(&s[k])).collect::<Vec<_>>())
            };
            let sum = pick(|s| s.0 + s.1);
            own.push(sum);
            println!(
                "{way:<24} {:>12.0} {:>12.0} {sum:>12.0}",
                pick(|s| s.0),
                pick(|s| s.1)
            );
        }
        let minimal = ways.iter().position(|w| *w == MINIMAL_WAY);
        for peer in ["syscount -P", "syscount -L -P"] {
            if let Some(p) = ways.iter().position(|w| *w == peer) {
                print!(
                    "own cost per process start / {peer}'s: {} {}, {} {}",
                    ways[0],
                    ratio(own[0], own[p]),
                    ways[1],
                    ratio(own[1], own[p])
                );
                match minimal {
                    Some(m) => println!(
                        ", the minimal latency program {}",
                        ratio(own[m], own[p])
                    ),
                    None => println!(),
                }
            }
        }
        if let Some(m) = minimal {
            println!(
                "own cost per process start / the minimal latency program's: {} {}, {} {}",
                ways[0],
                ratio(own[0], own[m]),
                ways[1],
                ratio(own[1], own[m])
            );
        }
    }
    println!(
        "{}'s programs, run time per process start less their idle run time, and xlated bytes{}:",
        ways[0],
        if baseline.is_some() {
            ", beside the baseline build's"
        } else {
            ""
        }
    );
    for (name, (xlated, runs)) in &per_program[0] {
        print!("  {name:<22} {:>8.0} ns {xlated:>8} bytes", median(runs));
        match per_program[1].get(name) {
            Some((b_xlated, b_runs)) => {
                println!("   baseline {:>8.0} ns {b_xlated:>8} bytes", median(b_runs))
            }
            None => println!(),
        }
    }
    let sum = |side: &std::collections::BTreeMap<String, (u64, Vec<f64>)>| -> f64 {
        side.values().map(|(_, runs)| median(runs)).sum()
    };
    if baseline.is_some() {
        println!(
            "  {:<22} {:>8.0} ns {:>8}         baseline {:>8.0} ns",
            "sum of the medians",
            sum(&per_program[0]),
            "",
            sum(&per_program[1])
        );
    }
    Ok(())
}

/// A loaded program's name, run time so far and xlated size.
pub(super) struct ProgramRun {
    pub(super) name: String,
    pub(super) run_ns: u64,
    pub(super) xlated: u64,
}

/// Every loaded program by id (bpftool).
pub(super) fn programs() -> Result<std::collections::HashMap<u64, ProgramRun>> {
    let out = crate::setup::output(Command::new("bpftool").args(["prog", "show", "--json"]))?;
    let progs: serde_json::Value = serde_json::from_str(&out)?;
    Ok(progs
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p["id"].as_u64()?,
                ProgramRun {
                    name: p["name"].as_str().unwrap_or("?").to_string(),
                    run_ns: p["run_time_ns"].as_u64().unwrap_or(0),
                    xlated: p["bytes_xlated"].as_u64().unwrap_or(0),
                },
            ))
        })
        .collect())
}

/// The kernel times BPF programs only while asked to: BPF_ENABLE_STATS keeps them on as
/// long as its fd is open, so they go off when the bench ends, however it ends.
pub(super) fn bpf_run_stats() -> Result<std::os::fd::OwnedFd> {
    #[repr(C)]
    struct EnableStats {
        kind: u32,
    }
    const BPF_ENABLE_STATS: libc::c_long = 32;
    let attr = EnableStats { kind: 0 }; // BPF_STATS_RUN_TIME
    // SAFETY: bpf(2) reads one attr of the size given and returns an fd or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_ENABLE_STATS,
            &attr as *const EnableStats,
            std::mem::size_of::<EnableStats>() as u32,
        )
    };
    if fd < 0 {
        bail!(
            "cannot turn the kernel's BPF statistics on: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a fresh fd this process owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) })
}
