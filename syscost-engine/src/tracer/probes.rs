//! What this kernel offers, asked by loading a program and never attaching it (the
//! cgroup-ancestor helper, fentry), and the benchmark's programs (the floor and the
//! candidates between it and syscost), each with the object's default configuration.

use anyhow::{Context as _, Result};
use aya::{
    Ebpf, EbpfLoader,
    programs::{ProgramError, RawTracePoint},
};

use super::{
    load::{
        CGROUP_UNSUPPORTED, Shape, attach, explain_program_error, is_permission_error, load_object,
    },
    options::TracerOptions,
};
use crate::{kernel_btf::KernelLayout, map_sizes::TableSizes, privileges, process};

/// Loads the object but attaches only the programs of a benchmark `variant`: the
/// empty floor programs (the least any program on the syscall tracepoints can
/// cost), or a candidate between them and syscost (`clock`: the two clock reads;
/// `hist`: the clock reads and a histogram update; `minimal`: the limit of a per-call
/// latency design, a start time per thread, two clock reads and a histogram bucket;
/// `minimal-stacks`: the same with every call counted by its user stack, walked and
/// hashed as `--stacks` does), for every process.
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
        "minimal" => &[
            ("cand_minimal_exit", "sys_exit"),
            ("cand_minimal_enter", "sys_enter"),
        ],
        "minimal-stacks" => &[
            ("cand_minimal_stacks_exit", "sys_exit"),
            ("cand_minimal_enter", "sys_enter"),
        ],
        "filter" => &[
            ("cand_filter_exit", "sys_exit"),
            ("cand_filter_enter", "sys_enter"),
        ],
        "btf" => &[],
        other => {
            anyhow::bail!(
                "no benchmark variant '{other}' (floor, clock, hist, minimal, minimal-stacks, filter, btf)"
            )
        }
    };
    let mut ebpf = if variant.starts_with("minimal") {
        // The minimal programs' start times and stack counts: tables the object keeps at
        // one entry, made full size only by the variant that uses them.
        let mut loader = EbpfLoader::new();
        loader.map_max_entries("MINIMAL_START", MINIMAL_THREADS);
        if variant == "minimal-stacks" {
            loader.map_max_entries("MINIMAL_STACK_CALLS", MINIMAL_STACKS);
        }
        load_object_with(loader)?
    } else {
        load_default_object()?
    };
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
pub(super) fn cgroup_filter(
    layout: &KernelLayout,
) -> Result<Option<crate::kernel_btf::CgroupWalk>> {
    if ancestor_helper_allowed()? {
        return Ok(None);
    }
    match layout.cgroup_walk {
        Some(walk) => Ok(Some(walk)),
        None => anyhow::bail!("{CGROUP_UNSUPPORTED}"),
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
pub(super) fn ancestor_helper_allowed() -> Result<bool> {
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
pub(super) fn load_default_object() -> Result<Ebpf> {
    load_object_with(EbpfLoader::new())
}

/// The start times the minimal program keeps: one per thread, by the tid's low bits (the
/// kernel side's `MINIMAL_THREADS`).
const MINIMAL_THREADS: u32 = 1 << 16;

/// Stacks the `minimal-stacks` candidate counts (its `MINIMAL_STACK_CALLS`).
const MINIMAL_STACKS: u32 = 1 << 12;

/// Loads the object with the default configuration through `loader`.
fn load_object_with(loader: EbpfLoader<'static>) -> Result<Ebpf> {
    privileges::check()?;
    process::check_pid_namespace()?;
    let layout = KernelLayout::read()?;
    load_object(
        loader,
        &Shape {
            options: &TracerOptions::default(),
            layout: &layout,
            cgroup_walk: None,
            slots: 1,
            sizes: &TableSizes::for_slots(1),
        },
    )
}
