//! The per-process figures of the automatic modes (`TOP`, `EXITS`): calls,
//! errors and time per (process, syscall), and each process's record at exit.

use crate::{
    Call,
    maps::{EXITS, PROC_INFO, TOP},
    mem::copy_as_words,
    procs::{Name, name_of, write_comm},
    stats::add,
    stats::count,
};
use aya_ebpf::bindings::{BPF_ANY, BPF_NOEXIST};
use core::mem::MaybeUninit;
use syscost_common::{ExitRecord, ProcRecord, TopKey, TopValue, counter, is_error_return};

/// Adds a call to this CPU's `TOP` figures of (process, syscall).
#[inline(always)]
pub(crate) fn count_top(tgid: u32, stats_slot: u32, call: &Call, ret: i64) {
    let (key, ns, off_ns) = (call.key, call.ns, call.off_ns);
    let k = TopKey { tgid, key };
    let error = is_error_return(ret);
    let v = match TOP.get_ptr_mut(k) {
        Some(v) => v,
        None => {
            // A new pair is made with its first call in it: no lookup after the insert.
            // Another thread of the process may add the key on another CPU at the same
            // moment: whichever insert comes first makes it (and counts it made), the
            // other adds its call to it.
            let first = TopValue {
                calls: 1,
                errors: u64::from(error),
                total_ns: ns,
                offcpu_ns: off_ns,
            };
            if TOP.insert(k, first, u64::from(BPF_NOEXIST)).is_ok() {
                count(0, counter::TOP_MADE);
                return;
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
    if error {
        add(&mut v.errors, 1);
    }
    add(&mut v.total_ns, ns);
    add(&mut v.offcpu_ns, off_ns);
    add(&mut v.calls, 1);
}

/// Sends an exited process's name record (its `PROC_NAMES` slot, or its `PROC_INFO`
/// entry) through `EXITS` and frees it: its `TOP` keys hold their final figures (every
/// thread has made its last call), and userspace frees them as soon as it has read them.
/// Without room in the ring buffer the record is kept in `PROC_INFO` (counted), for
/// userspace to find when /proc says the process is gone. `main_thread`: the exiting
/// thread is the main one, whose name the record takes (the name the process ended with).
#[inline(always)]
pub(crate) fn hand_over(tgid: u32, main_thread: bool) {
    let Some(name) = name_of(tgid) else {
        return;
    };
    let r = name.record();
    // The comm is read where it is written: with an Option of it held on the stack
    // across the reserve, 5.10's and 6.1's verifiers refused this program (likely for
    // the None's uninitialised bytes, which they let no program read).
    let Some(mut entry) = EXITS.reserve::<ExitRecord>(0) else {
        count(0, counter::EXIT_UNSENT);
        match name {
            // Kept in PROC_INFO for userspace, and the slot freed once it is there (left
            // as it is, for userspace to read, when the map has no room either).
            Name::Slot(slot) => {
                let mut kept = MaybeUninit::<ProcRecord>::uninit();
                let k = kept.as_mut_ptr();
                unsafe { copy_as_words::<_, 3>(k, r) };
                if main_thread {
                    write_comm(unsafe { &raw mut (*k).comm });
                }
                if unsafe { (*slot).tgid } == tgid
                    && PROC_INFO
                        .insert(tgid, unsafe { kept.assume_init_ref() }, u64::from(BPF_ANY))
                        .is_ok()
                {
                    name.free(tgid);
                }
            }
            Name::Info(r) => {
                if main_thread {
                    write_comm(unsafe { &raw mut (*r).comm });
                }
            }
        }
        return;
    };
    let e = entry.as_mut_ptr();
    unsafe {
        (*e).tgid = tgid;
        (*e)._pad = 0;
        copy_as_words::<_, 3>(&raw mut (*e).info, r);
    }
    if main_thread {
        write_comm(unsafe { &raw mut (*e).info.comm });
    }
    // Two of the process's threads may hand it over at once: once the other has freed the
    // slot, a new process may write its own name there. Copied and still this process's:
    // the copy is its name.
    if let Name::Slot(slot) = name
        && unsafe { (*slot).tgid } != tgid
    {
        entry.discard(0);
        return;
    }
    // The kernel's own choice of wakeup: only the first record after the reader caught
    // up wakes it (an irq_work). The reader then lets 50 ms pass before it reads and
    // waits again, so a churn of exits costs at most 20 wakeups a second, and an idle
    // reader sleeps until an exit instead of looking at the ring on a timer.
    entry.submit(0);
    name.free(tgid);
}
