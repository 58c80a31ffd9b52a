//! Loads syscost's kernel programs, attaches them, tells them which processes to trace,
//! and reads their maps. Dropping the `Tracer` detaches and unloads everything (the
//! links are file descriptors, so this also holds when syscost is killed).

use std::io;

use anyhow::{Context as _, Result, anyhow};
use aya::{
    Ebpf, EbpfError, EbpfLoader,
    maps::{Array, Map, MapData, PerCpuArray},
    programs::{ProgramError, ProgramInfo, RawTracePoint},
};
use aya_log::EbpfLogger;
use syscost_common::{
    ErrnoCounts, MAX_SYSCALLS, SyscallStats, ThreadStats, abi, counter, counter_index, proc_value,
    stats_index,
};

use crate::{
    collector::{Snapshot, sum_cpus, sum_errnos},
    kernel_btf::KernelLayout,
    privileges, process,
};

/// The compiled kernel programs (syscost-ebpf), built by this crate's build script.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/syscost"));

/// How the programs are set up at load time.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracerOptions {
    /// Also trace child processes forked by traced processes (threads are always traced).
    pub follow_forks: bool,
    /// Split each syscall's time into on-CPU and switched-out, with a program on
    /// sched_switch (which runs on every context switch of the machine).
    pub offcpu: bool,
    /// Processes whose statistics are kept apart (slots; 0 counts as 1). Each costs
    /// its statistics tables, per CPU; the programs and per-thread tables are shared.
    pub slots: u32,
}

/// Loaded and attached kernel programs.
pub struct Tracer {
    ebpf: Ebpf,
    logger: Option<EbpfLogger<&'static dyn log::Log>>,
    offcpu: bool,
    slots: u32,
}

