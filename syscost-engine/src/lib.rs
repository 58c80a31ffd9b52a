//! syscost's engine: it loads the kernel programs and reads their maps. [`tracer`]
//! loads and attaches the programs (the layout of the running kernel from its BTF,
//! `kernel_btf`; the tables' sizes, `map_sizes`); [`sampler`] is the one reader of the
//! maps (consistent snapshots, threads, own cost); [`session`] owns time, taking the
//! samples the views are handed; [`slow`] resolves `--slow`'s thresholds; [`call_ring`]
//! reads the calls the kernel sends (slow calls and `--stacks`' samples), which
//! [`unwind`] unwinds and names; [`by_stack`] joins the calls by stack with their samples;
//! [`process_table`] keeps the machine's processes for `top`; [`collector`] turns
//! snapshots into profiles; [`process`], [`cgroup`], [`privileges`], [`signals`] and [`wake`] are
//! what it needs of the system.
//!
//! It may use `syscost-common` and `syscost-report` (it produces profiles), never the
//! views or the binary.

pub mod by_stack;
pub mod call_ring;
pub mod cgroup;
pub mod collector;
#[doc(hidden)]
pub mod fuzzing;
pub mod kernel_btf;
pub mod kube;
pub mod locks;
pub mod map_sizes;
pub mod privileges;
pub mod process;
pub mod process_table;
pub mod procfs;
pub mod sampler;
pub mod session;
pub mod signals;
pub mod slow;
pub mod tracer;
pub mod unwind;
pub mod wake;

/// `syscost --version`: the version, the commit it was built from and a build id of the
/// kernel programs it carries (a hash of the object, set by the build script).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SYSCOST_GIT_COMMIT"),
    ", kernel programs ",
    env!("SYSCOST_EBPF_BUILD_ID"),
    ")"
);
