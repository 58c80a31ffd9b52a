//! A profile: what syscost measured, as plain data. The collector makes one from the
//! kernel's maps, `report::json` saves and reads it, every view prints from it.
//!
//! By file: the profile, its syscalls and its target (`data`); its processes
//! (`processes`), slow calls (`slow`), calls by stack (`call_stacks`), sort orders and
//! per-unit figures (`sort`), and top's document (`top`).

mod call_stacks;
mod data;
mod processes;
mod slow;
mod sort;
mod top;

pub use self::{call_stacks::*, data::*, processes::*, slow::*, sort::*, top::*};