/// The programs syscost attaches, each with its tracepoint, in attach order: the
/// bookkeeping hooks first, so no thread is created or exits unseen once syscalls count.
fn programs(layout: &KernelLayout, offcpu: bool) -> Vec<(&'static str, &'static str)> {
    let exit = if layout.exit_has_group_dead {
        "syscost_exit"
    } else {
        "syscost_exit_leader"
    };
    let mut p = vec![
        (exit, "sched_process_exit"),
        ("syscost_fork", "sched_process_fork"),
        ("syscost_exec", "sched_process_exec"),
    ];
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
    pub fn load(options: TracerOptions) -> Result<Self> {
        let slots = options.slots.max(1);
        let (mut ebpf, layout) = load_object(options.follow_forks, slots)?;
        let logger = match EbpfLogger::init(&mut ebpf) {
            Ok(l) => Some(l),
            Err(e) => {
                log::warn!("kernel-side log messages unavailable: {e}");
                None
            }
        };
        if options.offcpu && layout.task_tgid_offset != layout.task_pid_offset + 4 {
            anyhow::bail!(
                "off-CPU accounting reads task_struct.pid and .tgid together, and this kernel does not keep them adjacent: use --no-offcpu"
            );
        }
        attach(&mut ebpf, &programs(&layout, options.offcpu))?;
        Ok(Self {
            ebpf,
            logger,
            offcpu: options.offcpu,
            slots,
        })
    }

    /// Whether the off-CPU split is measured.
    pub fn offcpu_tracked(&self) -> bool {
        self.offcpu
    }

    /// Loads the object but attaches only the empty floor programs: the least any
    /// program on the syscall tracepoints can cost, for the overhead benchmark.
    pub fn load_floor() -> Result<Self> {
        let (mut ebpf, _) = load_object(false, 1)?;
        attach(
            &mut ebpf,
            &[
                ("floor_sys_exit", "sys_exit"),
                ("floor_sys_enter", "sys_enter"),
            ],
        )?;
        Ok(Self {
            ebpf,
            logger: None,
            offcpu: false,
            slots: 1,
        })
    }

    /// Starts tracing every thread of process `tgid`, those it creates later included,
    /// in the first slot.
    pub fn trace_process(&mut self, tgid: u32) -> Result<()> {
        self.trace_process_in(tgid, 0)
    }

    /// Starts tracing process `tgid` with statistics of its own in `slot`.
    pub fn trace_process_in(&mut self, tgid: u32, slot: u32) -> Result<()> {
        anyhow::ensure!(
            slot < self.slots,
            "slot {slot} beyond the {} loaded",
            self.slots
        );
        let mut procs: Array<&mut MapData, u32> =
            Array::try_from(self.ebpf.map_mut("PROCS").context("PROCS map missing")?)?;
        procs
            .set(tgid, proc_value::new(slot, abi::UNKNOWN), 0)
            .with_context(|| format!("cannot trace pid {tgid}: beyond pid_max"))
    }

    /// Whether `tgid` is still in the traced set (the kernel removes a process when its
    /// last thread exits).
    pub fn is_traced(&self, tgid: u32) -> Result<bool> {
        let procs: Array<&MapData, u32> =
            Array::try_from(self.ebpf.map("PROCS").context("PROCS map missing")?)?;
        Ok(procs.get(&tgid, 0)? != 0)
    }

    /// Reads the first slot's counters: cumulative since load, summed over CPUs.
    pub fn snapshot(&mut self) -> Result<Snapshot> {
        if let Some(l) = self.logger.as_mut() {
            l.flush();
        }
        read_snapshot(
            self.map("STATS")?,
            self.map("ERRNOS")?,
            self.map("COUNTERS")?,
            0,
        )
    }

    fn map(&self, name: &str) -> Result<&Map> {
        self.ebpf
            .map(name)
            .with_context(|| format!("{name} map missing"))
    }

    /// A reader of one slot's counters with handles of its own, for another thread (the
    /// metrics endpoint) while the tracer is used here. The counters stay readable, and
    /// frozen, after the tracer is dropped.
    pub fn reader(&self, slot: u32) -> Result<StatsReader> {
        anyhow::ensure!(
            slot < self.slots,
            "slot {slot} beyond the {} loaded",
            self.slots
        );
        let reopen = |name: &str| -> Result<Map> {
            let Map::PerCpuArray(data) = self.map(name)? else {
                anyhow::bail!("{name} is not a per-CPU array");
            };
            let id = data.info()?.id();
            Ok(Map::from_map_data(MapData::from_id(id)?)?)
        };
        Ok(StatsReader {
            stats: reopen("STATS")?,
            errnos: reopen("ERRNOS")?,
            counters: reopen("COUNTERS")?,
            offcpu: self.offcpu,
            slot,
        })
    }

    /// Per-thread totals of the given threads (those with at least one call).
    pub fn thread_stats(&self, tids: &[u32]) -> Result<Vec<(u32, ThreadStats)>> {
        let map: Array<&MapData, ThreadStats> = Array::try_from(
            self.ebpf
                .map("THREAD_STATS")
                .context("THREAD_STATS map missing")?,
        )?;
        Ok(tids
            .iter()
            .filter_map(|&tid| map.get(&tid, 0).ok().map(|s| (tid, s)))
            .filter(|(_, s)| s.calls > 0)
            .collect())
    }

    /// Run time and run count of syscost's programs, summed. They only advance while
    /// BPF run-time statistics are on (see [`RunTimeStats`]).
    pub fn program_run_totals(&self) -> (u64, u64) {
        run_totals(self.ebpf.programs().filter_map(|(_, p)| p.info().ok()))
    }

    /// Kernel ids of the loaded programs (to check that none outlives the tracer).
    pub fn program_ids(&self) -> Vec<u32> {
        self.ebpf
            .programs()
            .filter_map(|(_, p)| p.info().ok())
            .map(|i| i.id())
            .collect()
    }
}

