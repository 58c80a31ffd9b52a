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
//! Automatic modes (`config.auto_mode`): with every process (`syscost top`) or every process of
//! one cgroup v2 (`--cgroup`) traced, a process is looked at on its first syscall seen,
//! and added to PROCS either as traced or as `EXCLUDED`, so each later syscall costs the
//! same one lookup as in the other modes. A process moved to another cgroup is taken out
//! of PROCS and looked at again. `TOP` keeps per-process figures (no histograms) of every
//! traced process when `config.per_process_on`; the pool's full statistics are kept for slots from
//! `config.pool_from_slot` on (all of them, except in `syscost top`, where slot 0 holds the
//! processes not drilled into).
//!
//! What runs where (hook -> program -> the maps it touches -> when it is attached):
//!
//! | hook (raw tracepoint) | program | maps | attached |
//! |---|---|---|---|
//! | `sys_enter` | `syscost_sys_enter` | PROCS(+_OVERFLOW) read, written on a process's first call; THREADS(+_OVERFLOW); PROC_NAMES(+PROC_INFO) (`config.per_process_on`) | always |
//! | `sys_exit` | `syscost_sys_exit` | PROCS read; DRILL; THREADS; SLOW_NS, CALL_RING, KSTACK_OF (`config.slow_on`); STACK_SIDE, STACK_CALLS, STACK_FRAMES, STACK_SCRATCH, STACK_COUNTS, CALL_RING (`config.stacks_on`); TOP, and PROC_NAMES(+PROC_INFO) on a process's first event (`config.per_process_on`); INDEX, BIG_INDEX, POOL, POOL_NEXT; COUNTERS | always |
//! | `sched_switch` | `syscost_sched_switch` | PROCS read; THREADS; KSTACK_OF (`config.kstacks_on`) | unless `--no-offcpu` |
//! | `sched_process_fork` | `syscost_fork` | PROCS (children, `config.follow_forks`); THREADS | always |
//! | `sched_process_exec` | `syscost_exec` | PROCS (ABI); PROC_NAMES(+PROC_INFO) (`config.per_process_on`); THREADS | always |
//! | `sched_process_exit` | `syscost_exit` | THREADS; PROCS; PROC_NAMES(+PROC_INFO), EXITS (`config.per_process_on`) | always |
//! | `cgroup_attach_task` | `syscost_cgroup_move` | PROCS | `--cgroup` |
//!
//! The hooks follow in the order a traced call meets them; the helpers are grouped by
//! the table they serve: `maps` (every map and constant), `procs` (the traced set),
//! `threads` (each thread's call in flight), `stats` (the pool of statistics entries),
//! `per_process` (per-process figures), `call_ring` (the calls sent to userspace: slow calls and stack samples), `by_stack` (calls by user stack); `mem` copies and
//! zeroes spans word by word (the toolchain's `memset` and `memmove` move a byte a loop
//! round; no program calls a function, `tracer::load`'s tests hold it); each module
//! imports what it uses by name. `probes` holds the programs that are
//! not the tracer (the benchmark's floor and candidates, doctor's and the loader's
//! probes). Every helper is `inline(always)`: a BPF-to-BPF call costs more than the
//! work of most of them, and inlined code lets the verifier fold the load-time
//! constants away.
//!
#![no_std]
#![no_main]

use aya_ebpf::{
    bindings::{BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP},
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, bpf_probe_read_kernel},
    macros::raw_tracepoint,
    programs::RawTracePointContext,
};
use aya_log_ebpf::warn;
use core::ptr::write_volatile;
use syscost_common::{
    KEY_FORK_CHILD, KEY_NONE, KEYS_PER_SLOT, ProcSlot, ThreadSlot, abi, auto_mode, counter,
    proc_value, record_flags, syscall_key,
};

use self::{
    by_stack::{StackSample, count_stack},
    call_ring::{send_call, take_kernel_stack},
    maps::{DRILL, SLOW_NS, config},
    per_process::{count_top, hand_over},
    procs::{
        auto_add, group_dead, insert_proc, name_held, name_process, proc_of, proc_value_ptr,
        process_abi, remove_proc, rename_process, traced,
    },
    stats::{count, record},
    threads::{claim_thread, put_thread, release_thread, start_thread, thread_slot},
};

mod by_stack;
mod call_ring;
mod maps;
mod mem;
mod per_process;
mod probes;
mod procs;
mod stats;
mod threads;

