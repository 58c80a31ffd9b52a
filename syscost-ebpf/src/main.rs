//! syscost's kernel side: per-syscall counts, errors and latency histograms of the
//! profiled processes, aggregated in per-CPU arrays. No per-event traffic leaves the
//! kernel.
//!
//! Program type: raw tracepoints. All three types attach to sys_enter/sys_exit here;
//! raw tracepoints were measured cheaper than classic tracepoints (empty program on
//! getpid: about 216 ns added against 336 ns for the classic tracepoint), need no
//! tracefs, and tp_btf would add nothing we read.
#![no_std]
#![no_main]

use core::hint::black_box;

use aya_ebpf::{
    Global,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, bpf_probe_read_kernel},
    macros::{map, raw_tracepoint},
    maps::{Array, PerCpuArray},
    programs::RawTracePointContext,
};
use aya_log_ebpf::warn;
use syscost_common::{
    COMPAT_BASE, ERRNO_SLOTS, ErrnoCounts, MAX_SYSCALLS, NR_FORK_CHILD, SYSCALLS_PER_ABI,
    SyscallStats, ThreadSlot, ThreadStats, USER32_CS, abi, bucket_index, counter, counter_index,
    errno_slot, proc_value, stats_index,
};

/// Traced processes: index tgid, value (`proc_value`: slot and ABI) non-zero when
/// traced. Userspace sizes it to pid_max, so a lookup is an inlined bounds check plus a
/// load.
#[map]
static PROCS: Array<u32> = Array::with_max_entries(1, 0);

/// Per-thread enter timestamp and syscall number: index tid, sized to pid_max.
#[map]
static THREADS: Array<ThreadSlot> = Array::with_max_entries(1, 0);

/// Per-thread totals: index tid, sized to pid_max. Written by the thread itself only, so
/// a plain array (not per-CPU) holds no races.
#[map]
static THREAD_STATS: Array<ThreadStats> = Array::with_max_entries(1, 0);

/// Per-syscall statistics: index `stats_index(slot, nr)`; userspace sizes it to
/// `MAX_SYSCALLS` times the number of slots.
#[map]
static STATS: PerCpuArray<SyscallStats> = PerCpuArray::with_max_entries(MAX_SYSCALLS, 0);

/// Errno counts per syscall: index `stats_index(slot, nr)`, then `errno_slot(errno)`.
#[map]
static ERRNOS: PerCpuArray<ErrnoCounts> = PerCpuArray::with_max_entries(MAX_SYSCALLS, 0);

/// Counters of events that did not make it into STATS, per slot: index
/// `counter_index(slot, counter)`.
#[map]
static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(counter::COUNT, 0);

/// Add forked child processes of traced processes to PROCS (threads are always followed).
#[unsafe(no_mangle)]
static FOLLOW_FORKS: Global<u32> = Global::new(0);
/// Byte offsets of `pid` and `tgid` in the running kernel's `struct task_struct`, read
/// from its BTF by userspace.
#[unsafe(no_mangle)]
static TASK_PID_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
static TASK_TGID_OFFSET: Global<u64> = Global::new(0);
/// Byte offset of `cs` in `struct pt_regs`: it tells 32-bit user code from 64-bit.
#[unsafe(no_mangle)]
static PT_REGS_CS_OFFSET: Global<u64> = Global::new(0);

#[inline(always)]
fn count(slot: u32, c: u32) {
    if let Some(n) = COUNTERS.get_ptr_mut(counter_index(slot, c)) {
        unsafe { *n += 1 };
    }
}

/// The `PROCS` value of this tgid, 0 when it is not traced. The first test on every
/// syscall of every process.
#[inline(always)]
fn proc_of(tgid: u32) -> u32 {
    match PROCS.get(tgid) {
        // black_box: the wrapper ignores our return value, and without it the compiler
        // may fold the compare into the paths that follow and lose the early return.
        Some(v) => black_box(*v),
        None => 0,
    }
}

#[inline(always)]
fn traced(tgid: u32) -> bool {
    proc_of(tgid) != 0
}