/// Reads a slot's counters from the maps: cumulative since load, summed over CPUs.
fn read_snapshot(stats: &Map, errnos: &Map, counters: &Map, slot: u32) -> Result<Snapshot> {
    let stats: PerCpuArray<&MapData, SyscallStats> = PerCpuArray::try_from(stats)?;
    let errnos: PerCpuArray<&MapData, ErrnoCounts> = PerCpuArray::try_from(errnos)?;
    let counters: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(counters)?;
    let mut snap = Snapshot {
        exact_extremes: true,
        ..Default::default()
    };
    for nr in 0..MAX_SYSCALLS {
        let index = stats_index(slot, nr);
        let s = sum_cpus(&stats.get(&index, 0)?);
        if s.calls == 0 {
            continue;
        }
        if s.errors > 0 {
            snap.errnos.insert(nr, sum_errnos(&errnos.get(&index, 0)?));
        }
        snap.stats.insert(nr, s);
    }
    for i in 0..counter::COUNT {
        snap.counters[i as usize] = counters.get(&counter_index(slot, i), 0)?.iter().sum();
    }
    Ok(snap)
}

/// A tracer's counters read through handles of their own (see [`Tracer::reader`]).
pub struct StatsReader {
    stats: Map,
    errnos: Map,
    counters: Map,
    offcpu: bool,
    slot: u32,
}

impl StatsReader {
    /// Reads the counters: cumulative since load, summed over CPUs.
    pub fn snapshot(&self) -> Result<Snapshot> {
        read_snapshot(&self.stats, &self.errnos, &self.counters, self.slot)
    }

    /// Whether the tracer measures the off-CPU split.
    pub fn offcpu_tracked(&self) -> bool {
        self.offcpu
    }
}

/// Run time of the programs with these kernel ids, summed (it advances only while BPF
/// run-time statistics are on); `None` once they are all unloaded.
pub fn programs_run_ns(ids: &[u32]) -> Option<u64> {
    let mut ours = aya::programs::loaded_programs()
        .flatten()
        .filter(|i| ids.contains(&i.id()))
        .peekable();
    ours.peek()?;
    Some(run_totals(ours).0)
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
pub const PROGRAM_NAME_PREFIXES: [&str; 2] = ["syscost_", "floor_sys_"];

/// Checks privileges, reads the kernel's layout and loads the object with its per-thread
/// tables sized to pid_max and its statistics to `slots` processes; nothing is attached
/// yet.
fn load_object(follow_forks: bool, slots: u32) -> Result<(Ebpf, KernelLayout)> {
    privileges::check()?;
    raise_memlock_limit();
    let layout = KernelLayout::read()?;
    let pid_max = process::pid_max()?;
    let follow = u32::from(follow_forks);
    let ebpf = EbpfLoader::new()
        .override_global("FOLLOW_FORKS", &follow, true)
        .override_global("TASK_PID_OFFSET", &layout.task_pid_offset, true)
        .override_global("TASK_TGID_OFFSET", &layout.task_tgid_offset, true)
        .override_global("PT_REGS_CS_OFFSET", &layout.pt_regs_cs_offset, true)
        .map_max_entries("PROCS", pid_max)
        .map_max_entries("THREADS", pid_max)
        .map_max_entries("THREAD_STATS", pid_max)
        .map_max_entries("STATS", slots * MAX_SYSCALLS)
        .map_max_entries("ERRNOS", slots * MAX_SYSCALLS)
        .map_max_entries("COUNTERS", slots * counter::COUNT)
        .load(OBJECT)
        .map_err(explain_load_error)?;
    Ok((ebpf, layout))
}

/// Loads and attaches `(program, raw tracepoint)` pairs, in order.
fn attach(ebpf: &mut Ebpf, programs: &[(&str, &str)]) -> Result<()> {
    for &(name, tracepoint) in programs {
        let prog: &mut RawTracePoint = ebpf
            .program_mut(name)
            .with_context(|| format!("program {name} missing from the object"))?
            .try_into()?;
        prog.load().map_err(|e| explain_program_error(name, e))?;
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
