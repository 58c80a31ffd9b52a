//! Plain-data types and pure functions shared by the kernel programs (`syscost-ebpf`)
//! and the `syscost` binary. Everything here is `no_std` and `#[repr(C)]` so both sides
//! read the same bytes.
//!
//! The data path in one paragraph: `PROCS` says which processes are traced (a table
//! indexed by the low bits of the tgid, tagged with the whole tgid, with a hash map for
//! the rare collisions); `THREADS` holds each traced thread's syscall in flight (same
//! scheme, by tid); at sys_exit the call lands in a [`StatsEntry`] of the current CPU's
//! pool, found through that CPU's `INDEX` of (process slot, syscall key). Each entry is
//! written under a sequence count, so userspace, which maps the pool read-only, copies
//! only consistent entries. No table grows with pid_max, and the pool grows with the
//! syscalls in use, not with the syscall numbers that exist.
#![no_std]

pub mod config;
pub mod latency_bucket;

pub use latency_bucket::{GROUPING_POWER, HISTOGRAM_BUCKETS, MAX_VALUE_POWER, bucket_index};

/// The median of `v` (the upper one of an even count; 0 for none), as every benchmark
/// of syscost reports it. Reorders `v`. (Userspace only: the kernel side has no floats.)
#[cfg(not(target_arch = "bpf"))]
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mid = v.len() / 2;
    *v.select_nth_unstable_by(mid, f64::total_cmp).1
}

/// Native syscall numbers below this have a key of their own in `INDEX`.
pub const NATIVE_KEYS: u32 = 1024;
/// 32-bit (compat) syscall numbers below this have a key of their own, after the native ones.
pub const COMPAT_KEYS: u32 = 512;
/// Keys per process slot in `INDEX`: native numbers, then compat numbers.
pub const KEYS_PER_SLOT: u32 = NATIVE_KEYS + COMPAT_KEYS;
/// Where compat keys start.
pub const COMPAT_BASE: u32 = NATIVE_KEYS;
/// Key of a syscall whose number has no key of its own (any number beyond the above, on
/// either ABI): its entry is found through `BIG_INDEX` and carries the raw number.
pub const KEY_BIG_NATIVE: u32 = 0xffff_0000;
pub const KEY_BIG_COMPAT: u32 = 0xffff_0001;
/// `ThreadSlot::key` of a thread that is not inside a traced syscall.
pub const KEY_NONE: u32 = 0xffff_fffe;
/// `ThreadSlot::key` the fork hook leaves in a new thread's slot, so that the new
/// thread's return from clone (an exit the thread never entered) is not called unpaired.
pub const KEY_FORK_CHILD: u32 = 0xffff_ffff;

/// `INDEX` packs four 16-bit pool positions (plus one; 0 = none yet) in each u64.
pub const KEYS_PER_INDEX_WORD: u32 = 4;
/// u64 words of `INDEX` per process slot.
pub const INDEX_WORDS_PER_SLOT: u32 = KEYS_PER_SLOT / KEYS_PER_INDEX_WORD;

/// Whether a syscall key is a 32-bit (compat) syscall's.
#[inline(always)]
pub const fn key_is_compat(key: u32) -> bool {
    key == KEY_BIG_COMPAT || (key >= COMPAT_BASE && key < KEY_BIG_NATIVE)
}

/// Whether a syscall's return value is an error: -4095..=-1, the kernel's
/// `IS_ERR_VALUE` range (the errno is its negation).
#[inline(always)]
pub const fn is_error_return(ret: i64) -> bool {
    ret >= -4095 && ret < 0
}

/// The key of syscall `nr` made by a process of ABI `abi` (see [`abi`]).
#[inline(always)]
pub const fn syscall_key(abi: u32, nr: u64) -> u32 {
    if abi == abi::COMPAT {
        if nr < COMPAT_KEYS as u64 {
            COMPAT_BASE + nr as u32
        } else {
            KEY_BIG_COMPAT
        }
    } else if nr < NATIVE_KEYS as u64 {
        nr as u32
    } else {
        KEY_BIG_NATIVE
    }
}

