//! The tracing commands' arguments: `run`, `attach`, `export`, `top`, and the table's look.

use super::groups::{LiveArgs, OwnCostArgs, SlowArgs, StacksArgs, Timing, TracingArgs, WebArgs};
use super::values::{parse_metrics_addr, parse_otlp_endpoint, parse_overhead};

use anyhow::Result;
use clap::Args;
use std::{net::SocketAddr, path::PathBuf};
use syscost_report::{profile::SortKey, report::strace_table::TableOptions, syscall_names};

/// How the table looks; shared by every command that prints one.
#[derive(Debug, Clone, Default, Args)]
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
    pub calls_by_stack: StacksArgs,
}

#[derive(Debug, Default, Args)]
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
    pub calls_by_stack: StacksArgs,
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
    /// `http://HOST[:PORT][/PATH]` (port 4318 and /v1/metrics unless given). While it is
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
    pub calls_by_stack: StacksArgs,
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
