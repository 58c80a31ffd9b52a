//! Copies and zeroes of fixed spans, written word by word. The toolchain lowers a span
//! copied or zeroed whole (a struct assigned, an array set, a value built on the stack
//! for a map insert) to a call of `memmove` or `memset`, BPF functions that move one byte
//! a loop round: a 24-byte name cost some 170 instructions, a 128-byte kernel stack
//! 900. Volatile accesses are never merged back into such a call. The object's programs
//! call none (`tracer::load`'s tests read its relocations).

use core::ptr::{read_volatile, write_volatile};

/// `*dst = *src` for an array of words.
///
/// # Safety
/// `dst` and `src` are valid for `N` words each, aligned to 8, and do not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_words<const N: usize>(dst: *mut [u64; N], src: *const [u64; N]) {
    let (dst, src) = (dst.cast::<u64>(), src.cast::<u64>());
    for i in 0..N {
        unsafe { write_volatile(dst.add(i), read_volatile(src.add(i))) };
    }
}

/// `*dst = [0; N]` for an array of words.
///
/// # Safety
/// `dst` is valid for `N` words, aligned to 8.
#[inline(always)]
pub(crate) unsafe fn zero_words<const N: usize>(dst: *mut [u64; N]) {
    let dst = dst.cast::<u64>();
    for i in 0..N {
        unsafe { write_volatile(dst.add(i), 0) };
    }
}

/// `*dst = *src` for a value of `WORDS` words (`ProcRecord`, `ExitRecord`), copied as
/// words; the size and alignment are checked when it is built.
///
/// # Safety
/// `dst` and `src` are valid, do not overlap, and `T` has no padding (every byte of it is
/// read as part of a word).
#[inline(always)]
pub(crate) unsafe fn copy_as_words<T, const WORDS: usize>(dst: *mut T, src: *const T) {
    const { assert!(size_of::<T>() == WORDS * 8 && align_of::<T>() >= 8) };
    unsafe { copy_words(dst.cast::<[u64; WORDS]>(), src.cast::<[u64; WORDS]>()) };
}

/// `*dst = 0` for a value of `WORDS` words all of whose bytes are integers
/// (`StackValue`, `BlockedStack`): zero is a value of it. The size and alignment are checked when it is
/// built.
///
/// # Safety
/// `dst` is valid for writes and aligned (as any `*mut T` to a value is).
#[inline(always)]
pub(crate) unsafe fn zero_as_words<T, const WORDS: usize>(dst: *mut T) {
    const { assert!(size_of::<T>() == WORDS * 8 && align_of::<T>() >= 8) };
    unsafe { zero_words(dst.cast::<[u64; WORDS]>()) };
}
