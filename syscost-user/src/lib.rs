//! The `syscost` binary's crate: the command line ([`cli`]) and the commands
//! ([`commands`]), each resolving its arguments once into a [`plan::Plan`] and driving
//! the engine and the views with it;
//! the echo-server lab ([`lab`]) and the micro-benchmark and strace comparison
//! ([`bench`](mod@bench)). `main.rs` is a thin shell over it.
//!
//! It may use every other crate: `syscost-report` (profiles and their views),
//! `syscost-engine` (tracing), `syscost-views` (live views, metrics). Their modules are
//! re-exported here under their own names, so the integration tests name one crate.

pub mod bench;
pub mod cli;
pub mod commands;
pub mod lab;
pub mod plan;
pub mod program;

pub use syscost_engine::{
    cgroup, collector, kernel_btf, locks, map_sizes, privileges, process, process_table, sampler,
    session, signals, slow, tracer, wake,
};
pub use syscost_report::{
    errno_name, latency, profile, report, strace_filter, strace_flags, syscall_names, units,
    untrusted,
};
pub use syscost_views::{metrics, tui};
