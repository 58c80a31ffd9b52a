//! A profile: what syscost measured, as plain data. The collector makes one from the
//! kernel's maps, `report::json` saves and reads it, every view prints from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::latency::Bucket;

/// Version of the JSON schema written by this build. Readers refuse other versions.
pub const SCHEMA_VERSION: u32 = 9;

/// The whole measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Schema version, [`SCHEMA_VERSION`].
    pub version: u32,
    /// Architecture whose syscall table names the numbers ("x86_64").
    pub arch: String,
    /// What was profiled.
    pub target: Target,
    /// Wall time covered, ns.
    pub duration_ns: u64,
    /// Whether time switched out inside syscalls was measured (`offcpu_ns`); false with
    /// `--no-offcpu`, when every syscall's time counts as on-CPU.
    pub offcpu_tracked: bool,
    /// Exits whose enter was not seen (syscalls in flight at attach time).
    pub unpaired: u64,
    /// Calls seen leaving the CPU but not coming back: the kernel reports no
    /// `sched_switch` for some switches. Their time from that switch-out counts as
    /// switched out (an upper bound), never as time on a CPU.
    #[serde(default)]
    pub switch_ins_unseen: u64,
    /// Events that could not be recorded (see docs/design.md); 0 in a complete profile.
    pub dropped: u64,
    /// One entry per syscall seen.
    pub syscalls: Vec<SyscallProfile>,
    /// With `--per-process`: calls, errors and time of each process, per syscall.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessTotals>,
    /// With `--slow`: the thresholds as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_threshold: Option<String>,
    /// With `--slow`: the slow calls, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_calls: Vec<SlowCall>,
    /// Slow calls the ring buffer had no room for (counted in the statistics, not
    /// reported one by one), and those received but not kept (beyond 100,000).
    #[serde(default)]
    pub slow_dropped: u64,
    /// With `--stacks`: every call counted by the user stack it was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<CallStacks>,
    /// The measurements that were on ("offcpu", "slow", "kernel-stacks", "per-process",
    /// "cgroup", "stacks"); empty in files written before version 5.
    #[serde(default)]
    pub features: Vec<String>,
    /// Default measurements this kernel could not offer, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
    /// Whether the syscalls carry calls, errors and time only, summed from `processes`
    /// (a `top --json` file, or `--process` of a per-process profile): no errno split,
    /// no latency distribution. Never written.
    #[serde(skip)]
    pub totals_only: bool,
}

/// What a load of the kernel programs had on, and the default measurements this kernel
/// could not offer: copied into every profile taken with them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// Names as [`Profile::features`] lists them.
    pub on: Vec<&'static str>,
    /// One line each, as [`Profile::unavailable`] has them.
    pub unavailable: Vec<String>,
}

impl Profile {
    /// This profile with the features of the programs that measured it.
    pub fn with_features(mut self, f: &Features) -> Self {
        self.features = f.on.iter().map(|s| s.to_string()).collect();
        self.unavailable = f.unavailable.clone();
        self
    }
}

/// One process's share of a `--cgroup` profile (no histograms: those are the cgroup's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessTotals {
    pub pid: u32,
    pub comm: String,
    pub cgroup: String,
    pub exited: bool,
    pub threads: u32,
    /// A row of exited processes summed (pid 0; `top` keeps the latest 10,000 exited
    /// processes one by one and sums older ones per cgroup): how many. Absent (0) for
    /// one process's row.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub summed: u64,
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub oncpu_ns: u64,
    pub syscalls: Vec<ProcessSyscall>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One syscall of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSyscall {
    pub name: String,
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub offcpu_ns: u64,
}

/// One frame of a user stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    pub addr: u64,
    /// The function, when the symbolizer found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// `file:line`, from DWARF when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The binary or library it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Why it has no function: the process exited before its mappings were read, no
    /// symbol in the module, memory of no file...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// The mapping of the module it is in (what pprof's mappings hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<FrameMapping>,
}

/// Where a frame's module was mapped in its process: the range, the file offset at its
/// start, and the module's build id (GNU build-id note, hex) where it has one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameMapping {
    pub start: u64,
    pub limit: u64,
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
}

impl Frame {
    /// Function, else module and address, else the address: exact (for JSON).
    pub fn raw_label(&self) -> String {
        match (&self.function, &self.module) {
            (Some(f), _) => f.clone(),
            (None, Some(m)) => format!("{m}+{:#x}", self.addr),
            (None, None) => format!("{:#x}", self.addr),
        }
    }

