//! Argument groups declared once and flattened into the tracing commands.

use super::values::{parse_interval, parse_sample_every, parse_seconds};

use clap::Args;
use std::path::PathBuf;

/// How long a command traces and how often the session samples, shared by `attach`,
/// `export`, `top` and `demo` (the session's clock keeps the interval and its shortest one).
#[derive(Debug, Clone, Default, Args)]
pub struct Timing {
    /// Stop after this many seconds.
    #[arg(short = 'd', long = "duration", value_name = "SECS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Sample every SECS seconds (default 1): the live view's refresh, `top --no-tui`'s
    /// table, the counters a scrape of `export` shows; `attach --no-tui` prints a table
    /// of each interval when it is given.
    #[arg(short = 'i', long = "interval", value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<f64>,
}

/// The live view or text, shared by `attach`, `top` and `demo`.
#[derive(Debug, Clone, Default, Args)]
pub struct LiveArgs {
    /// Print text instead of the live view (the default when stdout is not a terminal).
    #[arg(long)]
    pub no_tui: bool,
}

/// The metrics endpoint's protection, shared by `run`, `attach` and `export`.
#[derive(Debug, Clone, Default, Args)]
pub struct WebArgs {
    /// TLS and basic authentication for the metrics endpoint, from a web configuration
    /// file in the Prometheus exporters' format: `tls_server_config` (`cert_file`,
    /// `key_file`, client certificates) serves https, `basic_auth_users` (user: bcrypt
    /// hash) asks for a password. Read again when it changes.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config: Option<PathBuf>,
    /// Connections the metrics endpoint keeps open at once (default 64): one more is
    /// closed as it comes, and counted (syscost_scrape_connections_refused_total). Each
    /// costs a descriptor; a Prometheus keeps one per target.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub metrics_max_connections: Option<u32>,
}

/// What every tracing command (`run`, `attach`, `export`, `top`) may leave out of its
/// measurement, declared once.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct TracingArgs {
    /// Do not split syscall time into on-CPU and blocked (saves the program that runs
    /// on every context switch of the machine).
    #[arg(long)]
    pub no_offcpu: bool,
}

/// `--no-run-stats`, for the commands that measure their own cost unless told not to
/// (`run`, `attach`, `top`; `export` asks for it with `--run-stats`).
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct OwnCostArgs {
    /// Leave the kernel's BPF run-time statistics off: no own-cost figure (live view
    /// header, syscost_bpf_run_seconds_total), and less cost per traced syscall (the
    /// kernel times every BPF program run while they are on).
    #[arg(long)]
    pub no_run_stats: bool,
}

/// `--slow` and `--kernel-stacks`, shared by `run`, `attach` and `export`.
#[derive(Debug, Clone, Default, Args)]
pub struct SlowArgs {
    /// Report each call at least this slow, with its arguments, fd and user stack: a
    /// threshold (`1ms`), thresholds per syscall (`close=50us,read=1ms`), or both
    /// (`1ms,close=50us`). Only those calls leave the kernel.
    #[arg(long, value_name = "DURATION|SYSCALL=DURATION,...", value_parser = syscost_engine::slow::spec::parse_spec)]
    pub slow: Option<syscost_engine::slow::spec::SlowSpec>,
    /// With --slow: also the kernel stack where each slow call last blocked (a kernel
    /// stack walk at every blocking switch of a traced thread inside a call; needs the
    /// on-CPU split).
    #[arg(long, requires = "slow")]
    pub kernel_stacks: bool,
    /// With --slow or --stacks: how much of the user stack each slow call (each sample)
    /// carries, from the page holding the stack pointer up, for its stack to be unwound
    /// with the call frame information of the objects (.eh_frame) where frame pointers
    /// are not kept: 0 (frame pointers only), 4K, 8K, 16K or 32K [default: 16K].
    #[arg(long, value_name = "BYTES", value_parser = syscost_engine::slow::spec::parse_stack_size)]
    pub stack_size: Option<u32>,
}

/// `--stacks`, shared by `run`, `attach` and `export`.
#[derive(Debug, Clone, Default, Args)]
pub struct StacksArgs {
    /// Count every traced call, with its time, by the user stack it was made from (in the
    /// kernel: nothing per call leaves it), and write them to FILE at the end as folded
    /// stacks, one line per stack: `comm;outermost;...;innermost;syscall VALUE`
    /// (`syscost flame FILE -o FILE.svg`, inferno-flamegraph and flamegraph.pl draw it),
    /// or as a pprof profile (FILE.pb.gz, see --stacks-format). The JSON (--json) keeps
    /// the same figures. With --metrics-addr, the endpoint also serves a window's calls
    /// by stack as pprof at /debug/pprof/syscalls?seconds=N (Parca, Pyroscope).
    #[arg(long, value_name = "FILE")]
    pub stacks: Option<PathBuf>,
    /// What VALUE counts in the folded stacks file: the calls, or the time in them (ns)
    /// [default: calls]. A pprof profile holds both.
    #[arg(long, value_enum, requires = "stacks")]
    pub stacks_value: Option<syscost_report::report::call_stacks::Weight>,
    /// How the stacks file is written: folded stacks, or a gzipped pprof profile (what
    /// go tool pprof, Pyroscope and Parca read) [default: pprof for a FILE ending in
    /// .pb.gz, .pb or .pprof, folded otherwise].
    #[arg(long, value_enum, requires = "stacks")]
    pub stacks_format: Option<syscost_report::report::call_stacks::Format>,
    /// 1 in N of each stack's calls (per CPU, and its first there) carries a copy of the
    /// stack, unwound with .eh_frame to name the callers a frame-pointer walk skips (code
    /// built without frame pointers, a libc wrapper's caller): a power of two.
    #[arg(long, requires = "stacks", value_name = "N", default_value_t = syscost_engine::by_stack::SAMPLE_EVERY, value_parser = parse_sample_every)]
    pub stacks_sample: u32,
}
