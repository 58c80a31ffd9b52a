//! Loads syscost's kernel programs, attaches them, tells them which processes to trace,
//! and gives the sampler its view of their maps. Dropping the `Tracer` detaches and
//! unloads everything (the links are file descriptors, so this also holds when syscost
//! is killed).

use std::{
    io,
    mem::size_of,
    os::fd::{AsFd as _, AsRawFd as _},
    ptr::NonNull,
};

use anyhow::{Context as _, Result, anyhow};
use aya::{
    Ebpf, EbpfError, EbpfLoader,
    maps::{Array, HashMap, Map, MapData, PerCpuArray, PerCpuHashMap},
    programs::{ProgramError, ProgramInfo, RawTracePoint},
};
use aya_log::EbpfLogger;
use syscost_common::{
    ExitRecord, ProcRecord, ProcSlot, StatsEntry, ThreadSlot, TopKey, TopValue, abi,
    config::{CONFIG_GLOBAL, LoadConfig, map_names},
    counter, counter_index, proc_value,
};

use crate::{kernel_btf::KernelLayout, map_sizes::TableSizes, privileges, process};
use syscost_report::profile::Features;

/// The compiled kernel programs (syscost-ebpf), built by this crate's build script.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/syscost"));

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
    pub top: bool,
    /// Slots below this keep no histograms, only `TOP` figures (`syscost top`: slot 0
    /// is every process not drilled into).
    pub pool_from_slot: u32,
    /// Send calls at least this slow through the `SLOW` ring buffer (`--slow`).
    pub slow: Option<crate::slow::spec::SlowThresholds>,
    /// With `slow`: take the kernel stack at each blocking switch inside a call.
    pub kernel_stacks: bool,
    /// With `slow`: pages of user stack each slow call carries (for unwinding).
    pub stack_pages: u32,
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
    top: bool,
    slots: u32,
    sizes: TableSizes,
    cpus: u32,
    pool: Mapped,
    threads: Mapped,
}

