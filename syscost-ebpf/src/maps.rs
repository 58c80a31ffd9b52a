//! Every map of the programs, by the table they make up, and their load-time
//! configuration. Sizes are set by userspace at load (`max_entries` here are
//! placeholders); the configuration (`syscost_common::config::LoadConfig`, the global
//! `CONFIG`) is set before the load and folded in by the verifier, so a mode that is off
//! costs no instruction. The maps' names are `syscost_common::config::map_names`.

use aya_ebpf::{
    Global,
    macros::map,
    maps::{Array, HashMap, PerCpuArray, PerCpuHashMap, RingBuf},
};
use syscost_common::{
    BigKey, BlockedStack, ExitRecord, ProcRecord, ProcSlot, StackKey, StackValue, StatsEntry,
    ThreadSlot, TopKey, TopValue, UserStack, counter, stack_counter,
};

use syscost_common::config::LoadConfig;

/// BPF_F_MMAPABLE: userspace maps these arrays and reads them without syscalls.
const MMAPABLE: u32 = 1 << 10;

/// Traced processes, direct-mapped: index `tgid & config.proc_mask`.
#[map]
pub(crate) static PROCS: Array<ProcSlot> = Array::with_max_entries(1, 0);

/// Traced processes whose direct slot was taken by another one: tgid -> `proc_value`.
#[map]
pub(crate) static PROCS_OVERFLOW: HashMap<u32, u32> = HashMap::with_max_entries(1, 0);

/// Per-thread state, direct-mapped: index `tid & config.thread_mask`.
#[map]
pub(crate) static THREADS: Array<ThreadSlot> = Array::with_max_entries(1, MMAPABLE);

/// Threads whose direct slot was taken by another one: tid -> state.
#[map]
pub(crate) static THREADS_OVERFLOW: HashMap<u32, ThreadSlot> = HashMap::with_max_entries(1, 0);

/// Per CPU: (process slot, syscall key) -> position in this CPU's pool region plus one,
/// four 16-bit positions to a word (index `slot * INDEX_WORDS_PER_SLOT + key / 4`).
#[map]
pub(crate) static INDEX: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// Per CPU: syscall numbers without a key of their own -> pool position plus one.
#[map]
pub(crate) static BIG_INDEX: PerCpuHashMap<BigKey, u32> = PerCpuHashMap::with_max_entries(1, 0);

/// The statistics: CPU `c`'s region starts at `c * config.pool_per_cpu`, filled in order
/// of first use.
#[map]
pub(crate) static POOL: Array<StatsEntry> = Array::with_max_entries(1, MMAPABLE);

/// Per CPU: entries of its pool region in use.
#[map]
pub(crate) static POOL_NEXT: PerCpuArray<u32> = PerCpuArray::with_max_entries(1, 0);

/// Counters of events that did not make it into the statistics, per process slot (and
/// slot 0's `TOP_MADE`, the per-process table's pairs made): index
/// `counter_index(slot, counter)`.
#[map]
pub(crate) static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(counter::COUNT, 0);

/// Per process and syscall, per CPU: calls, errors, time (`config.per_process_on` only). Userspace
/// deletes the keys of a process once it has read their final figures, from a copy of
/// the table taken after the process's `EXITS` record came (within a second).
#[map]
pub(crate) static TOP: PerCpuHashMap<TopKey, TopValue> = PerCpuHashMap::with_max_entries(1, 0);

/// The processes the automatic modes trace, while they live (`config.per_process_on`
/// only): name and cgroup, direct-mapped (index `tgid & (NAME_SLOTS - 1)`, tagged with
/// the tgid), written in place at a process's first event and exec, and sent through
/// `EXITS` at its exit, which frees the slot: no hash insert or delete per process.
#[map]
pub(crate) static PROC_NAMES: Array<ExitRecord> = Array::with_max_entries(1, 0);

