//! Command-line interface: the arguments of every command, and the parsers of their
//! values. Only descriptions: the commands (`commands/`, `bench/`, `lab/`) read them.

use std::{
    net::{SocketAddr, SocketAddrV4},
    path::PathBuf,
};

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};

use syscost_report::{profile::SortKey, report::strace_table::TableOptions, syscall_names};

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

/// How the table looks; shared by every command that prints one.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Which syscalls the table shows: names (`read,close`, a row of zeros for one
    /// with no call), or strace's expressions: `trace=%file`, `trace=%net,%process`,
    /// `trace=!futex`, `trace=/^epoll`, `?NAME`, `NAME@64`, `NAME@32`, numbers; and
    /// `status=successful|failed` (as -z, -Z). A later trace= replaces an earlier one,
    /// as in strace. The table only: --json keeps every syscall.
    #[arg(
        short = 'e',
        long = "syscalls",
        visible_alias = "trace",
        value_name = "EXPR"
    )]
    pub syscalls: Vec<String>,
    /// Count only the calls that succeeded (strace's -z): calls and errors exact, from
    /// the kernel's errno split; time is not split by outcome, its columns show -
    /// (--json keeps every call).
    #[arg(short = 'z', long = "successful-only", conflicts_with = "failed")]
    pub successful: bool,
    /// Count only the calls that failed (strace's -Z); the time columns show - as with -z.
    #[arg(short = 'Z', long = "failed-only", visible_alias = "failing-only")]
    pub failed: bool,
    /// Accepted for strace's -c: syscost's table is strace -c's summary already.
    #[arg(short = 'c', long = "summary-only")]
    pub summary_only: bool,
    /// Sort rows by this column (largest first; name alphabetically; nothing: by
    /// number). strace's names are taken too (total-time, avg-time, min-time,
    /// max-time, count, syscall...).
    #[arg(short = 'S', long = "sort", visible_alias = "summary-sort-by", value_enum, default_value_t = SortKey::Time)]
    pub sort: SortKey,
    /// strace's columns, in this order (its -U): time-percent, total-time, min-time,
    /// max-time, avg-time, calls, errors, name (and strace's other spellings of them).
    #[arg(short = 'U', long = "summary-columns", value_name = "COLUMN,...", value_parser = syscost_report::report::strace_table::parse_columns, conflicts_with_all = ["latency", "per"])]
    pub columns: Option<syscost_report::report::strace_table::Columns>,
    /// Accepted for strace's -w: syscost's times are already the wall-clock time from
    /// a syscall's entry to its exit (strace's default is the system CPU time).
    #[arg(short = 'w', long = "summary-wall-clock")]
    pub wall_time: bool,
    /// Accepted for strace's -O: syscost subtracts no overhead. Its times come from the
    /// kernel's entry and exit of each syscall, where tracing adds nothing to them; its
    /// own cost is measured apart (the live view's header, `syscost compare`).
    #[arg(
        short = 'O',
        long = "summary-syscall-overhead",
        value_name = "OVERHEAD",
        value_parser = parse_overhead
    )]
    pub overhead: Option<String>,
    /// Add p50, p99 and max latency columns, and the average on-CPU and blocked time per
    /// call. p50 and p99 are the upper edges of histogram buckets 6-12% wide, shown to
    /// the two digits those hold; max is exact.
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// Add calls and time per call of this syscall, e.g. `--per accept4` for per-request
    /// figures of a server (one accepted connection = one unit).
    #[arg(long, value_name = "SYSCALL")]
    pub per: Option<String>,
}

impl ViewArgs {
    /// The `-e`, `-z` and `-Z` selection, checked (and `--per`'s name with it).
    pub fn selection(&self) -> Result<syscost_report::strace_filter::Selection> {
        use syscost_report::strace_filter::Status;
        if let Some(unit) = &self.per {
            syscall_names::number(unit)?;
        }
        let mut sel = syscost_report::strace_filter::parse(&self.syscalls)?;
        match (self.successful, self.failed, sel.status) {
            (true, _, Some(Status::Failed)) | (_, true, Some(Status::Successful)) => {
                anyhow::bail!("-z or -Z, and -e status= say otherwise: give one")
            }
            (true, _, _) => sel.status = Some(Status::Successful),
            (_, true, _) => sel.status = Some(Status::Failed),
            _ => {}
        }
        Ok(sel)
    }

