//! Copies and zeroes of fixed spans, written word by word. The toolchain lowers a span
//! copied or zeroed whole (a struct assigned, an array set, a value built on the stack
//! for a map insert) to a call of `memmove` or `memset`, BPF functions that move one byte
//! a loop round: a 24-byte name cost some 170 instructions, a 128-byte kernel stack
//! 900. Volatile accesses are never merged back into such a call. The object's programs
//! call none (`tracer::load`'s tests read its relocations).

use core::ptr::{read_volatile, write_volatile};

/// `*dst = *src` for an array of words.
#[inline(always)]
pub(crate) fn copy_words<const N: usize>(dst: *mut [u64; N], src: *const [u64; N]) {
    let (dst, src) = (dst.cast::<u64>(), src.cast::<u64>());
    for i in 0..N {
        unsafe { write_volatile(dst.add(i), read_volatile(src.add(i))) };
    }
}

/// `*dst = [0; N]` for an array of words.
#[inline(always)]
pub(crate) fn zero_words<const N: usize>(dst: *mut [u64; N]) {
    let dst = dst.cast::<u64>();
    for i in 0..N {
        unsafe { write_volatile(dst.add(i), 0) };
    }
}

/// `*dst = *src` for a value of `size_of::<T>()` bytes, a multiple of 8, aligned to 8
/// (`ProcRecord`, `ExitRecord`): copied as words.
#[inline(always)]
pub(crate) fn copy_as_words<T, const WORDS: usize>(dst: *mut T, src: *const T) {
    const { assert!(size_of::<T>() == WORDS * 8 && align_of::<T>() >= 8) };
    copy_words(dst.cast::<[u64; WORDS]>(), src.cast::<[u64; WORDS]>());
}
