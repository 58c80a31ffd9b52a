//! Calls by user stack (`STACK_CALLS`, `STACK_FRAMES`, `STACK_SCRATCH`, `STACK_COUNTS`,
//! `STACK_SIDE`): every traced call counted, with its time, under the (process, user
//! stack, syscall) it was made from. A stack is known by the hash of its frame-pointer
//! walk; its frames are kept once per window, and a sample of its calls carries a copy
//! of the stack for userspace to unwind where the walk stops early (code built without
//! frame pointers). The keys carry the window (`STACK_SIDE`) they were counted in:
//! userspace swaps it, waits until no program still runs on the old one, and drains that
//! window's entries, so the tables hold one window's stacks, not the run's.

use crate::{
    maps::{CALL_RING, STACK_CALLS, STACK_COUNTS, STACK_FRAMES, STACK_SCRATCH, STACK_SIDE, config},
    mem::zero_as_words,
};
use aya_ebpf::{
    EbpfContext as _,
    bindings::{BPF_F_USER_STACK, BPF_NOEXIST, BPF_RB_AVAIL_DATA},
    helpers::generated::bpf_get_stack,
    programs::RawTracePointContext,
};
use core::mem::MaybeUninit;
use syscost_common::{
    STACK_FRAMES as FRAMES, STACK_HASH_START, StackKey, StackValue, UserStack, stack_counter,
    stack_hash_step, stack_in_window,
};

/// `-EEXIST`: another CPU inserted the same key first.
const EEXIST: i32 = -17;

/// Whether a call is one of its stack's samples, and whether it wakes the reader.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackSample {
    No,
    /// The first of its entry in the window: it names the stack, and is sent while the
    /// process still lives to have its objects read: the reader is woken.
    Wake,
    /// A later one: it waits for the reader's next look (its poll: 1 ms while records
    /// come, 10 ms when idle), not worth a wake-up (an interrupt, which a virtual
    /// machine pays tens of microseconds for, on the traced call).
    Quiet,
}

/// Adds the call to its stack's figures in the current window; returns the stack's key
/// (`syscost_common::stack_in_window`: with no user stack walked, 0 or the side bit)
/// and whether this call is one of the stack's samples.
#[inline(always)]
pub(crate) fn count_stack(
    ctx: &RawTracePointContext,
    tgid: u32,
    key: u32,
    ns: u64,
) -> (u64, StackSample) {
    let side = STACK_SIDE.get(0).copied().unwrap_or(0);
    // The walk, when one was made: its frames are kept with the first call of each
    // (process, stack, syscall) of the window, so that a call whose entry is there
    // already costs one lookup (its entry's), not two.
    let mut hash = stack_in_window(0, side);
    let mut walk: Option<*mut UserStack> = None;
    if let Some((s, h)) = walk_user_stack(ctx) {
        hash = stack_in_window(h, side);
        walk = Some(s);
    }
    let walked = walk.is_some();
    let key = StackKey {
        stack: hash,
        tgid,
        key,
    };
    let value = match STACK_CALLS.get_ptr_mut(&key) {
        Some(v) => v,
        None => {
            // The call that makes the entry keeps the walk (another entry of the window,
            // another process or syscall, may have kept it already); a call whose entry
            // found no room keeps none.
            let mut zero = MaybeUninit::<StackValue>::uninit();
            unsafe { zero_as_words::<_, 2>(zero.as_mut_ptr()) };
            if STACK_CALLS
                .insert(
                    &key,
                    unsafe { zero.assume_init_ref() },
                    u64::from(BPF_NOEXIST),
                )
                .is_ok()
                && let Some(s) = walk
                && let Err(e) = STACK_FRAMES.insert(&hash, unsafe { &*s }, u64::from(BPF_NOEXIST))
                && e != EEXIST
            {
                count(stack_counter::FRAMES_DROPPED);
            }
            match STACK_CALLS.get_ptr_mut(&key) {
                Some(v) => v,
                None => {
                    count(stack_counter::CALLS_DROPPED);
                    return (hash, StackSample::No);
                }
            }
        }
    };
    let calls = unsafe {
        (*value).calls += 1;
        (*value).total_ns += ns;
        (*value).calls
    };
    if !walked || (calls - 1) & u64::from(config!(stacks_sample_mask)) != 0 {
        return (hash, StackSample::No);
    }
    // Samples take at most half of the ring: the slow calls' reports keep the rest, and a
    // sample without room is counted as one the ring had no room for.
    if CALL_RING.query(u64::from(BPF_RB_AVAIL_DATA)) >= u64::from(config!(stacks_ring_limit)) {
        count(stack_counter::SAMPLES_DROPPED);
        return (hash, StackSample::No);
    }
    if calls == 1 {
        (hash, StackSample::Wake)
    } else {
        (hash, StackSample::Quiet)
    }
}

/// The current task's user stack, walked by its frame pointers into this CPU's
/// `STACK_SCRATCH` (its frames and their byte count), and the stack's hash
/// (`syscost_common::stack_hash_step` over the frames); `None` when no frame was walked.
#[inline(always)]
pub(crate) fn walk_user_stack(ctx: &RawTracePointContext) -> Option<(*mut UserStack, u64)> {
    let scratch = STACK_SCRATCH.get_ptr_mut(0)?;
    let s = unsafe { &mut *scratch };
    let got = unsafe {
        bpf_get_stack(
            ctx.as_ptr(),
            (&raw mut s.frames).cast(),
            (FRAMES * 8) as u32,
            u64::from(BPF_F_USER_STACK),
        )
    };
    if got <= 0 {
        return None;
    }
    let n = got as usize / 8;
    let mut h = STACK_HASH_START;
    for i in 0..FRAMES {
        if i >= n {
            break;
        }
        h = stack_hash_step(h, s.frames[i]);
    }
    s.bytes = got as u64;
    Some((scratch, h))
}

/// One more of `STACK_COUNTS`' counter `c` on this CPU.
#[inline(always)]
pub(crate) fn count(c: u32) {
    if let Some(n) = STACK_COUNTS.get_ptr_mut(c) {
        unsafe { *n += 1 };
    }
}