    /// Table options.
    pub fn table(&self) -> TableOptions {
        TableOptions {
            sort: self.sort,
            latency: self.latency,
            per: self.per.clone(),
            columns: self.columns.clone(),
            note: None,
            no_times: false,
            selected: false,
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
    #[command(flatten)]
    pub tracing: TracingArgs,
    #[command(flatten)]
    pub own_cost: OwnCostArgs,
    /// Also serve the counters for Prometheus at http://ADDR/metrics while the command
    /// runs (`127.0.0.1:9464`, `:9464` for every interface, IPv6 and IPv4,
    /// `localhost:9464`).
    #[arg(long, value_name = "ADDR", value_parser = parse_metrics_addr)]
    pub metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    pub web: WebArgs,
    /// Run the command as this user (a name or a uid), with the user's group and
    /// supplementary groups, as strace's -u; the environment is left as it is. Under
    /// sudo without -u the command runs as root, and a line on stderr says so.
    #[arg(short = 'u', long = "user", value_name = "USER")]
    pub user: Option<String>,
    /// Accepted for strace's -f: run follows the command's threads and children always.
    #[arg(short = 'f', long = "follow-forks")]
    pub follow_forks: bool,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub slow_calls: SlowArgs,
    #[command(flatten)]
    pub stacks: StacksArgs,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    #[command(flatten)]
    pub view: ViewArgs,
    /// Process to profile.
    #[arg(
        short = 'p',
        long = "pid",
        required_unless_present = "cgroup",
        conflicts_with = "cgroup"
    )]
    pub pid: Option<u32>,
    /// Profile every process of this cgroup v2 and its descendants as one, those that
    /// start or move in later included: a directory under the cgroup2 mount or a path as
    /// /proc/PID/cgroup shows it (`/system.slice/nginx.service`).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// With --cgroup: also split calls, errors and time by process (a table per process
    /// at the end, and in --json).
    #[arg(long, requires = "cgroup")]
    pub per_process: bool,
    #[command(flatten)]
    pub timing: Timing,
    #[command(flatten)]
    pub live: LiveArgs,
    /// strace's -C: the table of each interval as text while attached (every second
    /// unless -i says otherwise), and the summary at the end.
    #[arg(short = 'C', long = "summary", conflicts_with = "summary_only")]
    pub live_text: bool,
    #[command(flatten)]
    pub tracing: TracingArgs,
    #[command(flatten)]
    pub own_cost: OwnCostArgs,
    /// Also profile the target's descendants: those that exist now and those forked
    /// from now on.
    #[arg(short = 'f', long = "follow-forks", conflicts_with = "cgroup")]
    pub follow_forks: bool,
    /// Also save the profile as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also serve the counters for Prometheus at http://ADDR/metrics while attached
    /// (`127.0.0.1:9464`, `:9464` for every interface, IPv6 and IPv4, `localhost:9464`).
    #[arg(long, value_name = "ADDR", value_parser = parse_metrics_addr)]
    pub metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    pub web: WebArgs,
    #[command(flatten)]
    pub slow_calls: SlowArgs,
    #[command(flatten)]
    pub stacks: StacksArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Processes to profile; each gets series of its own (pid and comm labels).
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID...]",
        value_delimiter = ',',
        required_unless_present_any = ["cgroup", "top"],
        conflicts_with_all = ["cgroup", "top"]
    )]
    pub pids: Vec<u32>,
    /// Profile every process of this cgroup v2 (and its descendants, those that start or
    /// move in later included) as one, its series labelled with the cgroup.
    #[arg(long, value_name = "PATH", conflicts_with = "top")]
    pub cgroup: Option<PathBuf>,
    /// With --cgroup: also series per process of the cgroup (at most --top-n of them
    /// plus an `other` series).
    #[arg(long, requires = "cgroup")]
    pub per_process: bool,
    /// The whole machine: series per process and per cgroup, bounded to the N busiest
    /// of each (by time in syscalls, kept while they live) plus an `other` series.
    #[arg(long, conflicts_with = "slow")]
    pub top: bool,
    /// Processes (and cgroups) with series of their own under --top or --per-process.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub top_n: u32,
    /// Where to serve http://ADDR/metrics (loopback unless told otherwise): an address
    /// and port, `:9464` for every interface, IPv6 and IPv4 (`0.0.0.0:9464` for IPv4
    /// alone), or `localhost:9464`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464", value_parser = parse_metrics_addr)]
    pub metrics_addr: SocketAddr,
    /// Also push the syscall families /metrics serves (the traced processes' or cgroup's,
    /// --top's and --per-process's series, the machine's counters) at every sample (-i)
    /// over OTLP/HTTP (protobuf) to an OpenTelemetry Collector or another OTLP receiver:
    /// http://HOST[:PORT][/PATH] (port 4318 and /v1/metrics unless given). While it is
    /// away the newest figures wait, retried with a backoff up to 32 s; the older ones
    /// are counted as dropped.
    #[arg(long, value_name = "URL", value_parser = parse_otlp_endpoint)]
    pub otlp_endpoint: Option<syscost_views::metrics::otlp::Endpoint>,
    #[command(flatten)]
    pub web: WebArgs,
    #[command(flatten)]
    pub timing: Timing,
    /// Also count child processes the targets fork from now on (under the parent's pid).
    #[arg(short = 'f', long = "follow-forks", conflicts_with_all = ["cgroup", "top"])]
    pub follow_forks: bool,
    #[command(flatten)]
    pub tracing: TracingArgs,
    /// Turn the kernel's BPF run-time statistics on while serving, for syscost's own
    /// cost (syscost_bpf_run_seconds_total). Off by default: while they are on, the
    /// kernel reads the clock around every BPF program run of the machine, the host's
    /// networking and security programs included (about 200 ns a traced syscall here),
    /// 1 s in every 10 s.
    #[arg(long)]
    pub run_stats: bool,
    /// Accepted for the command lines written when the statistics were on by default:
    /// they are off unless --run-stats.
    #[arg(long, hide = true, conflicts_with = "run_stats")]
    pub no_run_stats: bool,
    #[command(flatten)]
    pub slow_calls: SlowArgs,
    #[command(flatten)]
    pub stacks: StacksArgs,
}

