//! Syscall numbers and names, from the `syscalls` crate's tables: the native
//! architecture's, and on x86_64 the i386 table for 32-bit (compat) syscalls, which the
//! kernel side counts at `COMPAT_BASE + nr` and which are named `i386:NAME`.

use anyhow::{Result, bail};
use syscalls::Sysno;
use syscost_common::{COMPAT_BASE, SYSCALLS_PER_ABI};

/// Prefix of the names of 32-bit (compat) syscalls.
pub const COMPAT_PREFIX: &str = "i386:";

/// Name of the syscall in stats slot `nr`: the native name, `i386:NAME` for a compat
/// syscall, or `syscall_NNN` / `i386:syscall_NNN` for a number the table does not know.
pub fn name(nr: u32) -> String {
    if (COMPAT_BASE..COMPAT_BASE + SYSCALLS_PER_ABI).contains(&nr) {
        return format!("{COMPAT_PREFIX}{}", compat_name(nr - COMPAT_BASE));
    }
    match Sysno::new(nr as usize) {
        Some(s) => s.name().to_string(),
        None => format!("syscall_{nr}"),
    }
}

#[cfg(target_arch = "x86_64")]
fn compat_name(nr: u32) -> String {
    match syscalls::x86::Sysno::new(nr as usize) {
        Some(s) => s.name().to_string(),
        None => format!("syscall_{nr}"),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn compat_name(nr: u32) -> String {
    format!("syscall_{nr}")
}

#[cfg(target_arch = "x86_64")]
fn compat_number(name: &str) -> Option<u32> {
    name.parse::<syscalls::x86::Sysno>()
        .ok()
        .map(|s| s.id() as u32)
}

#[cfg(not(target_arch = "x86_64"))]
fn compat_number(_name: &str) -> Option<u32> {
    None
}

/// Stats slot of the syscall called `name` (`i386:NAME` for compat ones). An unknown
/// name is an error that suggests the closest known one.
pub fn number(name: &str) -> Result<u32> {
    if let Some(compat) = name.strip_prefix(COMPAT_PREFIX) {
        let nr = compat_number(compat)
            .or_else(|| compat.strip_prefix("syscall_").and_then(|n| n.parse().ok()));
        return match nr {
            Some(nr) if nr < SYSCALLS_PER_ABI => Ok(COMPAT_BASE + nr),
            _ => bail!("unknown syscall '{name}'"),
        };
    }
    if let Ok(s) = name.parse::<Sysno>() {
        return Ok(s.id() as u32);
    }
    if let Some(nr) = name.strip_prefix("syscall_").and_then(|n| n.parse().ok()) {
        return Ok(nr);
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
    fn x86_64_numbers() {
        assert_eq!(name(0), "read");
        assert_eq!(name(39), "getpid");
        assert_eq!(name(110), "getppid");
        assert_eq!(number("close").unwrap(), 3);
        assert_eq!(number("epoll_ctl").unwrap(), 233);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn compat_numbers_use_the_i386_table() {
        // i386 64 is getppid; x86_64 64 is semget.
        assert_eq!(name(COMPAT_BASE + 64), "i386:getppid");
        assert_eq!(name(64), "semget");
        assert_eq!(name(COMPAT_BASE + 1), "i386:exit");
        assert_eq!(number("i386:getppid").unwrap(), COMPAT_BASE + 64);
        assert_eq!(number("i386:syscall_500").unwrap(), COMPAT_BASE + 500);
        assert!(number("i386:nonsense").is_err());
    }

    #[test]
    fn unknown_numbers_and_names() {
        assert_eq!(name(100_000), "syscall_100000");
        assert_eq!(number("syscall_100000").unwrap(), 100_000);
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
