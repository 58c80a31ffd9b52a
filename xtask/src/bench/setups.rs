//! The setups the per-call rows compare, and one round of each: the workload under
//! each tracer, its ns per call.

use super::helpers::*;
use anyhow::{Context as _, Result};
use std::{
    io::{BufRead as _, BufReader, Write as _},
    path::Path,
    process::{Child, Command, Stdio},
};

/// A setup of the machine while the workload runs.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Setup {
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
    /// The limit of a latency design that counts every call by its user stack: the
    /// minimal program, then `--stacks`' walk and hash and one count per stack
    /// (`syscost floor minimal-stacks`), of the workload (`None`) or of the C loop
    /// (`Some(fp)`).
    MinimalStacks(Option<bool>),
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
    pub(super) fn label(self) -> &'static str {
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
            Setup::MinimalStacks(None) => "minimal + stacks",
            Setup::MinimalStacks(Some(true)) => "C -O2 fp: minimal+stacks",
            Setup::MinimalStacks(Some(false)) => "C -O2 no fp: min+stacks",
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

/// `syscost export -p PID --stacks /dev/null` on a free loopback port, ready; with
/// `window`, a `/debug/pprof/syscalls?seconds=3600` request whose window syscost says
/// (its debug log) it has opened, and the connection that holds it.
pub(super) fn export_stacks(
    syscost: &Path,
    pid: u32,
    window: bool,
) -> Result<(Child, Option<std::net::TcpStream>)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    // The window's module, by its name and by its name in builds before 18193e3 (a
    // baseline may be one).
    let mut child = Command::new(syscost)
        .env(
            "RUST_LOG",
            "warn,syscost_views::metrics::pprof_windows=debug,syscost_views::metrics::stacks=debug",
        )
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

/// `export --stacks`'s own CPU per call of each round, without a window (`false`) and
/// with one open (`true`).
pub(super) static TRACER_CPU: std::sync::Mutex<Vec<(bool, f64)>> =
    std::sync::Mutex::new(Vec::new());

pub(super) fn one(setup: Setup, syscost: &Path, workload: &Path, calls: u64) -> Result<f64> {
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
        | Setup::MinimalStacks(_)
        | Setup::Clock
        | Setup::Hist
        | Setup::Filter
        | Setup::BtfFilter => {
            let variant = match setup {
                Setup::Minimal => "minimal",
                Setup::MinimalStacks(_) => "minimal-stacks",
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
            // The workload, or the C loop for a limit row of it.
            let r =
                ns_per_call(Command::new(stacks_program(setup, workload)).args(["getppid", &n]));
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

/// The program a calls-by-stack setup traces: the C loop for its rows, the workload
/// otherwise.
pub(super) fn stacks_program(setup: Setup, workload: &Path) -> std::path::PathBuf {
    match setup {
        Setup::CStacks(fp) | Setup::CBpftraceUstack(fp) | Setup::MinimalStacks(Some(fp)) => {
            c_loop(workload, fp)
        }
        _ => workload.to_path_buf(),
    }
}
