//! A profile's processes: their totals per syscall, and how one is picked.

use serde::{Deserialize, Serialize};

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

pub(super) fn is_zero(n: &u64) -> bool {
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