/// A read-only mapping of a BPF_F_MMAPABLE array: reads of it are plain memory reads.
struct Mapped {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only shared memory, valid until dropped; readers only load
// from it.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    fn new(map: &MapData, bytes: usize) -> Result<Self> {
        let len = bytes.div_ceil(4096) * 4096;
        // SAFETY: maps `len` bytes of the map's fd read-only and shared; the kernel
        // checks the length against the map's size.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.fd().as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error())
                .context("cannot map the statistics for reading");
        }
        Ok(Self {
            ptr: NonNull::new(ptr.cast()).context("mmap returned null")?,
            len,
        })
    }

    /// Element `i` of an array of `T` (`None` beyond the mapping).
    fn element<T>(&self, i: usize) -> Option<*const T> {
        let end = (i + 1).checked_mul(size_of::<T>())?;
        (end <= self.len).then(|| {
            unsafe { self.ptr.as_ptr().add(i * size_of::<T>()) }
                .cast_const()
                .cast()
        })
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps what new() mapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
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
        if options.top {
            sizes = sizes.with_top();
        }
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
            match load_and_attach(made, &options, &layout, cgroup_walk, slots, &sizes) {
                Err(e)
                    if e.is::<AncestorHelperRefused>()
                        && cgroup_walk.is_none()
                        && matches!(options.auto, Auto::Cgroup { .. }) =>
                {
                    cgroup_walk = Some(layout.cgroup_walk.context(CGROUP_FLOOR)?);
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
            (options.top, "per-process"),
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
        Ok(Self {
            ebpf,
            logger,
            features,
            offcpu: options.offcpu,
            top: options.top,
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

    /// The final figures of an exited process's `TOP` keys (summed over CPUs), which are
    /// then deleted, with what the kernel side kept of it; keys already gone are left out.
    pub fn take_final(&mut self, record: &ExitRecord) -> Result<Vec<(TopKey, TopValue)>> {
        let top: PerCpuHashMap<&MapData, TopKey, TopValue> =
            PerCpuHashMap::try_from(self.map(map_names::TOP)?)?;
        let mut out = Vec::new();
        for key in record.info.top_keys() {
            let k = TopKey {
                tgid: record.tgid,
                key,
            };
            let Ok(per_cpu) = top.get(&k, 0) else {
                continue;
            };
            out.push((k, sum_cpus(per_cpu.iter())));
        }
        let keys: Vec<TopKey> = out.iter().map(|(k, _)| *k).collect();
        // One syscall for all the keys (BPF_MAP_DELETE_BATCH, Linux 5.6), one each if
        // the kernel refuses it.
        let fd = map_fd(self.map(map_names::TOP)?)?;
        if delete_batch(fd, &keys).is_err() {
            let mut top: PerCpuHashMap<&mut MapData, TopKey, TopValue> = PerCpuHashMap::try_from(
                self.ebpf
                    .map_mut(map_names::TOP)
                    .context("TOP map missing")?,
            )?;
            for k in &keys {
                let _ = top.remove(k);
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

    /// Loads the object but attaches only the programs of a benchmark `variant`: the
    /// empty floor programs (the least any program on the syscall tracepoints can
    /// cost), or a candidate between them and syscost (`clock`: the two clock reads;
    /// `hist`: the clock reads and a histogram update), for every process.
    pub fn load_floor(variant: &str) -> Result<Ebpf> {
        let programs: &[(&str, &str)] = match variant {
            "floor" => &[
                ("floor_sys_exit", "sys_exit"),
                ("floor_sys_enter", "sys_enter"),
            ],
            "clock" => &[
                ("cand_clock_exit", "sys_exit"),
                ("cand_clock_enter", "sys_enter"),
            ],
            "hist" => &[
                ("cand_hist_exit", "sys_exit"),
                ("cand_clock_enter", "sys_enter"),
            ],
            "filter" => &[
                ("cand_filter_exit", "sys_exit"),
                ("cand_filter_enter", "sys_enter"),
            ],
            "btf" => &[],
            other => {
                anyhow::bail!("no benchmark variant '{other}' (floor, clock, hist, filter, btf)")
            }
        };
        let mut ebpf = load_default_object()?;
        attach(&mut ebpf, programs)?;
        if variant == "btf" {
            let btf = crate::kernel_btf::aya_btf()?;
            for (name, tp) in [
                ("cand_btf_exit", "sys_exit"),
                ("cand_btf_enter", "sys_enter"),
            ] {
                let prog: &mut aya::programs::BtfTracePoint = ebpf
                    .program_mut(name)
                    .with_context(|| format!("program {name} missing"))?
                    .try_into()?;
                prog.load(tp, btf)
                    .map_err(|e| explain_program_error(name, e))?;
                prog.attach()?;
            }
        }
        Ok(ebpf)
    }

    /// Whether an fentry program loads here (loaded, never attached, then dropped).
    pub fn fentry_loads() -> Result<()> {
        let mut ebpf = load_default_object()?;
        let btf = crate::kernel_btf::aya_btf()?;
        let prog: &mut aya::programs::FEntry = ebpf
            .program_mut("doctor_fentry")
            .context("program doctor_fentry missing from the object")?
            .try_into()?;
        prog.load("do_exit", btf)
            .map_err(|e| anyhow::Error::new(e).context("fentry refused"))
    }

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
        let top: PerCpuHashMap<&MapData, TopKey, TopValue> =
            PerCpuHashMap::try_from(self.map(map_names::TOP)?)?;
        let mut out = Vec::new();
        for item in top.iter() {
            let (k, per_cpu) = item.context("cannot read the per-process table")?;
            out.push((k, sum_cpus(per_cpu.iter())));
        }
        Ok(out)
    }

    /// Forgets processes of the per-process table (they have exited and were read).
    pub fn forget_top(&mut self, keys: &[TopKey]) -> Result<()> {
        let mut top: PerCpuHashMap<&mut MapData, TopKey, TopValue> = PerCpuHashMap::try_from(
            self.ebpf
                .map_mut(map_names::TOP)
                .context("TOP map missing")?,
        )?;
        for k in keys {
            let _ = top.remove(k);
        }
        let mut names: HashMap<&mut MapData, u32, ProcRecord> = HashMap::try_from(
            self.ebpf
                .map_mut(map_names::PROC_INFO)
                .context("PROC_INFO map missing")?,
        )?;
        for k in keys {
            let _ = names.remove(&k.tgid);
        }
        Ok(())
    }

    /// Whether the per-process table is kept.
    pub fn top_loaded(&self) -> bool {
        self.top
    }

    /// Deletes the kept names of the processes `gone` says are gone.
    pub fn forget_names(&mut self, gone: impl Fn(u32) -> bool) -> Result<()> {
        let mut names: HashMap<&mut MapData, u32, ProcRecord> = HashMap::try_from(
            self.ebpf
                .map_mut(map_names::PROC_INFO)
                .context("PROC_INFO map missing")?,
        )?;
        let dead: Vec<u32> = names
            .keys()
            .filter_map(Result::ok)
            .filter(|&p| gone(p))
            .collect();
        for pid in dead {
            let _ = names.remove(&pid);
        }
        Ok(())
    }

    /// The name and cgroup id the kernel side kept for a process it traced by itself.
    pub fn process_name(&self, tgid: u32) -> Option<(String, u64)> {
        let names: HashMap<&MapData, u32, ProcRecord> =
            HashMap::try_from(self.map(map_names::PROC_INFO).ok()?).ok()?;
        let n = names.get(&tgid, 0).ok()?;
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

/// The fd of a loaded map.
fn map_fd(map: &Map) -> Result<i32> {
    let data = match map {
        Map::PerCpuHashMap(d) | Map::HashMap(d) | Map::Array(d) | Map::PerCpuArray(d) => d,
        _ => anyhow::bail!("no fd for this kind of map"),
    };
    Ok(data.fd().as_fd().as_raw_fd())
}

/// Deletes `keys` from the hash map `fd` in one `BPF_MAP_DELETE_BATCH`.
fn delete_batch<K>(fd: i32, keys: &[K]) -> io::Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    /// `union bpf_attr`'s member for the batch commands.
    #[repr(C)]
    struct BatchAttr {
        in_batch: u64,
        out_batch: u64,
        keys: u64,
        values: u64,
        count: u32,
        map_fd: u32,
        elem_flags: u64,
        flags: u64,
    }
    const BPF_MAP_DELETE_BATCH: libc::c_long = 27;
    let mut attr = BatchAttr {
        in_batch: 0,
        out_batch: 0,
        keys: keys.as_ptr() as u64,
        values: 0,
        count: keys.len() as u32,
        map_fd: fd as u32,
        elem_flags: 0,
        flags: 0,
    };
    // SAFETY: the attribute points at `keys.len()` keys of the map's key size, alive for
    // the call; the kernel writes only `count` back.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_DELETE_BATCH,
            &mut attr as *mut BatchAttr,
            size_of::<BatchAttr>() as u32,
        )
    };
    if r == 0 && attr.count as usize == keys.len() {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A per-process table value summed over CPUs.
fn sum_cpus<'a>(per_cpu: impl Iterator<Item = &'a TopValue>) -> TopValue {
    per_cpu.fold(TopValue::default(), |v, c| TopValue {
        calls: v.calls + c.calls,
        errors: v.errors + c.errors,
        total_ns: v.total_ns + c.total_ns,
        offcpu_ns: v.offcpu_ns + c.offcpu_ns,
    })
}

fn map_data<'a>(ebpf: &'a Ebpf, name: &str) -> Result<&'a MapData> {
    match ebpf
        .map(name)
        .with_context(|| format!("{name} map missing"))?
    {
        Map::Array(d) => Ok(d),
        _ => Err(anyhow!("{name} is not an array")),
    }
}

/// Number of possible CPUs (per-CPU maps and the pool have one region each).
pub fn possible_cpus() -> Result<u32> {
    aya::util::nr_cpus()
        .map(|n| n as u32)
        .map_err(|(what, e)| anyhow!("cannot read the possible CPUs ({what}): {e}"))
}

/// Run time (ns) and run count of these programs, summed.
fn run_totals(programs: impl Iterator<Item = ProgramInfo>) -> (u64, u64) {
    programs.fold((0, 0), |(t, c), i| {
        (t + i.run_time().as_nanos() as u64, c + i.run_count())
    })
}

/// BPF run-time statistics, on while this value lives (the kernel turns them off when
/// its fd closes, so the machine's setting is never left changed). They add two clock
/// reads to every program run on the machine, so only the live view turns them on.
pub struct RunTimeStats {
    _fd: std::os::fd::OwnedFd,
}

impl RunTimeStats {
    pub fn enable() -> Result<Self> {
        let fd = aya::sys::enable_stats(aya::sys::Stats::RunTime)
            .context("cannot enable BPF run-time statistics")?;
        Ok(Self { _fd: fd })
    }
}

/// Names of the programs syscost loads, as the kernel lists them (16-byte names).
pub const PROGRAM_NAME_PREFIXES: [&str; 5] =
    ["syscost_", "floor_sys_", "cand_", "doctor_", "probe_"];

/// Why this kernel cannot split syscall time into on-CPU and switched out, if it cannot.
pub fn offcpu_unavailable(layout: &KernelLayout) -> Option<String> {
    if layout.switch_state_source().is_none() {
        return Some(
            "this kernel's sched_switch passes no prev_state and its BTF has no task_struct state"
                .to_string(),
        );
    }
    // The switch hook reads the next task's pid and tgid in one load.
    (layout.task_tgid_offset != layout.task_pid_offset + 4)
        .then(|| "this kernel does not keep task_struct.pid and .tgid adjacent".to_string())
}

/// How `--cgroup` finds a task's ancestor here: `None` for the kernel's helper, else the
/// offsets to read it from the task; an error when this kernel offers neither.
fn cgroup_filter(layout: &KernelLayout) -> Result<Option<crate::kernel_btf::CgroupWalk>> {
    if ancestor_helper_allowed()? {
        return Ok(None);
    }
    match layout.cgroup_walk {
        Some(walk) => Ok(Some(walk)),
        None => anyhow::bail!("{CGROUP_FLOOR}"),
    }
}

/// How `--cgroup` would find a task's cgroup here, in words (for `syscost doctor`).
pub fn cgroup_filter_here() -> Result<&'static str> {
    let layout = KernelLayout::read()?;
    Ok(match cgroup_filter(&layout)? {
        None => "filtered in the kernel with bpf_get_current_ancestor_cgroup_id",
        Some(_) => {
            "filtered in the kernel from the task's cgroup ancestry (this kernel's tracing programs lack the cgroup-ancestor helper)"
        }
    })
}

/// Whether tracing programs may call `bpf_get_current_ancestor_cgroup_id` (5.14 on, and
/// backports): a probe program is loaded, never attached.
fn ancestor_helper_allowed() -> Result<bool> {
    let mut ebpf = load_default_object()?;
    let prog: &mut RawTracePoint = ebpf
        .program_mut("probe_ancestor_cgroup")
        .context("program probe_ancestor_cgroup missing from the object")?
        .try_into()?;
    match prog.load() {
        Ok(()) => Ok(true),
        Err(ProgramError::LoadError { io_error, .. }) if !is_permission_error(&io_error) => {
            Ok(false)
        }
        Err(e) => Err(explain_program_error("probe_ancestor_cgroup", e)),
    }
}

/// The object with default options and the smallest tables, for benchmarks and probes.
fn load_default_object() -> Result<Ebpf> {
    privileges::check()?;
    process::check_pid_namespace()?;
    let layout = KernelLayout::read()?;
    load_object(
        EbpfLoader::new(),
        &TracerOptions::default(),
        &layout,
        None,
        1,
        &TableSizes::for_slots(1),
    )
}

/// Loads the object with `loader` (consumed) for this kernel's `layout`, with its tables sized by `sizes` for
/// `slots` processes; nothing is attached yet. `cgroup_walk`: read the cgroup ancestry
/// from the task instead of calling the helper.
fn load_object(
    loader: EbpfLoader<'static>,
    options: &TracerOptions,
    layout: &KernelLayout,
    cgroup_walk: Option<crate::kernel_btf::CgroupWalk>,
    slots: u32,
    sizes: &TableSizes,
) -> Result<Ebpf> {
    raise_memlock_limit();
    let cpus = possible_cpus()?;
    let task_state_offset = if options.offcpu {
        layout.switch_state_source().unwrap_or(0)
    } else {
        0
    };
    let walk = cgroup_walk.unwrap_or(crate::kernel_btf::CgroupWalk {
        task_cgroups: 0,
        css_set_dfl_cgrp: 0,
        cgroup_level: 0,
        cgroup_ancestor_ids: 0,
    });
    let walk_on = u32::from(cgroup_walk.is_some());
    let follow = u32::from(options.follow_forks);
    let (auto_mode, cgroup_id, cgroup_level) = match options.auto {
        Auto::Off => (syscost_common::auto_mode::OFF, 0u64, 0u32),
        Auto::All => (syscost_common::auto_mode::ALL, 0, 0),
        Auto::Cgroup { id, level } => (syscost_common::auto_mode::CGROUP, id, level),
    };
    let own = std::process::id();
    let top = u32::from(options.top);
    let slow_on = u32::from(options.slow.is_some());
    let stack_pages = if options.slow.is_some() {
        options.stack_pages
    } else {
        0
    };
    let kstacks = u32::from(options.slow.is_some() && options.kernel_stacks && options.offcpu);
    let slow_default = match &options.slow {
        Some(slow) => slow.default,
        None => u64::MAX,
    };
    let config = LoadConfig {
        pt_regs_arg_offsets: layout.registers.args,
        pt_regs_compat_arg_offsets: layout.registers.compat_args,
        pt_regs_unwind_offsets: layout.registers.unwind,
        file_offsets: layout.file_offsets,
        compat_test: layout.registers.compat_test,
        slow_default_ns: slow_default,
        task_mm_offset: layout.task_mm_offset,
        task_exec_id_offset: layout.task_exec_id_offset,
        cgroup_id,
        task_pid_offset: layout.task_pid_offset,
        task_tgid_offset: layout.task_tgid_offset,
        task_signal_offset: layout.task_signal_offset,
        signal_live_offset: layout.signal_live_offset,
        task_state_offset,
        task_cgroups_offset: walk.task_cgroups,
        css_set_dfl_cgrp_offset: walk.css_set_dfl_cgrp,
        cgroup_level_offset: walk.cgroup_level,
        cgroup_ancestor_ids_offset: walk.cgroup_ancestor_ids,
        kstacks_on: kstacks,
        slow_on,
        user_stack_pages: stack_pages,
        auto_mode,
        cgroup_level,
        own_tgid: own,
        top_on: top,
        pool_from_slot: options.pool_from_slot,
        follow_forks: follow,
        proc_mask: sizes.proc_slots - 1,
        thread_mask: sizes.thread_slots - 1,
        pool_per_cpu: sizes.pool_per_cpu,
        cgroup_walk: walk_on,
        _reserved: 0,
    };
    let mut loader: EbpfLoader<'_> = loader;
    let ebpf = loader
        .override_global(CONFIG_GLOBAL, &config, true)
        .map_max_entries(map_names::PROCS, sizes.proc_slots)
        .map_max_entries(map_names::PROCS_OVERFLOW, sizes.proc_overflow)
        .map_max_entries(map_names::THREADS, sizes.thread_slots)
        .map_max_entries(map_names::THREADS_OVERFLOW, sizes.thread_overflow)
        .map_max_entries(
            map_names::INDEX,
            slots * syscost_common::INDEX_WORDS_PER_SLOT,
        )
        .map_max_entries(map_names::BIG_INDEX, sizes.big_numbers)
        .map_max_entries(map_names::POOL, cpus * sizes.pool_per_cpu)
        .map_max_entries(map_names::COUNTERS, slots * counter::COUNT)
        .map_max_entries(map_names::TOP, sizes.top_entries)
        .map_max_entries(map_names::PROC_INFO, sizes.names)
        .map_max_entries(
            map_names::EXITS,
            if options.top { sizes.exit_ring } else { 4096 },
        )
        .map_max_entries(
            map_names::SLOW_NS,
            if options.slow.is_some() {
                syscost_common::KEYS_PER_SLOT
            } else {
                1
            },
        )
        .map_max_entries(map_names::KSTACK_OF, if kstacks != 0 { 16384 } else { 1 })
        .map_max_entries(
            map_names::SLOW,
            if options.slow.is_some() {
                sizes.slow_ring
            } else {
                4096
            },
        )
        .load(OBJECT)
        .map_err(explain_load_error)?;
    Ok(ebpf)
}

/// The object loaded as [`load_object`] loads it, `--slow`'s thresholds set, and the
/// programs of `options` attached.
fn load_and_attach(
    loader: EbpfLoader<'static>,
    options: &TracerOptions,
    layout: &KernelLayout,
    cgroup_walk: Option<crate::kernel_btf::CgroupWalk>,
    slots: u32,
    sizes: &TableSizes,
) -> Result<Ebpf> {
    let mut ebpf = load_object(loader, options, layout, cgroup_walk, slots, sizes)?;
    if let Some(slow) = &options.slow {
        let keys = &slow.per_key;
        let mut thresholds: Array<&mut MapData, u64> = Array::try_from(
            ebpf.map_mut(map_names::SLOW_NS)
                .context("SLOW_NS map missing")?,
        )?;
        for (k, t) in (0..).zip(keys) {
            thresholds.set(k, t, 0)?;
        }
    }
    attach(&mut ebpf, &programs(options.offcpu, options.auto))?;
    Ok(ebpf)
}

const CGROUP_FLOOR: &str = "--cgroup needs Linux 5.14 or later here: this kernel's tracing programs lack bpf_get_current_ancestor_cgroup_id and its cgroups keep no ancestor_ids";

/// The verifier refused a program for its call of `bpf_get_current_ancestor_cgroup_id`
/// (a kernel whose tracing programs lack it, before 5.14).
#[derive(Debug)]
struct AncestorHelperRefused(String);

impl std::fmt::Display for AncestorHelperRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the kernel refused program {}'s call of bpf_get_current_ancestor_cgroup_id",
            self.0
        )
    }
}

