//! Every map and load-time constant of the programs, by the table they make up. Sizes are
//! set by userspace at load (`max_entries` here are placeholders); constants marked
//! `no_mangle` are set before load and folded in by the verifier, so a mode that is off
//! costs no instruction.

use super::*;

/// BPF_F_MMAPABLE: userspace maps these arrays and reads them without syscalls.
const MMAPABLE: u32 = 1 << 10;

/// Traced processes, direct-mapped: index `tgid & PROC_MASK`.
#[map]
pub(crate) static PROCS: Array<ProcSlot> = Array::with_max_entries(1, 0);

/// Traced processes whose direct slot was taken by another one: tgid -> `proc_value`.
#[map]
pub(crate) static PROCS_OVERFLOW: HashMap<u32, u32> = HashMap::with_max_entries(1, 0);

/// Per-thread state, direct-mapped: index `tid & THREAD_MASK`.
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

/// The statistics: CPU `c`'s region is `c * POOL_PER_CPU ..`, filled in order of first use.
#[map]
pub(crate) static POOL: Array<StatsEntry> = Array::with_max_entries(1, MMAPABLE);

/// Per CPU: entries of its pool region in use.
#[map]
pub(crate) static POOL_NEXT: PerCpuArray<u32> = PerCpuArray::with_max_entries(1, 0);

/// Counters of events that did not make it into the statistics, per process slot: index
/// `counter_index(slot, counter)`.
#[map]
pub(crate) static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(counter::COUNT, 0);

/// Per process and syscall, per CPU: calls, errors, time (`TOP_ON` only). Userspace
/// deletes the keys of a process once it has read their final figures, as soon as the
/// process's `EXITS` record arrives.
#[map]
pub(crate) static TOP: PerCpuHashMap<TopKey, TopValue> = PerCpuHashMap::with_max_entries(1, 0);

/// The processes the automatic modes trace, while they live (`TOP_ON` only): name,
/// cgroup and their `TOP` keys. Sent through `EXITS` and deleted at their exit.
#[map]
pub(crate) static PROC_INFO: HashMap<u32, ProcRecord> = HashMap::with_max_entries(1, 0);

/// Each traced process's `PROC_INFO` record at its exit (`TOP_ON` only): which `TOP`
/// keys to read one last time and free.
#[map]
pub(crate) static EXITS: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Slow calls (`--slow`), the only per-call traffic, and only with `SLOW_ON`.
#[map]
pub(crate) static SLOW: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Per syscall key: the latency from which a call is slow, ns (u64::MAX: never).
#[map]
pub(crate) static SLOW_NS: Array<u64> = Array::with_max_entries(1, 0);

/// `syscost top`'s drill-down: the process (tgid) whose calls also go to the pool, in
/// slot `POOL_FROM_SLOT`, while it is shown (0: none).
#[map]
pub(crate) static DRILL: Array<u32> = Array::with_max_entries(1, 0);

/// With `--kernel-stacks`: per thread, the kernel stack where it last blocked inside a
/// syscall, copied (nothing shared between threads, nothing overwritten by another).
#[map]
pub(crate) static KSTACK_OF: HashMap<u32, BlockedStack> = HashMap::with_max_entries(1, 0);

/// Take the kernel stack of every blocking switch inside a traced call (`--slow` with
/// `--kernel-stacks`): a stack walk per blocking switch.
#[unsafe(no_mangle)]
pub(crate) static KSTACKS_ON: Global<u32> = Global::new(0);