    /// [`Frame::raw_label`] as text outputs print it (the binary's symbols are the
    /// traced program's to choose).
    pub fn label(&self) -> String {
        crate::untrusted::shown(&self.raw_label()).into_owned()
    }

    /// The frame's name in folded stacks: [`Frame::label`], but a frame in no file says
    /// why beside its address, as the JSON's `unknown` does
    /// (`0x7f.. [unknown: in no mapping of the process]`), and different addresses stay
    /// different frames.
    pub fn folded_label(&self) -> String {
        match (&self.function, &self.module, &self.unknown) {
            (None, None, Some(why)) => {
                format!(
                    "{:#x} [unknown: {}]",
                    self.addr,
                    crate::untrusted::shown(why)
                )
            }
            _ => self.label(),
        }
    }
}

/// `--stacks`: the calls of each (process, user stack, syscall), counted in the kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallStacks {
    /// 1 in this many of a stack's calls on a CPU (and its first there) carried a copy of
    /// its user stack, unwound with the call frame information (`.eh_frame`).
    pub sample_every: u32,
    /// Most calls first.
    pub stacks: Vec<CallStack>,
    /// Calls counted in the syscalls' table but under no stack: no room was left for
    /// their (process, stack, syscall).
    pub calls_dropped: u64,
    /// (Process, stack, syscall) entries whose frame-pointer walk found no room (their
    /// calls are counted under it; its frames come from samples alone).
    pub frames_dropped: u64,
    /// Samples received, and those the ring buffer had no room for.
    pub samples: u64,
    pub samples_dropped: u64,
}

/// Where a stack's frames come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FramesFrom {
    /// Every call's own frame-pointer walk: the frames are exact for each call counted.
    #[default]
    Walk,
    /// The unwinding (`.eh_frame`) of sampled calls of the stack, which reaches callers
    /// the walk skips (code built without frame pointers, a libc wrapper's caller). The
    /// walk's calls and time are exact; that they all came through these callers is
    /// inferred from the samples (a rare caller sharing the walk may have none).
    Sample,
}

/// The calls of one process from one user stack to one syscall.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallStack {
    pub pid: u32,
    /// The name of the thread that made the calls (of its first sample).
    pub comm: String,
    pub syscall: String,
    pub calls: u64,
    pub total_ns: u64,
    /// Innermost first.
    pub frames: Vec<Frame>,
    pub frames_from: FramesFrom,
    /// The calls of one frame-pointer walk were split between the stacks its samples
    /// unwound to, in the samples' proportions (the walk could not tell them apart):
    /// `calls` and `total_ns` are estimates that add up to the walk's exact figures.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Samples of these calls unwound.
    pub samples: u64,
    /// The process's cgroup v2 path, where it was alive when the stacks were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
}

/// One slow call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowCall {
    /// CLOCK_MONOTONIC of the entry and the exit, ns.
    pub start_ns: u64,
    pub end_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub syscall: String,
    pub latency_ns: u64,
    /// Of the latency, switched out (blocked or preempted).
    pub offcpu_ns: u64,
    /// The call's return to a CPU after a switch-out was not seen: `offcpu_ns` is an
    /// upper bound (it runs to the exit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub switch_in_unseen: bool,
    /// Return value (`-1` with `errno` on error, like strace).
    pub ret: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    pub args: [u64; 6],
    /// What the first argument named, for syscalls whose first argument is a file
    /// descriptor (`pipe:[1234]`, `socket:[99]`, a path): read from /proc when the call
    /// was received, and shown only if the descriptor still named the file it named at
    /// the call's exit (the kernel side sends that file's inode and device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<String>,
    /// Why such a call has no `fd`: closed or reused before it was read, the process
    /// gone, or no open file at the call's exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd_unknown: Option<String>,
    /// User stack, innermost first.
    pub stack: Vec<Frame>,
    /// With `--kernel-stacks`: the kernel stack where the call last blocked (innermost
    /// first), when it blocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_stack: Vec<Frame>,
}

/// Syscalls whose arguments cannot be read at their exit.
pub const ARGS_UNKNOWN: &[&str] = &["execve", "execveat", "rt_sigreturn", "sigreturn"];

/// The profiled process or command.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Process id (of the command, for `run`).
    pub pid: u32,
    /// Command name (comm) of the process.
    pub comm: String,
    /// Command line, for `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The cgroup v2 profiled, for `--cgroup` (then `pid` is 0 and `comm` empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
}

