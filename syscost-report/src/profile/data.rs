//! The profile's own data: its syscalls, what it traced, the features it measured.

use super::call_stacks::CallStacks;
use super::processes::{ProcessSelect, ProcessTotals};
use super::slow::SlowCall;

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

/// The syscalls of `processes` summed: calls, errors and time only.
pub(super) fn summed(processes: &[ProcessTotals]) -> Vec<SyscallProfile> {
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
