//! `syscost top --json`: the document of every process's totals.

use super::data::{Profile, SCHEMA_VERSION, Target, summed};
use super::processes::ProcessTotals;

use serde::{Deserialize, Serialize};

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

pub(super) fn x86_64() -> String {
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
