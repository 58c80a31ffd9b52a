//! `syscost diff`: profiles compared. Two single profiles keep the before/after shape
//! (`pair`); more profiles, several runs a side, or labels make the table of variants
//! (`variants`), which judges each change against the noise. What both shapes share
//! (the sort order, number formats, which syscalls block, the latency tests of single
//! runs) is `shared`: neither shape leans on the other.

pub mod pair;
mod shared;
pub mod variants;

pub use shared::{DiffSort, LatencyLine, blocking_syscalls, render_latency_tests};
