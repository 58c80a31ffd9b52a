//! Command-line interface.

use std::{net::SocketAddr, path::PathBuf};

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::{
    report::strace_table::{SortKey, TableOptions},
    syscall_names,
};

/// Syscall profiler: per-syscall counts, errors and latency from kernel tracepoints,
/// at a cost of nanoseconds per call.
#[derive(Debug, Parser)]
#[command(name = "syscost", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Profile a command from its first syscall, following its threads and children,
    /// and print an `strace -c -f` style summary when it exits.
    Run(RunArgs),
    /// Profile a running process (all its threads) until Ctrl-C, -d seconds, or its exit.
    Attach(AttachArgs),
    /// Print the table of a profile saved with --json.
    Report(ReportArgs),
    /// Time what syscalls cost on this machine (vDSO, getpid, 1-byte read/write,
    /// sched_yield, open+close).
    Bench(BenchArgs),
    /// Run a workload bare, under syscost, under strace (and perf) and compare.
    Compare(crate::bench::compare::CompareArgs),
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
    /// Compare two saved profiles: what went up, what went down, which errors changed.
    Diff(DiffArgs),
    /// Serve processes' syscall counters to Prometheus (OpenMetrics), without a terminal,
    /// until stopped.
    Export(ExportArgs),
    /// The echo-server lab under steady load, with the live view on the server.
    Demo(crate::commands::demo::DemoArgs),
    /// The reference workloads: an epoll echo server and its load generator.
    #[command(subcommand)]
    Lab(LabCommand),
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// A single-threaded epoll echo server on raw syscalls (level- or edge-triggered).
    EchoServer(crate::lab::echo_server::ServerArgs),
    /// Short-connection (or keep-alive) load for the echo server.
    EchoLoad(crate::lab::echo_load::LoadArgs),
}

/// How the table looks; shared by every command that prints one.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Only show these syscalls (comma-separated names).
    #[arg(short = 'e', long = "syscalls", value_name = "SYSCALL[,SYSCALL...]")]
    pub syscalls: Option<String>,
    /// Sort rows by this column (largest first; name alphabetically).
    #[arg(short = 'S', long = "sort", value_enum, default_value_t = SortKey::Time)]
    pub sort: SortKey,
    /// Add p50, p99 and max latency columns.
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// Add calls and time per call of this syscall, e.g. `--per accept4` for per-request
    /// figures of a server (one accepted connection = one unit).
    #[arg(long, value_name = "SYSCALL")]
    pub per: Option<String>,
}

impl ViewArgs {
    /// The `-e` names, checked (and `--per`'s name with them).
    pub fn filter(&self) -> Result<Option<Vec<String>>> {
        if let Some(unit) = &self.per {
            syscall_names::number(unit)?;
        }
        self.syscalls
            .as_deref()
            .map(syscall_names::parse_list)
            .transpose()
    }

