//! syscost's kernel side: per-syscall counts, errors and latency histograms of the
//! profiled processes, aggregated in the kernel. No per-event traffic leaves it.
//!
//! Program type: raw tracepoints. All three types attach to sys_enter/sys_exit here;
//! raw tracepoints were measured cheaper than classic tracepoints (empty program on
//! getpid: about 216 ns added against 336 ns for the classic tracepoint), need no
//! tracefs, and tp_btf would add nothing we read.
//!
//! Tables (see `syscost_common` for the layouts): `PROCS` and `THREADS` are indexed by
//! the low bits of the tgid / tid and tagged with the whole id, with a hash map each for
//! the rare ids that collide; the statistics live in `POOL`, one region per CPU, an
//! entry per (process slot, syscall) in use on that CPU, found through that CPU's
//! `INDEX`. Every table has a fixed size chosen at load time, none grows with pid_max;
//! whatever finds no room is counted in `COUNTERS`.
//!
//! Automatic modes (`AUTO_MODE`): with every process (`syscost top`) or every process of
//! one cgroup v2 (`--cgroup`) traced, a process is looked at on its first syscall seen,
//! and added to PROCS either as traced or as `EXCLUDED`, so each later syscall costs the
//! same one lookup as in the other modes. A process moved to another cgroup is taken out
//! of PROCS and looked at again. `TOP` keeps per-process figures (no histograms) of every
//! traced process when `TOP_ON`; the pool's full statistics are kept for slots from
//! `POOL_FROM_SLOT` on (all of them, except in `syscost top`, where slot 0 holds the
//! processes not drilled into).
#![no_std]
#![no_main]
// atomic_xadd: the BPF target has no atomic types; the intrinsic with an unused result
// is BPF's fetch-less atomic add, which every kernel has.
#![allow(internal_features)]
#![feature(core_intrinsics)]

use core::{
    hint::black_box,
    ptr::{read_volatile, write_volatile},
};

use aya_ebpf::{
    EbpfContext as _, Global,
    bindings::{BPF_F_USER_STACK, BPF_NOEXIST},
    helpers::{
        bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_current_task,
        bpf_get_smp_processor_id, bpf_ktime_get_ns, bpf_probe_read_kernel,
        generated::{bpf_get_current_ancestor_cgroup_id, bpf_get_current_cgroup_id, bpf_get_stack},
    },
    macros::{map, raw_tracepoint},
    maps::{Array, HashMap, PerCpuArray, PerCpuHashMap, RingBuf},
    programs::RawTracePointContext,
};
use aya_log_ebpf::warn;
use syscost_common::{
    BigKey, BlockedStack, COMPAT_BASE, ERRNO_PAIRS, ExitRecord, INDEX_WORDS_PER_SLOT,
    KERNEL_STACK_FRAMES, KEY_BIG_COMPAT, KEY_BIG_NATIVE, KEY_FORK_CHILD, KEY_NONE,
    KEYS_PER_INDEX_WORD, KEYS_PER_SLOT, ProcRecord, ProcSlot, SLOW_STACK_FRAMES, SlowEvent,
    StatsEntry, ThreadSlot, TopKey, TopValue, USER32_CS, abi, auto_mode, bucket_index, counter,
    counter_index, proc_value, syscall_key, top_key_bit,
};

/// BPF_F_MMAPABLE: userspace maps these arrays and reads them without syscalls.
const MMAPABLE: u32 = 1 << 10;

/// Traced processes, direct-mapped: index `tgid & PROC_MASK`.
#[map]
static PROCS: Array<ProcSlot> = Array::with_max_entries(1, 0);

/// Traced processes whose direct slot was taken by another one: tgid -> `proc_value`.
#[map]
static PROCS_OVERFLOW: HashMap<u32, u32> = HashMap::with_max_entries(1, 0);

/// Per-thread state, direct-mapped: index `tid & THREAD_MASK`.
#[map]
static THREADS: Array<ThreadSlot> = Array::with_max_entries(1, MMAPABLE);

/// Threads whose direct slot was taken by another one: tid -> state.
#[map]
static THREADS_OVERFLOW: HashMap<u32, ThreadSlot> = HashMap::with_max_entries(1, 0);

/// Per CPU: (process slot, syscall key) -> position in this CPU's pool region plus one,
/// four 16-bit positions to a word (index `slot * INDEX_WORDS_PER_SLOT + key / 4`).
#[map]
static INDEX: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// Per CPU: syscall numbers without a key of their own -> pool position plus one.
#[map]
static BIG_INDEX: PerCpuHashMap<BigKey, u32> = PerCpuHashMap::with_max_entries(1, 0);

/// The statistics: CPU `c`'s region is `c * POOL_PER_CPU ..`, filled in order of first use.
#[map]
static POOL: Array<StatsEntry> = Array::with_max_entries(1, MMAPABLE);