/// The ABI part of a `PROCS` value: a traced process whose ABI is not known yet (just
/// traced, or just exec'd), a 64-bit one, a 32-bit (compat) one. 0 is "not traced".
pub mod abi {
    pub const UNKNOWN: u32 = 1;
    pub const NATIVE: u32 = 2;
    pub const COMPAT: u32 = 3;
}

/// `PROCS` values: the process's statistics slot above its ABI, `slot << 8 | abi`. Each
/// process syscost is asked to profile has a slot of its own (children it is followed
/// into share their parent's), so one set of programs keeps several processes apart. A
/// value is non-zero exactly when the process is traced.
pub mod proc_value {
    const ABI_MASK: u32 = 0xff;
    const SLOT_SHIFT: u32 = 8;

    pub const fn new(slot: u32, abi: u32) -> u32 {
        (slot << SLOT_SHIFT) | abi
    }
    pub const fn slot(value: u32) -> u32 {
        value >> SLOT_SHIFT
    }
    pub const fn abi(value: u32) -> u32 {
        value & ABI_MASK
    }
    /// The same process with another ABI.
    pub const fn with_abi(value: u32, abi: u32) -> u32 {
        (value & !ABI_MASK) | abi
    }
    /// A process the automatic modes (every process, a cgroup) looked at and left out:
    /// kept in PROCS so that its later syscalls cost one lookup, not another check.
    /// Not a traced process (its ABI byte is none of [`super::abi`]).
    pub const EXCLUDED: u32 = ABI_MASK;
}

/// What the programs trace beyond the processes userspace puts in PROCS (`config.auto_mode`).
pub mod auto_mode {
    /// Only those processes.
    pub const OFF: u32 = 0;
    /// Every process of the machine but syscost itself (`syscost top`, `export --top`).
    pub const ALL: u32 = 1;
    /// Every process of one cgroup v2 and its descendants (`--cgroup`), those that
    /// move in later included.
    pub const CGROUP: u32 = 2;
}

/// Key of the `TOP` table: one process and one syscall (`syscall_key`; numbers without
/// a key of their own share `KEY_BIG_*`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopKey {
    pub tgid: u32,
    pub key: u32,
}

/// Value of the `TOP` table (per CPU): the per-process figures of `syscost top`, the
/// machine-wide series of `export --top` and `--per-process`. No histogram: those live
/// in the pool, for the processes asked for.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopValue {
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
    /// Of `total_ns`, the time switched out.
    pub offcpu_ns: u64,
}

/// User stack frames a call's stack is known by (`--stacks`): its frame-pointer walk,
/// innermost first, at most this many (deeper callers are not told apart).
pub const STACK_FRAMES: usize = 32;

/// A call's user stack as the frame-pointer walk found it (`STACK_FRAMES` values, and the
/// per-CPU scratch the walk is written into): `bytes` of `frames` filled.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserStack {
    pub frames: [u64; STACK_FRAMES],
    /// Bytes of `frames` filled (a multiple of 8), or 0 when the walk found nothing.
    pub bytes: u64,
}

/// Key of the `STACK_CALLS` table: one process, one user stack (the hash of its
/// frame-pointer walk, the key of `STACK_FRAMES`; 0: no stack could be walked) and one
/// syscall (`syscall_key`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackKey {
    pub stack: u64,
    pub tgid: u32,
    pub key: u32,
}

/// Value of the `STACK_CALLS` table (per CPU): the calls made from one stack, exact.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackValue {
    pub calls: u64,
    pub total_ns: u64,
}

/// The `STACK_COUNTS` per-CPU array: what `--stacks` could not keep, never silently.
pub mod stack_counter {
    /// Calls whose (process, stack, syscall) found no room in `STACK_CALLS` (counted in
    /// the table of syscalls, not under a stack).
    pub const CALLS_DROPPED: u32 = 0;
    /// (Process, stack, syscall) entries whose stack's frames found no room in
    /// `STACK_FRAMES` as the entry was made (its calls are counted under its hash, its
    /// frames unknown unless a sample names them).
    pub const FRAMES_DROPPED: u32 = 1;
    /// Samples sent through the `CALL_RING` ring buffer for unwinding.
    pub const SAMPLES: u32 = 2;
    /// Samples the ring buffer had no room for.
    pub const SAMPLES_DROPPED: u32 = 3;
    /// Number of counters.
    pub const COUNT: u32 = 4;
}

