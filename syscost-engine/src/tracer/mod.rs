//! Loads syscost's kernel programs, attaches them, tells them which processes to trace,
//! and gives the sampler its view of their maps. Dropping the `Tracer` detaches and
//! unloads everything (the links are file descriptors, so this also holds when syscost
//! is killed).
//!
//! Here: the options, the traced set and the reads of the maps. `load`: the object
//! configured for this kernel, its programs verified and attached, and the loader's
//! errors in words. `maps`: the mapped arrays, batch deletes, per-CPU sums and the
//! run-time statistics. `probes`: what this kernel offers (the on-CPU split, the cgroup
//! filter, fentry), asked by loading a program and never attaching it, and the
//! benchmark's programs.

use std::mem::size_of;

use anyhow::{Context as _, Result};
use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, HashMap, Map, MapData, PerCpuArray, PerCpuHashMap},
    programs::RawTracePoint,
};
use aya_log::EbpfLogger;
use syscost_common::{
    ExitRecord, ProcRecord, ProcSlot, STACK_SIDE_BIT, StackKey, StackValue, StatsEntry, ThreadSlot,
    TopKey, TopValue, UserStack, abi, config::map_names, counter, counter_index, proc_value,
    stack_identity,
};

use crate::{kernel_btf::KernelLayout, map_sizes::TableSizes, privileges, process};

mod load;
mod maps;
pub mod probes;

use load::{AncestorHelperRefused, CGROUP_UNSUPPORTED, load_and_attach};
pub use maps::{GracePeriod, RunTimeStats, possible_cpus};
use maps::{Mapped, delete_batch, map_data, map_fd, run_totals, sum_cpus};
pub use probes::offcpu_unavailable;
use syscost_report::profile::Features;

/// How the programs are set up at load time.
#[derive(Clone, Debug, Default)]
pub struct TracerOptions {
    /// Also trace child processes forked by traced processes (threads are always traced).
    pub follow_forks: bool,
    /// Split each syscall's time into on-CPU and switched-out, with a program on
    /// sched_switch (which runs on every context switch of the machine).
    pub offcpu: bool,
    /// Processes whose statistics are kept apart (slots; 0 counts as 1). Each costs
    /// pool entries, per CPU; the programs and the other tables are shared.
    pub slots: u32,
    /// Processes the programs add by themselves, beyond those given to
    /// [`Tracer::trace_process_in`]: none, every process, or a cgroup's (all in slot 0).
    pub auto: Auto,
    /// Keep per-process figures of every traced process (the `TOP` table).
    pub per_process: bool,
    /// Slots below this keep no histograms, only `TOP` figures (`syscost top`: slot 0
    /// is every process not drilled into).
    pub pool_from_slot: u32,
    /// Send calls at least this slow through the `SLOW` ring buffer (`--slow`).
    pub slow: Option<crate::slow::spec::SlowThresholds>,
    /// With `slow`: take the kernel stack at each blocking switch inside a call.
    pub kernel_stacks: bool,
    /// With `slow` or `stacks`: pages of user stack each slow call and each stack
    /// sample carries (for unwinding).
    pub stack_pages: u32,
    /// Count every call by its user stack (`--stacks`), a power of two N: 1 in N of each
    /// stack's calls per CPU (and the first) carries its stack for unwinding.
    pub stacks: Option<u32>,
}

/// What the programs trace by themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Auto {
    #[default]
    Off,
    /// Every process of the machine but syscost.
    All,
    /// Every process of a cgroup v2 and its descendants, those that move in included.
    Cgroup { id: u64, level: u32 },
}

/// Loaded and attached kernel programs.
pub struct Tracer {
    ebpf: Ebpf,
    logger: Option<EbpfLogger<&'static dyn log::Log>>,
    features: Features,
    offcpu: bool,
    per_process: bool,
    /// With `--stacks`: 1 in N of each stack's calls sampled.
    stacks: Option<u32>,
    /// With `--stacks`: the window the programs count in, and the wait that tells when
    /// none still counts in the other (`None`: this kernel made no such wait, and the
    /// tables hold the whole run).
    stack_window: Option<(u32, std::sync::Arc<GracePeriod>)>,
    slots: u32,
    sizes: TableSizes,
    cpus: u32,
    pool: Mapped,
    threads: Mapped,
}

