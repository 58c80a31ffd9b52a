//! The `syscost` profiler, as a library: the binary (`main.rs`) is a thin shell over it,
//! and the integration tests drive the same pieces.
//!
//! Data flows one way: [`tracer`] loads and attaches the kernel programs; [`sampler`] is
//! the one reader of their maps (consistent snapshots, intervals, threads, own cost);
//! [`collector`] turns snapshots into a [`profile::Profile`] (plain Rust, no aya
//! inside); the views ([`report`], [`tui`], [`metrics`]) render what they are handed.

pub mod bench;
pub mod cgroup;
pub mod cli;
pub mod collector;
pub mod commands;
pub mod errno_name;
#[cfg(test)]
pub mod fixtures;
pub mod kernel_btf;
pub mod lab;
pub mod latency;
pub mod locks;
pub mod map_sizes;
pub mod metrics;
pub mod privileges;
pub mod process;
pub mod process_table;
pub mod profile;
pub mod report;
pub mod sampler;
pub mod session;
pub mod signals;
pub mod slow;
pub mod strace_filter;
pub mod strace_flags;
pub mod syscall_names;
pub mod tracer;
pub mod tui;
pub mod units;
pub mod untrusted;