/// The names of traced processes whose `PROC_NAMES` slot another one holds, and of those
/// whose exit record found no room in `EXITS` (for userspace to find once they are
/// gone): tgid -> name and cgroup.
#[map]
pub(crate) static PROC_INFO: HashMap<u32, ProcRecord> = HashMap::with_max_entries(1, 0);

/// Each traced process's `PROC_INFO` record at its exit (`config.per_process_on` only): its `TOP`
/// keys (those with its tgid) are to be read one last time and freed. Submitted with the
/// kernel's own wakeup: the reader, asleep on the ring, wakes at the first record after
/// it caught up.
#[map]
pub(crate) static EXITS: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Calls sent to userspace (`call_ring`): slow calls (`config.slow_on`) and samples of
/// each stack's calls (`config.stacks_on`), the only per-call traffic.
#[map]
pub(crate) static CALL_RING: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Per syscall key: the latency from which a call is slow, ns (u64::MAX: never).
#[map]
pub(crate) static SLOW_NS: Array<u64> = Array::with_max_entries(1, 0);

/// `syscost top`'s drill-down: the process (tgid) whose calls also go to the pool, in
/// slot `config.pool_from_slot`, while it is shown (0: none).
#[map]
pub(crate) static DRILL: Array<u32> = Array::with_max_entries(1, 0);

/// With `--kernel-stacks`: per thread, the kernel stack where it last blocked inside a
/// syscall, copied (nothing shared between threads, nothing overwritten by another).
#[map]
pub(crate) static KSTACK_OF: HashMap<u32, BlockedStack> = HashMap::with_max_entries(1, 0);

/// With `--stacks`: per CPU, the calls and time of each (process, user stack, syscall).
#[map]
pub(crate) static STACK_CALLS: PerCpuHashMap<StackKey, StackValue> =
    PerCpuHashMap::with_max_entries(1, 0);

/// With `--stacks`: each user stack's frame-pointer walk, by its hash.
#[map]
pub(crate) static STACK_FRAMES: HashMap<u64, UserStack> = HashMap::with_max_entries(1, 0);

/// With `--stacks`: where a call's walk is written before it is hashed (per CPU: the
/// programs do not nest on a CPU for these tracepoints).
#[map]
pub(crate) static STACK_SCRATCH: PerCpuArray<UserStack> = PerCpuArray::with_max_entries(1, 0);

/// With `--stacks`: the window the calls by stack are counted in (0 or 1, the
/// `syscost_common::STACK_SIDE_BIT` of their keys), swapped by userspace, which then
/// drains the other window's entries.
#[map]
pub(crate) static STACK_SIDE: Array<u32> = Array::with_max_entries(1, 0);

/// With `--stacks`: `syscost_common::stack_counter`, per CPU.
#[map]
pub(crate) static STACK_COUNTS: PerCpuArray<u64> =
    PerCpuArray::with_max_entries(stack_counter::COUNT, 0);

/// The load-time configuration (`syscost_common::config`), written by the loader and
/// read here only through [`config!`]: read-only and frozen at load, so the verifier
/// folds each field read into a constant.
#[unsafe(no_mangle)]
pub(crate) static CONFIG: Global<LoadConfig> = Global::new(LoadConfig::ZERO);

/// One field of [`CONFIG`], read as the load left it (a volatile read of that field
/// alone: the compiler may not fold the object's placeholder in).
macro_rules! config {
    ($field:ident) => {{
        let config = $crate::maps::config_ptr();
        // SAFETY: the configuration lives as long as the programs (a caller already
        // in an unsafe block makes this one redundant).
        #[allow(unused_unsafe)]
        let value = unsafe { ::core::ptr::read_volatile(&raw const (*config).$field) };
        value
    }};
}
pub(crate) use config;

/// [`CONFIG`] as the configuration it wraps (`Global` is transparent).
#[inline(always)]
pub(crate) fn config_ptr() -> *const LoadConfig {
    &raw const CONFIG as *const LoadConfig
}