/// The programs syscost attaches, each with its tracepoint, in attach order: the
/// bookkeeping hooks first, so no thread is created or exits unseen once syscalls count.
fn programs(offcpu: bool, auto: Auto) -> Vec<(&'static str, &'static str)> {
    let mut p = vec![
        ("syscost_exit", "sched_process_exit"),
        ("syscost_fork", "sched_process_fork"),
        ("syscost_exec", "sched_process_exec"),
    ];
    if matches!(auto, Auto::Cgroup { .. }) {
        p.push(("syscost_cgroup_move", "cgroup_attach_task"));
    }
    if offcpu {
        p.push(("syscost_sched_switch", "sched_switch"));
    }
    p.extend([
        ("syscost_sys_exit", "sys_exit"),
        ("syscost_sys_enter", "sys_enter"),
    ]);
    p
}
impl Tracer {
    /// Loads and attaches the programs. Nothing is traced until [`Tracer::trace_process`].
    /// A default feature this kernel cannot offer (the on-CPU split) is left off and
    /// named in [`Tracer::features`]; one asked for explicitly is refused.
    pub fn load(mut options: TracerOptions) -> Result<Self> {
        if options.kernel_stacks && options.slow.is_none() {
            anyhow::bail!("--kernel-stacks goes with --slow: give --slow DURATION");
        }
        if options.kernel_stacks && !options.offcpu {
            anyhow::bail!(
                "--kernel-stacks takes the stack at the switch-out, which the on-CPU split follows: drop --no-offcpu"
            );
        }
        let mut loader = Some(crate::kernel_btf::Loader::start());
        crate::kernel_btf::check_kernel()?;
        privileges::check()?;
        process::check_pid_namespace()?;
        let layout = KernelLayout::read()?;
        let mut features = Features::default();
        if options.offcpu
            && let Some(why) = offcpu_unavailable(&layout)
        {
            if options.kernel_stacks {
                anyhow::bail!("--kernel-stacks needs the on-CPU split, and {why}");
            }
            options.offcpu = false;
            features.unavailable.push(format!("no on-CPU split: {why}"));
        }
        let slots = options.slots.max(1);
        let mut sizes = TableSizes::for_slots(slots);
        if options.per_process {
            sizes = sizes.with_top();
        }
        if options.stacks.is_some() {
            sizes = sizes.with_stacks();
        }
        // The tests' way to shrink (or grow) the tables: debug builds only.
        #[cfg(debug_assertions)]
        if let Ok(spec) = std::env::var("SYSCOST_TABLE_SIZES") {
            sizes = sizes.with_overrides(&spec)?;
        }
        // `--cgroup` calls the cgroup-ancestor helper where the kernel lets tracing
        // programs call it (5.14 on, and backports): the programs are loaded so first,
        // and only a kernel that refuses the helper costs a second load, which reads the
        // ancestry from the task instead.
        let mut cgroup_walk = None;
        let mut ebpf = loop {
            let made = loader
                .take()
                .map_or_else(EbpfLoader::new, crate::kernel_btf::Loader::get);
            let shape = load::Shape {
                options: &options,
                layout: &layout,
                cgroup_walk,
                slots,
                sizes: &sizes,
            };
            match load_and_attach(made, &shape) {
                Err(e)
                    if e.is::<AncestorHelperRefused>()
                        && cgroup_walk.is_none()
                        && matches!(options.auto, Auto::Cgroup { .. }) =>
                {
                    cgroup_walk = Some(layout.cgroup_walk.context(CGROUP_UNSUPPORTED)?);
                }
                r => break r?,
            }
        };
        let logger = match EbpfLogger::init(&mut ebpf) {
            Ok(l) => Some(l),
            Err(e) => {
                log::warn!("kernel-side log messages unavailable: {e}");
                None
            }
        };
        for (on, name) in [
            (options.offcpu, "offcpu"),
            (options.slow.is_some(), "slow"),
            (options.kernel_stacks, "kernel-stacks"),
            (options.per_process, "per-process"),
            (options.stacks.is_some(), "stacks"),
            (matches!(options.auto, Auto::Cgroup { .. }), "cgroup"),
        ] {
            if on {
                features.on.push(name);
            }
        }
        let cpus = possible_cpus()?;
        let pool = Mapped::new(
            map_data(&ebpf, map_names::POOL)?,
            cpus as usize * sizes.pool_per_cpu as usize * size_of::<StatsEntry>(),
        )?;
        let threads = Mapped::new(
            map_data(&ebpf, map_names::THREADS)?,
            sizes.thread_slots as usize * size_of::<ThreadSlot>(),
        )?;
        let stack_window = match options.stacks.map(|_| GracePeriod::new()) {
            None => None,
            Some(Ok(wait)) => Some((0, std::sync::Arc::new(wait))),
            Some(Err(e)) => {
                log::warn!(
                    "--stacks: the tables hold the whole run (no window is drained: this kernel made no array of maps to wait on: {e})"
                );
                None
            }
        };
        Ok(Self {
            ebpf,
            logger,
            features,
            offcpu: options.offcpu,
            per_process: options.per_process,
            stacks: options.stacks.map(|n| n.max(1).next_power_of_two()),
            stack_window,
            slots,
            sizes,
            cpus,
            pool,
            threads,
        })
    }