impl Target {
    /// A process.
    pub fn process(pid: u32, comm: &str) -> Self {
        Self {
            pid,
            comm: comm.to_string(),
            ..Self::default()
        }
    }

    /// A command run from its first syscall (`run`).
    pub fn command(pid: u32, comm: &str, argv: &[String]) -> Self {
        Self {
            command: Some(argv.to_vec()),
            ..Self::process(pid, comm)
        }
    }

    /// A cgroup v2 profiled as one (`pid` 0, `comm` empty).
    pub fn cgroup(path: &str) -> Self {
        Self {
            cgroup: Some(path.to_string()),
            ..Self::default()
        }
    }
}

/// One syscall's numbers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyscallProfile {
    pub name: String,
    /// The syscall number the program passed (for `i386:` names, its i386 number).
    pub nr: u64,
    pub calls: u64,
    pub errors: u64,
    /// Error name -> count, e.g. {"EBADF": 5000}.
    pub errnos: BTreeMap<String, u64>,
    pub total_ns: u64,
    /// Of `total_ns`, time on a CPU (`oncpu_ns + offcpu_ns == total_ns`).
    pub oncpu_ns: u64,
    /// Of `total_ns`, time switched out: blocked, or preempted.
    pub offcpu_ns: u64,
    /// Context switches in these calls where the thread blocked.
    pub voluntary_switches: u64,
    /// Context switches in these calls where the thread was preempted.
    pub involuntary_switches: u64,
    pub avg_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    /// Non-empty latency buckets.
    pub histogram: Vec<Bucket>,
}

impl Profile {
    /// Sum of all syscalls' calls, errors and time.
    pub fn totals(&self) -> (u64, u64, u64) {
        self.syscalls.iter().fold((0, 0, 0), |(c, e, t), s| {
            (c + s.calls, e + s.errors, t + s.total_ns)
        })
    }

    /// The entry for syscall `name`, if it was seen.
    pub fn syscall(&self, name: &str) -> Option<&SyscallProfile> {
        self.syscalls.iter().find(|s| s.name == name)
    }

    /// A row of zeros for each of `names` that has no row (a syscall asked about is
    /// shown: "0 calls", not left out).
    pub fn add_zero_rows(&mut self, names: &[String]) {
        for name in names {
            if self.syscalls.iter().any(|s| &s.name == name) {
                continue;
            }
            let Ok(id) = crate::syscall_names::number(name) else {
                continue;
            };
            self.syscalls.push(SyscallProfile {
                name: name.clone(),
                nr: id.nr,
                ..SyscallProfile::empty()
            });
        }
    }

    /// The profile of the processes `select` picks (all when `None`) from
    /// `processes`: their syscalls summed, calls, errors and time only.
    pub fn of_processes(&self, select: Option<&ProcessSelect>) -> anyhow::Result<Profile> {
        let processes: Vec<ProcessTotals> = self
            .processes
            .iter()
            .filter(|p| select.is_none_or(|s| s.matches(p)))
            .cloned()
            .collect();
        if let (Some(s), true) = (select, processes.is_empty()) {
            anyhow::bail!(
                "no process matches --process {s} (of {})",
                crate::units::counted(
                    self.processes
                        .iter()
                        .fold(0usize, |n, p| n.saturating_add(p.summed.max(1) as usize)),
                    "process",
                    "processes"
                )
            );
        }
        let target = match select {
            Some(_) if processes.len() == 1 => Target {
                pid: processes[0].pid,
                comm: processes[0].comm.clone(),
                ..self.target.clone()
            },
            _ => self.target.clone(),
        };
        // Every field named: the slow calls (up to 100,000) are not the processes'.
        Ok(Profile {
            version: self.version,
            arch: self.arch.clone(),
            target,
            duration_ns: self.duration_ns,
            offcpu_tracked: self.offcpu_tracked,
            unpaired: self.unpaired,
            switch_ins_unseen: self.switch_ins_unseen,
            dropped: self.dropped,
            syscalls: summed(&processes),
            processes,
            slow_threshold: None,
            slow_calls: Vec::new(),
            stacks: None,
            slow_dropped: 0,
            features: self.features.clone(),
            unavailable: self.unavailable.clone(),
            totals_only: true,
        })
    }
}

/// Columns `syscost top` sorts its processes by (the live view and the text alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TopSort {
    /// Time in syscalls.
    Time,
    /// Time in syscalls on a CPU.
    Oncpu,
    Calls,
    Errors,
    Threads,
    Pid,
    Comm,
}

