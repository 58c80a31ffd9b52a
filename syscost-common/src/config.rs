//! The contract between the loader and the kernel programs: the one load-time
//! configuration ([`LoadConfig`], the object's read-only global [`CONFIG_GLOBAL`]) and
//! the names of the object's maps ([`map_names`]).
//!
//! The loader fills a `LoadConfig` and writes it before the load in one place; the
//! programs read it field by field in one place (the kernel side's `config!`). The
//! global is read-only and frozen at load, so the verifier folds each field into the
//! programs as a constant: a mode that is off costs no instruction. A field renamed on
//! one side is a build error on the other.

/// The name of the object's global that holds the [`LoadConfig`].
pub const CONFIG_GLOBAL: &str = "CONFIG";

/// Everything the programs are told at load. `#[repr(C)]`, with no padding (the u64s
/// first, then an even number of u32s; checked below), as the loader writes its bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadConfig {
    /// Offsets of the argument registers in `struct pt_regs`: 64-bit (x86_64: di, si,
    /// dx, r10, r8, r9; arm64: orig_x0, x1-x5).
    pub pt_regs_arg_offsets: [u64; 6],
    /// The same for 32-bit code (x86: bx, cx, dx, si, di, bp; arm: orig_x0, x1-x5).
    pub pt_regs_compat_arg_offsets: [u64; 6],
    /// Offsets of the registers an unwinder starts from in `struct pt_regs`: instruction
    /// pointer, stack pointer, frame pointer, link register (x86_64: ip, sp, bp, and ip
    /// again: it has no link register; arm64: pc, sp, x29, x30).
    pub pt_regs_unwind_offsets: [u64; 4],
    /// Byte offsets from `task_struct.files` to an open file's inode number and mount id
    /// (`--slow`): files, files_struct.fdt, fdtable.max_fds, fdtable.fd, file.f_inode,
    /// inode.i_ino, file.f_path.mnt, then mount.mnt_id less mount.mnt (from the
    /// vfsmount).
    pub file_offsets: [u64; 8],
    /// How a task's registers tell 32-bit (compat) user code from 64-bit: the byte
    /// offset of a register in `struct pt_regs`, a mask and the value it has under the
    /// mask in 32-bit code (x86_64: `cs`, 0xffff, `__USER32_CS`; arm64: `pstate`,
    /// `PSR_MODE32_BIT` twice).
    pub compat_test: [u64; 3],
    /// The threshold of syscall numbers without a key of their own, ns (`--slow`).
    pub slow_default_ns: u64,
    /// Byte offset of `mm` in `struct task_struct` (`--slow`: tells an exec apart).
    pub task_mm_offset: u64,
    /// Byte offset of `self_exec_id` in `struct task_struct` (`--slow`; 0: not known).
    pub task_exec_id_offset: u64,
    /// The cgroup of `auto_mode::CGROUP`: its id (its level is `cgroup_level`).
    pub cgroup_id: u64,
    /// Byte offsets in the running kernel's structures, read from its BTF.
    pub task_pid_offset: u64,
    pub task_tgid_offset: u64,
    pub task_signal_offset: u64,
    pub signal_live_offset: u64,
    /// Where sched_switch learns the previous task's state: 0, its `prev_state`
    /// argument (from 5.18); else the byte offset of `task_struct.__state` (`.state`
    /// before 5.14), read from the task, on kernels whose tracepoint has no such
    /// argument.
    pub task_state_offset: u64,
    /// With `cgroup_walk`: `task->cgroups`, `css_set.dfl_cgrp`, `cgroup.level` and
    /// `cgroup.ancestor_ids` (read as the ancestor helper reads them).
    pub task_cgroups_offset: u64,
    pub css_set_dfl_cgrp_offset: u64,
    pub cgroup_level_offset: u64,
    pub cgroup_ancestor_ids_offset: u64,
    /// Take the kernel stack of every blocking switch inside a traced call (`--slow`
    /// with `--kernel-stacks`): a stack walk per blocking switch.
    pub kstacks_on: u32,
    /// Report slow calls.
    pub slow_on: u32,
    /// Pages of user stack each slow call carries (one of `USER_STACK_PAGE_CHOICES`).
    pub user_stack_pages: u32,
    /// `auto_mode::*`.
    pub auto_mode: u32,
    /// The level of `cgroup_id` in the v2 hierarchy.
    pub cgroup_level: u32,
    /// syscost's own process, left out of the automatic modes.
    pub own_tgid: u32,
    /// Keep `TOP` up to date.
    pub per_process_on: u32,
    /// Slots below this get no pool entries (their figures are in `TOP` only).
    pub pool_from_slot: u32,
    /// Add forked child processes of traced processes to PROCS (threads are always
    /// followed).
    pub follow_forks: u32,
    /// Table sizes (powers of two, as masks) and the pool entries per CPU.
    pub proc_mask: u32,
    pub thread_mask: u32,
    pub pool_per_cpu: u32,
    /// How `--cgroup` finds the current task's ancestor at `cgroup_level`: 0, the
    /// `bpf_get_current_ancestor_cgroup_id` helper (tracing programs have it from
    /// 5.14); 1, the task's default-hierarchy cgroup read through the offsets above.
    pub cgroup_walk: u32,
    /// Count every call by its user stack (`--stacks`): `STACK_CALLS`, `STACK_FRAMES`.
    pub stacks_on: u32,
    /// With `stacks_on`: a stack's calls on a CPU are sampled (sent with a copy of the
    /// user stack, for unwinding) when their count less one has no bit of this mask set:
    /// the first, then 1 in (mask + 1).
    pub stacks_sample_mask: u32,
    /// With `stacks_on`: a sample is sent only while the `CALL_RING` ring holds fewer bytes
    /// than this (half of it): slow calls keep the rest, whatever the samples' rate.
    pub stacks_ring_limit: u32,
}

