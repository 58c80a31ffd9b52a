//! `cargo xtask bench`: what tracing adds to every syscall, measured side by side in one
//! run, interleaved over several rounds. The workload times its own getppid loop; for
//! each setup the medians (and min-max) of ns per call are compared with the untraced
//! run. A benchmark, not a test: it prints figures and asserts nothing.
//!
//! By file: the setups and one round of each here; the per-call table (`per_call`), the
//! helpers (`helpers`), start-up (`start_up`), context switches (`switches`), process
//! starts (`process_starts`), slow calls (`slow_calls`).

mod helpers;
mod per_call;
mod process_starts;
mod setups;
mod slow_calls;
mod start_up;
mod switches;

pub use self::{per_call::*, process_starts::*, slow_calls::*, start_up::*};