/// Report slow calls.
#[unsafe(no_mangle)]
pub(crate) static SLOW_ON: Global<u32> = Global::new(0);
/// The threshold of numbers without a key of their own.
#[unsafe(no_mangle)]
pub(crate) static SLOW_DEFAULT_NS: Global<u64> = Global::new(0);
/// Offsets of the argument registers in `struct pt_regs`: 64-bit (x86_64: di, si, dx,
/// r10, r8, r9; arm64: orig_x0, x1-x5), then 32-bit (x86: bx, cx, dx, si, di, bp; arm:
/// orig_x0, x1-x5).
#[unsafe(no_mangle)]
pub(crate) static PT_REGS_ARG_OFFSETS: Global<[u64; 6]> = Global::new([0; 6]);
#[unsafe(no_mangle)]
pub(crate) static PT_REGS_COMPAT_ARG_OFFSETS: Global<[u64; 6]> = Global::new([0; 6]);
/// Offsets of the registers an unwinder starts from in `struct pt_regs`: instruction
/// pointer, stack pointer, frame pointer, link register (x86_64: ip, sp, bp, and ip
/// again: it has no link register; arm64: pc, sp, x29, x30).
#[unsafe(no_mangle)]
pub(crate) static PT_REGS_UNWIND_OFFSETS: Global<[u64; 4]> = Global::new([0; 4]);
/// Byte offset of `mm` in `struct task_struct` (`--slow`: tells an exec apart).
#[unsafe(no_mangle)]
pub(crate) static TASK_MM_OFFSET: Global<u64> = Global::new(0);
/// Byte offset of `self_exec_id` in `struct task_struct` (`--slow`; 0: not known).
#[unsafe(no_mangle)]
pub(crate) static TASK_EXEC_ID_OFFSET: Global<u64> = Global::new(0);
/// Byte offsets from `task_struct.files` to an open file's inode number and mount id
/// (`--slow`): files, files_struct.fdt, fdtable.max_fds, fdtable.fd, file.f_inode,
/// inode.i_ino, file.f_path.mnt, then mount.mnt_id less mount.mnt (from the vfsmount).
#[unsafe(no_mangle)]
pub(crate) static FILE_OFFSETS: Global<[u64; 8]> = Global::new([0; 8]);
/// Pages of user stack each slow call carries (one of `USER_STACK_PAGE_CHOICES`).
#[unsafe(no_mangle)]
pub(crate) static USER_STACK_PAGES: Global<u32> = Global::new(0);

/// `auto_mode::*`.
#[unsafe(no_mangle)]
pub(crate) static AUTO_MODE: Global<u32> = Global::new(0);
/// The cgroup of `auto_mode::CGROUP`: its id and its level in the v2 hierarchy.
#[unsafe(no_mangle)]
pub(crate) static CGROUP_ID: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static CGROUP_LEVEL: Global<u32> = Global::new(0);
/// syscost's own process, left out of the automatic modes.
#[unsafe(no_mangle)]
pub(crate) static OWN_TGID: Global<u32> = Global::new(0);
/// Keep `TOP` up to date.
#[unsafe(no_mangle)]
pub(crate) static TOP_ON: Global<u32> = Global::new(0);
/// Slots below this get no pool entries (their figures are in `TOP` only).
#[unsafe(no_mangle)]
pub(crate) static POOL_FROM_SLOT: Global<u32> = Global::new(0);

/// Add forked child processes of traced processes to PROCS (threads are always followed).
#[unsafe(no_mangle)]
pub(crate) static FOLLOW_FORKS: Global<u32> = Global::new(0);
/// Table sizes (powers of two, as masks) and the pool entries per CPU, set at load.
#[unsafe(no_mangle)]
pub(crate) static PROC_MASK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static THREAD_MASK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static POOL_PER_CPU: Global<u32> = Global::new(0);
/// Byte offsets in the running kernel's structures, read from its BTF by userspace.
#[unsafe(no_mangle)]
pub(crate) static TASK_PID_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static TASK_TGID_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static TASK_SIGNAL_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static SIGNAL_LIVE_OFFSET: Global<u64> = Global::new(0);
/// How a task's registers tell 32-bit (compat) user code from 64-bit: the byte offset
/// of a register in `struct pt_regs`, a mask and the value it has under the mask in
/// 32-bit code (x86_64: `cs`, 0xffff, `__USER32_CS`; arm64: `pstate`, `PSR_MODE32_BIT`
/// twice).
#[unsafe(no_mangle)]
pub(crate) static COMPAT_TEST: Global<[u64; 3]> = Global::new([0; 3]);
/// Where sched_switch learns the previous task's state: 0, its `prev_state` argument
/// (from 5.18); else the byte offset of `task_struct.__state` (`.state` before 5.14),
/// read from the task, on kernels whose tracepoint has no such argument.
#[unsafe(no_mangle)]
pub(crate) static TASK_STATE_OFFSET: Global<u64> = Global::new(0);
/// How `--cgroup` finds the current task's ancestor at `CGROUP_LEVEL`: 0, the
/// `bpf_get_current_ancestor_cgroup_id` helper (tracing programs have it from 5.14);
/// 1, the task's default-hierarchy cgroup read through the offsets below
/// (`task->cgroups->dfl_cgrp`, its `level` and `ancestor_ids[]`), as the helper does.
#[unsafe(no_mangle)]
pub(crate) static CGROUP_WALK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static TASK_CGROUPS_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static CSS_SET_DFL_CGRP_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static CGROUP_LEVEL_OFFSET: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub(crate) static CGROUP_ANCESTOR_IDS_OFFSET: Global<u64> = Global::new(0);