impl LoadConfig {
    /// Every field 0: the object's own value, replaced at load.
    pub const ZERO: Self = Self {
        pt_regs_arg_offsets: [0; 6],
        pt_regs_compat_arg_offsets: [0; 6],
        pt_regs_unwind_offsets: [0; 4],
        file_offsets: [0; 8],
        compat_test: [0; 3],
        slow_default_ns: 0,
        task_mm_offset: 0,
        task_exec_id_offset: 0,
        cgroup_id: 0,
        task_pid_offset: 0,
        task_tgid_offset: 0,
        task_signal_offset: 0,
        signal_live_offset: 0,
        task_state_offset: 0,
        task_cgroups_offset: 0,
        css_set_dfl_cgrp_offset: 0,
        cgroup_level_offset: 0,
        cgroup_ancestor_ids_offset: 0,
        kstacks_on: 0,
        slow_on: 0,
        user_stack_pages: 0,
        auto_mode: 0,
        cgroup_level: 0,
        own_tgid: 0,
        per_process_on: 0,
        pool_from_slot: 0,
        follow_forks: 0,
        proc_mask: 0,
        thread_mask: 0,
        pool_per_cpu: 0,
        cgroup_walk: 0,
        stacks_on: 0,
        stacks_sample_mask: 0,
        stacks_ring_limit: 0,
    };
}

// No padding: the fields' sizes add up to the struct's (the loader writes every byte).
const _: () = assert!(core::mem::size_of::<LoadConfig>() == (6 + 6 + 4 + 8 + 3 + 13) * 8 + 16 * 4);

/// The names of the object's maps, as the kernel side declares them (its statics'
/// names) and the loader finds them; a test of the user side holds the two lists equal.
pub mod map_names {
    pub const PROCS: &str = "PROCS";
    pub const PROCS_OVERFLOW: &str = "PROCS_OVERFLOW";
    pub const THREADS: &str = "THREADS";
    pub const THREADS_OVERFLOW: &str = "THREADS_OVERFLOW";
    pub const INDEX: &str = "INDEX";
    pub const BIG_INDEX: &str = "BIG_INDEX";
    pub const POOL: &str = "POOL";
    pub const POOL_NEXT: &str = "POOL_NEXT";
    pub const COUNTERS: &str = "COUNTERS";
    pub const TOP: &str = "TOP";
    pub const PROC_INFO: &str = "PROC_INFO";
    pub const PROC_NAMES: &str = "PROC_NAMES";
    pub const EXITS: &str = "EXITS";
    pub const CALL_RING: &str = "CALL_RING";
    pub const SLOW_NS: &str = "SLOW_NS";
    pub const DRILL: &str = "DRILL";
    pub const KSTACK_OF: &str = "KSTACK_OF";
    pub const STACK_CALLS: &str = "STACK_CALLS";
    pub const STACK_FRAMES: &str = "STACK_FRAMES";
    pub const STACK_SCRATCH: &str = "STACK_SCRATCH";
    pub const STACK_COUNTS: &str = "STACK_COUNTS";
    pub const STACK_SIDE: &str = "STACK_SIDE";

    /// Every map of the tracer's programs.
    pub const ALL: [&str; 22] = [
        PROCS,
        PROCS_OVERFLOW,
        THREADS,
        THREADS_OVERFLOW,
        INDEX,
        BIG_INDEX,
        POOL,
        POOL_NEXT,
        COUNTERS,
        TOP,
        PROC_INFO,
        PROC_NAMES,
        EXITS,
        CALL_RING,
        SLOW_NS,
        DRILL,
        KSTACK_OF,
        STACK_CALLS,
        STACK_FRAMES,
        STACK_SCRATCH,
        STACK_COUNTS,
        STACK_SIDE,
    ];
}