/// Per CPU: entries of its pool region in use.
#[map]
static POOL_NEXT: PerCpuArray<u32> = PerCpuArray::with_max_entries(1, 0);

/// Counters of events that did not make it into the statistics, per process slot: index
/// `counter_index(slot, counter)`.
#[map]
static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(counter::COUNT, 0);

/// Per process and syscall, per CPU: calls, errors, time (`TOP_ON` only). Userspace
/// deletes the keys of a process once it has read their final figures, as soon as the
/// process's `EXITS` record arrives.
#[map]
static TOP: PerCpuHashMap<TopKey, TopValue> = PerCpuHashMap::with_max_entries(1, 0);

/// The processes the automatic modes trace, while they live (`TOP_ON` only): name,
/// cgroup and their `TOP` keys. Sent through `EXITS` and deleted at their exit.
#[map]
static PROC_INFO: HashMap<u32, ProcRecord> = HashMap::with_max_entries(1, 0);

/// Each traced process's `PROC_INFO` record at its exit (`TOP_ON` only): which `TOP`
/// keys to read one last time and free.
#[map]
static EXITS: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Slow calls (`--slow`), the only per-call traffic, and only with `SLOW_ON`.
#[map]
static SLOW: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Per syscall key: the latency from which a call is slow, ns (u64::MAX: never).
#[map]
static SLOW_NS: Array<u64> = Array::with_max_entries(1, 0);

/// `syscost top`'s drill-down: the process (tgid) whose calls also go to the pool, in
/// slot `POOL_FROM_SLOT`, while it is shown (0: none).
#[map]
static DRILL: Array<u32> = Array::with_max_entries(1, 0);

/// With `--kernel-stacks`: per thread, the kernel stack where it last blocked inside a
/// syscall, copied (nothing shared between threads, nothing overwritten by another).
#[map]
static KSTACK_OF: HashMap<u32, BlockedStack> = HashMap::with_max_entries(1, 0);

/// Take the kernel stack of every blocking switch inside a traced call (`--slow` with
/// `--kernel-stacks`): a stack walk per blocking switch.
#[unsafe(no_mangle)]
static KSTACKS_ON: Global<u32> = Global::new(0);

/// Report slow calls.
#[unsafe(no_mangle)]
static SLOW_ON: Global<u32> = Global::new(0);
/// The threshold of numbers without a key of their own.
#[unsafe(no_mangle)]
static SLOW_DEFAULT_NS: Global<u64> = Global::new(0);
/// Offsets of the argument registers in `struct pt_regs`: 64-bit (di, si, dx, r10, r8,
/// r9), then 32-bit (bx, cx, dx, si, di, bp).
#[unsafe(no_mangle)]
static PT_REGS_ARG_OFFSETS: Global<[u64; 6]> = Global::new([0; 6]);
#[unsafe(no_mangle)]
static PT_REGS_COMPAT_ARG_OFFSETS: Global<[u64; 6]> = Global::new([0; 6]);

/// `auto_mode::*`.
#[unsafe(no_mangle)]
static AUTO_MODE: Global<u32> = Global::new(0);
/// The cgroup of `auto_mode::CGROUP`: its id and its level in the v2 hierarchy.
#[unsafe(no_mangle)]
static CGROUP_ID: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static CGROUP_LEVEL: Global<u32> = Global::new(0);
/// syscost's own process, left out of the automatic modes.
#[unsafe(no_mangle)]
static OWN_TGID: Global<u32> = Global::new(0);
/// Keep `TOP` up to date.
#[unsafe(no_mangle)]
static TOP_ON: Global<u32> = Global::new(0);
/// Slots below this get no pool entries (their figures are in `TOP` only).
#[unsafe(no_mangle)]
static POOL_FROM_SLOT: Global<u32> = Global::new(0);

/// Add forked child processes of traced processes to PROCS (threads are always followed).
#[unsafe(no_mangle)]
static FOLLOW_FORKS: Global<u32> = Global::new(0);
/// Table sizes (powers of two, as masks) and the pool entries per CPU, set at load.
#[unsafe(no_mangle)]
static PROC_MASK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
static THREAD_MASK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
static POOL_PER_CPU: Global<u32> = Global::new(0);
/// Byte offsets in the running kernel's structures, read from its BTF by userspace.
#[unsafe(no_mangle)]
static TASK_PID_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static TASK_TGID_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static TASK_SIGNAL_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static SIGNAL_LIVE_OFFSET: Global<u64> = Global::new(0);
/// Byte offset of `cs` in `struct pt_regs`: it tells 32-bit user code from 64-bit.
#[unsafe(no_mangle)]
static PT_REGS_CS_OFFSET: Global<u64> = Global::new(0);
/// Where sched_switch learns the previous task's state: 0, its `prev_state` argument
/// (from 5.18); else the byte offset of `task_struct.__state` (`.state` before 5.14),
/// read from the task, on kernels whose tracepoint has no such argument.
#[unsafe(no_mangle)]
static TASK_STATE_OFFSET: Global<u64> = Global::new(0);
/// How `--cgroup` finds the current task's ancestor at `CGROUP_LEVEL`: 0, the
/// `bpf_get_current_ancestor_cgroup_id` helper (tracing programs have it from 5.14);
/// 1, the task's default-hierarchy cgroup read through the offsets below
/// (`task->cgroups->dfl_cgrp`, its `level` and `ancestor_ids[]`), as the helper does.
#[unsafe(no_mangle)]
static CGROUP_WALK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
static TASK_CGROUPS_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static CSS_SET_DFL_CGRP_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static CGROUP_LEVEL_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static CGROUP_ANCESTOR_IDS_OFFSET: Global<u64> = Global::new(0);