/// A call as sys_exit sees it once paired with its enter.
#[derive(Clone, Copy)]
pub(crate) struct Call {
    pub key: u32,
    pub nr: u64,
    /// Its enter time and its wall time, ns.
    pub start: u64,
    pub ns: u64,
    /// Of `ns`, time switched out, and the switches (blocking, preempted).
    pub off_ns: u64,
    pub voluntary: u32,
    pub involuntary: u32,
    /// A return to a CPU was not seen: `off_ns` is an upper bound.
    pub switch_in_unseen: bool,
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
    // Field by field: the four zeroes written as one would be a `memset` call
    // (`threads::put_thread` says why), a loop of 24 rounds on every call.
    unsafe {
        write_volatile(
            &raw mut (*slot).key,
            syscall_key(proc_value::abi(process), nr),
        );
        write_volatile(&raw mut (*slot).nr, nr);
        write_volatile(&raw mut (*slot).off_since_ns, 0);
        write_volatile(&raw mut (*slot).off_ns, 0);
        write_volatile(&raw mut (*slot).voluntary, 0);
        write_volatile(&raw mut (*slot).involuntary, 0);
        write_volatile(&raw mut (*slot).enter_ns, bpf_ktime_get_ns());
    }
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
#[inline(always)]
pub fn syscost_sys_exit(ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    let process = match proc_value_ptr(tgid) {
        Some(v) => traced((unsafe { *v }) & !ProcSlot::OVERFLOW),
        None => {
            // The automatic modes meet a process at an exit when its call was in flight
            // as tracing began: it is added here, and that call counted as unpaired (as
            // for a process given by pid).
            // Given by pid, every other process of the machine ends here: nothing more.
            if config!(auto_mode) == auto_mode::OFF {
                return 0;
            }
            let tid = pid_tgid as u32;
            let slot = thread_slot(tid);
            // A child's return from the fork that made it (marked by the fork hook).
            let forked = slot.is_some_and(|s| unsafe { (*s).key } == KEY_FORK_CHILD);
            if auto_add(tgid, forked) {
                match slot {
                    // A child's return from the fork that made it (marked by the fork
                    // hook): not a call.
                    Some(s) if unsafe { (*s).key } == KEY_FORK_CHILD => unsafe {
                        (*s).key = KEY_NONE;
                    },
                    Some(_) => count(0, counter::UNPAIRED),
                    None => {
                        let c = if claim_thread(tid).is_some() {
                            counter::UNPAIRED
                        } else {
                            counter::DROPPED_THREAD
                        };
                        count(0, c);
                    }
                }
            }
            return 0;
        }
    };
    if process == 0 {
        return 0;
    }
    let now = unsafe { bpf_ktime_get_ns() };
    let pool_from = config!(pool_from_slot);
    let stats_slot = stats_slot_of(process, tgid, pool_from);
    let Some(call) = end_call(pid_tgid as u32, stats_slot, now) else {
        return 0;
    };
    let ret: i64 = ctx.arg(1);
    // Written twice so that without `--stacks` the path is the slow calls' alone (the
    // verifier drops the branch a load-time constant rules out). Calls by stack are kept
    // for the slots with full statistics (`top`: the process drilled into).
    if config!(stacks_on) != 0 && stats_slot >= pool_from {
        let (stack_hash, sample) = count_stack(&ctx, tgid, call.key, call.ns);
        let mut flags = 0;
        if sample != StackSample::No {
            flags |= record_flags::STACK_SAMPLE;
        }
        // A slow call and a stack's first sample wake the reader, forced: the kernel wakes
        // it by itself only for a record it has caught up with, and a quiet sample may be
        // waiting unread. A later sample waits for the reader's next look.
        let mut wake = if sample == StackSample::Wake {
            u64::from(BPF_RB_FORCE_WAKEUP)
        } else {
            u64::from(BPF_RB_NO_WAKEUP)
        };
        if config!(slow_on) != 0 && call.ns >= slow_threshold(call.key) {
            flags |= record_flags::SLOW;
            wake = u64::from(BPF_RB_FORCE_WAKEUP);
        }
        if flags != 0 {
            send_call(
                &ctx,
                pid_tgid,
                stats_slot,
                &call,
                ret,
                now,
                (flags, wake),
                stack_hash,
            );
        }
    } else if config!(slow_on) != 0 && call.ns >= slow_threshold(call.key) {
        send_call(
            &ctx,
            pid_tgid,
            stats_slot,
            &call,
            ret,
            now,
            // No quiet record without `--stacks`: the kernel's own choice wakes the reader
            // when it has caught up.
            (record_flags::SLOW, 0),
            0,
        );
    }
    if config!(per_process_on) != 0 {
        count_top(tgid, stats_slot, &call, ret);
    }
    if stats_slot >= pool_from {
        record(stats_slot, &call, ret);
    }
    0
}

/// The statistics slot of a call: the process's, or the drill-down's (`pool_from`)
/// when `top` shows this process (`DRILL`).
#[inline(always)]
fn stats_slot_of(process: u32, tgid: u32, pool_from: u32) -> u32 {
    let slot = proc_value::slot(process);
    if slot < pool_from && DRILL.get(0).is_some_and(|&t| t != 0 && t == tgid) {
        return pool_from;
    }
    slot
}

/// The call thread `tid` is returning from, paired with its enter; `None` (counted as
/// unpaired or dropped) when there is none to pair.
#[inline(always)]
fn end_call(tid: u32, stats_slot: u32, now: u64) -> Option<Call> {
    let Some(slot) = thread_slot(tid) else {
        // In flight when tracing began (the thread gets a slot now), or no room.
        let c = if claim_thread(tid).is_some() {
            counter::UNPAIRED
        } else {
            counter::DROPPED_THREAD
        };
        count(stats_slot, c);
        return None;
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
        return None;
    }
    slot.enter_ns = 0;
    let ns = now - start;
    slot.calls += 1;
    slot.total_ns += ns;
    let (mut off_ns, mut voluntary) = (slot.off_ns, slot.voluntary);
    // Still switched out as far as sched_switch told, or marked so by a later
    // switch-out: the thread came back unseen. The time from that switch-out to now
    // counts as switched out (an upper bound), and the call is counted, so it is never
    // shown as time on a CPU.
    let switch_in_unseen =
        slot.off_since_ns | u64::from(voluntary & ThreadSlot::SWITCH_IN_UNSEEN) != 0;
    if switch_in_unseen {
        if slot.off_since_ns != 0 {
            off_ns += now - slot.off_since_ns;
            slot.off_since_ns = 0;
        }
        voluntary &= !ThreadSlot::SWITCH_IN_UNSEEN;
        count(stats_slot, counter::SWITCH_IN_UNSEEN);
    }
    Some(Call {
        key,
        nr: slot.nr,
        start,
        ns,
        off_ns,
        voluntary,
        involuntary: slot.involuntary,
        switch_in_unseen,
    })
}

/// The threshold from which a call of `key` is slow.
#[inline(always)]
fn slow_threshold(key: u32) -> u64 {
    if key < KEYS_PER_SLOT {
        SLOW_NS.get(key).copied().unwrap_or(u64::MAX)
    } else {
        config!(slow_default_ns)
    }
}

/// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
/// unsigned int prev_state), run on every context switch of the machine while off-CPU
/// accounting is on (`prev_state` exists from 5.18; before, the state is read from
/// `prev`, see `config.task_state_offset`). `prev` is the current task. A traced thread leaving
/// the CPU inside a syscall gets its switch-out time; a traced thread coming back adds
/// the time away.
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn syscost_sched_switch(ctx: RawTracePointContext) -> i32 {
    // The clock is read only for a traced thread (this runs on every switch of the
    // machine), and once: a switch-out and the switch-in that follows share the reading,
    // one instant that divides the CPU between the two (what this program does after it,
    // a kernel stack's walk with `--kernel-stacks`, counts on the CPU for `next`).
    let mut now = 0;
    let prev = bpf_get_current_pid_tgid();
    if proc_of((prev >> 32) as u32) != 0
        && let Some(slot) = thread_slot(prev as u32)
    {
        let slot = unsafe { &mut *slot };
        if slot.enter_ns != 0 {
            if slot.off_since_ns == 0 {
                now = unsafe { bpf_ktime_get_ns() };
                slot.off_since_ns = now;
            } else {
                // Out again, never seen coming back: the earlier switch-out still holds
                // (the time since counts as switched out), and the call is marked.
                slot.voluntary |= ThreadSlot::SWITCH_IN_UNSEEN;
            }
            // The kernel's own rule (nvcsw vs nivcsw): a switch is voluntary when the
            // thread was not preempted and was no longer runnable; a runnable thread
            // switched out (preempted, or sched_yield) is not blocked.
            let preempt: u64 = ctx.arg(0);
            let prev_state = prev_task_state(&ctx);
            if preempt & 0xff == 0 && prev_state as u32 != 0 {
                slot.voluntary += 1;
                if config!(kstacks_on) != 0 {
                    take_kernel_stack(&ctx, prev as u32, slot.enter_ns);
                }
            } else {
                slot.involuntary += 1;
            }
        }
    }
    // pid and tgid of `next` (adjacent in task_struct) in one read.
    let next: *const u8 = ctx.arg(2);
    let Ok(ids) = (unsafe {
        bpf_probe_read_kernel(next.add(config!(task_pid_offset) as usize) as *const u64)
    }) else {
        return 0;
    };
    let (pid, tgid) = (ids as u32, (ids >> 32) as u32);
    if proc_of(tgid) != 0
        && let Some(slot) = thread_slot(pid)
    {
        let slot = unsafe { &mut *slot };
        if slot.off_since_ns != 0 {
            if now == 0 {
                now = unsafe { bpf_ktime_get_ns() };
            }
            slot.off_ns += now - slot.off_since_ns;
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
    let offset = config!(task_state_offset);
    if offset == 0 {
        return ctx.arg(3);
    }
    let prev: *const u8 = ctx.arg(1);
    unsafe { bpf_probe_read_kernel(prev.add(offset as usize) as *const u32) }.map_or(0, u64::from)
}

/// sched_process_fork(struct task_struct *parent, struct task_struct *child), run in
/// the parent. Gives the new thread a slot marked so its return from clone is not
/// counted as unpaired, and with `config.follow_forks` adds a new child process to PROCS.
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
            bpf_probe_read_kernel(child.add(config!(task_pid_offset) as usize) as *const u32),
            bpf_probe_read_kernel(child.add(config!(task_tgid_offset) as usize) as *const u32),
        )
    }) else {
        count(stats_slot, counter::DROPPED_CHILD);
        return 0;
    };
    let new_process = tgid != parent_tgid;
    if new_process {
        if config!(follow_forks) != 0 {
            if !insert_proc(tgid, parent) {
                count(stats_slot, counter::DROPPED_CHILD);
                warn!(&ctx, "no room to trace child process {}", tgid);
                return 0;
            }
        } else if config!(auto_mode) == auto_mode::OFF {
            return 0;
        }
        // The automatic modes add the child at its first event, its return from the
        // fork: its thread is marked below so that this exit is not taken for a call in
        // flight when tracing began.
    }
    // A new thread has no state: whatever a slot with its id held is forgotten. Without
    // room now, the thread tries again at its first syscall.
    start_thread(ThreadSlot {
        tid: pid,
        key: KEY_FORK_CHILD,
        ..ThreadSlot::EMPTY
    });
    0
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
    if config!(per_process_on) != 0 {
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
            put_thread(new, ThreadSlot { tid, ..state });
        }
    }
    0
}

