//! `syscost doctor`: what this host offers and what syscost will be able to do, one line
//! each, with the fix when something is missing. Exit status 0 when everything syscost
//! needs is there.

use std::fmt::Write as _;

use anyhow::Result;

use crate::plan::programs;

use syscost_engine::{
    kernel_btf::{self, KernelLayout},
    map_sizes::TableSizes,
    privileges, process, tracer,
    tracer::{Auto, Tracer, TracerOptions},
};

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Present and working.
    Ok,
    /// Missing, and syscost cannot work without it.
    Missing,
    /// Missing, and a feature of syscost goes without it.
    Limited,
    /// A fact about the host, neither good nor bad.
    Info,
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub what: &'static str,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do about it, when something is missing.
    pub fix: Option<String>,
}

impl Check {
    fn new(what: &'static str, status: Status, detail: impl Into<String>) -> Self {
        Self {
            what,
            status,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// The report as text, one line a check.
pub fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        let tag = match c.status {
            Status::Ok => "ok     ",
            Status::Missing => "MISSING",
            Status::Limited => "limited",
            Status::Info => "info   ",
        };
        let _ = write!(out, "{tag} {}: {}", c.what, c.detail);
        if let Some(fix) = &c.fix {
            let _ = write!(out, " (fix: {fix})");
        }
        out.push('\n');
    }
    out
}

/// 0 when nothing syscost needs is missing, 1 otherwise.
pub fn exit_status(checks: &[Check]) -> i32 {
    i32::from(checks.iter().any(|c| c.status == Status::Missing))
}

/// The lockdown mode in /sys/kernel/security/lockdown (`"none [integrity] ..."`).
pub fn lockdown_mode(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')?;
    Some(text[start + 1..start + end].to_string())
}

/// Runs every check on this host.
pub fn checks() -> Vec<Check> {
    let mut out = Vec::new();
    // Listed before doctor loads anything: the programs it loads and unloads below are
    // freed by the kernel a moment after, and would read as another tracer's.
    let others = other_tracers();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = privileges::effective_caps(&status).unwrap_or(0);
    let privileged = privileges::caps_suffice(caps);
    out.push(if privileged {
        Check::new("privileges", Status::Ok, "may load and attach BPF programs")
    } else {
        Check::new("privileges", Status::Missing, "cannot load BPF programs")
            .fix("run as root, or with CAP_BPF and CAP_PERFMON")
    });

    if privileged && privileges::refusal_of(&status) == privileges::SECCOMP {
        out.push(Check::new(
            "seccomp",
            Status::Info,
            "syscost runs under a seccomp filter (Seccomp: 2 in /proc/self/status); where it refuses bpf(), as a container runtime's default profile does, the load checks below fail",
        )
        .fix("run unconfined: securityContext.seccompProfile.type: Unconfined (Kubernetes), --security-opt seccomp=unconfined (podman, docker), or a profile that allows bpf and perf_event_open"));
    }

    let rel = kernel_btf::release();
    out.push(match kernel_btf::kernel_version(&rel) {
        Some(v) if v >= kernel_btf::OLDEST_KERNEL => Check::new("kernel", Status::Ok, rel.clone()),
        Some(_) => Check::new("kernel", Status::Missing, format!("{rel}: before 5.10"))
            .fix("Linux 5.10 or later"),
        None => Check::new(
            "kernel",
            Status::Info,
            format!("release '{rel}' not understood"),
        ),
    });

    let layout = KernelLayout::read();
    out.push(match &layout {
        Ok(_) => Check::new(
            "BTF",
            Status::Ok,
            "/sys/kernel/btf/vmlinux has the layouts syscost reads",
        ),
        Err(e) => Check::new("BTF", Status::Missing, format!("{e:#}"))
            .fix("a kernel built with CONFIG_DEBUG_INFO_BTF"),
    });
    if let Ok(layout) = &layout {
        out.push(offcpu_check(layout));
    }

    out.push(match process::check_pid_namespace() {
        Ok(()) => Check::new("PID namespace", Status::Ok, "the host's"),
        Err(e) => Check::new("PID namespace", Status::Missing, format!("{e:#}"))
            .fix("run syscost in the host's PID namespace"),
    });

    let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown")
        .ok()
        .and_then(|t| lockdown_mode(&t));
    out.push(match lockdown.as_deref() {
        Some("confidentiality") => Check::new(
            "lockdown",
            Status::Missing,
            "confidentiality: BPF may not read kernel memory (task and register fields syscost needs)",
        )
        .fix("boot with lockdown=integrity or none"),
        Some(mode) => Check::new("lockdown", Status::Ok, mode.to_string()),
        None => Check::new(
            "lockdown",
            Status::Info,
            "/sys/kernel/security/lockdown not readable (securityfs not mounted): mode unknown",
        ),
    });

    if privileged {
        out.push(match tracer::probes::load_floor("floor") {
            Ok(programs) => {
                drop(programs);
                Check::new(
                    "raw tracepoints",
                    Status::Ok,
                    "sys_enter and sys_exit programs load and attach",
                )
            }
            Err(e) => Check::new("raw tracepoints", Status::Missing, format!("{e:#}"))
                .fix("a kernel with CONFIG_BPF_SYSCALL and the raw syscall tracepoints (CONFIG_FTRACE_SYSCALLS)"),
        });
        // The default commands' own programs, loaded and attached for a moment: the
        // exit status says whether run, attach and top will work.
        out.push(defaults_check(
            "run and attach",
            TracerOptions {
                offcpu: true,
                ..programs::command()
            },
        ));
        out.push(defaults_check(
            "top",
            TracerOptions {
                offcpu: true,
                ..programs::machine(Auto::All)
            },
        ));
        out.push(match tracer::probes::cgroup_filter_here() {
            Ok(how) => Check::new("--cgroup", Status::Ok, how),
            Err(e) => Check::new("--cgroup", Status::Limited, format!("{e:#}"))
                .fix("Linux 5.14 or later for --cgroup (everything else works here)"),
        });
        out.push(match tracer::probes::fentry_loads() {
            Ok(()) => Check::new("fentry/fexit", Status::Ok, "programs load"),
            Err(e) => {
                let why = format!("{:#}", e.root_cause());
                let os = why
                    .rfind("(os error")
                    .map_or(String::new(), |i| format!(" {}", &why[i..]));
                Check::new(
                    "fentry/fexit",
                    Status::Info,
                    format!(
                        "refused by the kernel{os}: syscost does not need them (it uses raw tracepoints)"
                    ),
                )
            }
        });
    } else {
        out.push(Check::new(
            "raw tracepoints",
            Status::Info,
            "not tried without privileges",
        ));
        out.push(Check::new(
            "fentry/fexit",
            Status::Info,
            "not tried without privileges",
        ));
    }

    out.push(match tracer::RunTimeStats::enable() {
        Ok(stats) => {
            drop(stats);
            Check::new(
                "BPF run-time statistics",
                Status::Ok,
                "syscost can measure its own cost",
            )
        }
        Err(_) => Check::new(
            "BPF run-time statistics",
            Status::Limited,
            syscost_engine::sampler::NEEDS_SYS_ADMIN.trim_start_matches("n/a: "),
        )
        .fix("run as root (CAP_SYS_ADMIN) for the own-cost figure"),
    });

    let own_namespace = syscost_engine::cgroup::in_own_namespace();
    out.push(match syscost_engine::cgroup::hierarchy() {
        Ok(h) if h.is_root && own_namespace => Check::new(
            "cgroup v2",
            Status::Ok,
            format!(
                "syscost runs in a cgroup namespace of its own: it names cgroups as the host does, from the host's hierarchy mounted at {} (a process's /proc/PID/cgroup path translated, a gone one's cgroup by its id)",
                h.mount.display()
            ),
        ),
        Ok(h) if h.is_root => Check::new(
            "cgroup v2",
            Status::Ok,
            format!("mounted at {}", h.mount.display()),
        ),
        Ok(h) => Check::new(
            "cgroup v2",
            Status::Limited,
            format!(
                "syscost runs in a cgroup namespace of its own and sees only that namespace's hierarchy (at {}): other processes' cgroups and pods are \"?\", --cgroup is refused",
                h.mount.display()
            ),
        )
        .fix("mount the host's /sys/fs/cgroup read-only (a hostPath volume at /host/sys/fs/cgroup), or share the host's cgroup namespace"),
        Err(_) if own_namespace => Check::new(
            "cgroup v2",
            Status::Limited,
            "syscost runs in a cgroup namespace of its own and no cgroup v2 hierarchy is mounted: other processes' cgroups and pods are \"?\", --cgroup is refused",
        )
        .fix("mount the host's /sys/fs/cgroup read-only (a hostPath volume at /host/sys/fs/cgroup)"),
        Err(_) => Check::new("cgroup v2", Status::Info, "not mounted")
            .fix("mount -t cgroup2 none /sys/fs/cgroup (only container-wide views need it)"),
    });

    let cpus = tracer::possible_cpus().unwrap_or(1);
    let pid_max = process::pid_max().map_or("unknown".to_string(), |p| p.to_string());
    let mb = |b: u64| b as f64 / 1e6;
    out.push(Check::new(
        "memory",
        Status::Info,
        format!(
            "pid_max {pid_max}, {cpus} CPUs: attach takes {:.1} MB of maps, export of 64 processes {:.0} MB (neither depends on pid_max)",
            mb(TableSizes::for_slots(1).memory(u64::from(cpus), 1)),
            mb(TableSizes::for_slots(64).memory(u64::from(cpus), 64)),
        ),
    ));

    out.push(others);
    // A load the seccomp filter refused: the seccomp line says why and what to do, not
    // each load check's own fix.
    for c in &mut out {
        if c.detail == privileges::SECCOMP {
            c.detail = "bpf() refused by the seccomp filter (see the seccomp line)".into();
            c.fix = None;
        }
    }
    out
}

/// Where the on-CPU split learns whether a switched-out thread blocked or was preempted.
fn offcpu_check(layout: &KernelLayout) -> Check {
    match (
        layout.switch_state_source(),
        tracer::offcpu_unavailable(layout),
    ) {
        (_, Some(why)) => Check::new("on-CPU split", Status::Limited, why)
            .fix("none needed: syscall times are shown whole (as with --no-offcpu)"),
        (Some(0), None) => Check::new(
            "on-CPU split",
            Status::Ok,
            "sched_switch passes the previous task's state",
        ),
        (_, None) => Check::new(
            "on-CPU split",
            Status::Ok,
            "the previous task's state read from the task (this kernel's sched_switch passes none)",
        ),
    }
}

/// Loads and attaches the programs a command loads by default, then unloads them.
fn defaults_check(what: &'static str, options: TracerOptions) -> Check {
    match Tracer::load(options) {
        Ok(t) => {
            let unavailable = t.features().unavailable.join("; ");
            drop(t);
            if unavailable.is_empty() {
                Check::new(what, Status::Ok, "the programs load and attach")
            } else {
                Check::new(
                    what,
                    Status::Ok,
                    format!("the programs load and attach, without: {unavailable}"),
                )
            }
        }
        Err(e) => Check::new(what, Status::Missing, format!("{e:#}"))
            .fix("see the error; `syscost doctor` on another kernel tells what differs"),
    }
}

/// Other BPF programs on tracepoints: each runs on the events it is attached to, for
/// every process (when they are on the syscall tracepoints, every syscall pays them).
fn other_tracers() -> Check {
    // BPF_PROG_TYPE_TRACEPOINT, _RAW_TRACEPOINT, _TRACING.
    const TRACING_TYPES: [u32; 3] = [5, 17, 26];
    let mut names = Vec::new();
    for p in aya::programs::loaded_programs() {
        let Ok(p) = p else {
            return Check::new(
                "other tracers",
                Status::Info,
                "cannot list loaded programs (needs CAP_SYS_ADMIN)",
            );
        };
        let tracing = TRACING_TYPES.contains(&(p.program_type() as u32));
        let name = p.name_as_str().unwrap_or("?").to_string();
        // doctor's own probe programs (the floor it just tried); another syscost's
        // programs count: they cost every syscall too.
        let ours = ["floor_sys_", "cand_", "doctor_", "probe_"]
            .iter()
            .any(|prefix| name.starts_with(prefix));
        if tracing && !ours {
            names.push(name);
        }
    }
    if names.is_empty() {
        Check::new(
            "other tracers",
            Status::Ok,
            "no other tracepoint programs loaded",
        )
    } else {
        names.sort();
        names.dedup();
        Check::new(
            "other tracers",
            Status::Info,
            format!(
                "{} tracing programs loaded ({}): any attached to sys_enter/sys_exit adds to every syscall of the machine",
                names.len(),
                // Names are whoever loaded the programs' to choose.
                names
                    .iter()
                    .map(|n| syscost_report::untrusted::shown(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    }
}

/// `syscost doctor`.
pub fn doctor() -> Result<i32> {
    let checks = checks();
    super::print_out(&render(&checks));
    Ok(exit_status(&checks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_facts() {
        assert_eq!(kernel_btf::kernel_version("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(kernel_btf::kernel_version("5.4.0"), Some((5, 4)));
        assert_eq!(kernel_btf::kernel_version("x"), None);
        assert_eq!(
            lockdown_mode("none [integrity] confidentiality\n").as_deref(),
            Some("integrity")
        );
    }

    #[test]
    fn exit_status_follows_what_is_needed() {
        let ok = Check::new("a", Status::Ok, "x");
        let limited = Check::new("b", Status::Limited, "y").fix("z");
        assert_eq!(exit_status(&[ok.clone(), limited.clone()]), 0);
        let missing = Check::new("c", Status::Missing, "w");
        assert_eq!(exit_status(&[ok, limited.clone(), missing]), 1);
        assert_eq!(render(&[limited]), "limited b: y (fix: z)\n");
    }
}
