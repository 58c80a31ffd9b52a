//! syscost refuses to start without the privileges its kernel programs need, instead of
//! half-working.

use anyhow::{Result, bail};

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The message every privilege failure ends with.
pub const HOW_TO: &str =
    "syscost needs root (or CAP_BPF and CAP_PERFMON) to load its kernel programs: run it with sudo";

/// Effective capability mask of a `/proc/<pid>/status` text.
pub fn effective_caps(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// Whether a capability mask can load and attach tracing programs.
pub fn caps_suffice(caps: u64) -> bool {
    let has = |c: u32| caps & (1u64 << c) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}

/// What the kernel refusing `bpf()` with EPERM means here: [`HOW_TO`], or, for a process
/// that has the capabilities under a seccomp filter (a container runtime's default
/// profile refuses `bpf`), the filter and how to lift it.
pub fn refusal() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    refusal_of(&status)
}

/// [`refusal`] for a `/proc/<pid>/status` text.
pub fn refusal_of(status: &str) -> String {
    let filtered = status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .is_some_and(|m| m.trim() == "2");
    let capable = effective_caps(status).is_some_and(caps_suffice);
    if filtered && capable {
        SECCOMP.to_string()
    } else if capable {
        CAPABLE.to_string()
    } else {
        how_to().to_string()
    }
}

/// The message for a capable process under a seccomp filter that the kernel refused.
pub const SECCOMP: &str = "the kernel refused bpf() though syscost has the capabilities, and it runs under a seccomp filter (Seccomp: 2 in /proc/self/status), which is the likely cause: run it unconfined (Kubernetes: securityContext.seccompProfile.type: Unconfined; podman or docker: --security-opt seccomp=unconfined) or under a profile that allows bpf and perf_event_open";

/// The message for a capable process under no seccomp filter that the kernel refused.
pub const CAPABLE: &str = "the kernel refused bpf() though syscost has the capabilities: on kernels before 5.11 the maps count against the locked-memory limit, which syscost could not raise (give it CAP_SYS_RESOURCE, or LimitMEMLOCK=infinity / ulimit -l unlimited); otherwise a security module refused it (lockdown, SELinux, AppArmor: see the kernel's log)";

/// Whether this process may switch BPF run-time statistics on (the own-cost figure):
/// the kernel asks for CAP_SYS_ADMIN.
pub fn can_enable_run_stats() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    effective_caps(&status).is_some_and(|caps| caps & (1u64 << CAP_SYS_ADMIN) != 0)
}

/// The message every privilege failure ends with in a container (a cgroup namespace of
/// its own), where sudo is not the answer.
pub const HOW_TO_IN_CONTAINER: &str = "syscost needs CAP_BPF and CAP_PERFMON (or root's CAP_SYS_ADMIN) to load its kernel programs: add them to the container (Kubernetes: securityContext.capabilities.add: [BPF, PERFMON]; podman, docker: --cap-add BPF,PERFMON)";

/// [`HOW_TO`], or [`HOW_TO_IN_CONTAINER`] in one.
pub fn how_to() -> &'static str {
    if crate::cgroup::in_own_namespace() {
        HOW_TO_IN_CONTAINER
    } else {
        HOW_TO
    }
}

/// Fails with [`how_to`] unless this process may load the programs.
pub fn check() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    match effective_caps(&status) {
        Some(caps) if caps_suffice(caps) => Ok(()),
        _ => bail!("{}", how_to()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_judges_capabilities() {
        let root = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(effective_caps(root), Some(0x1ff_ffff_ffff));
        assert!(caps_suffice(0x1ff_ffff_ffff));
        assert!(caps_suffice((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!caps_suffice(1 << CAP_BPF));
        assert!(!caps_suffice(0));
        assert_eq!(effective_caps("Name:\tx\n"), None);
    }

    #[test]
    fn a_seccomp_filter_is_named_only_where_the_capabilities_are_there() {
        let caps = "CapEff:\t000000c000000000\n";
        assert_eq!(refusal_of(&format!("{caps}Seccomp:\t2\n")), SECCOMP);
        assert_eq!(refusal_of(&format!("{caps}Seccomp:\t0\n")), CAPABLE);
        assert_eq!(
            refusal_of("CapEff:\t0000000000000000\nSeccomp:\t2\n"),
            how_to()
        );
        assert_eq!(refusal_of(""), how_to());
    }
}
