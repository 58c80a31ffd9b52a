//! The other commands' arguments: the readers of files, compare, the lab, the bench.

use super::groups::{LiveArgs, Timing};
use super::tracing::ViewArgs;
use super::values::{parse_cpu, parse_rate, parse_seconds};

use clap::{Args, ValueEnum};
use std::{net::SocketAddrV4, path::PathBuf};

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
    /// The baseline: a profile (--json output), or several runs of one variant,
    /// comma-separated (`a1.json,a2.json,a3.json`).
    #[arg(value_name = "BASE")]
    pub baseline: PathBuf,
    /// The profiles to compare with it, each one file or several runs comma-separated.
    /// Two single profiles print the before/after table; a third profile, several runs
    /// on a side or --label print the table of variants, each change judged against the
    /// noise.
    #[arg(value_name = "PROFILE", required = true, num_args = 1..)]
    pub others: Vec<PathBuf>,
    /// A name for each profile in the table of variants, in order, one per profile
    /// (default: the file name, or what the names of a side's runs share).
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// Every syscall in the table of variants (by default those of under 0.1% of the
    /// calls that change by nothing beyond the noise are named on one line).
    #[arg(long)]
    pub all: bool,
    /// Compare only these syscalls: names, or strace's expressions (`trace=%file`,
    /// `trace=!futex`, `trace=/^epoll`), as for run's -e; the totals are of these.
    #[arg(
        short = 'e',
        long = "syscalls",
        visible_alias = "trace",
        value_name = "EXPR"
    )]
    pub syscalls: Vec<String>,
    /// Row order.
    #[arg(short = 'S', long = "sort", value_enum, default_value_t = syscost_report::report::diff::DiffSort::Change)]
    pub sort: syscost_report::report::diff::DiffSort,
    /// Compare per successful call of this syscall on each side (runs of different
    /// length compare fairly), e.g. `--per accept4`.
    #[arg(long, value_name = "SYSCALL")]
    pub per: Option<String>,
    /// Print the diff as JSON.
    #[arg(long)]
    pub json: bool,
    /// Compare only this process (digits: a pid; else every process of this comm, the
    /// first 15 bytes of its name as /proc shows it) of files with per-process
    /// figures: `top --json`, or `--per-process`.
    #[arg(long, value_name = "PID|COMM", value_parser = syscost_report::profile::ProcessSelect::parse)]
    pub process: Option<syscost_report::profile::ProcessSelect>,
}

/// `syscost flame`.
#[derive(Debug, Args)]
pub struct FlameArgs {
    #[command(flatten)]
    pub file: SlowViewArgs,
    /// Draw a profile's calls by stack (saved with --stacks and --json), not its slow
    /// calls (a profile with calls by stack and no slow calls draws them anyway).
    #[arg(long)]
    pub stacks: bool,
}

/// `syscost trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A profile written with --slow DURATION and --json FILE.
    pub file: PathBuf,
    /// Write the trace JSON here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `syscost flame`.
#[derive(Debug, Args)]
pub struct SlowViewArgs {
    /// A profile written with --json (with --slow, or with --stacks), or a stacks file
    /// written by --stacks.
    pub file: PathBuf,
    /// Write here instead of stdout: an SVG flame graph when FILE ends in .svg, folded
    /// stacks otherwise.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub view: ViewArgs,
    /// A file written with --json (by `run`, `attach` or `top`), or a pprof profile of
    /// calls by stack (--stacks FILE.pb.gz): its syscalls and stacks by time.
    pub file: PathBuf,
    /// Only this process (digits: a pid; else every process of this comm, the first 15
    /// bytes of its name as /proc shows it) of a file with per-process figures: `top
    /// --json`, or `--per-process`.
    #[arg(long, value_name = "PID|COMM", value_parser = syscost_report::profile::ProcessSelect::parse)]
    pub process: Option<syscost_report::profile::ProcessSelect>,
}

/// `syscost compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Interleaved rounds; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Repetitions per micro-benchmark row (strace makes each call cost about 0.1 ms or
    /// more, so keep this small).
    #[arg(long, default_value_t = 10_000)]
    pub reps: u64,
    /// Pin the micro-benchmark to this CPU.
    #[arg(long, value_name = "N", value_parser = parse_cpu)]
    pub cpu: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// A command to compare instead of the micro-benchmark.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `syscost demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Epoll mode of the server.
    #[arg(long, value_enum, default_value_t = Mode::Lt)]
    pub mode: Mode,
    /// Server stops reading after a short read (et mode).
    #[arg(long)]
    pub stop_on_short_read: bool,
    /// New connections per second.
    #[arg(long, default_value_t = 1000.0, value_parser = parse_rate)]
    pub rate: f64,
    /// Concurrent client connections.
    #[arg(short = 'c', long, default_value_t = 2)]
    pub concurrency: u32,
    /// Requests per connection (1: short connections).
    #[arg(long, default_value_t = 1)]
    pub keepalive: u64,
    #[command(flatten)]
    pub timing: Timing,
    #[command(flatten)]
    pub live: LiveArgs,
}

/// Notification mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Level-triggered.
    Lt,
    /// Edge-triggered.
    Et,
}

/// `syscost lab echo-server`.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Address to listen on (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:9988")]
    pub addr: SocketAddrV4,
    /// level-triggered (lt) or edge-triggered (et) epoll.
    #[arg(long, value_enum, default_value_t = Mode::Lt)]
    pub mode: Mode,
    /// Stop reading as soon as a read returns less than asked (et mode) instead of
    /// reading until EAGAIN.
    #[arg(long)]
    pub stop_on_short_read: bool,
    /// Exit after this many connections have been served and closed.
    #[arg(long, value_name = "N")]
    pub max_conns: Option<u64>,
    /// Exit after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Read buffer size, bytes.
    #[arg(long, default_value_t = 4096)]
    pub buf_size: usize,
}

/// `syscost lab echo-load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:9988")]
    pub addr: SocketAddrV4,
    /// Connections to make in all.
    #[arg(short = 'n', long = "connections", default_value_t = 10_000)]
    pub connections: u64,
    /// Connections open at once (one thread each).
    #[arg(short = 'c', long = "concurrency", default_value_t = 1)]
    pub concurrency: u32,
    /// Requests per connection (default 1: short connections).
    #[arg(long, value_name = "R", default_value_t = 1)]
    pub keepalive: u64,
    /// At most this many connections per second (default: as fast as possible).
    #[arg(long, value_name = "PER_SEC", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Stop after this many seconds even if connections are left.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_seconds)]
    pub duration: f64,
    /// Print nothing (for background load).
    #[arg(long)]
    pub quiet: bool,
}
