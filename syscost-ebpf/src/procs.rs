//! The traced set (`PROCS`, `PROCS_OVERFLOW`): which processes are traced, in which
//! statistics slot and with which ABI; the automatic modes' first look at a process;
//! whether an exiting thread was its group's last.

use crate::{
    maps::{PROC_INFO, PROC_NAMES, PROCS, PROCS_OVERFLOW, config},
    stats::count,
};
use aya_ebpf::{
    bindings::{BPF_ANY, BPF_NOEXIST},
    helpers::{
        bpf_get_current_task, bpf_probe_read_kernel,
        generated::{self, bpf_get_current_ancestor_cgroup_id, bpf_get_current_cgroup_id},
    },
    programs::RawTracePointContext,
};
use core::{
    hint::black_box,
    mem::MaybeUninit,
    ptr::{read_volatile, write_volatile},
};
use syscost_common::{ExitRecord, ProcRecord, ProcSlot, abi, auto_mode, counter, proc_value};

/// The direct `PROCS` slot of a tgid, read as one word: (tag, value).
#[inline(always)]
pub(crate) fn proc_slot(tgid: u32) -> Option<*mut ProcSlot> {
    PROCS.get_ptr_mut(tgid & config!(proc_mask))
}

/// A pointer to the `proc_value` of a traced process (in its direct slot, whose value
/// may carry the overflow flag, or in the overflow map), `None` when it is not traced.
#[inline(always)]
pub(crate) fn proc_value_ptr(tgid: u32) -> Option<*mut u32> {
    let p = proc_slot(tgid)?;
    // One 8-byte load: tag and value together. black_box: the program wrappers ignore
    // our return value, and without it the compiler may fold the compare into the
    // paths that follow and lose the early return.
    let word = black_box(unsafe { read_volatile(p as *const u64) });
    if word as u32 == tgid {
        return Some(unsafe { &raw mut (*p).value });
    }
    if (word >> 32) as u32 & ProcSlot::OVERFLOW == 0 {
        return None;
    }
    PROCS_OVERFLOW.get_ptr_mut(tgid)
}

/// The `proc_value` of this tgid, 0 when it is not traced. The first test on every
/// syscall of every process.
#[inline(always)]
pub(crate) fn proc_of(tgid: u32) -> u32 {
    match proc_value_ptr(tgid) {
        Some(v) => traced((unsafe { *v }) & !ProcSlot::OVERFLOW),
        None => 0,
    }
}

/// A PROCS value as the programs use it: 0 for an excluded process.
#[inline(always)]
pub(crate) fn traced(value: u32) -> u32 {
    if value == proc_value::EXCLUDED {
        0
    } else {
        value
    }
}

/// Adds a process to the traced set (a followed child); false when there is no room.
#[inline(always)]
pub(crate) fn insert_proc(tgid: u32, value: u32) -> bool {
    let Some(p) = proc_slot(tgid) else {
        return false;
    };
    let s = unsafe { &mut *p };
    if s.tgid == tgid {
        // Another thread of the process added it on another CPU a moment ago (both
        // missed it): its value is this one.
        return true;
    }
    if s.tgid == 0 {
        // Tag and value in one store. No other CPU races for this slot: pids are
        // allocated in sequence, so processes created at the same moment do not share
        // the low bits of their ids.
        let word = u64::from(tgid) | (u64::from(value | (s.value & ProcSlot::OVERFLOW)) << 32);
        unsafe { write_volatile(p as *mut u64, word) };
        return true;
    }
    if PROCS_OVERFLOW
        .insert(tgid, value, u64::from(BPF_NOEXIST))
        .is_err()
    {
        // Already there (another thread of it on another CPU, or an entry a lost flag
        // hid, which may be stale): this value, and a flag that leads to it.
        match PROCS_OVERFLOW.get_ptr_mut(tgid) {
            Some(v) => unsafe { *v = value },
            None => return false,
        }
    }
    s.value |= ProcSlot::OVERFLOW;
    true
}

/// Takes a process out of the traced set (its whole thread group has exited).
#[inline(always)]
pub(crate) fn remove_proc(tgid: u32) {
    if let Some(p) = proc_slot(tgid) {
        let s = unsafe { &mut *p };
        if s.tgid == tgid {
            let word = u64::from(s.value & ProcSlot::OVERFLOW) << 32;
            unsafe { write_volatile(p as *mut u64, word) };
            return;
        }
    }
    let _ = PROCS_OVERFLOW.remove(tgid);
}

