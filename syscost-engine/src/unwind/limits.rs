//! The bounds of unwinding: frames a stack, the unwind sections' sizes and the bytes
//! kept of them, and the objects closed so far.

use std::sync::atomic::AtomicU64;

/// Frames of an unwound stack, at most.
pub const MAX_FRAMES: usize = 64;

/// A section of unwind information larger than this is not read.
pub(super) const MAX_UNWIND_SECTION: u64 = 64 << 20;

/// Unwind information held at once, bytes: beyond, a new object is not unwound.
pub(super) const UNWIND_BUDGET: u64 = 512 << 20;

/// Bytes of unwind information held now.
pub(super) static UNWIND_BYTES: AtomicU64 = AtomicU64::new(0);

/// Objects closed so far (the symbolizer's caches are made anew after enough of them).
pub(super) static CLOSED: AtomicU64 = AtomicU64::new(0);
