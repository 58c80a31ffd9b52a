//! How big the kernel side's tables are, and what that costs in memory: none of them
//! grows with pid_max. The statistics pool grows with the CPUs and the processes kept
//! apart (`slots`), the rest is fixed.

use std::mem::size_of;

use anyhow::{Result, bail};
use syscost_common::{
    ExitRecord, INDEX_WORDS_PER_SLOT, ProcRecord, ProcSlot, StackKey, StackValue, StatsEntry,
    ThreadSlot, TopKey, TopValue, UserStack, counter,
};

/// Table sizes for one load of the programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSizes {
    /// Direct-mapped process table (a power of two).
    pub proc_slots: u32,
    /// Processes whose direct slot is taken.
    pub proc_overflow: u32,
    /// Direct-mapped thread table (a power of two).
    pub thread_slots: u32,
    /// Threads whose direct slot is taken.
    pub thread_overflow: u32,
    /// Statistics entries per CPU: one per (process slot, syscall) in use on that CPU.
    pub pool_per_cpu: u32,
    /// Syscall numbers without a key of their own (for all CPUs together).
    pub big_numbers: u32,
    /// (process, syscall) pairs of the per-process table (`syscost top`, `export --top`,
    /// `--per-process`); 1 when it is not used.
    pub top_entries: u32,
    /// Names (comm, cgroup) of the processes those modes trace while they live, direct-
    /// mapped: `NAME_SLOTS` (the programs' mask), 1 when not used.
    pub name_slots: u32,
    /// Names of those whose direct slot another holds, or kept past their exit for want
    /// of room in the exit ring; 1 when not used.
    pub names: u32,
    /// Bytes of the exit records' ring buffer (with the per-process table).
    pub exit_ring: u32,
    /// Bytes of the slow calls' ring buffer (`--slow`; a power of two, pages).
    pub slow_ring: u32,
    /// `--stacks`: (process, user stack, syscall) triples, and distinct stacks' frames.
    pub stack_calls: u32,
    pub stack_frames: u32,
}

impl TableSizes {
    /// The sizes for `slots` processes kept apart: 128 pool entries per CPU and 64 more
    /// per slot (a process uses 20 to 100 distinct syscalls; children followed with -f
    /// share their parent's).
    pub fn for_slots(slots: u32) -> Self {
        // 16-bit pool positions (plus one) in INDEX: at most 65,534 entries per CPU.
        let slots = slots.clamp(1, 1000);
        Self {
            proc_slots: 1 << 16,
            proc_overflow: 4096,
            thread_slots: 1 << 15,
            thread_overflow: 8192,
            pool_per_cpu: 128 + 64 * slots,
            big_numbers: 256,
            top_entries: 1,
            name_slots: 1,
            names: 1,
            exit_ring: 4096,
            slow_ring: 4 << 20,
            stack_calls: 1,
            stack_frames: 1,
        }
    }

    /// Room for `--stacks`: 16,384 (process, stack, syscall) triples and 8,192 distinct
    /// stacks; calls past them are counted as dropped (`stack_counter`).
    pub fn with_stacks(self) -> Self {
        Self {
            stack_calls: 16_384,
            stack_frames: 8192,
            ..self
        }
    }

    /// With the per-process table: 16,384 (process, syscall) pairs, room for about 500
    /// live processes at 30 syscalls each (an exited process's pairs are freed within a
    /// second of its exit, sooner when the table fills); 8,192 slots of names kept in
    /// place for processes started while tracing (a direct-mapped table: two whose pids
    /// share the low 13 bits share a slot), and 8,192 names in a hash map for the rest
    /// (processes there before, or whose slot another holds); 1 MB of exit records (about 26,000 processes' exits; userspace reads
    /// them 50 ms after the first of a burst, and every 50 ms while they come). A pair that finds no room is counted as dropped.
    pub fn with_top(self) -> Self {
        Self {
            top_entries: 16_384,
            name_slots: syscost_common::NAME_SLOTS,
            names: 8192,
            exit_ring: 1 << 20,
            ..self
        }
    }

