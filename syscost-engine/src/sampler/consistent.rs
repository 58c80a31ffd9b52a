//! A statistics entry copied between two of its updates (see the sampler's doc).

use std::{
    collections::HashMap,
    sync::atomic::{AtomicU64, Ordering, fence},
};

use syscost_common::StatsEntry;

/// Copies of one entry tried before the previous consistent copy is used instead.
pub(super) const COPY_TRIES: u32 = 10_000;

/// Copies an entry when its sequence count says no update was in progress.
///
/// # Safety
/// `src` points into the live, read-only mapping of the pool.
pub(super) unsafe fn copy_consistent(src: *const StatsEntry) -> Option<StatsEntry> {
    // The count is the entry's first field, 8-byte aligned.
    let seq = unsafe { &*(src as *const AtomicU64) };
    for _ in 0..COPY_TRIES {
        let before = seq.load(Ordering::Acquire);
        if before & 1 == 0 {
            let copy = unsafe { std::ptr::read_volatile(src) };
            fence(Ordering::Acquire);
            if seq.load(Ordering::Relaxed) == before {
                return Some(copy);
            }
        }
        std::hint::spin_loop();
    }
    None
}

/// A consistent copy of the entry at `src`, kept in `last` under `at`; the last one kept
/// when the entry changed without pause for `COPY_TRIES` tries; `None` when no copy was
/// ever made (the entry is left out, as if not yet used).
///
/// # Safety
/// As [`copy_consistent`].
pub(super) unsafe fn copy_or_last(
    last: &mut HashMap<(u32, u32), Box<StatsEntry>>,
    at: (u32, u32),
    src: *const StatsEntry,
) -> Option<&StatsEntry> {
    match unsafe { copy_consistent(src) } {
        Some(e) => {
            let kept = last.entry(at).or_insert_with(|| Box::new(StatsEntry::ZERO));
            **kept = e;
            Some(kept)
        }
        None => last.get(&at).map(|e| &**e),
    }
}
