//! The syscall-cost micro-benchmark (`syscost bench`) and the side-by-side comparison
//! with strace and perf (`syscost compare`).

pub mod compare;
pub mod micro;
pub mod strace_parse;