#[inline(always)]
fn count(slot: u32, c: u32) {
    if let Some(n) = COUNTERS.get_ptr_mut(counter_index(slot, c)) {
        unsafe { *n += 1 };
    }
}

/// The direct `PROCS` slot of a tgid, read as one word: (tag, value).
#[inline(always)]
fn proc_slot(tgid: u32) -> Option<*mut ProcSlot> {
    PROCS.get_ptr_mut(tgid & PROC_MASK.load())
}

/// A pointer to the `proc_value` of a traced process (in its direct slot, whose value
/// may carry the overflow flag, or in the overflow map), `None` when it is not traced.
#[inline(always)]
fn proc_value_ptr(tgid: u32) -> Option<*mut u32> {
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
fn proc_of(tgid: u32) -> u32 {
    match proc_value_ptr(tgid) {
        Some(v) => traced((unsafe { *v }) & !ProcSlot::OVERFLOW),
        None => 0,
    }
}

/// A PROCS value as the programs use it: 0 for an excluded process.
#[inline(always)]
fn traced(value: u32) -> u32 {
    if value == proc_value::EXCLUDED {
        0
    } else {
        value
    }
}

/// Adds a process to the traced set (a followed child); false when there is no room.
#[inline(always)]
fn insert_proc(tgid: u32, value: u32) -> bool {
    let Some(p) = proc_slot(tgid) else {
        return false;
    };
    let s = unsafe { &mut *p };
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
fn remove_proc(tgid: u32) {
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
fn process_abi(ctx: &RawTracePointContext, tgid: u32) -> u32 {
    let v = match proc_value_ptr(tgid) {
        Some(v) => v,
        None => {
            if AUTO_MODE.load() == auto_mode::OFF || !auto_add(tgid) {
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
    let cs =
        unsafe { bpf_probe_read_kernel(regs.add(PT_REGS_CS_OFFSET.load() as usize) as *const u64) };
    let abi = match cs {
        Ok(cs) if cs & 0xffff == USER32_CS => abi::COMPAT,
        _ => abi::NATIVE,
    };
    let value = proc_value::with_abi(value, abi);
    *v = value | (known & ProcSlot::OVERFLOW);
    value
}

/// A process not seen before by an automatic mode: adds it to PROCS, traced (slot 0) or
/// excluded (syscost itself, or outside the cgroup). Whether it is traced.
#[inline(always)]
fn auto_add(tgid: u32) -> bool {
    let wanted = tgid != OWN_TGID.load()
        && (AUTO_MODE.load() != auto_mode::CGROUP
            || current_ancestor_cgroup_id(CGROUP_LEVEL.load()) == CGROUP_ID.load());
    let value = if wanted {
        proc_value::new(0, abi::UNKNOWN)
    } else {
        proc_value::EXCLUDED
    };
    // The record first: once the process is in PROCS, another of its threads may make a
    // call on another CPU, and its key's bit must find the record there.
    let top = wanted && TOP_ON.load() != 0;
    if top {
        name_process(tgid);
    }
    if !insert_proc(tgid, value) {
        // Another thread of the process may have added it on another CPU just now.
        let traced = proc_value_ptr(tgid).is_some();
        if !traced && wanted {
            count(0, counter::DROPPED_PROCESS);
            if top {
                let _ = PROC_INFO.remove(tgid);
            }
        }
        return wanted && traced;
    }
    wanted
}

/// The id of the current task's cgroup v2 ancestor at `level` (itself at its own
/// level), 0 when its cgroup is not that deep: the helper's answer, or the same read
/// from the task where tracing programs lack the helper (`CGROUP_WALK`).
#[inline(always)]
fn current_ancestor_cgroup_id(level: u32) -> u64 {
    if CGROUP_WALK.load() == 0 {
        return unsafe { bpf_get_current_ancestor_cgroup_id(level as i32) };
    }
    let task = unsafe { bpf_get_current_task() } as *const u8;
    let read_ptr = |base: *const u8, offset: u64| unsafe {
        bpf_probe_read_kernel(base.add(offset as usize) as *const u64)
            .map(|p| p as *const u8)
            .ok()
    };
    let Some(css_set) = read_ptr(task, TASK_CGROUPS_OFFSET.load()) else {
        return 0;
    };
    let Some(cgrp) = read_ptr(css_set, CSS_SET_DFL_CGRP_OFFSET.load()) else {
        return 0;
    };
    let Ok(own_level) = (unsafe {
        bpf_probe_read_kernel(cgrp.add(CGROUP_LEVEL_OFFSET.load() as usize) as *const i32)
    }) else {
        return 0;
    };
    if own_level < 0 || (own_level as u32) < level {
        return 0;
    }
    let at = CGROUP_ANCESTOR_IDS_OFFSET.load() + u64::from(level) * 8;
    unsafe { bpf_probe_read_kernel(cgrp.add(at as usize) as *const u64) }.unwrap_or(0)
}

/// Keeps the process's name (its comm now) and cgroup for userspace, in its
/// `PROC_INFO` record (made at its first syscall, renamed at exec).
#[inline(always)]
fn name_process(tgid: u32) {
    let Ok(comm) = bpf_get_current_comm() else {
        return;
    };
    let cgroup_id = unsafe { bpf_get_current_cgroup_id() };
    if let Some(r) = PROC_INFO.get_ptr_mut(tgid) {
        unsafe {
            (*r).comm = comm;
            (*r).cgroup_id = cgroup_id;
        }
        return;
    }
    let record = ProcRecord {
        comm,
        cgroup_id,
        ..ProcRecord::EMPTY
    };
    // No room: the process's figures are still counted, and read when userspace finds it
    // gone instead of at its exit.
    let _ = PROC_INFO.insert(tgid, record, u64::from(BPF_NOEXIST));
}

/// Marks `key` as one of the process's `TOP` keys. Called once per key (by the insert
/// that made it), so an atomic add sets the bit even when another CPU sets another
/// bit of the same word (a fetch-less add: kernels before 5.12 have no atomic or).
#[inline(always)]
fn mark_top_key(tgid: u32, key: u32) {
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

/// The slot of thread `tid`, if it has one.
#[inline(always)]
fn thread_slot(tid: u32) -> Option<*mut ThreadSlot> {
    let p = THREADS.get_ptr_mut(tid & THREAD_MASK.load())?;
    if unsafe { (*p).tid } == tid {
        return Some(p);
    }
    THREADS_OVERFLOW.get_ptr_mut(tid)
}

/// Gives thread `tid` a slot: its direct one when free, else one in the overflow map;
/// `None` when both are full.
#[inline(always)]
fn claim_thread(tid: u32) -> Option<*mut ThreadSlot> {
    let p = THREADS.get_ptr_mut(tid & THREAD_MASK.load())?;
    let fresh = ThreadSlot {
        tid,
        ..ThreadSlot::EMPTY
    };
    if unsafe { (*p).tid } == 0 {
        // Threads created at the same moment have ids in sequence, so they do not race
        // for one direct slot.
        unsafe { *p = fresh };
        return Some(p);
    }
    THREADS_OVERFLOW
        .insert(tid, fresh, u64::from(BPF_NOEXIST))
        .ok()?;
    THREADS_OVERFLOW.get_ptr_mut(tid)
}

/// Frees the slot of an exiting thread: a reused tid must not inherit a stale enter
/// time or another thread's totals.
#[inline(always)]
fn release_thread(tid: u32) {
    if KSTACKS_ON.load() != 0 {
        let _ = KSTACK_OF.remove(tid);
    }
    if let Some(p) = THREADS.get_ptr_mut(tid & THREAD_MASK.load())
        && unsafe { (*p).tid } == tid
    {
        unsafe { *p = ThreadSlot::EMPTY };
        return;
    }
    let _ = THREADS_OVERFLOW.remove(tid);
}

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn syscost_sys_enter(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let process = process_abi(&ctx, (pid_tgid >> 32) as u32);
    if process == 0 {
        return 0;
    }
    let tid = pid_tgid as u32;
    // A thread without room gets none here; its exit counts the call as dropped.
    let Some(slot) = thread_slot(tid).or_else(|| claim_thread(tid)) else {
        return 0;
    };
    let nr: u64 = ctx.arg(1);
    let slot = unsafe { &mut *slot };
    slot.key = syscall_key(proc_value::abi(process), nr);
    slot.nr = nr;
    slot.off_since_ns = 0;
    slot.off_ns = 0;
    slot.voluntary = 0;
    slot.involuntary = 0;
    slot.enter_ns = unsafe { bpf_ktime_get_ns() };
    0
}

/// `*p += v` as a store the compiler keeps in program order with the sequence count.
#[inline(always)]
fn add(p: &mut u64, v: u64) {
    unsafe { write_volatile(p, read_volatile(p) + v) };
}

/// Starts a new entry for (`slot`, `key`, `nr`) in this CPU's pool region; its position
/// in the region, or `None` when the region is full.
#[inline(always)]
fn new_entry(slot: u32, key: u32, nr: u64) -> Option<(*mut StatsEntry, u32)> {
    let next = POOL_NEXT.get_ptr_mut(0)?;
    let i = unsafe { *next };
    if i >= POOL_PER_CPU.load() {
        return None;
    }
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let e = POOL.get_ptr_mut(cpu * POOL_PER_CPU.load() + i)?;
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
fn entry_for(slot: u32, key: u32, nr: u64) -> Option<*mut StatsEntry> {
    let per_cpu = POOL_PER_CPU.load();
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

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn syscost_sys_exit(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let process = proc_of((pid_tgid >> 32) as u32);
    if process == 0 {
        return 0;
    }
    let now = unsafe { bpf_ktime_get_ns() };
    let mut stats_slot = proc_value::slot(process);
    let pool_from = POOL_FROM_SLOT.load();
    if stats_slot < pool_from
        && DRILL
            .get(0)
            .is_some_and(|&t| t != 0 && t == (pid_tgid >> 32) as u32)
    {
        stats_slot = pool_from;
    }
    let tid = pid_tgid as u32;
    let Some(slot) = thread_slot(tid) else {
        // In flight when tracing began (the thread gets a slot now), or no room.
        let c = if claim_thread(tid).is_some() {
            counter::UNPAIRED
        } else {
            counter::DROPPED_THREAD
        };
        count(stats_slot, c);
        return 0;
    };
    let slot = unsafe { &mut *slot };
    let start = slot.enter_ns;
    let key = slot.key;
    slot.key = KEY_NONE;
    if start == 0 {
        // A new thread returning from clone never entered this syscall.
        if key != KEY_FORK_CHILD {
            count(stats_slot, counter::UNPAIRED);
        }
        return 0;
    }
    slot.enter_ns = 0;
    let ns = now - start;
    slot.calls += 1;
    slot.total_ns += ns;
    let off_ns = slot.off_ns;
    let (voluntary, involuntary) = (slot.voluntary, slot.involuntary);
    let ret: i64 = ctx.arg(1);
    if SLOW_ON.load() != 0 {
        let threshold = if key < KEYS_PER_SLOT {
            SLOW_NS.get(key).copied().unwrap_or(u64::MAX)
        } else {
            SLOW_DEFAULT_NS.load()
        };
        if ns >= threshold {
            let off = off_ns;
            report_slow(
                &ctx, pid_tgid, stats_slot, key, slot.nr, ns, off, ret, now, start,
            );
        }
    }
    if TOP_ON.load() != 0 {
        count_top((pid_tgid >> 32) as u32, key, stats_slot, ns, off_ns, ret);
    }
    if stats_slot < pool_from {
        return 0;
    }

    let Some(e) = entry_for(stats_slot, key, slot.nr) else {
        count(stats_slot, counter::DROPPED_SYSCALL);
        return 0;
    };
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
    if (-4095..0).contains(&ret) {
        add(&mut e.errors, 1);
        count_errno(e, (-ret) as u16);
    }
    unsafe { write_volatile(&mut e.seq, seq + 2) };
    0
}

/// Sends a slow call through the ring buffer: its figures, arguments and user stack.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn report_slow(
    ctx: &RawTracePointContext,
    pid_tgid: u64,
    stats_slot: u32,
    key: u32,
    nr: u64,
    ns: u64,
    off_ns: u64,
    ret: i64,
    now: u64,
    start: u64,
) {
    let Some(mut entry) = SLOW.reserve::<SlowEvent>(0) else {
        count(stats_slot, counter::DROPPED_SLOW);
        return;
    };
    let e = entry.as_mut_ptr();
    let regs: *const u8 = ctx.arg(0);
    unsafe {
        (*e).exit_ns = now;
        (*e).latency_ns = ns;
        (*e).offcpu_ns = off_ns;
        (*e).nr = nr;
        (*e).ret = ret;
        let compat = key == KEY_BIG_COMPAT || (COMPAT_BASE..KEY_BIG_NATIVE).contains(&key);
        let offsets = if compat {
            PT_REGS_COMPAT_ARG_OFFSETS.load()
        } else {
            PT_REGS_ARG_OFFSETS.load()
        };
        for i in 0..6 {
            (*e).args[i] =
                bpf_probe_read_kernel(regs.add(offsets[i] as usize) as *const u64).unwrap_or(0);
        }
        (*e).tgid = (pid_tgid >> 32) as u32;
        (*e).tid = pid_tgid as u32;
        (*e).key = key;
        (*e).slot = stats_slot;
        (*e).kernel_stack_bytes = 0;
        if KSTACKS_ON.load() != 0
            && let Some(k) = KSTACK_OF.get(pid_tgid as u32)
            && k.enter_ns == start
            && k.bytes > 0
        {
            (*e).kernel_stack = k.stack;
            (*e).kernel_stack_bytes = k.bytes as u32;
        }
        (*e).comm = bpf_get_current_comm().unwrap_or([0; 16]);
        (*e).stack_bytes = bpf_get_stack(
            ctx.as_ptr(),
            (&raw mut (*e).stack).cast(),
            (SLOW_STACK_FRAMES * 8) as u32,
            u64::from(BPF_F_USER_STACK),
        ) as i32;
    }
    entry.submit(0);
    count(stats_slot, counter::SLOW);
}

/// Adds a call to this CPU's `TOP` figures of (process, syscall).
#[inline(always)]
fn count_top(tgid: u32, key: u32, stats_slot: u32, ns: u64, off_ns: u64, ret: i64) {
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
    if (-4095..0).contains(&ret) {
        add(&mut v.errors, 1);
    }
    add(&mut v.total_ns, ns);
    add(&mut v.offcpu_ns, off_ns);
    add(&mut v.calls, 1);
}

/// Counts an errno in the entry's first pair that holds it or is free.
#[inline(always)]
fn count_errno(e: &mut StatsEntry, errno: u16) {
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

/// sched_process_fork(struct task_struct *parent, struct task_struct *child), run in
/// the parent. Gives the new thread a slot marked so its return from clone is not
/// counted as unpaired, and with FOLLOW_FORKS adds a new child process to PROCS.
#[raw_tracepoint(tracepoint = "sched_process_fork")]
pub fn syscost_fork(ctx: RawTracePointContext) -> i32 {
    let parent_tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    // A forked child runs the parent's program (and ABI) until it execs, and is counted
    // in the parent's slot.
    let parent = proc_of(parent_tgid);
    if parent == 0 {
        return 0;
    }
    let stats_slot = proc_value::slot(parent);
    let child: *const u8 = ctx.arg(1);
    let (Ok(pid), Ok(tgid)) = (unsafe {
        (
            bpf_probe_read_kernel(child.add(TASK_PID_OFFSET.load() as usize) as *const u32),
            bpf_probe_read_kernel(child.add(TASK_TGID_OFFSET.load() as usize) as *const u32),
        )
    }) else {
        count(stats_slot, counter::DROPPED_CHILD);
        return 0;
    };
    let new_process = tgid != parent_tgid;
    if new_process && FOLLOW_FORKS.load() == 0 {
        return 0;
    }
    if new_process && !insert_proc(tgid, parent) {
        count(stats_slot, counter::DROPPED_CHILD);
        warn!(&ctx, "no room to trace child process {}", tgid);
        return 0;
    }
    // A new thread has no state: whatever a slot with its id held is forgotten. Without
    // room now, the thread tries again at its first syscall.
    if let Some(slot) = thread_slot(pid).or_else(|| claim_thread(pid)) {
        unsafe {
            *slot = ThreadSlot {
                tid: pid,
                key: KEY_FORK_CHILD,
                ..ThreadSlot::EMPTY
            }
        };
    }
    0
}

/// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
/// unsigned int prev_state), run on every context switch of the machine while off-CPU
/// accounting is on (`prev_state` exists from 5.18; before, the state is read from
/// `prev`, see `TASK_STATE_OFFSET`). `prev` is the current task. A traced thread leaving
/// the CPU inside a syscall gets its switch-out time; a traced thread coming back adds
/// the time away.
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn syscost_sched_switch(ctx: RawTracePointContext) -> i32 {
    // The clock is read only for a traced thread: this runs on every switch of the machine.
    let prev = bpf_get_current_pid_tgid();
    if proc_of((prev >> 32) as u32) != 0
        && let Some(slot) = thread_slot(prev as u32)
    {
        let slot = unsafe { &mut *slot };
        if slot.enter_ns != 0 {
            slot.off_since_ns = unsafe { bpf_ktime_get_ns() };
            // The kernel's own rule (nvcsw vs nivcsw): a switch is voluntary when the
            // thread was not preempted and was no longer runnable; a runnable thread
            // switched out (preempted, or sched_yield) is not blocked.
            let preempt: u64 = ctx.arg(0);
            let prev_state = prev_task_state(&ctx);
            if preempt & 0xff == 0 && prev_state as u32 != 0 {
                slot.voluntary += 1;
                if KSTACKS_ON.load() != 0 {
                    take_kernel_stack(&ctx, prev as u32, slot.enter_ns);
                }
            } else {
                slot.involuntary += 1;
            }
        }
    }
    // pid and tgid of `next` (adjacent in task_struct) in one read.
    let next: *const u8 = ctx.arg(2);
    let Ok(ids) =
        (unsafe { bpf_probe_read_kernel(next.add(TASK_PID_OFFSET.load() as usize) as *const u64) })
    else {
        return 0;
    };
    let (pid, tgid) = (ids as u32, (ids >> 32) as u32);
    if proc_of(tgid) != 0
        && let Some(slot) = thread_slot(pid)
    {
        let slot = unsafe { &mut *slot };
        if slot.off_since_ns != 0 {
            slot.off_ns += unsafe { bpf_ktime_get_ns() } - slot.off_since_ns;
            slot.off_since_ns = 0;
        }
    }
    0
}

/// The state the previous task is switched out in (0: runnable): the tracepoint's
/// argument where it has one, else the task's own field. The two differ only when a
/// signal was pending as the task went to sleep (the kernel then counts a voluntary
/// switch and has already made the task runnable again).
#[inline(always)]
fn prev_task_state(ctx: &RawTracePointContext) -> u64 {
    let offset = TASK_STATE_OFFSET.load();
    if offset == 0 {
        return ctx.arg(3);
    }
    let prev: *const u8 = ctx.arg(1);
    unsafe { bpf_probe_read_kernel(prev.add(offset as usize) as *const u32) }.map_or(0, u64::from)
}

/// Copies the current kernel stack into thread `tid`'s `KSTACK_OF` entry.
#[inline(always)]
fn take_kernel_stack(ctx: &RawTracePointContext, tid: u32, enter_ns: u64) {
    let p = match KSTACK_OF.get_ptr_mut(tid) {
        Some(p) => p,
        None => {
            let empty = BlockedStack {
                enter_ns: 0,
                bytes: 0,
                stack: [0; KERNEL_STACK_FRAMES],
            };
            if KSTACK_OF.insert(tid, empty, 0).is_err() {
                return;
            }
            match KSTACK_OF.get_ptr_mut(tid) {
                Some(p) => p,
                None => return,
            }
        }
    };
    unsafe {
        (*p).bytes = bpf_get_stack(
            ctx.as_ptr(),
            (&raw mut (*p).stack).cast(),
            (KERNEL_STACK_FRAMES * 8) as u32,
            0,
        );
        (*p).enter_ns = enter_ns;
    }
}

/// sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm),
/// run in the task that exec'd: its new program may have another ABI, and when a thread
/// other than the leader exec'd, it now has the leader's tid (the leader has exited by
/// now, freeing that slot): its syscall in flight (the execve) moves with it.
#[raw_tracepoint(tracepoint = "sched_process_exec")]
pub fn syscost_exec(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    let Some(v) = proc_value_ptr(tgid) else {
        return 0;
    };
    let known = unsafe { *v };
    if known & !ProcSlot::OVERFLOW == proc_value::EXCLUDED {
        return 0;
    }
    unsafe {
        *v = proc_value::with_abi(known & !ProcSlot::OVERFLOW, abi::UNKNOWN)
            | (known & ProcSlot::OVERFLOW);
    }
    if TOP_ON.load() != 0 {
        name_process(tgid);
    }
    let tid = pid_tgid as u32;
    let old_pid: u64 = ctx.arg(1);
    let old_pid = old_pid as u32;
    if old_pid != tid
        && let Some(old) = thread_slot(old_pid)
    {
        let state = unsafe { *old };
        release_thread(old_pid);
        if let Some(new) = thread_slot(tid).or_else(|| claim_thread(tid)) {
            unsafe { *new = ThreadSlot { tid, ..state } };
        }
    }
    0
}

/// Whether the thread group of the current (exiting) task has no live thread left:
/// `current->signal->live`, which do_exit decrements before this tracepoint, is 0. The
/// same rule on every kernel, whatever order the threads exit in (the tracepoint's own
/// group_dead argument exists only from 6.16 on).
#[inline(always)]
fn group_dead() -> bool {
    let task = unsafe { bpf_get_current_task() } as *const u8;
    let Ok(signal) = (unsafe {
        bpf_probe_read_kernel(task.add(TASK_SIGNAL_OFFSET.load() as usize) as *const u64)
    }) else {
        return false;
    };
    let signal = signal as *const u8;
    matches!(
        unsafe {
            bpf_probe_read_kernel(signal.add(SIGNAL_LIVE_OFFSET.load() as usize) as *const i32)
        },
        Ok(0)
    )
}

/// sched_process_exit, run in the exiting thread. Frees its slot and, when the whole
/// thread group is gone, hands the process's record to userspace (`TOP_ON`) and takes
/// the process out of PROCS so a new process that reuses its pid is not traced.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn syscost_exit(_ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    // Whether or not the process is still traced: when threads exit together, another
    // one may have taken the process out already, and its slot must not outlive it.
    release_thread(pid_tgid as u32);
    if proc_value_ptr(tgid).is_some() && group_dead() {
        if TOP_ON.load() != 0 {
            hand_over(tgid);
        }
        remove_proc(tgid);
    }
    0
}

/// Sends an exited process's `PROC_INFO` record through `EXITS` and deletes it: its
/// `TOP` keys hold their final figures (every thread has made its last call), and
/// userspace frees them as soon as it has read them. Without room in the ring buffer the
/// record stays (counted), for userspace to find when /proc says the process is gone.
#[inline(always)]
fn hand_over(tgid: u32) {
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

/// cgroup_attach_task(struct cgroup *dst_cgrp, const char *path, struct task_struct
/// *task, bool threadgroup), after a process (or thread) moved to another cgroup, with
/// `auto_mode::CGROUP`: the process leaves PROCS and is looked at again at its next
/// syscall, so one moved in is traced from then on and one moved out no longer.
#[raw_tracepoint(tracepoint = "cgroup_attach_task")]
pub fn syscost_cgroup_move(ctx: RawTracePointContext) -> i32 {
    let task: *const u8 = ctx.arg(2);
    if let Ok(tgid) =
        unsafe { bpf_probe_read_kernel(task.add(TASK_TGID_OFFSET.load() as usize) as *const u32) }
    {
        remove_proc(tgid);
    }
    0
}

/// Loaded (never attached) to learn whether tracing programs may call
/// `bpf_get_current_ancestor_cgroup_id` on this kernel (from 5.14).
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn probe_ancestor_cgroup(_ctx: RawTracePointContext) -> i32 {
    black_box(unsafe { bpf_get_current_ancestor_cgroup_id(1) }) as i32
}

/// The floor for the overhead benchmark: the least any program on these tracepoints can
/// cost (no helpers, no maps).
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn floor_sys_enter(_ctx: RawTracePointContext) -> i32 {
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn floor_sys_exit(_ctx: RawTracePointContext) -> i32 {
    0
}

/// Candidates for the overhead benchmark, between the floor and syscost: what the clock
/// reads alone cost, and the clock with a histogram update. They run for every process
/// (no filter) and keep their figures in `CANDIDATE`, per CPU.
#[map]
static CANDIDATE: PerCpuArray<StatsEntry> = PerCpuArray::with_max_entries(1, 0);

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn cand_clock_enter(_ctx: RawTracePointContext) -> i32 {
    if let Some(e) = CANDIDATE.get_ptr_mut(0) {
        unsafe { (*e).nr = bpf_ktime_get_ns() };
    }
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn cand_clock_exit(_ctx: RawTracePointContext) -> i32 {
    if let Some(e) = CANDIDATE.get_ptr_mut(0) {
        let e = unsafe { &mut *e };
        e.total_ns += unsafe { bpf_ktime_get_ns() } - e.nr;
    }
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn cand_hist_exit(_ctx: RawTracePointContext) -> i32 {
    if let Some(e) = CANDIDATE.get_ptr_mut(0) {
        let e = unsafe { &mut *e };
        let ns = unsafe { bpf_ktime_get_ns() } - e.nr;
        e.calls += 1;
        e.total_ns += ns;
        if let Some(b) = e.hist.get_mut(bucket_index(ns)) {
            *b += 1;
        }
    }
    0
}

/// Candidate filter: the same test as syscost's, with the tgid read from the current
/// task through its BTF pointer instead of the `bpf_get_current_pid_tgid` helper.
#[inline(always)]
fn btf_filter() -> u32 {
    let task = unsafe { aya_ebpf::helpers::bpf_get_current_task_btf() } as *const u8;
    let tgid = unsafe { *(task.add(TASK_TGID_OFFSET.load() as usize) as *const u32) };
    proc_of(tgid)
}

#[aya_ebpf::macros::btf_tracepoint(function = "sys_enter")]
pub fn cand_btf_enter(_ctx: aya_ebpf::programs::BtfTracePointContext) -> i32 {
    if btf_filter() != 0 {
        return 1;
    }
    0
}

#[aya_ebpf::macros::btf_tracepoint(function = "sys_exit")]
pub fn cand_btf_exit(_ctx: aya_ebpf::programs::BtfTracePointContext) -> i32 {
    if btf_filter() != 0 {
        return 1;
    }
    0
}

/// The raw-tracepoint filter alone, for comparison.
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn cand_filter_enter(_ctx: RawTracePointContext) -> i32 {
    if proc_of((bpf_get_current_pid_tgid() >> 32) as u32) != 0 {
        return 1;
    }
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn cand_filter_exit(_ctx: RawTracePointContext) -> i32 {
    if proc_of((bpf_get_current_pid_tgid() >> 32) as u32) != 0 {
        return 1;
    }
    0
}

/// `syscost doctor` tries to load this to tell whether fentry/fexit programs may load
/// on this host (never attached).
#[aya_ebpf::macros::fentry(function = "do_exit")]
pub fn doctor_fentry(_ctx: aya_ebpf::programs::FEntryContext) -> u32 {
    0
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