/// The bit of a `STACK_CALLS` key's `stack` (and of a `STACK_FRAMES` key) that says
/// which window the kernel side counted it in (`STACK_SIDE`): the tables hold two
/// windows, the one being written and, once swapped, the one userspace drains. A stack is
/// known by the rest ([`stack_identity`]): its walk's hash with the low bit set, or 0
/// when no user stack could be walked.
pub const STACK_SIDE_BIT: u64 = 2;

/// A stack's identity across windows: its key without [`STACK_SIDE_BIT`].
#[inline(always)]
pub fn stack_identity(stack: u64) -> u64 {
    stack & !STACK_SIDE_BIT
}

/// The key of a stack (a walk's `hash`, 0 for none) in window `side` (0 or 1).
#[inline(always)]
pub fn stack_in_window(hash: u64, side: u32) -> u64 {
    let side = if side != 0 { STACK_SIDE_BIT } else { 0 };
    if hash == 0 {
        side
    } else {
        (hash & !STACK_SIDE_BIT) | 1 | side
    }
}

/// The hash a stack is known by: FNV-1a over its frames' words (never 0, which means
/// "no stack"). The kernel side hashes with the same function.
#[inline(always)]
pub fn stack_hash_step(h: u64, frame: u64) -> u64 {
    (h ^ frame).wrapping_mul(0x0000_0100_0000_01b3)
}

/// FNV-1a's offset basis, where [`stack_hash_step`] starts.
pub const STACK_HASH_START: u64 = 0xcbf2_9ce4_8422_2325;

/// One slot of the direct-mapped `PROCS` table (index `tgid & (PROC_SLOTS - 1)`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcSlot {
    /// The traced process in this slot; 0 when free.
    pub tgid: u32,
    /// Its `proc_value`, with [`ProcSlot::OVERFLOW`] set when a traced process whose
    /// tgid maps here had to go to the overflow hash map.
    pub value: u32,
}

impl ProcSlot {
    /// Flag in `value`: look in the overflow hash map on a tag mismatch.
    pub const OVERFLOW: u32 = 1 << 31;
}

/// Per-thread state: the syscall in flight and the thread's totals. One cache line.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadSlot {
    /// The thread this slot belongs to; 0 when free.
    pub tid: u32,
    /// Key of the syscall in flight ([`syscall_key`]), `KEY_NONE` or `KEY_FORK_CHILD`.
    pub key: u32,
    /// `bpf_ktime_get_ns()` at enter; 0 when the thread is not inside a traced syscall.
    pub enter_ns: u64,
    /// The raw syscall number at enter (names `KEY_BIG_*` calls).
    pub nr: u64,
    /// `bpf_ktime_get_ns()` when the thread was switched out inside the current syscall;
    /// 0 while it runs.
    pub off_since_ns: u64,
    /// Time switched out during the current syscall so far, ns.
    pub off_ns: u64,
    /// Context switches during the current syscall where the thread blocked
    /// (voluntary) / was preempted or yielded while runnable (involuntary). The top bit
    /// of `voluntary` is [`ThreadSlot::SWITCH_IN_UNSEEN`], not a count.
    pub voluntary: u32,
    pub involuntary: u32,
    /// Completed syscalls of this thread and their time (ns), since it was first seen.
    pub calls: u64,
    pub total_ns: u64,
}

impl ThreadSlot {
    /// In `voluntary`: the thread was switched out again inside the current syscall
    /// without its return to a CPU having been seen (the kernel reports no
    /// `sched_switch` for some switches; see `counter::SWITCH_IN_UNSEEN`).
    pub const SWITCH_IN_UNSEEN: u32 = 1 << 31;

    pub const EMPTY: Self = Self {
        tid: 0,
        key: KEY_NONE,
        enter_ns: 0,
        nr: 0,
        off_since_ns: 0,
        off_ns: 0,
        voluntary: 0,
        involuntary: 0,
        calls: 0,
        total_ns: 0,
    };
}

