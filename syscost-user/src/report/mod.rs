//! Views of a profile: the strace-style table and the JSON file.

pub mod json;
pub mod strace_table;