/// The `PROCS` value of a traced process with its ABI known (0 when not traced): the
/// ABI is learnt from the code segment of its first syscall after it was traced or
/// exec'd and kept in PROCS, one kernel read per process, not per call.
#[inline(always)]
fn process_abi(ctx: &RawTracePointContext, tgid: u32) -> u32 {
    let Some(v) = PROCS.get_ptr_mut(tgid) else {
        return 0;
    };
    let v = unsafe { &mut *v };
    let known = black_box(*v);
    if proc_value::abi(known) != abi::UNKNOWN {
        return known;
    }
    let regs: *const u8 = ctx.arg(0);
    let cs =
        unsafe { bpf_probe_read_kernel(regs.add(PT_REGS_CS_OFFSET.load() as usize) as *const u64) };
    let abi = match cs {
        Ok(cs) if cs & 0xffff == USER32_CS => abi::COMPAT,
        _ => abi::NATIVE,
    };
    *v = proc_value::with_abi(known, abi);
    *v
}

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn syscost_sys_enter(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let process = process_abi(&ctx, (pid_tgid >> 32) as u32);
    if process == 0 {
        return 0;
    }
    let abi = proc_value::abi(process);
    let raw: i64 = ctx.arg(1);
    // Compat syscalls are counted apart, under their own (i386) numbers.
    let nr = if abi == abi::COMPAT && (raw as u64) < u64::from(SYSCALLS_PER_ABI) {
        raw + i64::from(COMPAT_BASE)
    } else {
        raw
    };
    match THREADS.get_ptr_mut(pid_tgid as u32) {
        Some(slot) => unsafe {
            (*slot).nr = nr as u32;
            (*slot).switches = 0;
            (*slot).off_since_ns = 0;
            (*slot).off_ns = 0;
            (*slot).enter_ns = bpf_ktime_get_ns();
        },
        None => count(proc_value::slot(process), counter::DROPPED_TID),
    }
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn syscost_sys_exit(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let process = proc_of((pid_tgid >> 32) as u32);
    if process == 0 {
        return 0;
    }
    let now = unsafe { bpf_ktime_get_ns() };
    let stats_slot = proc_value::slot(process);
    let Some(slot) = THREADS.get_ptr_mut(pid_tgid as u32) else {
        count(stats_slot, counter::DROPPED_TID);
        return 0;
    };
    let (start, nr, off_ns, switches) = unsafe {
        (
            (*slot).enter_ns,
            (*slot).nr,
            (*slot).off_ns,
            (*slot).switches,
        )
    };
    if start == 0 {
        if nr == NR_FORK_CHILD {
            // A new thread returning from clone: it never entered this syscall.
            unsafe { (*slot).nr = 0 };
        } else {
            count(stats_slot, counter::UNPAIRED);
        }
        return 0;
    }
    unsafe { (*slot).enter_ns = 0 };

    // Checked here, not by the lookup: a number beyond would land in the next slot.
    if nr >= MAX_SYSCALLS {
        count(stats_slot, counter::DROPPED_NR);
        return 0;
    }
    let index = stats_index(stats_slot, nr);
    let Some(stats) = STATS.get_ptr_mut(index) else {
        count(stats_slot, counter::DROPPED_NR);
        return 0;
    };
    let ns = now - start;
    let stats = unsafe { &mut *stats };
    stats.calls += 1;
    stats.total_ns += ns;
    // Switched-out time can only be part of the call's wall time.
    stats.offcpu_ns += if off_ns < ns { off_ns } else { ns };
    stats.voluntary += u64::from(switches & 0xffff);
    stats.involuntary += u64::from(switches >> 16);
    if stats.calls == 1 || ns < stats.min_ns {
        stats.min_ns = ns;
    }
    if ns > stats.max_ns {
        stats.max_ns = ns;
    }
    let bucket = bucket_index(ns);
    if let Some(b) = stats.hist.get_mut(bucket) {
        *b += 1;
    }

    if let Some(t) = THREAD_STATS.get_ptr_mut(pid_tgid as u32) {
        let t = unsafe { &mut *t };
        t.calls += 1;
        t.total_ns += ns;
        if t.top_nr == nr {
            t.top_votes += 1;
        } else if t.top_votes == 0 {
            t.top_nr = nr;
            t.top_votes = 1;
        } else {
            t.top_votes -= 1;
        }
    }

    let ret: i64 = ctx.arg(1);
    if (-4095..0).contains(&ret) {
        stats.errors += 1;
        if let Some(errnos) = ERRNOS.get_ptr_mut(index) {
            // The mask keeps the index provably in bounds for the verifier (a bounds
            // check on a copy of the register is not enough for it).
            let slot = errno_slot((-ret) as u32) & (ERRNO_SLOTS - 1);
            unsafe { (*errnos).counts[slot as usize] += 1 };
        }
    }
    0
}

/// sched_process_fork(struct task_struct *parent, struct task_struct *child), run in
/// the parent. Marks the child's thread slot so its return from clone is not counted as
/// unpaired, and with FOLLOW_FORKS adds a new child process to PROCS.
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
    match THREADS.get_ptr_mut(pid) {
        Some(slot) => unsafe {
            (*slot).enter_ns = 0;
            (*slot).nr = NR_FORK_CHILD;
        },
        None => count(stats_slot, counter::DROPPED_TID),
    }
    if new_process {
        match PROCS.get_ptr_mut(tgid) {
            Some(p) => unsafe { *p = parent },
            None => {
                count(stats_slot, counter::DROPPED_CHILD);
                warn!(&ctx, "child {} is beyond pid_max: not traced", tgid);
            }
        }
    }
    0
}

/// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
/// unsigned int prev_state), run on every context switch of the machine while off-CPU
/// accounting is on. `prev` is the current task. A traced thread leaving the CPU inside
/// a syscall gets its switch-out time; a traced thread coming back adds the time away.
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn syscost_sched_switch(ctx: RawTracePointContext) -> i32 {
    // The clock is read only for a traced thread: this runs on every switch of the machine.
    let prev = bpf_get_current_pid_tgid();
    if traced((prev >> 32) as u32)
        && let Some(slot) = THREADS.get_ptr_mut(prev as u32)
    {
        let slot = unsafe { &mut *slot };
        if slot.enter_ns != 0 {
            slot.off_since_ns = unsafe { bpf_ktime_get_ns() };
            let preempt: u64 = ctx.arg(0);
            // Saturating 16-bit counters: a syscall is not switched out 65,535 times.
            if preempt & 0xff != 0 {
                if slot.switches >> 16 < 0xffff {
                    slot.switches += 1 << 16;
                }
            } else if slot.switches & 0xffff < 0xffff {
                slot.switches += 1;
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
    if traced(tgid)
        && let Some(slot) = THREADS.get_ptr_mut(pid)
    {
        let slot = unsafe { &mut *slot };
        if slot.off_since_ns != 0 {
            slot.off_ns += unsafe { bpf_ktime_get_ns() } - slot.off_since_ns;
            slot.off_since_ns = 0;
        }
    }
    0
}

/// sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm),
/// run in the task that exec'd: its new program may have another ABI.
#[raw_tracepoint(tracepoint = "sched_process_exec")]
pub fn syscost_exec(_ctx: RawTracePointContext) -> i32 {
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    if traced(tgid)
        && let Some(v) = PROCS.get_ptr_mut(tgid)
    {
        unsafe { *v = proc_value::with_abi(*v, abi::UNKNOWN) };
    }
    0
}

/// Clears an exiting thread's slots: a reused tid must not inherit a stale enter time or
/// another thread's totals.
#[inline(always)]
fn forget_thread(tid: u32) {
    if let Some(slot) = THREADS.get_ptr_mut(tid) {
        unsafe { *slot = ThreadSlot::default() };
    }
    if let Some(t) = THREAD_STATS.get_ptr_mut(tid) {
        unsafe { *t = ThreadStats::default() };
    }
}

/// sched_process_exit(struct task_struct *p, bool group_dead), run in the exiting
/// thread. Clears its slot (a reused tid must not inherit a stale enter time) and, when
/// the whole thread group is gone, takes the process out of PROCS so a new process that
/// reuses its pid is not traced.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn syscost_exit(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    if !traced(tgid) {
        return 0;
    }
    forget_thread(pid_tgid as u32);
    let group_dead: u64 = ctx.arg(1);
    if group_dead & 0xff != 0
        && let Some(p) = PROCS.get_ptr_mut(tgid)
    {
        unsafe { *p = 0 };
    }
    0
}

/// Kernels before 6.16 have no group_dead argument: the process leaves PROCS when its
/// leader thread exits.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn syscost_exit_leader(_ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    if !traced(tgid) {
        return 0;
    }
    forget_thread(pid_tgid as u32);
    if pid_tgid as u32 == tgid
        && let Some(p) = PROCS.get_ptr_mut(tgid)
    {
        unsafe { *p = 0 };
    }
    0
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

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