impl Default for ThreadSlot {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// Distinct errnos an entry counts by name; more land in `errno_other`.
pub const ERRNO_PAIRS: usize = 8;

/// One syscall of one process slot on one CPU: the pool element. Written only by the
/// CPU it belongs to, under `seq` (odd while an update is in progress), so a reader that
/// sees the same even `seq` before and after its copy has a consistent one.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsEntry {
    /// Sequence count: incremented before and after every change.
    pub seq: u64,
    /// Process slot this entry counts for.
    pub slot: u32,
    /// Syscall key ([`syscall_key`]).
    pub key: u32,
    /// The raw syscall number (meaningful for `KEY_BIG_*` keys, equal to the key's
    /// number otherwise).
    pub nr: u64,
    /// Completed calls (an exit paired with its enter).
    pub calls: u64,
    /// Calls that returned -4095..=-1.
    pub errors: u64,
    /// Sum of latencies, ns.
    pub total_ns: u64,
    /// Smallest latency on this CPU, ns (valid when `calls > 0`).
    pub min_ns: u64,
    /// Largest latency on this CPU, ns.
    pub max_ns: u64,
    /// Of `total_ns`, the time the thread was switched out (blocked or preempted), ns.
    pub offcpu_ns: u64,
    /// Context switches inside these calls where the thread blocked.
    pub voluntary: u64,
    /// Context switches inside these calls where it was runnable (preempted, yielded).
    pub involuntary: u64,
    /// Errnos counted by name (0 = unused pair) and their counts.
    pub errnos: [u16; ERRNO_PAIRS],
    pub errno_counts: [u64; ERRNO_PAIRS],
    /// Errors whose errno found no free pair.
    pub errno_other: u64,
    /// Latency histogram, `bucket_index` layout.
    pub hist: [u64; HISTOGRAM_BUCKETS],
}

impl StatsEntry {
    /// All zero.
    pub const ZERO: Self = Self {
        seq: 0,
        slot: 0,
        key: 0,
        nr: 0,
        calls: 0,
        errors: 0,
        total_ns: 0,
        min_ns: 0,
        max_ns: 0,
        offcpu_ns: 0,
        voluntary: 0,
        involuntary: 0,
        errnos: [0; ERRNO_PAIRS],
        errno_counts: [0; ERRNO_PAIRS],
        errno_other: 0,
        hist: [0; HISTOGRAM_BUCKETS],
    };
}

impl Default for StatsEntry {
    fn default() -> Self {
        Self::ZERO
    }
}

/// Key of `BIG_INDEX`: a syscall number without a key of its own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BigKey {
    pub slot: u32,
    /// `KEY_BIG_NATIVE` or `KEY_BIG_COMPAT`.
    pub key: u32,
    pub nr: u64,
}

/// Value of `PROC_INFO`: a process the automatic modes trace, while it lives: its name
/// and cgroup when first seen (or exec'd), its name again at its main thread's exit
/// (the name it ended with). Its `TOP` keys are those with its tgid: userspace finds
/// them in its copy of the table, so the record names none (marking them would cost a
/// lookup of this record at each new key, and its exit a copy of the marks).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcRecord {
    pub comm: [u8; 16],
    /// Its cgroup v2 id.
    pub cgroup_id: u64,
}

impl ProcRecord {
    pub const EMPTY: Self = Self {
        comm: [0; 16],
        cgroup_id: 0,
    };
}

impl Default for ProcRecord {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// Slots of `PROC_NAMES` (a power of two) with the per-process table: the names of
/// live traced processes, direct-mapped by `tgid & (NAME_SLOTS - 1)`; a process whose
/// slot another holds is named in `PROC_INFO`. Without the table the map has one slot.
pub const NAME_SLOTS: u32 = 8192;

/// The `PROC_NAMES` slot of a tgid (whoever holds it: its tag says).
pub const fn name_slot(tgid: u32) -> u32 {
    tgid & (NAME_SLOTS - 1)
}

/// A traced process's last record, sent through the `EXITS` ring buffer by the exit
/// hook when its last thread exits (automatic modes with `TOP` only): userspace reads
/// its `TOP` keys' final figures (those with its tgid) from its next copy of the table
/// and frees them. Also a `PROC_NAMES` slot, tagged by `tgid` (0: free), while the
/// process lives.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitRecord {
    pub tgid: u32,
    pub _pad: u32,
    pub info: ProcRecord,
}

impl ExitRecord {
    /// A free `PROC_NAMES` slot.
    pub const FREE: Self = Self {
        tgid: 0,
        _pad: 0,
        info: ProcRecord::EMPTY,
    };
}

