//! `cargo xtask bench`: what tracing adds to every syscall, measured side by side in one
//! run, interleaved over several rounds. The workload times its own getppid loop; for
//! each setup the medians (and min-max) of ns per call are compared with the untraced
//! run. A benchmark, not a test: it prints figures and asserts nothing.

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    path::Path,
    process::{Child, Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

/// A setup of the machine while the workload runs.
#[derive(Clone, Copy, PartialEq)]
enum Setup {
    Untraced,
    /// Empty programs on the same tracepoints: the floor of any such profiler.
    Floor,
    /// The limit of any per-call latency design: the floor plus a start time per thread,
    /// two clock reads and one histogram bucket (`syscost floor minimal`).
    Minimal,
    /// `syscost run` of the workload.
    SyscostOwn,
    /// `syscost run --slow 1s`: the slow-call check on every call, none slow.
    SyscostSlow,
    /// syscost attached to another process: what every other process pays.
    SyscostOther,
    /// `syscost run --stacks`: every call counted by its user stack.
    SyscostStacks,
    /// `syscost export -p PID --stacks`: the same counted by another process's tracer,
    /// with no scrape (`false`) or with a `/debug/pprof/syscalls` window open throughout
    /// (`true`: the stack tables read at every sample).
    StacksServed(bool),
    /// bpftrace counting the workload's calls by user stack:
    /// `tracepoint:raw_syscalls:sys_exit /pid == P/ { @[ustack] = count(); }`.
    BpftraceUstack,
    Strace,
    Bpftrace,
    /// libbpf-tools `syscount -L -p PID`: the peer users run today.
    Syscount,
    /// Candidates between the floor and syscost, for every process: the two clock
    /// reads; the clock reads and a histogram update.
    Clock,
    Hist,
    Filter,
    BtfFilter,
    /// `syscost run` of another build (`SYSCOST_BENCH_BASELINE=/path/to/syscost`), to
    /// compare two versions side by side in one run.
    Baseline,
    /// The other build's `run --stacks`, beside this build's.
    BaselineStacks,
    /// The whole machine: `syscost top` (every process traced, per-process figures).
    SyscostTop,
    /// The C loop (`xtask/c/getppid_loop.c`, -O2, with frame pointers when `true`):
    /// untraced, under `syscost run --stacks`, under bpftrace's `@[ustack] = count()`.
    CUntraced(bool),
    CStacks(bool),
    CBpftraceUstack(bool),
    /// libbpf-tools `syscount -L -P`: every process, counts and time by process.
    SyscountAll,
    /// `perf trace -s -a`: every process, a summary at the end.
    PerfTraceAll,
}

impl Setup {
    fn label(self) -> &'static str {
        match self {
            Setup::Untraced => "untraced",
            Setup::Floor => "floor (empty programs)",
            Setup::Minimal => "minimal latency program",
            Setup::SyscostOwn => "syscost, this process",
            Setup::SyscostSlow => "syscost --slow 1s",
            Setup::SyscostOther => "syscost, other process",
            Setup::SyscostStacks => "syscost --stacks",
            Setup::StacksServed(false) => "export --stacks (pid)",
            Setup::StacksServed(true) => "export --stacks, window",
            Setup::BpftraceUstack => "bpftrace @[ustack] (pid)",
            Setup::Strace => "strace -f -c",
            Setup::Bpftrace => "bpftrace (count by pid)",
            Setup::Syscount => "syscount -L -p PID",
            Setup::Clock => "candidate: 2 clock reads",
            Setup::Hist => "candidate: clock + histogram",
            Setup::Filter => "candidate: raw tp filter",
            Setup::BtfFilter => "candidate: tp_btf filter",
            Setup::Baseline => "baseline build, this process",
            Setup::BaselineStacks => "baseline build --stacks",
            Setup::SyscostTop => "syscost top (machine)",
            Setup::CUntraced(true) => "C -O2 fp: untraced",
            Setup::CStacks(true) => "C -O2 fp: syscost --stacks",
            Setup::CBpftraceUstack(true) => "C -O2 fp: bpftrace ustack",
            Setup::CUntraced(false) => "C -O2 no fp: untraced",
            Setup::CStacks(false) => "C -O2 no fp: --stacks",
            Setup::CBpftraceUstack(false) => "C -O2 no fp: bpftrace",
            Setup::SyscountAll => "syscount -L -P (machine)",
            Setup::PerfTraceAll => "perf trace -s -a (machine)",
        }
    }
}

