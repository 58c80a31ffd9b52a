//! The object configured for this kernel (one `LoadConfig`, the tables' sizes), its
//! programs verified and attached in order, and the loader's errors in words.

use std::io;

use anyhow::{Context as _, Result, anyhow};
use aya::{
    Ebpf, EbpfError, EbpfLoader,
    maps::{Array, MapData},
    programs::{ProgramError, RawTracePoint},
};
use syscost_common::{
    config::{CONFIG_GLOBAL, LoadConfig, map_names},
    counter,
};

use super::{
    maps::possible_cpus,
    options::{Auto, TracerOptions, programs},
};
use crate::{kernel_btf::KernelLayout, map_sizes::TableSizes, privileges};

/// The compiled kernel programs (syscost-ebpf), built by this crate's build script.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/syscost"));

/// What the object is loaded for: the programs' options, this kernel's layout, how
/// `--cgroup` finds a task's ancestor (`Some`: the ancestry read from the task instead
/// of the helper), and the tables, sized by `sizes` for `slots` processes.
pub(super) struct Shape<'a> {
    pub options: &'a TracerOptions,
    pub layout: &'a KernelLayout,
    pub cgroup_walk: Option<crate::kernel_btf::CgroupWalk>,
    pub slots: u32,
    pub sizes: &'a TableSizes,
}

/// Loads the object with `loader` (consumed) in `shape`; nothing is attached yet.
pub(super) fn load_object(loader: EbpfLoader<'static>, shape: &Shape<'_>) -> Result<Ebpf> {
    let &Shape {
        options,
        layout,
        cgroup_walk,
        slots,
        sizes,
    } = shape;
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
    let per_process = u32::from(options.per_process);
    let slow_on = u32::from(options.slow.is_some());
    let sends = options.slow.is_some() || options.stack_sample_every.is_some();
    let stack_pages = if sends { options.stack_pages } else { 0 };
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
        per_process_on: per_process,
        pool_from_slot: options.pool_from_slot,
        follow_forks: follow,
        proc_mask: sizes.proc_slots - 1,
        thread_mask: sizes.thread_slots - 1,
        pool_per_cpu: sizes.pool_per_cpu,
        cgroup_walk: walk_on,
        stacks_on: u32::from(options.stack_sample_every.is_some()),
        stacks_sample_mask: options
            .stack_sample_every
            .map_or(0, |n| n.max(1).next_power_of_two() - 1),
        stacks_ring_limit: sizes.slow_ring / 2,
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
        .map_max_entries(map_names::PROC_NAMES, sizes.name_slots)
        .map_max_entries(map_names::PROC_INFO, sizes.names)
        .map_max_entries(
            map_names::EXITS,
            if options.per_process {
                sizes.exit_ring
            } else {
                4096
            },
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
            map_names::CALL_RING,
            if sends { sizes.slow_ring } else { 4096 },
        )
        .map_max_entries(map_names::STACK_CALLS, sizes.stack_calls)
        .map_max_entries(map_names::STACK_FRAMES, sizes.stack_frames)
        .load(OBJECT)
        .map_err(explain_load_error)?;
    Ok(ebpf)
}

/// The object loaded as [`load_object`] loads it, `--slow`'s thresholds set, and the
/// programs of its options attached.
pub(super) fn load_and_attach(loader: EbpfLoader<'static>, shape: &Shape<'_>) -> Result<Ebpf> {
    let options = shape.options;
    let mut ebpf = load_object(loader, shape)?;
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

pub(super) const CGROUP_UNSUPPORTED: &str = "--cgroup needs Linux 5.14 or later here: this kernel's tracing programs lack bpf_get_current_ancestor_cgroup_id and its cgroups keep no ancestor_ids";

/// The verifier refused a program for its call of `bpf_get_current_ancestor_cgroup_id`
/// (a kernel whose tracing programs lack it, before 5.14).
#[derive(Debug)]
pub(super) struct AncestorHelperRefused(String);

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
pub(super) fn refuses_ancestor_helper(log: &str) -> bool {
    log.lines().any(|l| {
        l.trim_start()
            .starts_with("unknown func bpf_get_current_ancestor_cgroup_id#")
    })
}

/// Loads and attaches `(program, raw tracepoint)` pairs, in order.
pub(super) fn attach(ebpf: &mut Ebpf, programs: &[(&str, &str)]) -> Result<()> {
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

pub(super) fn raise_memlock_limit() {
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
pub(super) fn is_permission_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EPERM)
}

pub(super) fn explain_load_error(e: EbpfError) -> anyhow::Error {
    let permission = match &e {
        EbpfError::MapError(aya::maps::MapError::CreateError { io_error, .. }) => {
            is_permission_error(io_error)
        }
        _ => false,
    };
    if permission {
        anyhow!("{}", privileges::refusal())
    } else {
        anyhow::Error::new(e).context("cannot load syscost's kernel programs")
    }
}

pub(super) fn explain_program_error(name: &str, e: ProgramError) -> anyhow::Error {
    match e {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            if is_permission_error(&io_error) {
                return anyhow!("{}", privileges::refusal());
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
            anyhow!("{}", privileges::refusal())
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
        maps.retain(|m| {
            !m.is_empty()
                && !m.starts_with('.')
                && m != "CANDIDATE"
                && m != "MINIMAL_START"
                && m != "MINIMAL_STACK_CALLS"
                && m != "AYA_LOGS"
                && m != "AYA_LOG_BUF"
        });
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

    /// No program calls a function: the compiler's memory functions (`memset`,
    /// `memmove`: the toolchain's BPF ones move a byte a loop round, and a 24-byte span
    /// zeroed on every traced call was a tenth of the enter program's time) or any other
    /// in `.text`. Every helper of the kernel side is inlined, and `syscost-ebpf`'s `mem`
    /// writes whole spans word by word. A call is a relocation of type `R_BPF_64_32` in a
    /// program's section; the programs are the executable sections but `.text`.
    #[test]
    fn no_program_calls_a_function() {
        const R_BPF_64_32: u32 = 10;
        let file = object::File::parse(OBJECT).expect("the embedded object parses");
        let mut calls = Vec::new();
        let mut programs = 0;
        for section in file.sections() {
            let name = section.name().unwrap_or_default();
            if section.kind() != object::SectionKind::Text || name == ".text" {
                continue;
            }
            programs += 1;
            for (_, relocation) in section.relocations() {
                let object::RelocationFlags::Elf { r_type } = relocation.flags() else {
                    continue;
                };
                if r_type != R_BPF_64_32 {
                    continue;
                }
                // The callee's name, for the message (a local function's call names its
                // section's symbol, which has none).
                let target = match relocation.target() {
                    object::RelocationTarget::Symbol(i) => file
                        .symbol_by_index(i)
                        .ok()
                        .and_then(|s| s.name().ok())
                        .filter(|n| !n.is_empty())
                        .unwrap_or("an unnamed symbol"),
                    _ => "a target without a symbol",
                };
                calls.push(format!("{name} -> {target}"));
            }
        }
        assert!(
            programs >= 7,
            "only {programs} program sections in the object"
        );
        assert!(calls.is_empty(), "programs call functions: {calls:?}");
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