/// How long a command traces and how often the session samples, shared by `attach`,
/// `export`, `top` and `demo` (the session's clock keeps the interval and its floor).
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
    pub stacks_value: Option<syscost_report::report::stacks::Weight>,
    /// How the stacks file is written: folded stacks, or a gzipped pprof profile (what
    /// go tool pprof, Pyroscope and Parca read) [default: pprof for a FILE ending in
    /// .pb.gz, .pb or .pprof, folded otherwise].
    #[arg(long, value_enum, requires = "stacks")]
    pub stacks_format: Option<syscost_report::report::stacks::Format>,
    /// 1 in N of each stack's calls (per CPU, and its first there) carries a copy of the
    /// stack, unwound with .eh_frame to name the callers a frame-pointer walk skips (code
    /// built without frame pointers, a libc wrapper's caller): a power of two.
    #[arg(long, requires = "stacks", value_name = "N", default_value_t = syscost_engine::stacks::SAMPLE_EVERY, value_parser = parse_sample_every)]
    pub stacks_sample: u32,
}

/// `--otlp-endpoint`: an http:// URL.
fn parse_otlp_endpoint(s: &str) -> Result<syscost_views::metrics::otlp::Endpoint, String> {
    syscost_views::metrics::otlp::parse_endpoint(s).map_err(|e| format!("{e:#}"))
}

/// A power of two from 1 to 2^20 (`--stacks-sample`).
pub fn parse_sample_every(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n.is_power_of_two() && n <= 1 << 20 => Ok(n),
        _ => Err(format!("'{s}' is not a power of two from 1 to 1048576")),
    }
}

/// `syscost top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Only the processes of this cgroup v2 and its descendants.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    #[command(flatten)]
    pub timing: Timing,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Sort rows by this column (largest first).
    #[arg(short = 'S', long = "sort", value_enum, default_value_t = TopSort::Time)]
    pub sort: TopSort,
    /// Rows of each text table (0: all).
    #[arg(short = 'n', long = "rows", default_value_t = 20)]
    pub rows: usize,
    /// Also save every process's totals (and per syscall) as JSON at the end.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Count the calls of the process drilled into (Enter) by user stack: its callers
    /// pane (w) shows the selected syscall's stacks.
    #[arg(long)]
    pub stacks: bool,
    #[command(flatten)]
    pub tracing: TracingArgs,
    #[command(flatten)]
    pub own_cost: OwnCostArgs,
}

pub use syscost_report::profile::TopSort;

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

/// The longest duration a command takes: ten years.
pub const MAX_SECONDS: f64 = 10.0 * 365.25 * 86_400.0;
/// The rates the load generator takes, per second.
pub const MIN_RATE: f64 = 1e-3;
pub const MAX_RATE: f64 = 1e9;

/// A number of seconds from 1 ms to [`MAX_SECONDS`] (clap value parser).
/// strace's `-O`: a time, in seconds or with a unit (`0.000001`, `1us`), checked as
/// strace checks it, then kept as given.
fn parse_overhead(s: &str) -> Result<String, String> {
    let ok = match s.trim().parse::<f64>() {
        Ok(v) => v.is_finite() && v >= 0.0,
        Err(_) => syscost_engine::slow::spec::parse_duration(s).is_ok(),
    };
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("'{s}' is not a time (0.000001, 1us)"))
    }
}

