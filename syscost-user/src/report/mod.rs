//! Views of a profile: the strace-style table, the JSON file, and the diff of two.

pub mod diff;
pub mod json;
pub mod slow;
pub mod strace_table;