impl std::error::Error for AncestorHelperRefused {}

/// Whether a verifier log is the refusal of the cgroup-ancestor helper itself (the
/// kernel's "unknown func NAME#ID"), not any failure of a program that calls it: aya
/// retries a failed load with the verifier's full log, which names every call made.
fn refuses_ancestor_helper(log: &str) -> bool {
    log.lines().any(|l| {
        l.trim_start()
            .starts_with("unknown func bpf_get_current_ancestor_cgroup_id#")
    })
}

/// Loads and attaches `(program, raw tracepoint)` pairs, in order.
fn attach(ebpf: &mut Ebpf, programs: &[(&str, &str)]) -> Result<()> {
    // The verifier's time is most of a start: the largest program (the exit's) is
    // verified on a thread of its own beside the others; all are attached after, in
    // order.
    let mut loads: Vec<(&str, &mut RawTracePoint)> = Vec::new();
    for (name, prog) in ebpf.programs_mut() {
        if programs.iter().any(|&(n, _)| n == name) {
            loads.push((name, prog.try_into()?));
        }
    }
    let (big, rest): (Vec<_>, Vec<_>) = loads
        .into_iter()
        .partition(|(name, _)| name.ends_with("sys_exit"));
    let load = |group: Vec<(&str, &mut RawTracePoint)>| -> Vec<(String, ProgramError)> {
        group
            .into_iter()
            .filter_map(|(name, prog)| prog.load().err().map(|e| (name.to_string(), e)))
            .collect()
    };
    let mut failed = std::thread::scope(|scope| {
        let other = scope.spawn(|| load(big));
        let mut failed = load(rest);
        failed.extend(other.join().unwrap_or_default());
        failed
    });
    // The first failure in attach order is the one reported.
    failed.sort_by_key(|(name, _)| programs.iter().position(|&(n, _)| n == name));
    if let Some((name, e)) = failed.into_iter().next() {
        if let ProgramError::LoadError { verifier_log, .. } = &e
            && refuses_ancestor_helper(&verifier_log.to_string())
        {
            return Err(AncestorHelperRefused(name).into());
        }
        return Err(explain_program_error(&name, e));
    }
    for &(name, tracepoint) in programs {
        let prog: &mut RawTracePoint = ebpf
            .program_mut(name)
            .with_context(|| format!("program {name} missing from the object"))?
            .try_into()?;
        prog.attach(tracepoint)
            .map_err(|e| explain_program_error(name, e))
            .with_context(|| format!("cannot attach {name} to raw tracepoint {tracepoint}"))?;
    }
    Ok(())
}

