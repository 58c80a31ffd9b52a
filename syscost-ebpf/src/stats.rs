//! The statistics (`POOL`, `INDEX`, `BIG_INDEX`, `COUNTERS`): the entry of (process slot,
//! syscall) on this CPU, written under its sequence count, and the counters of what
//! found no room.

use crate::{
    Call,
    maps::{BIG_INDEX, COUNTERS, INDEX, POOL, POOL_NEXT, config},
};
use aya_ebpf::{bindings::BPF_NOEXIST, helpers::bpf_get_smp_processor_id};
use core::ptr::{read_volatile, write_volatile};
use syscost_common::{
    BigKey, ERRNO_PAIRS, INDEX_WORDS_PER_SLOT, KEYS_PER_INDEX_WORD, KEYS_PER_SLOT, StatsEntry,
    bucket_index, counter, counter_index, is_error_return,
};

#[inline(always)]
pub(crate) fn count(slot: u32, c: u32) {
    if let Some(n) = COUNTERS.get_ptr_mut(counter_index(slot, c)) {
        unsafe { *n += 1 };
    }
}

/// `*p += v` as a store the compiler keeps in program order with the sequence count.
#[inline(always)]
pub(crate) fn add(p: &mut u64, v: u64) {
    unsafe { write_volatile(p, read_volatile(p) + v) };
}

/// Starts a new entry for (`slot`, `key`, `nr`) in this CPU's pool region; its position
/// in the region, or `None` when the region is full.
#[inline(always)]
pub(crate) fn new_entry(slot: u32, key: u32, nr: u64) -> Option<(*mut StatsEntry, u32)> {
    let next = POOL_NEXT.get_ptr_mut(0)?;
    let i = unsafe { *next };
    if i >= config!(pool_per_cpu) {
        return None;
    }
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let e = POOL.get_ptr_mut(cpu * config!(pool_per_cpu) + i)?;
    let entry = unsafe { &mut *e };
    let seq = unsafe { read_volatile(&entry.seq) };
    unsafe {
        write_volatile(&mut entry.seq, seq + 1);
        write_volatile(&mut entry.slot, slot);
        write_volatile(&mut entry.key, key);
        write_volatile(&mut entry.nr, nr);
        write_volatile(&mut entry.seq, seq + 2);
        // Published after the owner is written: a reader that sees the count sees it.
        write_volatile(next, i + 1);
    }
    Some((e, i))
}

/// This CPU's entry for (`slot`, `key`, `nr`), made on first use.
#[inline(always)]
pub(crate) fn entry_for(slot: u32, key: u32, nr: u64) -> Option<*mut StatsEntry> {
    let per_cpu = config!(pool_per_cpu);
    if key < KEYS_PER_SLOT {
        let word = INDEX.get_ptr_mut(slot * INDEX_WORDS_PER_SLOT + key / KEYS_PER_INDEX_WORD)?;
        let lane = (key % KEYS_PER_INDEX_WORD) * 16;
        let pos = ((unsafe { *word } >> lane) & 0xffff) as u32;
        if pos != 0 {
            let cpu = unsafe { bpf_get_smp_processor_id() };
            return POOL.get_ptr_mut(cpu * per_cpu + pos - 1);
        }
        let (e, i) = new_entry(slot, key, nr)?;
        unsafe { *word |= u64::from(i + 1) << lane };
        return Some(e);
    }
    let big = BigKey { slot, key, nr };
    // BIG_INDEX is a per-CPU hash: its keys are shared by all CPUs, each CPU has a value
    // of its own (0 on the CPUs that have not seen the number yet). A failed insert is
    // another CPU's insert of the same key, or a full map (then the lookup fails too and
    // the call is dropped and counted, rather than taking a pool entry each time).
    let pos = match BIG_INDEX.get_ptr_mut(big) {
        Some(p) => p,
        None => {
            let _ = BIG_INDEX.insert(big, 0, u64::from(BPF_NOEXIST));
            BIG_INDEX.get_ptr_mut(big)?
        }
    };
    let known = unsafe { *pos };
    if known != 0 {
        let cpu = unsafe { bpf_get_smp_processor_id() };
        return POOL.get_ptr_mut(cpu * per_cpu + known - 1);
    }
    let (e, i) = new_entry(slot, key, nr)?;
    unsafe { *pos = i + 1 };
    Some(e)
}

/// Counts an errno in the entry's first pair that holds it or is free.
#[inline(always)]
pub(crate) fn count_errno(e: &mut StatsEntry, errno: u16) {
    for i in 0..ERRNO_PAIRS {
        let id = unsafe { read_volatile(&e.errnos[i]) };
        if id == errno {
            add(&mut e.errno_counts[i], 1);
            return;
        }
        if id == 0 {
            unsafe { write_volatile(&mut e.errnos[i], errno) };
            add(&mut e.errno_counts[i], 1);
            return;
        }
    }
    add(&mut e.errno_other, 1);
}

/// Adds one call to this CPU's entry of (`stats_slot`, its syscall), under the entry's
/// sequence count: odd while the entry changes, even again after. This CPU is the only
/// writer of its region (a program runs to its end on one CPU, and BPF programs do not
/// nest on a CPU for these tracepoints), so the count needs no atomics: the volatile
/// stores keep the order userspace relies on (count odd, figures, count even), and a
/// copy made between two equal even reads of the count is whole.
#[inline(always)]
pub(crate) fn record(stats_slot: u32, call: &Call, ret: i64) {
    let Some(e) = entry_for(stats_slot, call.key, call.nr) else {
        count(stats_slot, counter::DROPPED_SYSCALL);
        return;
    };
    let (ns, off_ns) = (call.ns, call.off_ns);
    let (voluntary, involuntary) = (call.voluntary, call.involuntary);
    let e = unsafe { &mut *e };
    let seq = unsafe { read_volatile(&e.seq) };
    unsafe { write_volatile(&mut e.seq, seq + 1) };
    let calls = unsafe { read_volatile(&e.calls) };
    unsafe { write_volatile(&mut e.calls, calls + 1) };
    add(&mut e.total_ns, ns);
    // Switched-out time is part of the call's wall time by construction: intervals
    // from a switch-out after the enter read the clock to the switch-in before this
    // exit read it, from one clock. Not clamped: user space checks it, and would say.
    add(&mut e.offcpu_ns, off_ns);
    if voluntary | involuntary != 0 {
        add(&mut e.voluntary, u64::from(voluntary));
        add(&mut e.involuntary, u64::from(involuntary));
    }
    if calls == 0 || ns < unsafe { read_volatile(&e.min_ns) } {
        unsafe { write_volatile(&mut e.min_ns, ns) };
    }
    if ns > unsafe { read_volatile(&e.max_ns) } {
        unsafe { write_volatile(&mut e.max_ns, ns) };
    }
    if let Some(b) = e.hist.get_mut(bucket_index(ns)) {
        add(b, 1);
    }
    if is_error_return(ret) {
        add(&mut e.errors, 1);
        count_errno(e, (-ret) as u16);
    }
    unsafe { write_volatile(&mut e.seq, seq + 2) };
}