    /// Whether the off-CPU split is measured.
    pub fn offcpu_tracked(&self) -> bool {
        self.offcpu
    }

    /// Takes the sched_switch program out of the kernel: from now on a thread switched
    /// out inside a syscall comes back unseen, as a thread does where the kernel
    /// reports no sched_switch for its return (the programs' answer to that is what the
    /// tests check). The split stays on: the switches seen before count.
    pub fn detach_sched_switch(&mut self) -> Result<()> {
        let prog: &mut RawTracePoint = self
            .ebpf
            .program_mut("syscost_sched_switch")
            .context("program syscost_sched_switch missing from the object")?
            .try_into()?;
        prog.unload()
            .context("cannot take syscost_sched_switch out of the kernel")
    }

    /// The features on, and the default ones this kernel lacks.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// `syscost top`'s drill-down: process `tgid`'s calls also go to the pool (slot
    /// `pool_from_slot`) from now on; 0 for none. The process stays where the kernel put
    /// it in PROCS.
    pub fn drill(&mut self, tgid: u32) -> Result<()> {
        let mut drill: Array<&mut MapData, u32> = Array::try_from(
            self.ebpf
                .map_mut(map_names::DRILL)
                .context("DRILL map missing")?,
        )?;
        drill.set(0, tgid, 0)?;
        Ok(())
    }

    /// The exit records' ring buffer, to be read by one consumer (with `top` only).
    pub fn take_exit_ring(&mut self) -> Result<aya::maps::RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(map_names::EXITS)
            .context("EXITS map missing")?;
        Ok(aya::maps::RingBuf::try_from(map)?)
    }

    /// Deletes `keys` from the per-process table: one syscall for all of them
    /// (BPF_MAP_DELETE_BATCH, Linux 5.6), one each if the kernel refuses it. Keys already
    /// gone are no error.
    pub fn delete_top(&mut self, keys: &[TopKey]) -> Result<()> {
        maps::delete_all(map_fd(self.map(map_names::TOP)?)?, keys);
        Ok(())
    }

    /// The pairs the kernel side has made in the per-process table so far (one
    /// lookup: `counter::TOP_MADE`, summed over CPUs).
    pub fn top_made(&self) -> Result<u64> {
        let counters: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(self.map(map_names::COUNTERS)?)?;
        Ok(counters
            .get(&counter_index(0, counter::TOP_MADE), 0)?
            .iter()
            .sum())
    }

    /// How many (process, syscall) pairs the per-process table holds at most.
    pub fn top_capacity(&self) -> usize {
        self.sizes.top_entries as usize
    }

    /// Hands `keys` of the per-process table (keys of live processes that have been
    /// idle) to userspace: each read and deleted in one operation where the kernel can
    /// (Linux 5.14 on), read then deleted elsewhere; their figures at that moment. The
    /// kernel side makes a key anew at its process's next call of that syscall.
    pub fn reclaim_top(&mut self, keys: &[TopKey]) -> Result<Vec<(TopKey, TopValue)>> {
        let fd = map_fd(self.map(map_names::TOP)?)?;
        let cpus = self.cpus as usize;
        let mut out = Vec::with_capacity(keys.len());
        let mut rest = Vec::new();
        for k in keys {
            match maps::lookup_and_delete_per_cpu::<TopKey, TopValue>(fd, k, cpus) {
                Ok(Some(per_cpu)) => out.push((*k, sum_cpus(per_cpu.iter()))),
                Ok(None) => {}
                Err(_) => rest.push(*k),
            }
        }
        if !rest.is_empty() {
            let mut top: PerCpuHashMap<&mut MapData, TopKey, TopValue> = PerCpuHashMap::try_from(
                self.ebpf
                    .map_mut(map_names::TOP)
                    .context("TOP map missing")?,
            )?;
            for k in rest {
                let Ok(per_cpu) = top.get(&k, 0) else {
                    continue;
                };
                let v = sum_cpus(per_cpu.iter());
                if top.remove(&k).is_ok() {
                    out.push((k, v));
                }
            }
        }
        Ok(out)
    }

    /// The slow calls' ring buffer, to be read by one consumer (`--slow` only).
    pub fn take_slow_ring(&mut self) -> Result<aya::maps::RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(map_names::SLOW)
            .context("SLOW map missing")?;
        Ok(aya::maps::RingBuf::try_from(map)?)
    }

    /// Number of statistics slots loaded.
    pub fn slots(&self) -> u32 {
        self.slots
    }
}

