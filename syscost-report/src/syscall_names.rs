//! Syscalls as the kernel side tells them apart ([`SyscallId`]: ABI and number), and
//! their numbers and names, from the `syscalls` crate's tables: the native
//! architecture's, and the 32-bit (compat) table of its 32-bit code: on x86_64 i386's,
//! names `i386:NAME`; on arm64 AArch32's (the `arm` table), names `arm:NAME`. A number a table lacks is named as strace names it,
//! `syscall_0x258`.

use anyhow::{Result, bail};
use syscalls::Sysno;

use syscost_common::{COMPAT_BASE, KEY_BIG_COMPAT, KEY_BIG_NATIVE, abi, syscall_key};

/// A syscall as the kernel side tells them apart: its ABI and number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SyscallId {
    /// The kernel side's key: the number for native syscalls with a key of their own,
    /// `COMPAT_BASE + number` for compat ones, `KEY_BIG_*` for the others.
    pub key: u32,
    /// The syscall number the program passed.
    pub nr: u64,
}

impl SyscallId {
    /// A 64-bit (native) syscall.
    pub fn native(nr: u64) -> Self {
        Self::of(syscall_key(abi::NATIVE, nr), nr)
    }

    /// A 32-bit (compat) syscall.
    pub fn compat(nr: u64) -> Self {
        Self::of(syscall_key(abi::COMPAT, nr), nr)
    }

    /// The id of an entry's (key, number).
    pub fn of(key: u32, nr: u64) -> Self {
        let nr = match key {
            KEY_BIG_NATIVE | KEY_BIG_COMPAT => nr,
            k if k >= COMPAT_BASE => u64::from(k - COMPAT_BASE),
            k => u64::from(k),
        };
        Self { key, nr }
    }

    /// Whether it is a 32-bit (compat) syscall.
    pub fn is_compat(&self) -> bool {
        syscost_common::key_is_compat(self.key)
    }

    /// Its name: the table's name, `syscall_0x...` for a number the table lacks (as
    /// strace writes them), with `i386:` (arm64: `arm:`) before compat ones.
    pub fn name(&self) -> String {
        name(self.is_compat(), self.nr)
    }
}

/// Prefix of the names of 32-bit (compat) syscalls: the table's architecture (x86_64:
/// i386's; arm64: AArch32's, the kernel's `arm` table).
#[cfg(target_arch = "x86_64")]
pub const COMPAT_PREFIX: &str = "i386:";
#[cfg(target_arch = "aarch64")]
pub const COMPAT_PREFIX: &str = "arm:";

#[cfg(target_arch = "aarch64")]
use syscalls::arm::Sysno as CompatSysno;
/// The 32-bit (compat) table.
#[cfg(target_arch = "x86_64")]
use syscalls::x86::Sysno as CompatSysno;

/// Name of syscall `nr`, compat or native.
pub fn name(compat: bool, nr: u64) -> String {
    if compat {
        return format!("{COMPAT_PREFIX}{}", compat_name(nr));
    }
    match usize::try_from(nr).ok().and_then(Sysno::new) {
        Some(s) => s.name().to_string(),
        None => unknown(nr),
    }
}

fn unknown(nr: u64) -> String {
    format!("syscall_{nr:#x}")
}

fn compat_name(nr: u64) -> String {
    match usize::try_from(nr).ok().and_then(CompatSysno::new) {
        Some(s) => s.name().to_string(),
        None => unknown(nr),
    }
}

fn compat_number(name: &str) -> Option<u64> {
    name.parse::<CompatSysno>().ok().map(|s| s.id() as u64)
}

/// Every syscall of the 32-bit (compat) table.
pub fn compat_syscalls() -> impl Iterator<Item = SyscallId> {
    CompatSysno::iter().map(|s| SyscallId::compat(s.id() as u64))
}

/// The number in `syscall_0x258` (or `syscall_600`).
fn unknown_number(name: &str) -> Option<u64> {
    let n = name.strip_prefix("syscall_")?;
    match n.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => n.parse().ok(),
    }
}

/// The syscall called `name` (`i386:NAME`, on arm64 `arm:NAME`, for compat ones). An unknown name is an error
/// that suggests the closest known one.
pub fn number(name: &str) -> Result<SyscallId> {
    if let Some(compat) = name.strip_prefix(COMPAT_PREFIX) {
        return match compat_number(compat).or_else(|| unknown_number(compat)) {
            Some(nr) => Ok(SyscallId::compat(nr)),
            None => bail!("unknown syscall '{name}'"),
        };
    }
    if let Ok(s) = name.parse::<Sysno>() {
        return Ok(SyscallId::native(s.id() as u64));
    }
    if let Some(nr) = unknown_number(name) {
        return Ok(SyscallId::native(nr));
    }
    match closest(name) {
        Some(best) => bail!("unknown syscall '{name}' (did you mean '{best}'?)"),
        None => bail!("unknown syscall '{name}'"),
    }
}