/// The `proc_value` of a traced process with its ABI known (0 when not traced): the ABI
/// is learnt from the code segment of its first syscall after it was traced or exec'd
/// and kept in PROCS, one kernel read per process, not per call.
#[inline(always)]
pub(crate) fn process_abi(ctx: &RawTracePointContext, tgid: u32) -> u32 {
    let v = match proc_value_ptr(tgid) {
        Some(v) => v,
        None => {
            // A first event at an enter: a process that was there before tracing began
            // (or moved into the cgroup), not one just forked.
            if config!(auto_mode) == auto_mode::OFF || !auto_add(tgid, false) {
                return 0;
            }
            let Some(v) = proc_value_ptr(tgid) else {
                return 0;
            };
            v
        }
    };
    let v = unsafe { &mut *v };
    let known = *v;
    let value = known & !ProcSlot::OVERFLOW;
    if proc_value::abi(value) != abi::UNKNOWN {
        return traced(value);
    }
    let regs: *const u8 = ctx.arg(0);
    let [offset, mask, compat] = config!(compat_test);
    let reg = unsafe { bpf_probe_read_kernel(regs.add(offset as usize) as *const u64) };
    let abi = match reg {
        Ok(r) if mask != 0 && r & mask == compat => abi::COMPAT,
        _ => abi::NATIVE,
    };
    let value = proc_value::with_abi(value, abi);
    *v = value | (known & ProcSlot::OVERFLOW);
    value
}

/// A process not seen before by an automatic mode: adds it to PROCS, traced (slot 0) or
/// excluded (syscost itself, or outside the cgroup). Whether it is traced. `forked`: its
/// first event is its return from the fork that made it (see [`name_new_process`]).
#[inline(always)]
pub(crate) fn auto_add(tgid: u32, forked: bool) -> bool {
    let wanted = tgid != config!(own_tgid)
        && (config!(auto_mode) != auto_mode::CGROUP
            || current_ancestor_cgroup_id(config!(cgroup_level)) == config!(cgroup_id));
    let value = if wanted {
        proc_value::new(0, abi::UNKNOWN)
    } else {
        proc_value::EXCLUDED
    };
    // The record first: once the process is in PROCS, another of its threads may make a
    // call on another CPU, and its key's bit must find the record there.
    let top = wanted && config!(per_process_on) != 0;
    if top {
        name_new_process(tgid, forked);
    }
    if !insert_proc(tgid, value) {
        // Another thread of the process may have added it on another CPU just now.
        let traced = proc_value_ptr(tgid).is_some();
        if !traced && wanted {
            count(0, counter::DROPPED_PROCESS);
            if top {
                forget_name(tgid);
            }
        }
        return wanted && traced;
    }
    wanted
}

/// The id of the current task's cgroup v2 ancestor at `level` (itself at its own
/// level), 0 when its cgroup is not that deep: the helper's answer, or the same read
/// from the task where tracing programs lack the helper (`config.cgroup_walk`).
#[inline(always)]
pub(crate) fn current_ancestor_cgroup_id(level: u32) -> u64 {
    if config!(cgroup_walk) == 0 {
        return unsafe { bpf_get_current_ancestor_cgroup_id(level as i32) };
    }
    let task = unsafe { bpf_get_current_task() } as *const u8;
    let read_ptr = |base: *const u8, offset: u64| unsafe {
        bpf_probe_read_kernel(base.add(offset as usize) as *const u64)
            .map(|p| p as *const u8)
            .ok()
    };
    let Some(css_set) = read_ptr(task, config!(task_cgroups_offset)) else {
        return 0;
    };
    let Some(cgrp) = read_ptr(css_set, config!(css_set_dfl_cgrp_offset)) else {
        return 0;
    };
    let Ok(own_level) = (unsafe {
        bpf_probe_read_kernel(cgrp.add(config!(cgroup_level_offset) as usize) as *const i32)
    }) else {
        return 0;
    };
    if own_level < 0 || (own_level as u32) < level {
        return 0;
    }
    let at = config!(cgroup_ancestor_ids_offset) + u64::from(level) * 8;
    unsafe { bpf_probe_read_kernel(cgrp.add(at as usize) as *const u64) }.unwrap_or(0)
}

/// Where a traced process's name is kept while it lives: its `PROC_NAMES` slot, or its
/// `PROC_INFO` entry when another process held that slot.
#[derive(Clone, Copy)]
pub(crate) enum Name {
    Slot(*mut ExitRecord),
    Info(*mut ProcRecord),
}

impl Name {
    #[inline(always)]
    pub(crate) fn record(self) -> *mut ProcRecord {
        match self {
            Name::Slot(s) => unsafe { &raw mut (*s).info },
            Name::Info(r) => r,
        }
    }

    /// Frees it: the slot's tag cleared, or the entry deleted.
    #[inline(always)]
    pub(crate) fn free(self, tgid: u32) {
        match self {
            Name::Slot(s) => {
                // Still this process's: two of its threads may both hand it over.
                if unsafe { (*s).tgid } == tgid {
                    unsafe { (*s).tgid = 0 };
                }
            }
            Name::Info(_) => {
                let _ = PROC_INFO.remove(tgid);
            }
        }
    }
}

/// The `PROC_NAMES` slot of a tgid, whoever holds it.
#[inline(always)]
fn name_slot(tgid: u32) -> Option<*mut ExitRecord> {
    PROC_NAMES.get_ptr_mut(syscost_common::name_slot(tgid))
}

/// The name kept of a process, if any (an excluded process has none).
#[inline(always)]
pub(crate) fn name_of(tgid: u32) -> Option<Name> {
    if let Some(s) = name_slot(tgid)
        && unsafe { (*s).tgid } == tgid
    {
        return Some(Name::Slot(s));
    }
    PROC_INFO.get_ptr_mut(tgid).map(Name::Info)
}