impl Tracer {
    /// Starts tracing every thread of process `tgid`, those it creates later included,
    /// in the first slot.
    pub fn trace_process(&mut self, tgid: u32) -> Result<()> {
        self.trace_process_in(tgid, 0)
    }

    /// Starts tracing process `tgid` with statistics of its own in `slot`: its direct
    /// slot in PROCS when free, else the overflow map (and the direct slot is flagged).
    pub fn trace_process_in(&mut self, tgid: u32, slot: u32) -> Result<()> {
        anyhow::ensure!(
            slot < self.slots,
            "slot {slot} beyond the {} loaded",
            self.slots
        );
        let value = proc_value::new(slot, abi::UNKNOWN);
        let index = tgid & (self.sizes.proc_slots - 1);
        let mut procs = self.procs()?;
        let current = procs.get(&index, 0)?;
        if current.tgid == 0 || current.tgid == tgid {
            procs.set(
                index,
                ProcSlot {
                    tgid,
                    value: value | (current.value & ProcSlot::OVERFLOW),
                },
                0,
            )?;
            return Ok(());
        }
        let mut overflow = self.procs_overflow()?;
        overflow
            .insert(tgid, value, 0)
            .with_context(|| format!("no room to trace process {tgid}"))?;
        let mut procs = self.procs()?;
        procs.set(
            index,
            ProcSlot {
                value: current.value | ProcSlot::OVERFLOW,
                ..current
            },
            0,
        )?;
        Ok(())
    }

    fn procs(&mut self) -> Result<Array<&mut MapData, ProcSlot>> {
        Ok(Array::try_from(
            self.ebpf
                .map_mut(map_names::PROCS)
                .context("PROCS map missing")?,
        )?)
    }

    fn procs_overflow(&mut self) -> Result<HashMap<&mut MapData, u32, u32>> {
        Ok(HashMap::try_from(
            self.ebpf
                .map_mut(map_names::PROCS_OVERFLOW)
                .context("PROCS_OVERFLOW map missing")?,
        )?)
    }

    /// Takes process `tgid` out of the traced set, as the exit hook does: for a process
    /// added that turned out to have exited before it was (its exit hook ran first).
    pub fn untrace_process(&mut self, tgid: u32) -> Result<()> {
        let index = tgid & (self.sizes.proc_slots - 1);
        let mut procs = self.procs()?;
        let current = procs.get(&index, 0)?;
        if current.tgid == tgid {
            procs.set(
                index,
                ProcSlot {
                    tgid: 0,
                    value: current.value & ProcSlot::OVERFLOW,
                },
                0,
            )?;
            return Ok(());
        }
        let mut overflow = self.procs_overflow()?;
        let _ = overflow.remove(&tgid);
        Ok(())
    }

    fn map(&self, name: &str) -> Result<&Map> {
        self.ebpf
            .map(name)
            .with_context(|| format!("{name} map missing"))
    }

    /// Flushes the kernel side's log messages to syscost's log.
    pub fn flush_log(&mut self) {
        if let Some(l) = self.logger.as_mut() {
            l.flush();
        }
    }

    /// Entries in use in each CPU's pool region.
    pub fn pool_in_use(&self) -> Result<Vec<u32>> {
        let next: PerCpuArray<&MapData, u32> =
            PerCpuArray::try_from(self.map(map_names::POOL_NEXT)?)?;
        Ok(next.get(&0, 0)?.iter().copied().collect())
    }