/// Sort order of the rows (like strace's `-S`, whose column names are taken too); each
/// but `name` and `nothing` sorts largest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SortKey {
    /// Total time in the syscall.
    #[default]
    #[value(
        alias = "time-percent",
        alias = "time_percent",
        alias = "total-time",
        alias = "total_time",
        alias = "time-total",
        alias = "time_total"
    )]
    Time,
    #[value(alias = "count")]
    Calls,
    #[value(alias = "error")]
    Errors,
    /// Average latency.
    #[value(
        alias = "avg-time",
        alias = "avg_time",
        alias = "time-avg",
        alias = "time_avg"
    )]
    Avg,
    /// Median latency (the live view's column; not a `-S` value).
    #[value(skip)]
    P50,
    /// 99th percentile latency.
    P99,
    /// Longest call.
    #[value(
        alias = "max-time",
        alias = "max_time",
        alias = "time-max",
        alias = "time_max",
        alias = "longest"
    )]
    Max,
    /// Shortest call.
    #[value(
        alias = "min-time",
        alias = "min_time",
        alias = "time-min",
        alias = "time_min",
        alias = "shortest"
    )]
    Min,
    /// Time on a CPU inside the syscall.
    Oncpu,
    /// Time switched out (blocked or preempted) inside the syscall.
    Offcpu,
    #[value(alias = "syscall", alias = "syscall-name", alias = "syscall_name")]
    Name,
    /// Syscall-number order (strace's `-S nothing`).
    #[value(alias = "none")]
    Nothing,
}

impl SyscallProfile {
    /// Its figure in the column `key` sorts by (0 for `Name` and `Nothing`, sorted apart).
    pub fn sort_value(&self, key: SortKey) -> u64 {
        match key {
            SortKey::Time => self.total_ns,
            SortKey::Calls => self.calls,
            SortKey::Errors => self.errors,
            SortKey::Avg => self.avg_ns,
            SortKey::P50 => self.p50_ns,
            SortKey::P99 => self.p99_ns,
            SortKey::Max => self.max_ns,
            SortKey::Min => self.min_ns,
            SortKey::Oncpu => self.oncpu_ns,
            SortKey::Offcpu => self.offcpu_ns,
            SortKey::Name | SortKey::Nothing => 0,
        }
    }
}

/// `rows` in display order: largest first by `key`, ties in syscall-number order (as
/// strace orders them), `Name` alphabetically.
pub fn sort_syscalls(rows: &mut [&SyscallProfile], key: SortKey) {
    rows.sort_by_key(|s| s.nr);
    match key {
        SortKey::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        // The i386 table's after the native one.
        SortKey::Nothing => rows.sort_by_key(|s| {
            (
                s.name.starts_with(crate::syscall_names::COMPAT_PREFIX),
                s.nr,
            )
        }),
        k => rows.sort_by_key(|s| std::cmp::Reverse(s.sort_value(k))),
    }
}

impl Profile {
    /// Its syscalls in display order (see [`sort_syscalls`]).
    pub fn sorted(&self, key: SortKey) -> Vec<&SyscallProfile> {
        let mut rows: Vec<&SyscallProfile> = self.syscalls.iter().collect();
        sort_syscalls(&mut rows, key);
        rows
    }
}

/// Per-unit figures: the unit is one call of a chosen syscall (one accepted connection).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerUnit {
    /// Calls of the unit syscall.
    pub units: u64,
    /// All syscalls per unit.
    pub calls: f64,
    /// Syscall time per unit, ns.
    pub ns: f64,
    /// Of it, on-CPU time per unit, ns.
    pub oncpu_ns: f64,
}

/// Totals of `profile` per successful call of syscall `unit` (an `accept4` that failed
/// with EAGAIN accepted no connection); `None` when it never succeeded.
pub fn per_unit(profile: &Profile, unit: &str) -> Option<PerUnit> {
    let units = profile.syscall(unit).map_or(0, |s| s.calls - s.errors);
    if units == 0 {
        return None;
    }
    let (calls, _, total_ns) = profile.totals();
    let oncpu: u64 = profile.syscalls.iter().map(|s| s.oncpu_ns).sum();
    Some(PerUnit {
        units,
        calls: calls as f64 / units as f64,
        ns: total_ns as f64 / units as f64,
        oncpu_ns: oncpu as f64 / units as f64,
    })
}