/// Whether a process holds its `PROC_NAMES` slot (one array read, no hash lookup).
#[inline(always)]
pub(crate) fn name_held(tgid: u32) -> bool {
    name_slot(tgid).is_some_and(|s| unsafe { (*s).tgid } == tgid)
}

/// The comm of the current thread (the process's main thread, at its exit) in the
/// process's kept name, if it has one.
#[inline(always)]
pub(crate) fn rename_process(tgid: u32) {
    if let Some(name) = name_of(tgid) {
        write_comm(unsafe { &raw mut (*name.record()).comm });
    }
}

/// Writes the current task's comm at `dst` (map, ring or stack memory), where the
/// helper writes it: aya's `bpf_get_current_comm` returns an array it has zeroed first
/// (a `memset` call, see `threads::put_thread`) and that is then copied a byte at a
/// time. The helper fails only without a current task, and zeroes `dst` then.
#[inline(always)]
pub(crate) fn write_comm(dst: *mut [u8; 16]) {
    unsafe { generated::bpf_get_current_comm(dst.cast(), 16) };
}

/// The current task's comm and cgroup id.
#[inline(always)]
fn current_name() -> ProcRecord {
    let mut r = MaybeUninit::<ProcRecord>::uninit();
    let p = r.as_mut_ptr();
    unsafe {
        write_comm(&raw mut (*p).comm);
        (&raw mut (*p).cgroup_id).write(bpf_get_current_cgroup_id());
        r.assume_init()
    }
}

/// Names a process at its first event: its comm and cgroup now, kept for userspace. A
/// process just forked (`forked`) gets its `PROC_NAMES` slot (a tag and 24 bytes written
/// in place) when no other holds it: new processes are given pids in sequence, so two
/// whose pids share the slot's low bits never make their first event at one moment and
/// race for it. Any other (there before tracing began, moved into the cgroup, its fork
/// unseen) is named in `PROC_INFO`, or renamed in the slot it holds: at tracing start
/// many make their first events at once, and two claims of one slot could cross (the
/// programs have no compare-and-swap on the oldest kernels). A name left by an earlier
/// process with this tgid is replaced.
#[inline(always)]
pub(crate) fn name_new_process(tgid: u32, forked: bool) {
    let record = current_name();
    if forked {
        keep_name(tgid, record);
        return;
    }
    // Added again (moved within or into the cgroup) while it holds its slot: renamed
    // there, the slot being its own already.
    if let Some(s) = name_slot(tgid)
        && unsafe { (*s).tgid } == tgid
    {
        unsafe { (*s).info = record };
        return;
    }
    let _ = PROC_INFO.insert(tgid, record, u64::from(BPF_ANY));
}

/// Names a process again at exec (where its name is kept, or as a new one).
#[inline(always)]
pub(crate) fn name_process(tgid: u32) {
    let record = current_name();
    match name_of(tgid) {
        Some(name) => unsafe { *name.record() = record },
        // Not named at its first event (no room then): not a new process, so not in a
        // slot (see `name_new_process`).
        None => {
            let _ = PROC_INFO.insert(tgid, record, u64::from(BPF_ANY));
        }
    }
}

/// Keeps a name in the process's `PROC_NAMES` slot when it holds it or it is free, else
/// in `PROC_INFO`.
#[inline(always)]
fn keep_name(tgid: u32, record: ProcRecord) {
    if let Some(s) = name_slot(tgid) {
        let s = unsafe { &mut *s };
        if s.tgid == 0 || s.tgid == tgid {
            // The record before the tag: a reader that finds the tag finds the record.
            s.info = record;
            unsafe { write_volatile(&raw mut s.tgid, tgid) };
            return;
        }
    }
    // Another process holds the slot. Without room in the overflow map either, the
    // process's figures are still counted, and read when userspace finds it gone
    // instead of at its exit.
    let _ = PROC_INFO.insert(tgid, record, u64::from(BPF_ANY));
}

/// Forgets the kept name of a process that was not added after all, or that left the
/// traced set unseen (moved out of the cgroup) and exited.
#[inline(always)]
pub(crate) fn forget_name(tgid: u32) {
    if let Some(name) = name_of(tgid) {
        name.free(tgid);
    }
}

/// Whether the thread group of the current (exiting) task has no live thread left:
/// `current->signal->live`, which do_exit decrements before this tracepoint, is 0. The
/// same rule on every kernel, whatever order the threads exit in (the tracepoint's own
/// group_dead argument exists only from 6.16 on).
#[inline(always)]
pub(crate) fn group_dead() -> bool {
    let task = unsafe { bpf_get_current_task() } as *const u8;
    let Ok(signal) = (unsafe {
        bpf_probe_read_kernel(task.add(config!(task_signal_offset) as usize) as *const u64)
    }) else {
        return false;
    };
    let signal = signal as *const u8;
    matches!(
        unsafe {
            bpf_probe_read_kernel(signal.add(config!(signal_live_offset) as usize) as *const i32)
        },
        Ok(0)
    )
}