    /// Applies `SYSCOST_TABLE_SIZES` (`name=N,...` with the field names above), which the
    /// tests use to overflow the tables on purpose.
    pub fn with_overrides(mut self, spec: &str) -> Result<Self> {
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, n)) = part.split_once('=') else {
                bail!("SYSCOST_TABLE_SIZES: '{part}' is not name=N");
            };
            let n: u32 = n
                .parse()
                .map_err(|_| anyhow::anyhow!("SYSCOST_TABLE_SIZES: '{n}' is not a count"))?;
            if n == 0 {
                bail!("SYSCOST_TABLE_SIZES: {name} must be at least 1");
            }
            let field = match name {
                "proc_slots" => &mut self.proc_slots,
                "proc_overflow" => &mut self.proc_overflow,
                "thread_slots" => &mut self.thread_slots,
                "thread_overflow" => &mut self.thread_overflow,
                "pool_per_cpu" => &mut self.pool_per_cpu,
                "big_numbers" => &mut self.big_numbers,
                "top_entries" => &mut self.top_entries,
                "names" => &mut self.names,
                "exit_ring" => &mut self.exit_ring,
                "slow_ring" => &mut self.slow_ring,
                "stack_calls" => &mut self.stack_calls,
                "stack_frames" => &mut self.stack_frames,
                other => bail!("SYSCOST_TABLE_SIZES: no table '{other}'"),
            };
            *field = n;
        }
        if !self.proc_slots.is_power_of_two() || !self.thread_slots.is_power_of_two() {
            bail!("SYSCOST_TABLE_SIZES: proc_slots and thread_slots must be powers of two");
        }
        if !self.slow_ring.is_power_of_two() || self.slow_ring < 4096 {
            bail!("SYSCOST_TABLE_SIZES: slow_ring must be a power of two of at least 4096");
        }
        if !self.exit_ring.is_power_of_two() || self.exit_ring < 4096 {
            bail!("SYSCOST_TABLE_SIZES: exit_ring must be a power of two of at least 4096");
        }
        if self.pool_per_cpu >= u32::from(u16::MAX) {
            bail!("SYSCOST_TABLE_SIZES: pool_per_cpu must be below 65535");
        }
        Ok(self)
    }

    /// Bytes of map memory for `cpus` possible CPUs and `slots` processes, as the kernel
    /// accounts it (within a few percent): arrays at their element size, hash maps with
    /// their elements' header and buckets, plus the log buffer and the small maps.
    pub fn memory(&self, cpus: u64, slots: u32) -> u64 {
        const HASH_ELEM_HEADER: u64 = 48;
        const HASH_BUCKET: u64 = 16;
        // aya-log's buffers, the globals, the benchmark candidates' entry.
        const LOG_AND_SMALL: u64 = 160 << 10;
        let page = |b: u64| b.div_ceil(4096) * 4096;
        let round8 = |b: usize| (b as u64).div_ceil(8) * 8;
        let hash = |n: u32, key: usize, value: u64| {
            u64::from(n) * (HASH_ELEM_HEADER + round8(key) + value)
                + HASH_BUCKET * u64::from(n).next_power_of_two()
        };
        let slots = u64::from(slots.max(1));
        let procs = u64::from(self.proc_slots) * size_of::<ProcSlot>() as u64;
        let procs_overflow = hash(self.proc_overflow, 4, 8);
        let threads = page(u64::from(self.thread_slots) * size_of::<ThreadSlot>() as u64);
        let threads_overflow = hash(self.thread_overflow, 4, round8(size_of::<ThreadSlot>()));
        let index = slots * u64::from(INDEX_WORDS_PER_SLOT) * 8 * cpus;
        // Per-CPU hash values: a pointer in the element, 8 bytes per CPU elsewhere.
        let big = hash(self.big_numbers, 16, 8) + u64::from(self.big_numbers) * 8 * cpus;
        let pool = page(cpus * u64::from(self.pool_per_cpu) * size_of::<StatsEntry>() as u64);
        let counters = 8 * cpus * (1 + slots * u64::from(counter::COUNT));
        let top = hash(self.top_entries, size_of::<TopKey>(), 8)
            + u64::from(self.top_entries) * size_of::<TopValue>() as u64 * cpus;
        let names = u64::from(self.name_slots) * size_of::<ExitRecord>() as u64
            + hash(self.names, 4, size_of::<ProcRecord>() as u64);
        let exits = u64::from(self.exit_ring);
        let stacks = hash(self.stack_calls, size_of::<StackKey>(), 8)
            + u64::from(self.stack_calls) * size_of::<StackValue>() as u64 * cpus
            + hash(self.stack_frames, 8, round8(size_of::<UserStack>()))
            + size_of::<UserStack>() as u64 * cpus;
        procs
            + procs_overflow
            + threads
            + threads_overflow
            + index
            + big
            + pool
            + counters
            + top
            + names
            + exits
            + stacks
            + LOG_AND_SMALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    #[test]
    fn memory_targets() {
        // One process: at most 16 MB on this 2-CPU machine, 64 MB with 64 CPUs,
        // whatever pid_max is (nothing here depends on it).
        let one = TableSizes::for_slots(1);
        assert!(one.memory(2, 1) <= 16 * MB, "{}", one.memory(2, 1));
        assert!(one.memory(64, 1) <= 64 * MB, "{}", one.memory(64, 1));
        // export of 64 processes on 64 CPUs: at most 1 GB.
        let many = TableSizes::for_slots(64);
        assert!(many.memory(64, 64) <= 1024 * MB, "{}", many.memory(64, 64));
        // The whole machine (syscost top): the per-process table and one drilled slot.
        let top = TableSizes::for_slots(2).with_top();
        assert!(top.memory(64, 2) <= 128 * MB, "{}", top.memory(64, 2));
        assert!(top.memory(2, 2) <= 16 * MB, "{}", top.memory(2, 2));
        let stacks = TableSizes::for_slots(1).with_stacks();
        let added = |cpus| stacks.memory(cpus, 1) - one.memory(cpus, 1);
        assert!(added(2) <= 5 * MB, "{}", added(2));
        assert!(added(64) <= 24 * MB, "{}", added(64));
    }

    #[test]
    fn overrides() {
        let s = TableSizes::for_slots(1)
            .with_overrides("thread_slots=16, thread_overflow=4")
            .unwrap();
        assert_eq!((s.thread_slots, s.thread_overflow), (16, 4));
        assert!(
            TableSizes::for_slots(1)
                .with_overrides("thread_slots=10")
                .is_err()
        );
        assert!(TableSizes::for_slots(1).with_overrides("nope=1").is_err());
        assert!(
            TableSizes::for_slots(1)
                .with_overrides("pool_per_cpu=0")
                .is_err()
        );
        assert!(
            TableSizes::for_slots(1)
                .with_overrides("pool_per_cpu")
                .is_err()
        );
    }
}
