//! Syscall numbers and names of the architecture syscost is built for, from the
//! `syscalls` crate's tables.

use anyhow::{Result, bail};
use syscalls::Sysno;

/// Name of syscall `nr`, or `syscall_NNN` for a number the table does not know.
pub fn name(nr: u32) -> String {
    match Sysno::new(nr as usize) {
        Some(s) => s.name().to_string(),
        None => format!("syscall_{nr}"),
    }
}

/// Number of the syscall called `name`. An unknown name is an error that suggests the
/// closest known one.
pub fn number(name: &str) -> Result<u32> {
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