    /// The pool entry at position `i` of CPU `cpu`'s region, in the shared mapping. The
    /// kernel writes it while it is read: copy it under its sequence count.
    pub fn pool_entry(&self, cpu: u32, i: u32) -> Option<*const StatsEntry> {
        if i >= self.sizes.pool_per_cpu || cpu >= self.cpus {
            return None;
        }
        self.pool
            .element(cpu as usize * self.sizes.pool_per_cpu as usize + i as usize)
    }

    /// A slot's counters (`syscost_common::counter`), summed over CPUs.
    pub fn counters(&self, slot: u32) -> Result<[u64; counter::COUNT as usize]> {
        let counters: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(self.map(map_names::COUNTERS)?)?;
        let mut out = [0; counter::COUNT as usize];
        for (c, v) in (0..).zip(out.iter_mut()) {
            *v = counters.get(&counter_index(slot, c), 0)?.iter().sum();
        }
        Ok(out)
    }

    /// The state of thread `tid` as the kernel keeps it (its syscall in flight and its
    /// totals), if it has a slot.
    pub fn thread(&self, tid: u32) -> Option<ThreadSlot> {
        let p = self
            .threads
            .element::<ThreadSlot>((tid & (self.sizes.thread_slots - 1)) as usize)?;
        // SAFETY: an element of the live mapping. The slot has no sequence count: a read
        // torn by the thread's own update shows a wrong figure for one refresh, never a
        // stored one.
        let slot = unsafe { std::ptr::read_volatile(p) };
        if slot.tid == tid {
            return Some(slot);
        }
        let overflow: HashMap<&MapData, u32, ThreadSlot> =
            HashMap::try_from(self.map(map_names::THREADS_OVERFLOW).ok()?).ok()?;
        overflow.get(&tid, 0).ok()
    }

    /// The per-process table, summed over CPUs (empty unless loaded with `top`). An
    /// entry being updated while it is copied may trail by one call.
    pub fn top_table(&self) -> Result<Vec<(TopKey, TopValue)>> {
        let mut out = Vec::new();
        // A few syscalls for the whole table where the kernel reads it in batches (5.6 on
        // for hash maps: every kernel syscost supports), two per key otherwise.
        let fd = map_fd(self.map(map_names::TOP)?)?;
        let batch = maps::lookup_batch::<TopKey, TopValue>(fd, self.cpus as usize, |k, v| {
            out.push((*k, sum_cpus(v.iter())))
        });
        if batch.is_ok() {
            return Ok(out);
        }
        out.clear();
        let top: PerCpuHashMap<&MapData, TopKey, TopValue> =
            PerCpuHashMap::try_from(self.map(map_names::TOP)?)?;
        for item in top.iter() {
            let (k, per_cpu) = item.context("cannot read the per-process table")?;
            out.push((k, sum_cpus(per_cpu.iter())));
        }
        Ok(out)
    }

    /// `--stacks`' tables as the kernel left them (empty unless loaded with `stacks`):
    /// the calls of each (process, stack, syscall) summed over CPUs, each stack's
    /// frame-pointer walk, and what could not be kept. An entry being updated while it
    /// is copied may trail by one call.
    pub fn stack_tables(&self) -> Result<crate::stacks::Raw> {
        let mut raw = crate::stacks::Raw::default();
        if self.stacks.is_none() {
            return Ok(raw);
        }
        // Both windows: an entry in each is one (process, stack, syscall), summed.
        let calls: PerCpuHashMap<&MapData, StackKey, StackValue> =
            PerCpuHashMap::try_from(self.map(map_names::STACK_CALLS)?)?;
        let mut at: std::collections::HashMap<StackKey, usize> = Default::default();
        for item in calls.iter() {
            let (k, per_cpu) = item.context("cannot read the calls by stack")?;
            let (k, v) = (known_stack(k), sum_stack_cpus(per_cpu.iter()));
            match at.get(&k) {
                Some(&i) => {
                    raw.calls[i].1.calls += v.calls;
                    raw.calls[i].1.total_ns += v.total_ns;
                }
                None => {
                    at.insert(k, raw.calls.len());
                    raw.calls.push((k, v));
                }
            }
        }
        let frames: HashMap<&MapData, u64, UserStack> =
            HashMap::try_from(self.map(map_names::STACK_FRAMES)?)?;
        for item in frames.iter() {
            let (hash, stack) = item.context("cannot read the stacks' frames")?;
            let n = (stack.bytes as usize / 8).min(stack.frames.len());
            raw.frames
                .entry(stack_identity(hash))
                .or_insert_with(|| stack.frames[..n].to_vec());
        }
        let counts: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(self.map(map_names::STACK_COUNTS)?)?;
        for (i, c) in raw.counts.iter_mut().enumerate() {
            *c = counts.get(&(i as u32), 0)?.iter().sum();
        }
        raw.sample_every = self.stacks.unwrap_or(1);
        Ok(raw)
    }

