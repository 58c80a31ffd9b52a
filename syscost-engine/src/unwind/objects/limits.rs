//! The bounds of what is read from traced processes' objects: sizes, budgets, deadlines,
//! and the counts kept of them.

use std::{
    sync::atomic::{AtomicU32, AtomicU64},
    time::Duration,
};

/// Objects larger than this are not read.
pub(super) const MAX_OBJECT: u64 = 4 << 30;

/// The copies for the symbolizer alive at once, bytes: beyond, an object is copied
/// without its DWARF (named by its symbols, without lines).
pub const SYMBOL_BUDGET: u64 = 512 << 20;

/// An object's DWARF larger than this is not copied (named by its symbols alone).
pub(super) const MAX_DWARF: u64 = 256 << 20;

/// How long syscost waits for the search of a debug file (opens inside a traced
/// process's root: a path there may lead to a filesystem that stalls).
pub const SEARCH_DEADLINE: Duration = Duration::from_millis(500);

/// Searches that did not end in time: past this many, no more are made.
pub(super) const STUCK_MAX: u32 = 4;

/// Bytes of the copies alive (those closed included until the symbolizer, which may
/// still map them, is made anew).
pub(super) static SYMBOL_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes of the copies closed since the symbolizer was last made anew.
pub(super) static FREED: AtomicU64 = AtomicU64::new(0);

/// Searches abandoned at their deadline.
pub(super) static STUCK: AtomicU32 = AtomicU32::new(0);