/// A metrics endpoint's address in the forms the Prometheus exporters take: `IP:PORT`,
/// `[IPv6]:PORT`, `:PORT` (every interface, IPv6 and IPv4) and `localhost:PORT` (loopback). Other host
/// names are refused rather than looked up.
pub fn parse_metrics_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port number (0-65535)"))
    };
    // Every interface, IPv6 and IPv4 (the endpoint listens on both where the host has
    // IPv6, as the exporters' `:PORT` does).
    if let Some(p) = s.strip_prefix(':') {
        return Ok(SocketAddr::from((
            std::net::Ipv6Addr::UNSPECIFIED,
            port(p)?,
        )));
    }
    if let Some(p) = s.strip_prefix("localhost:") {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port(p)?)));
    }
    Err(
        "not an address: give IP:PORT (127.0.0.1:9464), :PORT for every interface, or localhost:PORT"
            .to_string(),
    )
}

pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("must be a positive number of seconds, not {s}"));
    }
    if v < 1e-3 {
        return Err(format!("{s} seconds is less than a millisecond"));
    }
    if v > MAX_SECONDS {
        return Err(format!("{s} seconds is more than ten years"));
    }
    Ok(v)
}

/// A refresh interval: at least the session's floor (a table or a screen more often
/// than that is unreadable), at most [`MAX_SECONDS`] (clap value parser).
pub fn parse_interval(s: &str) -> Result<f64, String> {
    let v = parse_seconds(s)?;
    let floor = syscost_engine::session::INTERVAL_FLOOR.as_secs_f64();
    if v < floor {
        return Err(format!(
            "{s} seconds is shorter than the {floor} s an interval takes"
        ));
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
        return Err(format!(
            "must be a rate of at least {MIN_RATE} per second, not {s}"
        ));
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
    let possible = syscost_engine::tracer::possible_cpus().map_or(cpus, |n| n as usize);
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
    fn metrics_addresses_take_the_exporters_forms() {
        let a = |s: &str| parse_metrics_addr(s).map(|a| a.to_string());
        assert_eq!(a("127.0.0.1:9464").as_deref(), Ok("127.0.0.1:9464"));
        assert_eq!(a("[::1]:9464").as_deref(), Ok("[::1]:9464"));
        assert_eq!(a(":9999").as_deref(), Ok("[::]:9999"));
        assert_eq!(a("0.0.0.0:9999").as_deref(), Ok("0.0.0.0:9999"));
        assert_eq!(a("localhost:9999").as_deref(), Ok("127.0.0.1:9999"));
        assert!(a(":99999").unwrap_err().contains("not a port number"));
        assert!(
            a("example.org:80")
                .unwrap_err()
                .starts_with("not an address")
        );
        assert!(a("9464").is_err());
    }

    #[test]
    fn bad_numbers_are_one_line_errors() {
        for bad in ["0", "-1", "1e20", "1e-10", "inf", "NaN", "x", ""] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("0.01").is_err());
        assert_eq!(parse_interval("0.5"), Ok(0.5));
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        for bad in ["0", "-3", "1e-9", "1e10", "inf", "x"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert!(parse_cpu("1024").is_err());
        assert!(parse_cpu("-1").is_err());
        assert_eq!(parse_cpu("0"), Ok(0));
    }

    /// The help names the interval the session takes unless told (it is written once,
    /// in the session; the help's words are checked against it).
    #[test]
    fn the_interval_the_help_names_is_the_sessions() {
        use clap::CommandFactory as _;
        let secs = syscost_engine::session::INTERVAL.as_secs_f64();
        let cli = Cli::command();
        for sub in ["attach", "top"] {
            let help = cli
                .find_subcommand(sub)
                .and_then(|c| c.get_arguments().find(|a| a.get_id() == "interval"))
                .and_then(|a| a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains(&format!("(default {secs})")),
                "{sub} -i: {help}"
            );
        }
        let c = cli
            .find_subcommand("attach")
            .and_then(|c| c.get_arguments().find(|a| a.get_id() == "live_text"))
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        assert_eq!(c.contains("every second"), secs == 1.0, "-C: {c}");
    }

    proptest! {
        /// Whatever the text, a parser returns an error or a value every later use
        /// takes without panicking.
        #[test]
        fn parsed_values_are_usable(text in "\\PC{0,12}|[-+]?[0-9]{0,25}(\\.[0-9]{0,5})?(e[-+]?[0-9]{1,3})?") {
            if let Ok(v) = parse_seconds(&text) {
                prop_assert!(seconds(Some(v)).is_some_and(|d| !d.is_zero()));
                let _ = std::time::Instant::now() + std::time::Duration::from_secs_f64(v);
            }
            if let Ok(v) = parse_interval(&text) {
                prop_assert!(seconds(Some(v)).is_some_and(|d| d >= syscost_engine::session::INTERVAL_FLOOR));
            }
            if let Ok(r) = parse_rate(&text) {
                let _ = std::time::Duration::from_secs_f64(1e6 / r);
            }
        }
    }
}