    /// Swaps `--stacks`' window: from now on the programs count in the other one. The
    /// window closed is drained by [`Tracer::drain_stack_window`] once the returned
    /// wait has returned (no program still counts in it then); the wait takes an RCU
    /// grace period, milliseconds, and needs no lock of the caller's. `None`: no
    /// windows (without `--stacks`, or where the kernel made no wait).
    pub fn swap_stack_window(&mut self) -> Result<Option<(u32, std::sync::Arc<GracePeriod>)>> {
        let Some((open, wait)) = self.stack_window.clone() else {
            return Ok(None);
        };
        let mut side: Array<&mut MapData, u32> = Array::try_from(
            self.ebpf
                .map_mut(map_names::STACK_SIDE)
                .context("STACK_SIDE map missing")?,
        )?;
        side.set(0, 1 - open, 0)
            .context("cannot swap the calls-by-stack window")?;
        self.stack_window = Some((1 - open, wait.clone()));
        Ok(Some((open, wait)))
    }

    /// Reads and deletes the entries and walks of window `closed`, which no program
    /// counts in any more (its wait has returned), and hands back the tables' room. An
    /// entry is handed over only once it is deleted: one that could not be read or
    /// deleted stays, whole, for the next drain of its window. A walk's copy is handed
    /// over whether or not its delete succeeded (a walk is the same wherever it is
    /// kept). What is drained is the caller's to keep ([`crate::stacks::Drained`]).
    pub fn drain_stack_window(&mut self, closed: u32) -> Result<crate::stacks::Raw> {
        let mut out = crate::stacks::Raw::default();
        if self.stacks.is_none() {
            return Ok(out);
        }
        out.sample_every = self.stacks.unwrap_or(1);
        let bit = if closed != 0 { STACK_SIDE_BIT } else { 0 };
        let in_closed = |stack: u64| stack & STACK_SIDE_BIT == bit;
        let calls_fd = map_fd(self.map(map_names::STACK_CALLS)?)?;
        let frames_fd = map_fd(self.map(map_names::STACK_FRAMES)?)?;
        let frames: HashMap<&MapData, u64, UserStack> =
            HashMap::try_from(self.map(map_names::STACK_FRAMES)?)?;
        let calls: PerCpuHashMap<&MapData, StackKey, StackValue> =
            PerCpuHashMap::try_from(self.map(map_names::STACK_CALLS)?)?;
        // Nothing below returns early: once an entry is deleted, it is handed over.
        let mut walks = Vec::new();
        for h in frames.keys() {
            match h {
                Ok(h) if in_closed(h) => walks.push(h),
                Ok(_) => {}
                Err(e) => {
                    log::warn!("--stacks: a walk of the closed window was not listed: {e}");
                    break;
                }
            }
        }
        // Only the walks read are deleted: one that could not be read stays.
        walks.retain(|h| match frames.get(h, 0) {
            Ok(stack) => {
                let n = (stack.bytes as usize / 8).min(stack.frames.len());
                out.frames
                    .insert(stack_identity(*h), stack.frames[..n].to_vec());
                true
            }
            Err(_) => false,
        });
        maps::delete_all(frames_fd, &walks);
        let mut keys = Vec::new();
        for k in calls.keys() {
            match k {
                Ok(k) if in_closed(k.stack) => keys.push(k),
                Ok(_) => {}
                Err(e) => {
                    log::warn!("--stacks: an entry of the closed window was not listed: {e}");
                    break;
                }
            }
        }
        let read: Vec<(StackKey, StackValue)> = keys
            .iter()
            .filter_map(|k| Some((*k, sum_stack_cpus(calls.get(k, 0).ok()?.iter()))))
            .collect();
        let keys: Vec<StackKey> = read.iter().map(|(k, _)| *k).collect();
        if delete_batch(calls_fd, &keys).is_ok() {
            out.calls = read.into_iter().map(|(k, v)| (known_stack(k), v)).collect();
        } else {
            // One by one. A key the batch deleted before it stopped is gone (nothing
            // else deletes this window's keys): handed over too.
            for (k, v) in read {
                match maps::delete_elem(calls_fd, &k) {
                    Ok(()) => out.calls.push((known_stack(k), v)),
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                        out.calls.push((known_stack(k), v))
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(out)
    }

    /// Forgets processes of the per-process table (they have exited and were read).
    pub fn forget_top(&mut self, keys: &[TopKey]) -> Result<()> {
        self.delete_top(keys)?;
        let mut tgids: Vec<u32> = keys.iter().map(|k| k.tgid).collect();
        tgids.sort_unstable();
        tgids.dedup();
        maps::delete_all(map_fd(self.map(map_names::PROC_INFO)?)?, &tgids);
        // A name left in its slot (no room in the exit ring nor in PROC_INFO at its exit):
        // freed, unless the slot is another's by now.
        let mut slots: Array<&mut MapData, ExitRecord> = Array::try_from(
            self.ebpf
                .map_mut(map_names::PROC_NAMES)
                .context("PROC_NAMES map missing")?,
        )?;
        for tgid in tgids {
            let i = syscost_common::name_slot(tgid);
            if slots.get(&i, 0).is_ok_and(|s| s.tgid == tgid) {
                let _ = slots.set(i, ExitRecord::FREE, 0);
            }
        }
        Ok(())
    }

    /// Whether the per-process table is kept.
    pub fn per_process_loaded(&self) -> bool {
        self.per_process
    }

    /// Deletes the kept names of the processes `gone` says are gone.
    pub fn forget_names(&mut self, gone: impl Fn(u32) -> bool) -> Result<()> {
        let map = self.map(map_names::PROC_INFO)?;
        let names: HashMap<&MapData, u32, ProcRecord> = HashMap::try_from(map)?;
        let dead: Vec<u32> = names
            .keys()
            .filter_map(Result::ok)
            .filter(|&p| gone(p))
            .collect();
        maps::delete_all(map_fd(map)?, &dead);
        Ok(())
    }

    /// The name and cgroup id the kernel side kept for a process it traced by itself.
    /// Its `PROC_NAMES` slot when it holds it, else its `PROC_INFO` entry.
    pub fn process_name(&self, tgid: u32) -> Option<(String, u64)> {
        let slots: Array<&MapData, ExitRecord> =
            Array::try_from(self.map(map_names::PROC_NAMES).ok()?).ok()?;
        let n = match slots.get(&syscost_common::name_slot(tgid), 0) {
            Ok(slot) if slot.tgid == tgid && tgid != 0 => slot.info,
            _ => {
                let names: HashMap<&MapData, u32, ProcRecord> =
                    HashMap::try_from(self.map(map_names::PROC_INFO).ok()?).ok()?;
                names.get(&tgid, 0).ok()?
            }
        };
        let end = n.comm.iter().position(|&b| b == 0).unwrap_or(n.comm.len());
        Some((
            syscost_report::untrusted::decode(&n.comm[..end]),
            n.cgroup_id,
        ))
    }

    /// Run time and run count of syscost's programs, summed. They only advance while
    /// BPF run-time statistics are on (see [`RunTimeStats`]).
    pub fn program_run_totals(&self) -> (u64, u64) {
        run_totals(self.ebpf.programs().filter_map(|(_, p)| p.info().ok()))
    }
}

/// Names of the programs syscost loads, as the kernel lists them (16-byte names).
pub const PROGRAM_NAME_PREFIXES: [&str; 5] =
    ["syscost_", "floor_sys_", "cand_", "doctor_", "probe_"];

/// A calls-by-stack key as userspace knows it: its stack without the window's bit.
fn known_stack(k: StackKey) -> StackKey {
    StackKey {
        stack: stack_identity(k.stack),
        ..k
    }
}

/// A calls-by-stack value summed over CPUs.
fn sum_stack_cpus<'a>(per_cpu: impl Iterator<Item = &'a StackValue>) -> StackValue {
    per_cpu.fold(StackValue::default(), |v, c| StackValue {
        calls: v.calls + c.calls,
        total_ns: v.total_ns + c.total_ns,
    })
}
