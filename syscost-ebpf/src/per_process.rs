//! The per-process figures of the automatic modes (`TOP`, `PROC_INFO`, `EXITS`): calls,
//! errors and time per (process, syscall), the keys each process holds, and its record
//! at exit.

use crate::{
    Call,
    maps::{EXITS, PROC_INFO, TOP},
    stats::add,
    stats::count,
};
use aya_ebpf::bindings::BPF_NOEXIST;
use core::hint::black_box;
use syscost_common::{ExitRecord, TopKey, TopValue, counter, is_error_return, top_key_bit};

/// Marks `key` as one of the process's `TOP` keys. Called once per key (by the insert
/// that made it), so an atomic add sets the bit even when another CPU sets another
/// bit of the same word (a fetch-less add: kernels before 5.12 have no atomic or).
#[inline(always)]
pub(crate) fn mark_top_key(tgid: u32, key: u32) {
    let Some(r) = PROC_INFO.get_ptr_mut(tgid) else {
        return;
    };
    let bit = top_key_bit(key);
    // black_box: the word index itself is bounds-checked (the compiler would otherwise
    // fold the check into one on the bit, whose byte offset the verifier cannot bound).
    let w = black_box(bit / 64) as usize;
    if let Some(word) = unsafe { (*r).keys.get_mut(w) } {
        unsafe {
            core::intrinsics::atomic_xadd::<u64, u64, { core::intrinsics::AtomicOrdering::Relaxed }>(
                word,
                1 << (bit % 64),
            )
        };
    }
}

/// Adds a call to this CPU's `TOP` figures of (process, syscall).
#[inline(always)]
pub(crate) fn count_top(tgid: u32, stats_slot: u32, call: &Call, ret: i64) {
    let (key, ns, off_ns) = (call.key, call.ns, call.off_ns);
    let k = TopKey { tgid, key };
    let v = match TOP.get_ptr_mut(k) {
        Some(v) => v,
        None => {
            // Another thread of the process may add the key on another CPU at the same
            // moment: only the insert that made it marks it.
            if TOP
                .insert(k, TopValue::default(), u64::from(BPF_NOEXIST))
                .is_ok()
            {
                mark_top_key(tgid, key);
            }
            match TOP.get_ptr_mut(k) {
                Some(v) => v,
                None => {
                    count(stats_slot, counter::DROPPED_TOP);
                    return;
                }
            }
        }
    };
    let v = unsafe { &mut *v };
    // Errors before calls: a reader copying this while it changes sees errors <= calls
    // at worst one call late.
    if is_error_return(ret) {
        add(&mut v.errors, 1);
    }
    add(&mut v.total_ns, ns);
    add(&mut v.offcpu_ns, off_ns);
    add(&mut v.calls, 1);
}

/// Sends an exited process's `PROC_INFO` record through `EXITS` and deletes it: its
/// `TOP` keys hold their final figures (every thread has made its last call), and
/// userspace frees them as soon as it has read them. Without room in the ring buffer the
/// record stays (counted), for userspace to find when /proc says the process is gone.
#[inline(always)]
pub(crate) fn hand_over(tgid: u32) {
    let Some(r) = PROC_INFO.get_ptr_mut(tgid) else {
        return;
    };
    let Some(mut entry) = EXITS.reserve::<ExitRecord>(0) else {
        count(0, counter::EXIT_UNSENT);
        return;
    };
    let e = entry.as_mut_ptr();
    unsafe {
        (*e).tgid = tgid;
        (*e)._pad = 0;
        (*e).info = *r;
    }
    entry.submit(0);
    let _ = PROC_INFO.remove(tgid);
}
