//! Plain-data types and pure functions shared by the kernel programs (`syscost-ebpf`)
//! and the `syscost` binary. Everything here is `no_std` and `#[repr(C)]` so both sides
//! read the same bytes.
#![no_std]

pub mod errno_slot;
pub mod latency_bucket;

pub use errno_slot::{ERRNO_SLOTS, errno_of_slot, errno_slot};
pub use latency_bucket::{GROUPING_POWER, HISTOGRAM_BUCKETS, MAX_VALUE_POWER, bucket_index};

/// Syscall numbers of one ABI we keep statistics for. x86_64 and i386 numbers both stop
/// below 470 today; a number beyond is counted as dropped.
pub const SYSCALLS_PER_ABI: u32 = 512;
/// Stats slots: the native ABI's syscalls at `nr`, 32-bit (compat) ones at
/// `COMPAT_BASE + nr`.
pub const MAX_SYSCALLS: u32 = 2 * SYSCALLS_PER_ABI;
/// Where compat syscalls start in the stats maps.
pub const COMPAT_BASE: u32 = SYSCALLS_PER_ABI;

/// The ABI part of a `PROCS` value: a traced process whose ABI is not known yet (just
/// traced, or just exec'd), a 64-bit one, a 32-bit (compat) one. 0 is "not traced".
pub mod abi {
    pub const UNKNOWN: u32 = 1;
    pub const NATIVE: u32 = 2;
    pub const COMPAT: u32 = 3;
}

/// `PROCS` values: the process's slot above its ABI, `slot << 8 | abi`. Each process
/// syscost is asked to profile has a slot of statistics of its own (children it is
/// followed into share their parent's), so one set of programs keeps several processes
/// apart. A value is non-zero exactly when the process is traced.
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
}

/// Where a slot's statistics of syscall index `nr` (< `MAX_SYSCALLS`) are in `STATS` and
/// `ERRNOS`.
pub const fn stats_index(slot: u32, nr: u32) -> u32 {
    slot * MAX_SYSCALLS + nr
}

/// Where a slot's counter `c` (see [`counter`]) is in `COUNTERS`.
pub const fn counter_index(slot: u32, c: u32) -> u32 {
    slot * counter::COUNT + c
}

/// x86's code segment selector of 32-bit user code (`__USER32_CS`).
pub const USER32_CS: u64 = 0x23;

/// `ThreadSlot::nr` value the fork hook leaves in a new thread's slot, so that the new
/// thread's return from clone (an exit the thread never entered) is not called unpaired.
pub const NR_FORK_CHILD: u32 = u32::MAX;

/// Counters of each slot in the `COUNTERS` per-CPU array (see [`counter_index`]).
pub mod counter {
    /// Exits whose enter was not seen (the syscall was in flight when we attached).
    pub const UNPAIRED: u32 = 0;
    /// Events of a thread whose id is beyond the per-thread table (pid_max raised after load).
    pub const DROPPED_TID: u32 = 1;
    /// Exits of a syscall number beyond `MAX_SYSCALLS`.
    pub const DROPPED_NR: u32 = 2;
    /// Forked children that could not be added to the traced set.
    pub const DROPPED_CHILD: u32 = 3;
    /// Number of counters.
    pub const COUNT: u32 = 4;
}

/// Per-thread state between `sys_enter` and `sys_exit`, one slot per thread id.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadSlot {
    /// `bpf_ktime_get_ns()` at enter; 0 when the thread is not inside a traced syscall.
    pub enter_ns: u64,
    /// Syscall number seen at enter (or `NR_FORK_CHILD`).
    pub nr: u32,
    /// Context switches away from the thread during the current syscall: voluntary
    /// (it blocked) in the low 16 bits, involuntary (preempted) in the high 16.
    pub switches: u32,
    /// `bpf_ktime_get_ns()` when the thread was switched out inside the current syscall;
    /// 0 while it runs.
    pub off_since_ns: u64,
    /// Time switched out during the current syscall so far, ns.
    pub off_ns: u64,
}

/// Per-thread totals, one slot per thread id (cleared when the thread exits).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadStats {
    /// Completed calls.
    pub calls: u64,
    /// Time inside syscalls, ns.
    pub total_ns: u64,
    /// The thread's dominant syscall: a majority-vote candidate (Boyer-Moore), exact
    /// whenever one syscall makes up more than half of the thread's calls.
    pub top_nr: u32,
    /// Votes of the candidate.
    pub top_votes: u32,
}

/// Per-syscall, per-CPU statistics. Userspace sums the CPUs.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallStats {
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
    /// On-CPU time is `total_ns - offcpu_ns`.
    pub offcpu_ns: u64,
    /// Voluntary context switches inside these calls (the thread blocked).
    pub voluntary: u64,
    /// Involuntary context switches inside these calls (the thread was preempted).
    pub involuntary: u64,
    /// Latency histogram, `bucket_index` layout.
    pub hist: [u64; HISTOGRAM_BUCKETS],
}

impl SyscallStats {
    /// All zero.
    pub const ZERO: Self = Self {
        calls: 0,
        errors: 0,
        total_ns: 0,
        min_ns: 0,
        max_ns: 0,
        offcpu_ns: 0,
        voluntary: 0,
        involuntary: 0,
        hist: [0; HISTOGRAM_BUCKETS],
    };
}

impl Default for SyscallStats {
    fn default() -> Self {
        Self::ZERO
    }
}

/// Per-syscall, per-CPU errno counts, indexed by `errno_slot(errno)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrnoCounts {
    pub counts: [u64; ERRNO_SLOTS as usize],
}

impl ErrnoCounts {
    /// All zero.
    pub const ZERO: Self = Self {
        counts: [0; ERRNO_SLOTS as usize],
    };
}

impl Default for ErrnoCounts {
    fn default() -> Self {
        Self::ZERO
    }
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: both are #[repr(C)] structs of integers with no padding holes the kernel
    // could leave uninitialised (ThreadSlot's padding is an explicit field).
    unsafe impl aya::Pod for super::ThreadSlot {}
    unsafe impl aya::Pod for super::ThreadStats {}
    unsafe impl aya::Pod for super::SyscallStats {}
    unsafe impl aya::Pod for super::ErrnoCounts {}
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }
        }
        assert_eq!(proc_value::abi(0), 0, "untraced has no ABI");
    }

    #[test]
    fn slots_do_not_overlap() {
        assert_eq!(stats_index(1, 0), stats_index(0, MAX_SYSCALLS - 1) + 1);
        assert_eq!(
            counter_index(1, 0),
            counter_index(0, counter::COUNT - 1) + 1
        );
        assert_eq!(stats_index(0, COMPAT_BASE + 3), COMPAT_BASE + 3);
    }
}