    /// Table options.
    pub fn table(&self) -> TableOptions {
        TableOptions {
            sort: self.sort,
            latency: self.latency,
            per: self.per.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub view: ViewArgs,
    /// Write the summary to FILE instead of stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also save the profile as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Do not split syscall time into on-CPU and blocked (saves the program that runs
    /// on every context switch of the machine).
    #[arg(long)]
    pub no_offcpu: bool,
    /// Also serve the counters for Prometheus at http://ADDR/metrics while the command
    /// runs.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Leave the kernel's BPF run-time statistics off: no own-cost figure (live view
    /// header, syscost_bpf_run_seconds_total), and less cost per traced syscall (the
    /// kernel times every BPF program run while they are on).
    #[arg(long)]
    pub no_run_stats: bool,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    #[command(flatten)]
    pub view: ViewArgs,
    /// Process to profile.
    #[arg(short = 'p', long = "pid")]
    pub pid: u32,
    /// Stop after this many seconds.
    #[arg(short = 'd', long = "duration", value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Refresh the live view every SECS seconds (default 1); with --no-tui, print a
    /// table of each interval.
    #[arg(short = 'i', long = "interval", value_name = "SECS", value_parser = parse_seconds)]
    pub interval: Option<f64>,
    /// Print text instead of the live view (the default when stdout is not a terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Do not split syscall time into on-CPU and blocked (saves the program that runs
    /// on every context switch of the machine).
    #[arg(long)]
    pub no_offcpu: bool,
    /// Also profile child processes the target forks from now on.
    #[arg(short = 'f', long = "follow-forks")]
    pub follow_forks: bool,
    /// Also save the profile as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also serve the counters for Prometheus at http://ADDR/metrics while attached.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Leave the kernel's BPF run-time statistics off: no own-cost figure (live view
    /// header, syscost_bpf_run_seconds_total), and less cost per traced syscall (the
    /// kernel times every BPF program run while they are on).
    #[arg(long)]
    pub no_run_stats: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Processes to profile; each gets series of its own (pid and comm labels).
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID...]",
        value_delimiter = ',',
        required = true
    )]
    pub pids: Vec<u32>,
    /// Where to serve http://ADDR/metrics (loopback unless told otherwise).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub metrics_addr: SocketAddr,
    /// Stop after this many seconds.
    #[arg(short = 'd', long = "duration", value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Also count child processes the targets fork from now on (under the parent's pid).
    #[arg(short = 'f', long = "follow-forks")]
    pub follow_forks: bool,
    /// Do not split syscall time into on-CPU and blocked (saves the program that runs
    /// on every context switch of the machine).
    #[arg(long)]
    pub no_offcpu: bool,
    /// Leave the kernel's BPF run-time statistics off: no own-cost figure (live view
    /// header, syscost_bpf_run_seconds_total), and less cost per traced syscall (the
    /// kernel times every BPF program run while they are on).
    #[arg(long)]
    pub no_run_stats: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Repetitions per row (open+close runs a tenth as often).
    #[arg(long, default_value_t = 1_000_000)]
    pub reps: u64,
    /// Pin to this CPU.
    #[arg(long, value_name = "N", value_parser = parse_cpu)]
    pub cpu: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The profile before the change (--json output).
    pub before: PathBuf,
    /// The profile after the change.
    pub after: PathBuf,
    /// Row order.
    #[arg(short = 'S', long = "sort", value_enum, default_value_t = crate::report::diff::DiffSort::Change)]
    pub sort: crate::report::diff::DiffSort,
    /// Compare per successful call of this syscall on each side (runs of different
    /// length compare fairly), e.g. `--per accept4`.
    #[arg(long, value_name = "SYSCALL")]
    pub per: Option<String>,
    /// Print the diff as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub view: ViewArgs,
    /// A profile written with --json.
    pub file: PathBuf,
}

/// The longest duration a command takes: ten years.
pub const MAX_SECONDS: f64 = 10.0 * 365.25 * 86_400.0;
/// The rates the load generator takes, per second.
pub const MIN_RATE: f64 = 1e-3;
pub const MAX_RATE: f64 = 1e9;

/// A positive number of seconds, at most [`MAX_SECONDS`] (clap value parser).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("must be a positive number of seconds, not {s}"));
    }
    if v > MAX_SECONDS {
        return Err(format!("{s} seconds is more than ten years"));
    }
    Ok(v)
}

/// A positive rate per second, at most [`MAX_RATE`] (clap value parser).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number per second"))?;
    if !v.is_finite() || v < MIN_RATE {
        return Err(format!("must be a rate of at least {MIN_RATE} per second, not {s}"));
    }
    if v > MAX_RATE {
        return Err(format!("{s} per second is more than {MAX_RATE:e}"));
    }
    Ok(v)
}

/// A CPU of this machine (clap value parser).
pub fn parse_cpu(s: &str) -> Result<usize, String> {
    let cpu: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a CPU number"))?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let possible = crate::tracer::possible_cpus().map_or(cpus, |n| n as usize);
    if cpu >= possible.max(cpus) || cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!(
            "no CPU {cpu} on this machine (CPUs 0 to {})",
            possible.max(cpus) - 1
        ));
    }
    Ok(cpu)
}

/// A duration given in seconds (checked by [`parse_seconds`]).
pub fn seconds(value: Option<f64>) -> Option<std::time::Duration> {
    value.and_then(|v| std::time::Duration::try_from_secs_f64(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bad_numbers_are_one_line_errors() {
        for bad in ["0", "-1", "1e20", "inf", "NaN", "x", ""] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        for bad in ["0", "-3", "1e-9", "1e10", "inf", "x"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert!(parse_cpu("1024").is_err());
        assert!(parse_cpu("-1").is_err());
        assert_eq!(parse_cpu("0"), Ok(0));
    }

    proptest! {
        /// Whatever the text, a parser returns an error or a value every later use
        /// takes without panicking.
        #[test]
        fn parsed_values_are_usable(text in "\\PC{0,12}|[-+]?[0-9]{0,25}(\\.[0-9]{0,5})?(e[-+]?[0-9]{1,3})?") {
            if let Ok(v) = parse_seconds(&text) {
                prop_assert!(seconds(Some(v)).is_some());
                let _ = std::time::Instant::now() + std::time::Duration::from_secs_f64(v);
            }
            if let Ok(r) = parse_rate(&text) {
                let _ = std::time::Duration::from_secs_f64(1e6 / r);
            }
        }
    }
}
