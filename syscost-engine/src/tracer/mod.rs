//! Loads syscost's kernel programs, attaches them, tells them which processes to trace,
//! and gives the sampler its view of their maps. Dropping the `Tracer` detaches and
//! unloads everything (the links are file descriptors, so this also holds when syscost
//! is killed).
//!
//! Here: the options, the load and the reads of the statistics. `traced`: the processes
//! added and taken out. `top`: the per-process table and the names the kernel keeps.
//! `stack_tables`: the calls by stack and their windows. `options`: what the programs
//! are set up with, and which are attached. `load`: the object
//! configured for this kernel, its programs verified and attached, and the loader's
//! errors in words. `maps`: the mapped arrays, batch deletes, per-CPU sums and the
//! run-time statistics. `probes`: what this kernel offers (the on-CPU split, the cgroup
//! filter, fentry), asked by loading a program and never attaching it, and the
//! benchmark's programs.

use std::mem::size_of;

use anyhow::{Context as _, Result};
use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, HashMap, Map, MapData, PerCpuArray},
    programs::RawTracePoint,
};
use aya_log::EbpfLogger;
use syscost_common::{StatsEntry, ThreadSlot, config::map_names, counter, counter_index};

use crate::{kernel_btf::KernelLayout, map_sizes::TableSizes, privileges, process};

mod load;
mod maps;
mod options;
pub mod probes;
mod stack_tables;
mod top;
mod traced;

use load::{AncestorHelperRefused, CGROUP_UNSUPPORTED, load_and_attach};
pub use maps::{GracePeriod, RunTimeStats, possible_cpus};
use maps::{Mapped, map_data, run_totals};
pub use options::{Auto, TracerOptions};
pub use probes::offcpu_unavailable;
use syscost_report::profile::Features;

/// Loaded and attached kernel programs.
pub struct Tracer {
    ebpf: Ebpf,
    logger: Option<EbpfLogger<&'static dyn log::Log>>,
    features: Features,
    offcpu: bool,
    per_process: bool,
    /// With `--stacks`: 1 in N of each stack's calls sampled.
    stack_sample_every: Option<u32>,
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
        if options.stack_sample_every.is_some() {
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
            (options.stack_sample_every.is_some(), "stacks"),
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
        let stack_window = match options.stack_sample_every.map(|_| GracePeriod::new()) {
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
            stack_sample_every: options
                .stack_sample_every
                .map(|n| n.max(1).next_power_of_two()),
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

    /// The call ring (slow calls and stack samples), to be read by one consumer (with
    /// `--slow` or `--stacks`).
    pub fn take_call_ring(&mut self) -> Result<aya::maps::RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(map_names::CALL_RING)
            .context("CALL_RING map missing")?;
        Ok(aya::maps::RingBuf::try_from(map)?)
    }

    /// Number of statistics slots loaded.
    pub fn slots(&self) -> u32 {
        self.slots
    }
}

impl Tracer {
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

    /// Run time and run count of syscost's programs, summed. They only advance while
    /// BPF run-time statistics are on (see [`RunTimeStats`]).
    pub fn program_run_totals(&self) -> (u64, u64) {
        run_totals(self.ebpf.programs().filter_map(|(_, p)| p.info().ok()))
    }
}

/// Names of the programs syscost loads, as the kernel lists them (16-byte names).
pub const PROGRAM_NAME_PREFIXES: [&str; 5] =
    ["syscost_", "floor_sys_", "cand_", "doctor_", "probe_"];
