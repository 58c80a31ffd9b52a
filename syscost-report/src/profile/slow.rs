//! Slow calls (`--slow`): each call with its arguments, stacks and file.

use super::call_stacks::Frame;

use serde::{Deserialize, Serialize};

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
