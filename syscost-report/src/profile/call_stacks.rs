//! Calls by user stack (`--stacks`): the stacks, their frames and the frames' mappings.

use serde::{Deserialize, Serialize};

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