/// sched_process_exit, run in the exiting thread. Frees its slot and, when the whole
/// thread group is gone, hands the process's record to userspace (`config.per_process_on`) and takes
/// the process out of PROCS so a new process that reuses its pid is not traced. The
/// main thread's exit renames the record: the name the process ended with (a process
/// may rename itself, `prctl(PR_SET_NAME)`, after its first call), as /proc showed it.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn syscost_exit(_ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    // Whether or not the process is still traced: when threads exit together, another
    // one may have taken the process out already, and its slot must not outlive it.
    release_thread(pid_tgid as u32);
    let top = config!(per_process_on) != 0;
    if proc_value_ptr(tgid).is_some() {
        let main_thread = pid_tgid as u32 == tgid;
        if group_dead() {
            if top {
                hand_over(tgid, main_thread);
            }
            remove_proc(tgid);
        } else if top && main_thread {
            rename_process(tgid);
        }
    } else if top && name_held(tgid) && group_dead() {
        // Taken out of the traced set (moved out of the cgroup) and gone before another
        // call: its record is sent all the same, for the pairs it made while traced.
        hand_over(tgid, pid_tgid as u32 == tgid);
    }
    0
}

/// cgroup_attach_task(struct cgroup *dst_cgrp, const char *path, struct task_struct
/// *task, bool threadgroup), after a process (or thread) moved to another cgroup, with
/// `auto_mode::CGROUP`: the process leaves PROCS and is looked at again at its next
/// syscall, so one moved in is traced from then on and one moved out no longer.
#[raw_tracepoint(tracepoint = "cgroup_attach_task")]
pub fn syscost_cgroup_move(ctx: RawTracePointContext) -> i32 {
    let task: *const u8 = ctx.arg(2);
    if let Ok(tgid) =
        unsafe { bpf_probe_read_kernel(task.add(config!(task_tgid_offset) as usize) as *const u32) }
    {
        remove_proc(tgid);
    }
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
