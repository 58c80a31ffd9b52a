//! Command-line interface: the arguments of every command, and the parsers of their
//! values. Only descriptions: the commands (`commands/`, `bench/`, `lab/`) read them.
//!
//! Its parts: `tracing` (the tracing commands: run, attach, export, top), `groups` (the
//! argument groups those flatten: timing, the live view, the endpoint's protection,
//! what is left out, slow calls, calls by stack), `tools` (the commands that read files,
//! compare, the lab and the bench), `values` (the value parsers and their bounds).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod groups;
#[cfg(test)]
mod tests;
mod tools;
mod tracing;
mod values;

pub use self::{groups::*, tools::*, tracing::*, values::*};

/// `syscost --version`: the version, the commit it was built from and a build id of the
/// kernel programs it carries.
pub const VERSION: &str = syscost_engine::VERSION;

/// Syscall profiler: per-syscall counts, errors and latency from kernel tracepoints,
/// at a cost of nanoseconds per call.
#[derive(Debug, Parser)]
#[command(name = "syscost", version = VERSION, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Profile a command from its first syscall, following its threads and children,
    /// and print an `strace -c -f` style summary when it exits.
    Run(RunArgs),
    /// Profile a running process (all its threads) until Ctrl-C, -d seconds, or its exit;
    /// or every process of a cgroup with --cgroup.
    Attach(AttachArgs),
    /// Every process of the machine (or of a cgroup) live: syscalls, errors and time in
    /// syscalls per second, the top syscall; Enter drills into a process's syscalls.
    Top(TopArgs),
    /// Print the table of a profile saved with --json.
    Report(ReportArgs),
    /// Time what syscalls cost on this machine (vDSO, getpid, 1-byte read/write,
    /// sched_yield, open+close).
    Bench(BenchArgs),
    /// Run a workload bare, under syscost, under strace (and perf) and compare.
    Compare(CompareArgs),
    /// Attach the empty floor programs (or a candidate's) until stdin closes (for
    /// `cargo xtask bench`).
    #[command(hide = true)]
    Floor {
        #[arg(default_value = "floor")]
        variant: String,
    },
    /// Measure what one refresh of a traced process's statistics costs in CPU time (for
    /// `cargo xtask bench`).
    #[command(hide = true)]
    RefreshCost {
        #[arg(short = 'p', long = "pid")]
        pid: u32,
        #[arg(long, default_value_t = 200)]
        refreshes: u32,
    },
    /// Compare saved profiles: two before and after, or variants of one run or several
    /// each, every change judged against the noise.
    Diff(DiffArgs),
    /// A flame graph (-o FILE.svg) or folded stacks: of the slow calls of a profile saved
    /// with --slow and --json (by time in them), of its calls by stack (--stacks and
    /// --json), or of a stacks file written by --stacks.
    Flame(FlameArgs),
    /// The slow calls of a profile saved with --slow and --json as a Chrome trace-event
    /// JSON that ui.perfetto.dev opens: a track per thread, a slice per call.
    Trace(TraceArgs),
    /// Serve processes' syscall counters to Prometheus (OpenMetrics), without a terminal,
    /// until stopped.
    Export(ExportArgs),
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell), e.g.
    /// `syscost completions bash > /etc/bash_completion.d/syscost`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages, syscost(1) and one per command, into DIR (for packaging).
    #[command(hide = true)]
    Man { dir: PathBuf },
    /// What this host offers and what syscost can do on it, one line each with the fix
    /// when something is missing; exit status 0 when everything syscost needs is there.
    Doctor,
    /// The echo-server lab under steady load, with the live view on the server.
    Demo(DemoArgs),
    /// The reference workloads: an epoll echo server and its load generator.
    #[command(subcommand)]
    Lab(LabCommand),
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// A single-threaded epoll echo server on raw syscalls (level- or edge-triggered).
    EchoServer(ServerArgs),
    /// Short-connection (or keep-alive) load for the echo server.
    EchoLoad(LoadArgs),
}
