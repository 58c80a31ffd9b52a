//! `syscost diff` of several variants, each one run or several: per syscall, every
//! variant's calls, errors, time and latency with its change against the first (the
//! baseline), each change judged against the noise (see `stats`), the time split into
//! on-CPU and switched out, blocking calls apart, and a conclusion in words. Pure: built
//! from the profiles read. Its four parts: the model, its computation, the conclusion
//! in words, the table.

mod compute;
mod conclusion;
mod model;
mod render;
#[cfg(test)]
mod tests;

pub use compute::{compare, compare_counting_units_in};
pub use model::*;
pub use render::{render, to_json};
