//! Views of a profile: the strace-style table, the JSON file, and the diff of profiles
//! (with the statistics that judge its changes).

pub mod call_stacks;
pub mod diff;
#[cfg(test)]
mod extremes;
pub mod json;
pub mod pprof;
pub mod slow;
pub mod stats;
pub mod strace_table;
pub mod top;
