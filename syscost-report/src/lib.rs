//! What syscost measured and how it is shown: the [`profile::Profile`] (plain data, no
//! kernel inside), its JSON file, strace's table, slow-call lines and flame graphs, the
//! diff of profiles with the statistics that judge it, strace's `-e` filters and flags,
//! the names of syscalls and errnos, and the writing of every file syscost makes.
//!
//! It owns no state and reads no kernel: it is built from profiles and renders them. It
//! may use `syscost-common` (the kernel's record layouts and syscall keys) and nothing
//! else of syscost's; every other crate may use it.

pub mod errno_name;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod latency;
pub mod output;
pub mod profile;
pub mod report;
pub mod strace_filter;
pub mod strace_flags;
pub mod syscall_names;
pub mod units;
pub mod untrusted;