fn raise_memlock_limit() {
    // Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK; newer ones ignore it.
    let rlim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads one rlimit struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rlim) } != 0 {
        log::debug!(
            "cannot raise RLIMIT_MEMLOCK: {}",
            io::Error::last_os_error()
        );
    }
}

/// EPERM: missing privileges. (The verifier rejects a program with EACCES and a log.)
fn is_permission_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EPERM)
}

fn explain_load_error(e: EbpfError) -> anyhow::Error {
    let permission = match &e {
        EbpfError::MapError(aya::maps::MapError::CreateError { io_error, .. }) => {
            is_permission_error(io_error)
        }
        _ => false,
    };
    if permission {
        anyhow!("{}", privileges::HOW_TO)
    } else {
        anyhow::Error::new(e).context("cannot load syscost's kernel programs")
    }
}

fn explain_program_error(name: &str, e: ProgramError) -> anyhow::Error {
    match e {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            if is_permission_error(&io_error) {
                return anyhow!("{}", privileges::HOW_TO);
            }
            let log = verifier_log.to_string();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            anyhow!(
                "the kernel's verifier rejected program {name} ({io_error}); the end of its log:\n{}",
                tail.join("\n")
            )
        }
        ProgramError::SyscallError(s) if is_permission_error(&s.io_error) => {
            anyhow!("{}", privileges::HOW_TO)
        }
        other => anyhow::Error::new(other).context(format!("program {name}")),
    }
}