fn ns_per_call(cmd: &mut Command) -> Result<f64> {
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
fn c_loop(workload: &Path, fp: bool) -> std::path::PathBuf {
    workload.with_file_name(if fp {
        "getppid-loop-fp"
    } else {
        "getppid-loop-nofp"
    })
}

/// The program a calls-by-stack setup traces: the C loop for its rows, the workload
/// otherwise.
fn stacks_program(setup: Setup, workload: &Path) -> std::path::PathBuf {
    match setup {
        Setup::CStacks(fp) | Setup::CBpftraceUstack(fp) => c_loop(workload, fp),
        _ => workload.to_path_buf(),
    }
}

/// Builds the C loop both ways (`cc -O2`).
fn build_c_loops(workload: &Path) -> Result<()> {
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

fn median(v: &[f64]) -> f64 {
    syscost_common::median(&mut v.to_vec())
}

/// Starts `cmd` and waits for a line of its output containing `ready`.
fn start_and_wait(cmd: &mut Command, from_stderr: bool, ready: &str) -> Result<Child> {
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

/// `syscost export -p PID --stacks /dev/null` on a free loopback port, ready; with
/// `window`, a `/debug/pprof/syscalls?seconds=3600` request whose window syscost says
/// (its debug log) it has opened, and the connection that holds it.
fn export_stacks(
    syscost: &Path,
    pid: u32,
    window: bool,
) -> Result<(Child, Option<std::net::TcpStream>)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut child = Command::new(syscost)
        .env("RUST_LOG", "warn,syscost_views::metrics::stacks=debug")
        .args(["export", "-p", &pid.to_string(), "--stacks", "/dev/null"])
        .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start syscost export")?;
    // Read to its end on a thread of its own: syscost never writes to a closed pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().context("piped")?;
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let until = |what: &str| -> Result<()> {
        loop {
            let l = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .with_context(|| format!("syscost export: no line with {what:?} within 60 s"))?;
            if l.contains(what) {
                return Ok(());
            }
        }
    };
    let ready = until("Ctrl-C to stop").map(|()| None).and_then(|none| {
        if !window {
            return Ok(none);
        }
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", port))?;
        write!(
            conn,
            "GET /debug/pprof/syscalls?seconds=3600 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
        )?;
        until("a window of 3600 s")?;
        Ok(Some(conn))
    });
    match ready {
        Ok(conn) => Ok((child, conn)),
        Err(e) => {
            stop(child);
            Err(e)
        }
    }
}

fn stop(mut child: Child) {
    // SIGTERM through kill(1) keeps xtask free of libc; closing stdin ends `syscost floor`.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    drop(child.stdin.take());
    let _ = child.wait();
}

/// tracefs at /sys/kernel/tracing while this lives, for the peers that need it (classic
/// tracepoints); unmounted again if it was not mounted before.
struct Tracefs {
    mounted_here: bool,
}

impl Tracefs {
    const PATH: &'static str = "/sys/kernel/tracing";

    fn mount() -> Result<Self> {
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

fn run_quiet(cmd: &mut Command) -> Result<()> {
    let s = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !s.success() {
        bail!("{cmd:?} failed: {s}");
    }
    Ok(())
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// ns per getppid of the workload (`n` calls) with a peer attached to it by pid: the
/// workload waits on its stdin until `start` (given its pid) has the peer ready, then
/// the peer is interrupted (SIGINT, as a user stops it) and stopped.
fn peer_on_pid(workload: &Path, n: &str, start: impl FnOnce(u32) -> Result<Child>) -> Result<f64> {
    peer_on_pid_cpu(workload, n, start).map(|(ns, _)| ns)
}

/// [`peer_on_pid`], and the peer's own CPU time (every thread's) from the workload's
/// start to its end, ns.
fn peer_on_pid_cpu(
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

/// `export --stacks`'s own CPU per call of each round, without a window (`false`) and
/// with one open (`true`).
static TRACER_CPU: std::sync::Mutex<Vec<(bool, f64)>> = std::sync::Mutex::new(Vec::new());

fn one(setup: Setup, syscost: &Path, workload: &Path, calls: u64) -> Result<f64> {
    let n = calls.to_string();
    let work = || {
        let mut c = Command::new(workload);
        c.args(["getppid", &n]);
        c
    };
    match setup {
        Setup::Untraced => ns_per_call(&mut work()),
        Setup::Floor
        | Setup::Minimal
        | Setup::Clock
        | Setup::Hist
        | Setup::Filter
        | Setup::BtfFilter => {
            let variant = match setup {
                Setup::Minimal => "minimal",
                Setup::Clock => "clock",
                Setup::Hist => "hist",
                Setup::Filter => "filter",
                Setup::BtfFilter => "btf",
                _ => "floor",
            };
            let floor = start_and_wait(
                Command::new(syscost).args(["floor", variant]),
                false,
                "floor programs attached",
            )?;
            let r = ns_per_call(&mut work());
            stop(floor);
            r
        }
        Setup::SyscostOwn => ns_per_call(
            Command::new(syscost)
                .args(["run", "-o", "/dev/null", "--"])
                .arg(workload)
                .args(["getppid", &n]),
        ),
        Setup::SyscostSlow => ns_per_call(
            Command::new(syscost)
                .args(["run", "--slow", "1s", "-o", "/dev/null", "--"])
                .arg(workload)
                .args(["getppid", &n]),
        ),
        Setup::CUntraced(fp) => {
            ns_per_call(Command::new(c_loop(workload, fp)).args(["getppid", &n]))
        }
        // Calls by stack, of the workload or of the C loop.
        Setup::SyscostStacks | Setup::CStacks(_) => ns_per_call(
            Command::new(syscost)
                .args(["run", "--stacks", "/dev/null", "-o", "/dev/null", "--"])
                .arg(stacks_program(setup, workload))
                .args(["getppid", &n]),
        ),
        Setup::StacksServed(window) => {
            // The connection holding the window open, kept until the peer stops.
            let mut held = None;
            let r = peer_on_pid_cpu(workload, &n, |pid| {
                let (export, conn) = export_stacks(syscost, pid, window)?;
                held = conn;
                Ok(export)
            });
            drop(held);
            r.map(|(ns, cpu)| {
                TRACER_CPU
                    .lock()
                    .expect("not poisoned")
                    .push((window, cpu as f64 / calls as f64));
                ns
            })
        }
        Setup::BpftraceUstack | Setup::CBpftraceUstack(_) => {
            peer_on_pid(&stacks_program(setup, workload), &n, |pid| {
                let script = format!(
                    "BEGIN {{ printf(\"bpftrace ready\\n\"); }} tracepoint:raw_syscalls:sys_exit /pid == {pid}/ {{ @[ustack] = count(); }}"
                );
                start_and_wait(
                    Command::new("bpftrace").args(["-e", &script]),
                    false,
                    "bpftrace ready",
                )
            })
        }
        Setup::SyscostOther => {
            let mut sleeper = Command::new(workload).args(["sleep", "3600000"]).spawn()?;
            let tracer = start_and_wait(
                Command::new(syscost).args(["attach", "--no-tui", "-p", &sleeper.id().to_string()]),
                true,
                "tracing process",
            );
            let r = tracer.and_then(|t| {
                let r = ns_per_call(&mut work());
                stop(t);
                r
            });
            let _ = sleeper.kill();
            let _ = sleeper.wait();
            r
        }
        Setup::Baseline => {
            let other =
                std::env::var("SYSCOST_BENCH_BASELINE").context("SYSCOST_BENCH_BASELINE")?;
            ns_per_call(
                Command::new(other)
                    .args(["run", "-o", "/dev/null", "--"])
                    .arg(workload)
                    .args(["getppid", &n]),
            )
        }
        Setup::BaselineStacks => {
            let other =
                std::env::var("SYSCOST_BENCH_BASELINE").context("SYSCOST_BENCH_BASELINE")?;
            ns_per_call(
                Command::new(other)
                    .args(["run", "--stacks", "/dev/null", "-o", "/dev/null", "--"])
                    .arg(workload)
                    .args(["getppid", &n]),
            )
        }
        Setup::Strace => ns_per_call(
            Command::new("strace")
                .args(["-f", "-c", "-o", "/dev/null"])
                .arg(workload)
                .args(["getppid", &n]),
        ),
        Setup::Syscount => peer_on_pid(workload, &n, |pid| {
            start_and_wait(
                Command::new("stdbuf").args(["-oL", "syscount", "-L", "-p", &pid.to_string()]),
                false,
                "Tracing syscalls",
            )
        }),
        Setup::SyscostTop => {
            let top = start_and_wait(
                Command::new(syscost).args(["top", "--no-tui", "-i", "1"]),
                true,
                "watching the machine",
            )?;
            let r = ns_per_call(&mut work());
            stop(top);
            r
        }
        Setup::SyscountAll => {
            let tracefs = Tracefs::mount()?;
            let sc = start_and_wait(
                Command::new("stdbuf").args(["-oL", "syscount", "-L", "-P"]),
                false,
                "Tracing syscalls",
            )?;
            let r = ns_per_call(&mut work());
            let _ = Command::new("kill")
                .args(["-INT", &sc.id().to_string()])
                .status();
            stop(sc);
            drop(tracefs);
            r
        }
        Setup::PerfTraceAll => {
            let tracefs = Tracefs::mount()?;
            // perf trace says nothing until it ends: give it time to set up.
            let mut perf = Command::new("perf")
                .args(["trace", "-s", "-a", "-o", "/dev/null"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start perf trace")?;
            std::thread::sleep(std::time::Duration::from_secs(3));
            let r = ns_per_call(&mut work());
            let _ = Command::new("kill")
                .args(["-INT", &perf.id().to_string()])
                .status();
            let _ = perf.wait();
            drop(tracefs);
            r
        }
        Setup::Bpftrace => {
            let tracefs = Tracefs::mount()?;
            let bt = start_and_wait(
                Command::new("bpftrace").args(["-e", "BEGIN { printf(\"bpftrace ready\\n\"); } tracepoint:raw_syscalls:sys_enter { @[pid] = count(); }"]),
                false,
                "bpftrace ready",
            )?;
            let r = ns_per_call(&mut work());
            stop(bt);
            drop(tracefs);
            r
        }
    }
}

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
        Setup::StacksServed(false),
        Setup::StacksServed(true),
    ];
    // Calls by stack in C built both ways, beside bpftrace's (a compiler is at hand
    // wherever the tests run: they build their C programs).
    let c_built = build_c_loops(&workload);
    match &c_built {
        Ok(()) => {
            for fp in [true, false] {
                setups.extend([Setup::CUntraced(fp), Setup::CStacks(fp)]);
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
            Setup::CUntraced(fp) | Setup::CStacks(fp) | Setup::CBpftraceUstack(fp) => setups
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
fn refresh_cost(syscost: &Path, workload: &Path) -> Result<()> {
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

/// The off-CPU program runs on every context switch of the machine: its cost on a
/// workload that does little else (two threads passing a byte over pipes).
fn switch_cost(syscost: &Path, workload: &Path, rounds: usize, round_trips: u64) -> Result<()> {
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
        ways.push("baseline build's top");
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
            "syscost top" | "baseline build's top" => {
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
        let (tracer, tracefs) = start_tracer(way)?;
        let before = cpu_of(tracer.id());
        let r = starts();
        // The tracer's work for these processes, however deferred (a refresh a second).
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let after = cpu_of(tracer.id());
        stop(tracer);
        drop(tracefs);
        let (wall, cpu) = r?;
        Ok((wall, cpu, (after - before) as f64 / STARTS as f64))
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
    if let Some(b) = at("baseline build's top") {
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
const MINIMAL_WAY: &str = "minimal latency program";

/// Starts the tracer a process-start setup names, ready, with the tracefs mount it needs.
type StartTracer<'a> = dyn Fn(&str) -> Result<(Child, Option<Tracefs>)> + 'a;

/// Each tracer's own cost per process start, measured apart (the kernel's run-time
/// statistics add two clock reads to every program run, so they stay off in the rounds
/// above): its CPU plus its kernel programs' run time (`kernel.bpf_stats_enabled`, the
/// programs it loaded, read with bpftool), medians of `rounds` rounds; for syscost
/// top, each program's run time per start and its xlated size. Each is given twice: as
/// read over the starts and the 2.5 s after them, and less the same tracer's cost over
/// an idle window just before (2.5 s, scaled to the starts' window): over 2,000 starts,
/// a tracer's ticks and the machine's other syscalls in that time weigh as much as the
/// starts.
fn own_cost_per_start(
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
    let mut per_program: std::collections::BTreeMap<String, (u64, Vec<f64>)> = Default::default();
    let per_start = |ns: f64| ns / starts_n as f64;
    for round in 1..=rounds {
        eprintln!("bench: own cost per process start, round {round}/{rounds}");
        for (i, way) in ways.iter().enumerate() {
            let earlier = programs()?;
            let (tracer, tracefs) = start_tracer(way)?;
            let ours = || -> Result<std::collections::HashMap<u64, ProgramRun>> {
                Ok(programs()?
                    .into_iter()
                    .filter(|(id, _)| !earlier.contains_key(id))
                    .collect())
            };
            // The tracer idle first, as long as the starts' wait after them: what it
            // costs with no process starting (its ticks, the machine's other syscalls).
            let idle_from = std::time::Instant::now();
            let idle_programs = ours()?;
            let idle_cpu = cpu_of(tracer.id());
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
            stop(tracer);
            drop(tracefs);
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
                if i == 0 {
                    let e = per_program.entry(p.name.clone()).or_default();
                    e.0 = p.xlated;
                    e.1.push(per_start(busy as f64 - idle as f64 * scale));
                }
            }
            let cpu = (cpu_after - cpu_before) as f64;
            let idle_cpu = (cpu_before - idle_cpu) as f64;
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
                    "own cost per process start / {peer}'s: {} {:.2}, {} {:.2}",
                    ways[0],
                    own[0] / own[p].max(1.0),
                    ways[1],
                    own[1] / own[p].max(1.0)
                );
                match minimal {
                    Some(m) => println!(
                        ", the minimal latency program {:.2}",
                        own[m] / own[p].max(1.0)
                    ),
                    None => println!(),
                }
            }
        }
        if let Some(m) = minimal {
            println!(
                "own cost per process start / the minimal latency program's: {} {:.2}, {} {:.2}",
                ways[0],
                own[0] / own[m].max(1.0),
                ways[1],
                own[1] / own[m].max(1.0)
            );
        }
    }
    println!(
        "{}'s programs, run time per process start less their idle run time, and xlated bytes:",
        ways[0]
    );
    for (name, (xlated, runs)) in &per_program {
        println!("  {name:<22} {:>8.0} ns {xlated:>8} bytes", median(runs));
    }
    Ok(())
}

/// A loaded program's name, run time so far and xlated size.
struct ProgramRun {
    name: String,
    run_ns: u64,
    xlated: u64,
}

/// Every loaded program by id (bpftool).
fn programs() -> Result<std::collections::HashMap<u64, ProgramRun>> {
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
fn bpf_run_stats() -> Result<std::os::fd::OwnedFd> {
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

/// CPU time of every thread of process `pid` so far, ns (from schedstat).
fn cpu_of(pid: u32) -> u64 {
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