/// User stack frames a slow call carries.
pub const SLOW_STACK_FRAMES: usize = 32;

/// The unit of a slow call's user stack copy: one page.
pub const USER_STACK_PAGE: usize = 4096;
/// Pages of user stack a slow call may carry (`--stack-size`), from the page holding the
/// stack pointer up; userspace unwinds them with the objects' call frame information.
pub const USER_STACK_PAGE_CHOICES: [u32; 5] = [0, 1, 2, 4, 8];
/// The default: 4 pages, at least 12 KiB above the stack pointer.
pub const USER_STACK_DEFAULT_PAGES: u32 = 4;

/// A slow call as the ring buffer carries it: the event, then `P` pages of user stack
/// (`event.user_stack_bytes` of them read).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CallRecord<const P: usize> {
    pub event: CallEvent,
    pub stack: [[u8; USER_STACK_PAGE]; P],
}
/// Kernel stack frames a slow call carries (`--kernel-stacks`).
pub const KERNEL_STACK_FRAMES: usize = 16;

/// Per thread (`--kernel-stacks`): the kernel stack where it last blocked, and in which
/// call (its entry time).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockedStack {
    pub enter_ns: u64,
    /// Bytes of `stack` filled, or a negative errno.
    pub bytes: i64,
    pub stack: [u64; KERNEL_STACK_FRAMES],
}

/// A call at least as slow as its threshold (`--slow`), sent through the `CALL_RING` ring
/// buffer at its exit: only those calls leave the kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallEvent {
    /// `bpf_ktime_get_ns()` at the exit.
    pub exit_ns: u64,
    pub latency_ns: u64,
    /// Of the latency, the time switched out.
    pub offcpu_ns: u64,
    /// The raw syscall number.
    pub nr: u64,
    /// The return value (-errno on error).
    pub ret: i64,
    /// The first six arguments, from the user registers.
    pub args: [u64; 6],
    pub tgid: u32,
    pub tid: u32,
    /// Syscall key ([`syscall_key`]).
    pub key: u32,
    /// Bytes of `stack` filled (a multiple of 8), or a negative errno.
    pub stack_bytes: i32,
    /// Statistics slot of the process.
    pub slot: u32,
    /// Bytes of `kernel_stack` filled (0: the call did not block, or no kernel stacks).
    pub kernel_stack_bytes: u32,
    pub comm: [u8; 16],
    /// The user registers an unwinder starts from: instruction pointer, stack pointer,
    /// frame pointer, link register (x86_64: ip, sp, bp, ip; arm64: pc, sp, x29, x30),
    /// at the call's exit.
    pub user_regs: [u64; 4],
    /// Where the stack copy that follows the event begins: the page holding the stack
    /// pointer.
    pub user_stack_base: u64,
    /// Bytes of that copy (whole pages: a page that cannot be read ends it).
    pub user_stack_bytes: u32,
    /// `record_flags::*`.
    pub flags: u32,
    /// The address of the process's `mm_struct`: a new one after an exec, so userspace
    /// knows when the mappings it read for the process are no longer its.
    pub mm: u64,
    /// The file the first argument named at the exit, taken as a descriptor: its inode
    /// number and its mount's id (as /proc/PID/fdinfo gives it); `fd_ino` 0 when it
    /// named no open file. Userspace shows an fd's name only if the descriptor still
    /// names that file when it reads it.
    pub fd_ino: u64,
    pub fd_mnt_id: u32,
    /// The low half of the task's `self_exec_id` (one more at each exec): with `mm`, which
    /// image of the process made the call (a freed `mm_struct` may be reused).
    pub exec_id: u32,
    /// With `record_flags::STACK_SAMPLE`: the hash of the call's frame-pointer walk, the
    /// stack whose calls it samples (`StackKey::stack`).
    pub stack_hash: u64,
    /// User stack, innermost first (the instruction after the syscall first).
    pub stack: [u64; SLOW_STACK_FRAMES],
    /// With `--kernel-stacks`: the kernel stack where the call last blocked, taken at its
    /// last switch-out, innermost first.
    pub kernel_stack: [u64; KERNEL_STACK_FRAMES],
}

