//! Programs that are not the tracer: the benchmark's floor and candidates, and the
//! probes of `doctor` and the loader. Loaded only by name, never with the tracer.

use crate::{by_stack::walk_user_stack, maps::config, procs::proc_of};
use aya_ebpf::{
    bindings::BPF_NOEXIST,
    helpers::{
        bpf_get_current_pid_tgid, bpf_ktime_get_ns, generated::bpf_get_current_ancestor_cgroup_id,
    },
    macros::{map, raw_tracepoint},
    maps::{Array, PerCpuArray, PerCpuHashMap},
    programs::RawTracePointContext,
};
use core::hint::black_box;
use syscost_common::{StatsEntry, bucket_index};

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

/// The limit of any per-call latency design, for the benchmark (`minimal`): the same two
/// tracepoints, a start time per thread (an array indexed by the tid's low bits, no
/// tag: threads whose tids share them may pair each other's calls), two clock reads and
/// one histogram bucket incremented (this CPU's), for every process. No filter, no
/// syscall or errno, no on-CPU split: what syscost adds beyond this is what its figures
/// cost.
/// 65,536 threads; the object keeps one entry, `syscost floor minimal` loads it with
/// this many.
const MINIMAL_THREADS: u32 = 1 << 16;

/// A thread's start time, alone in its cache line (threads on other CPUs never share one).
#[map]
static MINIMAL_START: Array<[u64; 8]> = Array::with_max_entries(1, 0);

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn cand_minimal_enter(_ctx: RawTracePointContext) -> i32 {
    let tid = bpf_get_current_pid_tgid() as u32;
    if let Some(t) = MINIMAL_START.get_ptr_mut(tid & (MINIMAL_THREADS - 1)) {
        unsafe { (*t)[0] = bpf_ktime_get_ns() };
    }
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn cand_minimal_exit(_ctx: RawTracePointContext) -> i32 {
    minimal_end();
    0
}

/// The minimal program's exit: the thread's start time taken, the call's bucket counted.
/// Whether there was a call to end.
#[inline(always)]
fn minimal_end() -> bool {
    let tid = bpf_get_current_pid_tgid() as u32;
    let Some(t) = MINIMAL_START.get_ptr_mut(tid & (MINIMAL_THREADS - 1)) else {
        return false;
    };
    let start = unsafe { (*t)[0] };
    if start == 0 {
        return false;
    }
    unsafe { (*t)[0] = 0 };
    let ns = unsafe { bpf_ktime_get_ns() } - start;
    if let Some(e) = CANDIDATE.get_ptr_mut(0)
        && let Some(b) = unsafe { (*e).hist.get_mut(bucket_index(ns)) }
    {
        *b += 1;
    }
    true
}

/// The limit of a latency design that also counts every call by its user stack, for the
/// benchmark (`minimal-stacks`): the minimal program, then syscost's walk and hash of
/// the stack (`by_stack::walk_user_stack`) and one count per stack in this CPU's
/// `MINIMAL_STACK_CALLS`. No process, syscall or time per stack, no frames kept, no
/// samples, no windows: what `--stacks` adds beyond this is what its figures cost.
/// The object keeps one entry; `syscost floor minimal-stacks` loads it with room for
/// 4,096 stacks (one without room is not counted: the figures are never read).
#[map]
static MINIMAL_STACK_CALLS: PerCpuHashMap<u64, u64> = PerCpuHashMap::with_max_entries(1, 0);

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn cand_minimal_stacks_exit(ctx: RawTracePointContext) -> i32 {
    if !minimal_end() {
        return 0;
    }
    let Some((_, hash)) = walk_user_stack(&ctx) else {
        return 0;
    };
    match MINIMAL_STACK_CALLS.get_ptr_mut(&hash) {
        Some(n) => unsafe { *n += 1 },
        None => {
            let _ = MINIMAL_STACK_CALLS.insert(&hash, &1, u64::from(BPF_NOEXIST));
        }
    }
    0
}

/// Candidate filter: the same test as syscost's, with the tgid read from the current
/// task through its BTF pointer instead of the `bpf_get_current_pid_tgid` helper.
#[inline(always)]
fn btf_filter() -> u32 {
    let task = unsafe { aya_ebpf::helpers::bpf_get_current_task_btf() } as *const u8;
    let tgid = unsafe { *(task.add(config!(task_tgid_offset) as usize) as *const u32) };
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
