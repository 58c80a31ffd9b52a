//! The per-call rows (`cargo xtask bench`): every setup's rounds interleaved, the table
//! of ns per call, and the ratios against the floor, the minimal program and the peers.

use super::helpers::{build_c_loops, have, median};
use super::process_starts::process_start_cost;
use super::setups::{Setup, TRACER_CPU, one};
use super::start_up::{refresh_cost, start_up_cost};
use super::switches::switch_cost;

use anyhow::Result;
use std::path::Path;

pub fn bench(root: &Path, rounds: usize, calls: u64, candidates: bool, peers: bool) -> Result<()> {
    let syscost = root.join("target/release/syscost");
    let workload = root.join("target/release/syscost-workload");
    let mut setups = vec![
        Setup::Untraced,
        Setup::Floor,
        Setup::Minimal,
        Setup::SyscostOwn,
        Setup::SyscostSlow,
        Setup::SyscostOther,
        Setup::SyscostStacks,
        Setup::MinimalStacks(None),
        Setup::StacksServed(false),
        Setup::StacksServed(true),
    ];
    // Calls by stack in C built both ways, beside bpftrace's (a compiler is at hand
    // wherever the tests run: they build their C programs).
    let c_built = build_c_loops(&workload);
    match &c_built {
        Ok(()) => {
            for fp in [true, false] {
                setups.extend([
                    Setup::CUntraced(fp),
                    Setup::CStacks(fp),
                    Setup::MinimalStacks(Some(fp)),
                ]);
                if peers && have("bpftrace") {
                    setups.push(Setup::CBpftraceUstack(fp));
                }
            }
        }
        Err(e) => eprintln!("bench: the C loop did not build, its rows are left out: {e:#}"),
    }
    if candidates {
        setups.extend([Setup::Clock, Setup::Hist, Setup::Filter, Setup::BtfFilter]);
    }
    if std::env::var_os("SYSCOST_BENCH_BASELINE").is_some() {
        setups.extend([Setup::Baseline, Setup::BaselineStacks]);
    }
    let mut notes = Vec::new();
    if !peers {
        notes.push("peers left out (--no-peers)".to_string());
    } else if have("strace") {
        setups.push(Setup::Strace);
    } else {
        notes.push("strace not installed: skipped".to_string());
    }
    if peers && have("syscount") {
        setups.push(Setup::Syscount);
    } else if peers {
        notes.push("syscount (libbpf-tools) not installed: skipped".to_string());
    }
    // The whole machine: syscost top beside the system-wide peers.
    setups.push(Setup::SyscostTop);
    if peers && have("syscount") {
        setups.push(Setup::SyscountAll);
    }
    if peers && have("perf") {
        setups.push(Setup::PerfTraceAll);
    } else if peers {
        notes.push("perf not installed: perf trace skipped".to_string());
    }
    if peers && have("bpftrace") {
        setups.extend([Setup::Bpftrace, Setup::BpftraceUstack]);
    } else if peers {
        notes.push("bpftrace not installed: skipped".to_string());
    }
    notes.push(
        "bcc syscount: not run (bcc needs kernel headers this kernel does not ship)".to_string(),
    );
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
    for round in 1..=rounds {
        eprintln!("bench: round {round}/{rounds}");
        for (i, &s) in setups.iter().enumerate() {
            // strace stops the tracee twice per call: a twentieth of the calls suffice.
            let n = if s == Setup::Strace {
                (calls / 20).max(1000)
            } else {
                calls
            };
            samples[i].push(one(s, &syscost, &workload, n)?);
        }
    }
    let med: Vec<f64> = samples.iter().map(|s| median(s)).collect();
    let base = med[0];
    println!(
        "getppid, ns per call: median of {rounds} interleaved rounds, {calls} calls each (strace {})",
        (calls / 20).max(1000)
    );
    println!(
        "{:<26} {:>10} {:>10} {:>10} {:>10}",
        "setup", "median", "min", "max", "added"
    );
    for (i, s) in setups.iter().enumerate() {
        let min = samples[i].iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples[i].iter().copied().fold(0.0, f64::max);
        // The C loop's rows against its own untraced run (built the same way).
        let own_base = match s {
            Setup::CUntraced(fp)
            | Setup::CStacks(fp)
            | Setup::CBpftraceUstack(fp)
            | Setup::MinimalStacks(Some(fp)) => setups
                .iter()
                .position(|&x| x == Setup::CUntraced(*fp))
                .map_or(base, |j| med[j]),
            _ => base,
        };
        println!(
            "{:<26} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
            s.label(),
            med[i],
            min,
            max,
            med[i] - own_base
        );
    }
    let added = |s: Setup| setups.iter().position(|&x| x == s).map(|i| med[i] - base);
    if let (Some(floor), Some(own)) = (added(Setup::Floor), added(Setup::SyscostOwn)) {
        println!("syscost-added / floor-added: {:.2}", own / floor.max(1.0));
    }
    if let (Some(own), Some(min)) = (added(Setup::SyscostOwn), added(Setup::Minimal)) {
        println!(
            "syscost-added / minimal-added: {:.2} (the limit of a latency design: a start per thread, 2 clock reads, 1 bucket)",
            own / min.max(1.0)
        );
    }
    if let (Some(other), Some(floor)) = (added(Setup::SyscostOther), added(Setup::Floor)) {
        println!(
            "syscost-other-added / floor-added: {:.2}",
            other / floor.max(1.0)
        );
    }
    if let (Some(own), Some(slow)) = (added(Setup::SyscostOwn), added(Setup::SyscostSlow)) {
        println!(
            "syscost-slow-added / syscost-added: {:.2}",
            slow / own.max(1.0)
        );
    }
    if let (Some(own), Some(stacks)) = (added(Setup::SyscostOwn), added(Setup::SyscostStacks)) {
        println!("--stacks adds per call: {:.0} ns", stacks - own);
    }
    if let (Some(plain), Some(served)) = (
        added(Setup::StacksServed(false)),
        added(Setup::StacksServed(true)),
    ) {
        println!(
            "a /debug/pprof/syscalls window open adds {:.0} ns per call to export --stacks ({:.0} against {:.0})",
            served - plain,
            served,
            plain
        );
        let cpu = TRACER_CPU.lock().expect("not poisoned").clone();
        let of = |window: bool| {
            median(
                &cpu.iter()
                    .filter(|(w, _)| *w == window)
                    .map(|(_, c)| *c)
                    .collect::<Vec<_>>(),
            )
        };
        println!(
            "export --stacks's own CPU per call (its threads, over the calls): {:.1} ns without a window, {:.1} with one open (the tables read at every sample)",
            of(false),
            of(true)
        );
    }
    if let (Some(stacks), Some(bt)) = (added(Setup::SyscostStacks), added(Setup::BpftraceUstack)) {
        println!(
            "bpftrace-ustack-added / syscost-stacks-added: {:.2}",
            bt / stacks.max(1.0)
        );
    }
    // The C rows against their own untraced run.
    let c_added = |s: Setup, fp: bool| {
        let at = |x: Setup| setups.iter().position(|&y| y == x);
        Some(med[at(s)?] - med[at(Setup::CUntraced(fp))?])
    };
    // Calls by stack against the limit of a latency design that counts them: syscost's
    // and the peer's, on each workload.
    for (what, stacks, peer, floor) in [
        (
            "the workload",
            added(Setup::SyscostStacks),
            added(Setup::BpftraceUstack),
            added(Setup::MinimalStacks(None)),
        ),
        (
            "C -O2 with frame pointers",
            c_added(Setup::CStacks(true), true),
            c_added(Setup::CBpftraceUstack(true), true),
            c_added(Setup::MinimalStacks(Some(true)), true),
        ),
        (
            "C -O2 without frame pointers",
            c_added(Setup::CStacks(false), false),
            c_added(Setup::CBpftraceUstack(false), false),
            c_added(Setup::MinimalStacks(Some(false)), false),
        ),
    ] {
        let (Some(stacks), Some(floor)) = (stacks, floor) else {
            continue;
        };
        let peer = peer.map_or(String::new(), |bt| {
            format!(
                ", bpftrace-ustack-added / minimal-stacks-added {:.2}",
                bt / floor.max(1.0)
            )
        });
        println!(
            "{what}: syscost-stacks-added / minimal-stacks-added {:.2} (the limit of a latency design counting calls by stack: the minimal program, --stacks' walk and hash, 1 count){peer}",
            stacks / floor.max(1.0)
        );
    }
    for fp in [true, false] {
        if let (Some(st), Some(bt)) = (
            c_added(Setup::CStacks(fp), fp),
            c_added(Setup::CBpftraceUstack(fp), fp),
        ) {
            println!(
                "C -O2 {}: --stacks adds {st:.0} ns, bpftrace @[ustack] {bt:.0}: bpftrace-added / syscost-stacks-added {:.2}",
                if fp {
                    "with frame pointers"
                } else {
                    "without frame pointers"
                },
                bt / st.max(1.0)
            );
        }
    }
    if let (Some(own), Some(base)) = (added(Setup::SyscostOwn), added(Setup::Baseline)) {
        println!("syscost-added / baseline-added: {:.2}", own / base.max(1.0));
    }
    if let (Some(own), Some(base)) = (added(Setup::SyscostStacks), added(Setup::BaselineStacks)) {
        println!(
            "syscost-stacks-added / baseline-stacks-added: {:.2}",
            own / base.max(1.0)
        );
    }
    if let (Some(own), Some(sc)) = (added(Setup::SyscostOwn), added(Setup::Syscount)) {
        println!("syscost-added / syscount-added: {:.2}", own / sc.max(1.0));
    }
    if let (Some(top), Some(sc)) = (added(Setup::SyscostTop), added(Setup::SyscountAll)) {
        println!(
            "syscost-top-added / syscount-P-added (every process): {:.2}",
            top / sc.max(1.0)
        );
    }
    if let (Some(top), Some(perf)) = (added(Setup::SyscostTop), added(Setup::PerfTraceAll)) {
        println!(
            "perf-trace-added / syscost-top-added (every process): {:.1}",
            perf / top.max(1.0)
        );
    }
    if let (Some(own), Some(strace)) = (added(Setup::SyscostOwn), added(Setup::Strace)) {
        println!("strace-added / syscost-added: {:.0}", strace / own.max(1.0));
    }
    for n in notes {
        println!("note: {n}");
    }
    refresh_cost(&syscost, &workload)?;
    switch_cost(&syscost, &workload, rounds, calls / 20)?;
    process_start_cost(&syscost, &workload, rounds, peers)?;
    start_up_cost(&syscost, &workload, rounds.max(10), peers)
}