/// Counters of each slot in the `COUNTERS` per-CPU array: index `slot * COUNT + c`.
pub mod counter {
    /// Exits whose enter was not seen (the syscall was in flight when tracing began).
    pub const UNPAIRED: u32 = 0;
    /// Syscalls of a thread for which neither the thread table nor its overflow had room.
    pub const DROPPED_THREAD: u32 = 1;
    /// Syscalls whose (process, syscall) found no free entry in the CPU's pool.
    pub const DROPPED_SYSCALL: u32 = 2;
    /// Forked children that could not be added to the traced set.
    pub const DROPPED_CHILD: u32 = 3;
    /// Syscalls of processes the automatic modes found no room for in PROCS.
    pub const DROPPED_PROCESS: u32 = 4;
    /// Syscalls that found no room in the per-process `TOP` table.
    pub const DROPPED_TOP: u32 = 5;
    /// Slow calls the ring buffer had no room for (their statistics are counted).
    pub const DROPPED_SLOW: u32 = 6;
    /// Slow calls sent.
    pub const SLOW: u32 = 7;
    /// Exit records the ring buffer had no room for (no call is lost: those processes'
    /// figures are read when userspace finds them gone).
    pub const EXIT_UNSENT: u32 = 8;
    /// Calls that were seen leaving the CPU but not coming back: the kernel reports no
    /// `sched_switch` for some switches (seen on 6.18 when a CPU leaves its idle task;
    /// ftrace and perf miss the same switches). Their time from that switch-out to the
    /// next switch-in seen, or to the exit, counts as switched out: an upper bound, never
    /// time on a CPU.
    pub const SWITCH_IN_UNSEEN: u32 = 9;
    /// Pairs made in the per-process `TOP` table (slot 0's): with the copies userspace
    /// takes of the table, how full it is between them. Not a drop.
    pub const TOP_MADE: u32 = 10;
    /// Number of counters.
    pub const COUNT: u32 = 11;
}

/// `CallEvent::flags`.
pub mod record_flags {
    /// The call's return to a CPU after a switch-out was not seen
    /// (`counter::SWITCH_IN_UNSEEN`): its `offcpu_ns` is an upper bound.
    pub const SWITCH_IN_UNSEEN: u32 = 1;
    /// The record is a slow call (`--slow`).
    pub const SLOW: u32 = 2;
    /// The record is a sample of its stack's calls (`--stacks`): its user stack copy
    /// names the frames of `CallEvent::stack_hash`.
    pub const STACK_SAMPLE: u32 = 4;
}

/// Where a slot's counter `c` is in `COUNTERS`.
pub const fn counter_index(slot: u32, c: u32) -> u32 {
    slot * counter::COUNT + c
}

/// x86's code segment selector of 32-bit user code (`__USER32_CS`).
pub const USER32_CS: u64 = 0x23;
/// arm64's `pstate` bit of AArch32 user code (`PSR_MODE32_BIT`).
pub const PSR_MODE32_BIT: u64 = 0x10;

#[cfg(feature = "user")]
mod pod {
    // SAFETY: #[repr(C)] structs of integers; the only padding is none (the fields are
    // ordered so every one is naturally aligned and the sizes are multiples of 8).
    unsafe impl aya::Pod for super::ProcSlot {}
    unsafe impl aya::Pod for super::ThreadSlot {}
    unsafe impl aya::Pod for super::StatsEntry {}
    unsafe impl aya::Pod for super::BigKey {}
    unsafe impl aya::Pod for super::TopKey {}
    unsafe impl aya::Pod for super::TopValue {}
    unsafe impl aya::Pod for super::StackKey {}
    unsafe impl aya::Pod for super::StackValue {}
    unsafe impl aya::Pod for super::UserStack {}
    unsafe impl aya::Pod for super::ProcRecord {}
    unsafe impl aya::Pod for super::ExitRecord {}
    unsafe impl aya::Pod for super::CallEvent {}
    unsafe impl aya::Pod for super::BlockedStack {}
    unsafe impl aya::Pod for super::config::LoadConfig {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stack's key in either window comes back to one identity, never the other
    /// window's key, and "no stack" stays apart from every walk.
    #[test]
    fn a_stack_keeps_its_identity_across_windows() {
        for h in [
            0u64,
            1,
            2,
            3,
            0x8000_0000_0000_0002,
            u64::MAX,
            0xcbf2_9ce4_8422_2325,
        ] {
            let (a, b) = (stack_in_window(h, 0), stack_in_window(h, 1));
            assert_ne!(a, b, "{h:#x}");
            assert_eq!(a & STACK_SIDE_BIT, 0);
            assert_eq!(b & STACK_SIDE_BIT, STACK_SIDE_BIT);
            assert_eq!(stack_identity(a), stack_identity(b));
            if h == 0 {
                assert_eq!(stack_identity(a), 0, "no stack");
            } else {
                assert_eq!(stack_identity(a) & 1, 1, "a walk is never 0");
            }
        }
    }

