//! Each traced thread's state (`THREADS`, `THREADS_OVERFLOW`): the syscall in flight and
//! the thread's totals.

use crate::maps::{KSTACK_OF, THREADS, THREADS_OVERFLOW, config};
use aya_ebpf::bindings::{BPF_ANY, BPF_NOEXIST};
use core::{mem::MaybeUninit, ptr::write_volatile};
use syscost_common::ThreadSlot;

/// Writes `state` into the slot at `p`, field by field. A whole slot written at once is
/// built on the stack first and its zeroes set by a `memset` the toolchain does not
/// inline for BPF: a call that stores one byte per loop round, some 280 instructions for
/// a slot (a `bpftool prog dump xlated` shows it), on every thread's start and end.
/// The tag (`tid`) last: whoever finds it finds the state (and a slot freed is emptied
/// before it is free).
#[inline(always)]
pub(crate) fn put_thread(p: *mut ThreadSlot, state: ThreadSlot) {
    // Taken apart whole: a field added to the slot is a build error here, not a field
    // left as a stale slot or a stack value held it.
    let ThreadSlot {
        tid,
        key,
        enter_ns,
        nr,
        off_since_ns,
        off_ns,
        voluntary,
        involuntary,
        calls,
        total_ns,
    } = state;
    unsafe {
        write_volatile(&raw mut (*p).key, key);
        write_volatile(&raw mut (*p).enter_ns, enter_ns);
        write_volatile(&raw mut (*p).nr, nr);
        write_volatile(&raw mut (*p).off_since_ns, off_since_ns);
        write_volatile(&raw mut (*p).off_ns, off_ns);
        write_volatile(&raw mut (*p).voluntary, voluntary);
        write_volatile(&raw mut (*p).involuntary, involuntary);
        write_volatile(&raw mut (*p).calls, calls);
        write_volatile(&raw mut (*p).total_ns, total_ns);
        write_volatile(&raw mut (*p).tid, tid);
    }
}

/// The slot of thread `tid`, if it has one.
#[inline(always)]
pub(crate) fn thread_slot(tid: u32) -> Option<*mut ThreadSlot> {
    let p = THREADS.get_ptr_mut(tid & config!(thread_mask))?;
    if unsafe { (*p).tid } == tid {
        return Some(p);
    }
    THREADS_OVERFLOW.get_ptr_mut(tid)
}

/// Gives thread `tid` a slot: its direct one when free, else one in the overflow map;
/// `None` when both are full.
#[inline(always)]
pub(crate) fn claim_thread(tid: u32) -> Option<*mut ThreadSlot> {
    let p = THREADS.get_ptr_mut(tid & config!(thread_mask))?;
    let fresh = ThreadSlot {
        tid,
        ..ThreadSlot::EMPTY
    };
    if unsafe { (*p).tid } == 0 {
        // Threads created at the same moment have ids in sequence, so they do not race
        // for one direct slot.
        put_thread(p, fresh);
        return Some(p);
    }
    // On the stack for the insert to read, written by `put_thread` too.
    let mut v = MaybeUninit::<ThreadSlot>::uninit();
    put_thread(v.as_mut_ptr(), fresh);
    THREADS_OVERFLOW
        .insert(tid, unsafe { v.assume_init_ref() }, u64::from(BPF_NOEXIST))
        .ok()?;
    THREADS_OVERFLOW.get_ptr_mut(tid)
}

/// Gives a new thread (`state.tid`, just forked) a slot holding `state`, without looking
/// for one it has: its direct slot when free or stale with its id, else its overflow
/// entry, made or replaced. A tid is given to one thread at a time and every exit frees
/// its slot, so a new thread has no entry elsewhere to find. False without room.
#[inline(always)]
pub(crate) fn start_thread(state: ThreadSlot) -> bool {
    let tid = state.tid;
    let Some(p) = THREADS.get_ptr_mut(tid & config!(thread_mask)) else {
        return false;
    };
    let held = unsafe { (*p).tid };
    if held == 0 || held == tid {
        put_thread(p, state);
        return true;
    }
    let mut v = MaybeUninit::<ThreadSlot>::uninit();
    put_thread(v.as_mut_ptr(), state);
    THREADS_OVERFLOW
        .insert(tid, unsafe { v.assume_init_ref() }, u64::from(BPF_ANY))
        .is_ok()
}

/// Frees the slot of an exiting thread: a reused tid must not inherit a stale enter
/// time or another thread's totals.
#[inline(always)]
pub(crate) fn release_thread(tid: u32) {
    if config!(kstacks_on) != 0 {
        let _ = KSTACK_OF.remove(tid);
    }
    if let Some(p) = THREADS.get_ptr_mut(tid & config!(thread_mask))
        && unsafe { (*p).tid } == tid
    {
        put_thread(p, ThreadSlot::EMPTY);
        return;
    }
    let _ = THREADS_OVERFLOW.remove(tid);
}