/// Parses and checks `-e read,write,close`: the names, each a known syscall.
pub fn parse_list(list: &str) -> Result<Vec<String>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|n| number(n).map(|_| n.to_string()))
        .collect()
}

fn closest(name: &str) -> Option<&'static str> {
    Sysno::iter()
        .map(|s| (strsim::damerau_levenshtein(name, s.name()), s.name()))
        .min()
        .filter(|(d, _)| *d <= name.len().max(3) / 2 + 1)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn ids_name_numbers_of_every_kind() {
        assert_eq!(SyscallId::native(3).name(), "close");
        assert_eq!(SyscallId::native(600).name(), "syscall_0x258");
        assert_eq!(SyscallId::native(5000).name(), "syscall_0x1388");
        assert_eq!(SyscallId::native(5000).key, KEY_BIG_NATIVE);
        assert_eq!(SyscallId::compat(64).name(), "i386:getppid");
        assert_eq!(SyscallId::compat(700).name(), "i386:syscall_0x2bc");
        assert_eq!(SyscallId::of(COMPAT_BASE + 64, 0), SyscallId::compat(64));
        assert!(SyscallId::compat(700).is_compat() && !SyscallId::native(5000).is_compat());
        assert!(SyscallId::native(600).key < syscost_common::NATIVE_KEYS);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn x86_64_numbers() {
        assert_eq!(name(false, 0), "read");
        assert_eq!(name(false, 39), "getpid");
        assert_eq!(name(false, 110), "getppid");
        assert_eq!(number("close").unwrap(), SyscallId::native(3));
        assert_eq!(number("epoll_ctl").unwrap(), SyscallId::native(233));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn compat_numbers_use_the_i386_table() {
        // i386 64 is getppid; x86_64 64 is semget.
        assert_eq!(name(true, 64), "i386:getppid");
        assert_eq!(name(false, 64), "semget");
        assert_eq!(name(true, 1), "i386:exit");
        assert_eq!(number("i386:getppid").unwrap(), SyscallId::compat(64));
        assert_eq!(
            number("i386:syscall_0x1f4").unwrap(),
            SyscallId::compat(500)
        );
        assert!(number("i386:nonsense").is_err());
    }

    #[test]
    #[cfg(target_arch = "aarch64")]
    fn aarch64_numbers_and_the_arm_table() {
        assert_eq!(SyscallId::native(57).name(), "close");
        assert_eq!(SyscallId::native(173).name(), "getppid");
        assert_eq!(number("epoll_pwait").unwrap(), SyscallId::native(22));
        assert!(number("epoll_wait").is_err(), "arm64 has epoll_pwait only");
        // AArch32's 64 is getppid, arm64's 64 is write.
        assert_eq!(SyscallId::compat(64).name(), "arm:getppid");
        assert_eq!(name(false, 64), "write");
        assert_eq!(number("arm:getppid").unwrap(), SyscallId::compat(64));
        assert_eq!(SyscallId::compat(700).name(), "arm:syscall_0x2bc");
        assert!(number("i386:getppid").is_err());
    }

    #[test]
    fn unknown_numbers_and_names() {
        assert_eq!(name(false, 600), "syscall_0x258");
        assert_eq!(name(false, 100_000), "syscall_0x186a0");
        assert_eq!(number("syscall_0x258").unwrap(), SyscallId::native(600));
        assert_eq!(number("syscall_600").unwrap(), SyscallId::native(600));
        assert_eq!(number("syscall_0x1388").unwrap().nr, 5000);
        let e = number("getppidd").unwrap_err().to_string();
        assert_eq!(e, "unknown syscall 'getppidd' (did you mean 'getppid'?)");
        let e = number("zzzzzzzzzzzzzzzzzzzz").unwrap_err().to_string();
        assert_eq!(e, "unknown syscall 'zzzzzzzzzzzzzzzzzzzz'");
    }

    #[test]
    fn lists() {
        assert_eq!(
            parse_list("getpid, getppid,").unwrap(),
            ["getpid", "getppid"]
        );
        assert!(parse_list("read,wrte").is_err());
    }
}