/// The syscalls of `processes` summed: calls, errors and time only.
fn summed(processes: &[ProcessTotals]) -> Vec<SyscallProfile> {
    let mut by: BTreeMap<&str, SyscallProfile> = BTreeMap::new();
    for ps in processes.iter().flat_map(|p| &p.syscalls) {
        let e = by.entry(&ps.name).or_insert_with(|| SyscallProfile {
            name: ps.name.clone(),
            nr: crate::syscall_names::number(&ps.name).map_or(u64::MAX, |id| id.nr),
            ..SyscallProfile::empty()
        });
        // Figures of a file read and checked (or of a profile syscost made): no
        // overflow, off-CPU time at most the total.
        e.calls += ps.calls;
        e.errors += ps.errors;
        e.total_ns += ps.total_ns;
        e.offcpu_ns += ps.offcpu_ns;
        e.oncpu_ns += ps.total_ns.saturating_sub(ps.offcpu_ns);
    }
    by.into_values()
        .map(|mut s| {
            s.avg_ns = s.total_ns.checked_div(s.calls).unwrap_or(0);
            s
        })
        .collect()
}

/// `--process PID|COMM`: the processes of a profile with per-process figures to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessSelect {
    Pid(u32),
    Comm(String),
}

impl ProcessSelect {
    /// Digits are a pid, anything else a command name (comm, as /proc shows it: at
    /// most 15 bytes).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "" => Err("empty: give a pid or a command name".into()),
            t if t.bytes().all(|b| b.is_ascii_digit()) => t
                .parse()
                .map(Self::Pid)
                .map_err(|_| format!("{t} is not a pid")),
            t => Ok(Self::Comm(t.to_string())),
        }
    }

    pub fn matches(&self, p: &ProcessTotals) -> bool {
        match self {
            Self::Pid(pid) => p.pid == *pid,
            Self::Comm(c) => &p.comm == c,
        }
    }
}

impl std::fmt::Display for ProcessSelect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pid(p) => write!(f, "{p}"),
            Self::Comm(c) => f.write_str(&crate::untrusted::shown(c)),
        }
    }
}

impl SyscallProfile {
    /// No calls yet.
    pub fn empty() -> Self {
        Self {
            name: String::new(),
            nr: 0,
            calls: 0,
            errors: 0,
            errnos: BTreeMap::new(),
            total_ns: 0,
            oncpu_ns: 0,
            offcpu_ns: 0,
            voluntary_switches: 0,
            involuntary_switches: 0,
            avg_ns: 0,
            min_ns: 0,
            max_ns: 0,
            p50_ns: 0,
            p90_ns: 0,
            p99_ns: 0,
            histogram: Vec::new(),
        }
    }
}

/// JSON schema of `syscost top --json`: 1 had no `arch` (x86_64) and no `cgroup`, 2 no
/// `switch_ins_unseen`, 3 no `summed` rows.
pub const TOP_SCHEMA: u32 = 4;

/// The document `syscost top --json` writes: the totals of every process seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopDocument {
    /// [`TOP_SCHEMA`].
    pub schema: u32,
    /// Architecture whose syscall table names the syscalls.
    #[serde(default = "x86_64")]
    pub arch: String,
    /// With `--cgroup`: the cgroup v2 watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    pub duration_secs: f64,
    /// Whether `oncpu_ns` and `offcpu_ns` were measured (not with `--no-offcpu`, when
    /// all the time counts as on a CPU).
    #[serde(default)]
    pub offcpu_tracked: bool,
    /// Process-syscall pairs the kernel side had no room for.
    pub dropped: u64,
    /// Calls whose return to a CPU was not seen ([`Profile::switch_ins_unseen`]).
    #[serde(default)]
    pub switch_ins_unseen: u64,
    pub processes: Vec<ProcessTotals>,
}

fn x86_64() -> String {
    "x86_64".into()
}

impl TopDocument {
    /// The machine's (or cgroup's) profile: every process's syscalls summed, with the
    /// processes kept for `--process` and the per-process table.
    pub fn to_profile(&self) -> Profile {
        Profile {
            version: SCHEMA_VERSION,
            arch: self.arch.clone(),
            target: Target {
                cgroup: self.cgroup.clone(),
                ..Target::default()
            },
            duration_ns: (self.duration_secs.max(0.0) * 1e9) as u64,
            offcpu_tracked: self.offcpu_tracked,
            unpaired: 0,
            switch_ins_unseen: self.switch_ins_unseen,
            dropped: self.dropped,
            syscalls: summed(&self.processes),
            processes: self.processes.clone(),
            slow_threshold: None,
            slow_calls: Vec::new(),
            stacks: None,
            slow_dropped: 0,
            features: vec!["top".into()],
            unavailable: Vec::new(),
            totals_only: true,
        }
    }
}