#[cfg(test)]
mod tests {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

    use super::*;

    /// The object's symbols in the named section, by name and size.
    fn symbols_in(section: &str) -> Vec<(String, u64)> {
        let file = object::File::parse(OBJECT).expect("the embedded object parses");
        let index = file
            .section_by_name(section)
            .unwrap_or_else(|| panic!("no section {section} in the object"))
            .index();
        file.symbols()
            .filter(|s| s.section_index() == Some(index))
            .map(|s| (s.name().unwrap_or_default().to_string(), s.size()))
            .collect()
    }

    /// The loader and the kernel side name the same maps: every name the loader uses is
    /// a map of the object, and every map of the object but the benchmark's and
    /// aya-log's is one the loader knows.
    #[test]
    fn the_object_has_exactly_the_maps_the_loader_names() {
        let mut maps: Vec<String> = symbols_in("maps").into_iter().map(|(n, _)| n).collect();
        maps.retain(|m| m != "CANDIDATE" && m != "AYA_LOGS" && m != "AYA_LOG_BUF");
        maps.sort();
        let mut named: Vec<String> = map_names::ALL.iter().map(|n| n.to_string()).collect();
        named.sort();
        assert_eq!(maps, named);
    }

    /// The object's one load-time global of its own is the configuration, of its size
    /// (beside aya-log's level; the rest of the section is the compiler's unnamed
    /// constants): nothing else is set at load by name.
    #[test]
    fn the_object_is_configured_through_one_global_of_the_configs_size() {
        let mut globals: Vec<(String, u64)> = symbols_in(".rodata")
            .into_iter()
            .filter(|(n, _)| !n.is_empty() && !n.starts_with('.') && !n.starts_with("anon."))
            .collect();
        globals.sort();
        assert_eq!(
            globals,
            [
                ("AYA_LOG_LEVEL".to_string(), 1),
                (CONFIG_GLOBAL.to_string(), size_of::<LoadConfig>() as u64)
            ]
        );
    }

    #[test]
    fn only_the_helpers_own_refusal_counts() {
        // 5.10's verifier, refusing the helper in a tracing program.
        assert!(refuses_ancestor_helper(
            "0: (85) call bpf_get_current_pid_tgid#14\n1: (85) call bpf_get_current_ancestor_cgroup_id#123\nunknown func bpf_get_current_ancestor_cgroup_id#123\nprocessed 2 insns"
        ));
        // Any other failure of a program that calls it (the full log names the call).
        assert!(!refuses_ancestor_helper(
            "12: (85) call bpf_get_current_ancestor_cgroup_id#123\n13: (bf) r6 = r0\nR1 invalid mem access 'scalar'\nprocessed 14 insns"
        ));
    }
}
