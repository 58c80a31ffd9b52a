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

/// Whether this process may switch BPF run-time statistics on (the own-cost figure):
/// the kernel asks for CAP_SYS_ADMIN.
pub fn can_enable_run_stats() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    effective_caps(&status).is_some_and(|caps| caps & (1u64 << CAP_SYS_ADMIN) != 0)
}

/// Fails with [`HOW_TO`] unless this process may load the programs.
pub fn check() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    match effective_caps(&status) {
        Some(caps) if caps_suffice(caps) => Ok(()),
        _ => bail!("{HOW_TO}"),
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
}