    #[test]
    fn proc_values_keep_slot_and_abi_apart() {
        for slot in [0, 1, 7, 1 << 20] {
            for a in [abi::UNKNOWN, abi::NATIVE, abi::COMPAT] {
                let v = proc_value::new(slot, a);
                assert_ne!(v, 0, "a traced process is never 0");
                assert_eq!(proc_value::slot(v), slot);
                assert_eq!(proc_value::abi(v), a);
                let exec = proc_value::with_abi(v, abi::UNKNOWN);
                assert_eq!(proc_value::slot(exec), slot, "exec keeps the slot");
                assert_eq!(proc_value::abi(exec), abi::UNKNOWN);
                assert_eq!(v & ProcSlot::OVERFLOW, 0, "the overflow flag is free");
            }
        }
        assert_eq!(proc_value::abi(0), 0, "untraced has no ABI");
    }

    #[test]
    fn keys_cover_both_abis_and_big_numbers() {
        assert_eq!(syscall_key(abi::NATIVE, 0), 0);
        assert_eq!(syscall_key(abi::NATIVE, 600), 600);
        assert_eq!(syscall_key(abi::NATIVE, 1023), 1023);
        assert_eq!(syscall_key(abi::NATIVE, 1024), KEY_BIG_NATIVE);
        assert_eq!(syscall_key(abi::NATIVE, u64::MAX), KEY_BIG_NATIVE);
        assert_eq!(syscall_key(abi::UNKNOWN, 5), 5);
        assert_eq!(syscall_key(abi::COMPAT, 64), COMPAT_BASE + 64);
        assert_eq!(syscall_key(abi::COMPAT, 511), KEYS_PER_SLOT - 1);
        assert_eq!(syscall_key(abi::COMPAT, 512), KEY_BIG_COMPAT);
        assert_eq!(KEYS_PER_SLOT % KEYS_PER_INDEX_WORD, 0);
    }

    #[test]
    fn shared_layouts_have_no_padding() {
        use core::mem::size_of;
        assert_eq!(size_of::<ProcSlot>(), 8);
        assert_eq!(size_of::<ThreadSlot>(), 64, "one cache line");
        assert_eq!(size_of::<BigKey>(), 16);
        assert_eq!(size_of::<ProcRecord>(), 16 + 8);
        assert_eq!(size_of::<ExitRecord>(), 8 + size_of::<ProcRecord>());
        assert_eq!(
            size_of::<StatsEntry>(),
            8 * 11 + 2 * ERRNO_PAIRS + 8 * ERRNO_PAIRS + 8 + 8 * HISTOGRAM_BUCKETS
        );
        assert_eq!(size_of::<StatsEntry>() % 8, 0);
    }

    #[test]
    fn medians() {
        assert_eq!(super::median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(
            super::median(&mut [4.0, 1.0, 3.0, 2.0]),
            3.0,
            "the upper of two"
        );
        assert_eq!(super::median(&mut []), 0.0);
    }

    #[test]
    fn compat_keys_and_error_returns() {
        assert!(!key_is_compat(0) && !key_is_compat(COMPAT_BASE - 1));
        assert!(key_is_compat(COMPAT_BASE) && key_is_compat(COMPAT_BASE + 511));
        assert!(key_is_compat(KEY_BIG_COMPAT) && !key_is_compat(KEY_BIG_NATIVE));
        assert!(!key_is_compat(KEY_NONE) && !key_is_compat(KEY_FORK_CHILD));
        assert!(is_error_return(-1) && is_error_return(-4095));
        assert!(!is_error_return(-4096) && !is_error_return(0) && !is_error_return(1));
    }
}
