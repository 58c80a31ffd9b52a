//! The orders rows are sorted in, and per-unit figures.

use super::data::{Profile, SyscallProfile};

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
