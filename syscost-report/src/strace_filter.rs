//! strace's `-e` expressions, for the rows a table shows: `trace=SET` (or SET alone),
//! SET a comma list of names, numbers, `/REGEX`, `%CLASS` and `?TOKEN` (no error when
//! nothing matches), `@64`/`@32` after a token for one table, `!` before the set to
//! invert it, `all` and `none`; and `status=successful|failed` (as `-z` and `-Z`). A
//! later `trace=` replaces an earlier one, as in strace.
//!
//! The classes are strace 6.1's, from its own syscall tables (`data/strace-classes.tsv`,
//! written from strace's source by `data/strace-classes.py`), by number, for the x86_64
//! and i386 tables (on arm64: the aarch64 and arm ones). Names are syscost's (the `syscalls` crate's); a regular expression
//! matches them.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use anyhow::{Result, bail};
use regex::Regex;

use crate::{
    profile::Profile,
    syscall_names::{self, COMPAT_PREFIX, SyscallId},
};

/// The classes `%CLASS` names (strace's, with the legacy names without `%`).
const CLASSES: &[&str] = &[
    "%desc", "%file", "%memory", "%process", "%creds", "%signal", "%ipc", "%net", "%network",
    "%stat", "%lstat", "%fstat", "%%stat", "%statfs", "%fstatfs", "%%statfs", "%pure", "%clock",
];

/// strace's tables of this architecture: the native one and the 32-bit (compat) one.
#[cfg(target_arch = "x86_64")]
const NATIVE_TABLE: &str = "x86_64";
#[cfg(target_arch = "x86_64")]
const COMPAT_TABLE: &str = "i386";
#[cfg(target_arch = "aarch64")]
const NATIVE_TABLE: &str = "aarch64";
#[cfg(target_arch = "aarch64")]
const COMPAT_TABLE: &str = "arm";

/// One syscall of strace's tables: compat or not, its number, strace's name, classes.
type ClassRow = (bool, u64, &'static str, Vec<&'static str>);

/// strace's classes by number, for each table.
fn class_table() -> &'static [ClassRow] {
    static TABLE: OnceLock<Vec<ClassRow>> = OnceLock::new();
    TABLE.get_or_init(|| {
        include_str!("../data/strace-classes.tsv")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let compat = match f[0] {
                    NATIVE_TABLE => false,
                    COMPAT_TABLE => true,
                    _ => return None,
                };
                let nr = f[1].parse().expect("strace-classes.tsv: a number");
                let classes = f
                    .get(3)
                    .map(|c| c.split(',').filter(|c| !c.is_empty()).collect())
                    .unwrap_or_default();
                Some((compat, nr, f[2], classes))
            })
            .collect()
    })
}

/// The syscalls of strace's class `class` (`%file`, or a legacy name like `file`),
/// `None` for a name that is no class.
pub fn class(class: &str) -> Option<BTreeSet<SyscallId>> {
    let lower = class.to_ascii_lowercase();
    let canonical = match lower.as_str() {
        "all" => return Some(every_known()),
        "desc" | "file" | "memory" | "process" | "signal" | "ipc" => format!("%{lower}"),
        "network" | "%network" => "%net".to_string(),
        c if CLASSES.contains(&c) => lower.clone(),
        _ => return None,
    };
    Some(
        class_table()
            .iter()
            .filter(|(_, _, _, cl)| cl.contains(&canonical.as_str()))
            .map(|&(compat, nr, _, _)| id(compat, nr))
            .collect(),
    )
}

fn id(compat: bool, nr: u64) -> SyscallId {
    if compat {
        SyscallId::compat(nr)
    } else {
        SyscallId::native(nr)
    }
}

/// Every syscall either table names.
fn every_known() -> BTreeSet<SyscallId> {
    let native = syscalls::Sysno::iter().map(|s| SyscallId::native(s.id() as u64));
    native
        .chain(crate::syscall_names::compat_syscalls())
        .collect()
}

/// Which calls of a syscall a table counts (`-z`, `-Z`, `-e status=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Successful,
    Failed,
}

/// What `-e` selects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// The syscalls shown (`None`: every one), or with `inverted` the ones left out.
    set: Option<BTreeSet<SyscallId>>,
    inverted: bool,
    /// Native syscalls named one by one: a row of zeros when they made no call.
    pub named: Vec<String>,
    /// `status=`: which calls are counted.
    pub status: Option<Status>,
}

impl Selection {
    /// Whether the set is every syscall (no `trace=`, or `trace=all`).
    pub fn is_all(&self) -> bool {
        self.set.is_none()
    }

    /// Whether it shows no syscall at all (`-e none`, `trace=none`): then, as strace,
    /// there is no table to print.
    pub fn is_none(&self) -> bool {
        let Some(set) = &self.set else {
            return false;
        };
        let nothing = if self.inverted {
            // `trace=!all`: every syscall left out.
            every_known().is_subset(set)
        } else {
            set.is_empty()
        };
        nothing && self.named.is_empty()
    }

    /// Keeps the rows it shows, and a row of zeros for each syscall named one by one
    /// that made no call.
    pub fn narrow(&self, profile: &mut Profile) {
        if self.is_all() {
            return;
        }
        profile.syscalls.retain(|s| self.shows(&s.name));
        profile.add_zero_rows(&self.named);
    }

    /// Whether a row of this syscall is shown.
    pub fn shows(&self, name: &str) -> bool {
        let Some(set) = &self.set else { return true };
        let Ok(id) = syscall_names::number(name) else {
            return self.inverted;
        };
        set.contains(&id) != self.inverted
    }
}

/// Parses the `-e` arguments, in order.
pub fn parse(exprs: &[String]) -> Result<Selection> {
    let mut sel = Selection::default();
    for e in exprs {
        let (qualifier, value) = match e.split_once('=') {
            Some((q, v)) => (q, v),
            None => ("trace", e.as_str()),
        };
        match qualifier {
            "trace" | "t" => {
                let (set, inverted, named) = parse_set(value)?;
                sel.set = set;
                sel.inverted = inverted;
                sel.named = named;
            }
            "status" => sel.status = parse_status(value)?,
            "abbrev" | "a" | "verbose" | "v" | "raw" | "x" | "read" | "reads" | "r" | "write"
            | "writes" | "secontext" | "w" | "quiet" | "silent" | "silence" | "q" | "kvm"
            | "decode-fds" | "decode-fd" | "decode-pids" | "decode-pid" | "signal" | "signals"
            | "s" => bail!(
                "-e {qualifier}=: strace's {qualifier} qualifier is about how calls are printed; syscost prints no calls, it counts them (-e trace= and -e status= choose the rows)"
            ),
            "fault" | "inject" => bail!(
                "-e {qualifier}=: syscost injects nothing into the traced process; it only counts"
            ),
            "trace-fds" | "trace-fd" | "fd" | "fds" => bail!(
                "-e {qualifier}=: syscost counts by syscall, not by file descriptor (--slow shows each slow call's descriptor)"
            ),
            other => bail!(
                "-e {other}=: no such qualifier (syscost takes trace= and status=, as strace's -e)"
            ),
        }
    }
    Ok(sel)
}

/// `status=SET`, as strace's: a comma list of statuses, `!` inverting it, `all` and
/// `none`; of strace's statuses syscost tells apart successful and failed calls.
fn parse_status(value: &str) -> Result<Option<Status>> {
    let mut s = value;
    let mut invert = false;
    while let Some(rest) = s.strip_prefix('!') {
        invert = !invert;
        s = rest;
    }
    let (mut successful, mut failed) = match s {
        "all" => (true, true),
        "none" => (false, false),
        list => {
            let (mut ok, mut err) = (false, false);
            for v in list.split(',').map(str::trim) {
                match v {
                    "successful" => ok = true,
                    "failed" => err = true,
                    "unfinished" | "unavailable" | "detached" => bail!(
                        "-e status={v}: syscost counts the calls that return, successful or failed (-z, -Z); a call still in flight at the end is in no row"
                    ),
                    other => {
                        bail!("-e status={other}: no such status (successful, failed, all or none)")
                    }
                }
            }
            (ok, err)
        }
    };
    if invert {
        (successful, failed) = (!successful, !failed);
    }
    match (successful, failed) {
        (true, true) => Ok(None),
        (true, false) => Ok(Some(Status::Successful)),
        (false, true) => Ok(Some(Status::Failed)),
        (false, false) => bail!("-e status={value}: no call would be counted"),
    }
}

/// The profile of the calls `status` counts: calls and errors from the kernel's errno
/// split (exact), rows without such calls left out. Times are not split by outcome:
/// the table shows them as `-` ([`status_note`]).
pub fn counted(profile: &Profile, status: Status) -> Profile {
    let mut p = profile.clone();
    for s in &mut p.syscalls {
        match status {
            Status::Successful => {
                s.calls -= s.errors;
                s.errors = 0;
                s.errnos.clear();
            }
            Status::Failed => s.calls = s.errors,
        }
    }
    p.syscalls.retain(|s| s.calls > 0);
    p
}

/// The line under a table of `-z` or `-Z`.
pub fn status_note(status: Status) -> String {
    format!(
        "syscost: {}: the {} calls only, counted exactly from the kernel's errno split; their time is not split by outcome, so the time columns show -",
        match status {
            Status::Successful => "-z",
            Status::Failed => "-Z",
        },
        match status {
            Status::Successful => "successful",
            Status::Failed => "failed",
        }
    )
}

type Parsed = (Option<BTreeSet<SyscallId>>, bool, Vec<String>);

fn parse_set(value: &str) -> Result<Parsed> {
    let mut s = value;
    let mut inverted = false;
    while let Some(rest) = s.strip_prefix('!') {
        inverted = !inverted;
        s = rest;
    }
    match s {
        "all" => {
            return Ok((
                if inverted {
                    Some(BTreeSet::new())
                } else {
                    None
                },
                false,
                vec![],
            ));
        }
        "none" => return Ok((Some(BTreeSet::new()), inverted, vec![])),
        _ => {}
    }
    let mut set = BTreeSet::new();
    let mut named = Vec::new();
    let tokens: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        bail!("-e trace={value}: no syscall named");
    }
    for token in tokens {
        let (optional, t) = match token.trim_start_matches('?') {
            t if t.len() < token.len() => (true, t),
            t => (false, t),
        };
        let (t, tables) = match t.rsplit_once('@') {
            Some((t, "64")) => (t, [true, false]),
            Some((t, "32")) => (t, [false, true]),
            Some((_, "x32")) => bail!(
                "{token}: syscost tells 64-bit and i386 calls apart; x32 calls are counted as 64-bit numbers"
            ),
            Some((_, p)) => bail!("{token}: incorrect personality designator '{p}' (64 or 32)"),
            None => (t, [true, true]),
        };
        let keep = |id: &SyscallId| if id.is_compat() { tables[1] } else { tables[0] };
        let found: Vec<SyscallId> = if t.starts_with(|c: char| c.is_ascii_digit()) {
            let nr: u64 = t
                .parse()
                .map_err(|_| anyhow::anyhow!("invalid system call '{token}'"))?;
            let known = every_known();
            [SyscallId::native(nr), SyscallId::compat(nr)]
                .into_iter()
                .filter(|id| known.contains(id))
                .collect()
        } else if let Some(pattern) = t.strip_prefix('/') {
            let re = Regex::new(pattern).map_err(|e| {
                // The regex crate draws the pattern and a caret over several lines; the
                // last says what is wrong.
                let text = e.to_string();
                let why = text.lines().last().unwrap_or("").trim();
                let why = why.strip_prefix("error: ").unwrap_or(why);
                anyhow::anyhow!(
                    "-e trace=/{pattern}: not a regular expression ({why}); for a literal name, leave out the /"
                )
            })?;
            every_known()
                .into_iter()
                .filter(|id| {
                    let name = id.name();
                    re.is_match(name.strip_prefix(COMPAT_PREFIX).unwrap_or(&name))
                })
                .collect()
        } else if let Some(ids) = class(t) {
            if !optional && ids.is_empty() {
                bail!("invalid system call '{token}'");
            }
            ids.into_iter().collect()
        } else if t.starts_with('%') {
            if !optional {
                bail!("-e trace={t}: no such class ({})", CLASSES.join(", "));
            }
            Vec::new()
        } else {
            // A name: syscost's, in both tables (`i386:NAME` for the i386 one alone).
            let native = syscall_names::number(t);
            let compat = if t.starts_with(COMPAT_PREFIX) {
                None
            } else {
                syscall_names::number(&format!("{COMPAT_PREFIX}{t}")).ok()
            };
            match (native, compat) {
                (Ok(n), c) => {
                    if !n.is_compat() && tables[0] {
                        named.push(t.to_string());
                    }
                    std::iter::once(n).chain(c).collect()
                }
                (Err(_), Some(c)) => vec![c],
                (Err(e), None) if !optional => return Err(e),
                (Err(_), None) => Vec::new(),
            }
        };
        let found: Vec<SyscallId> = found.into_iter().filter(|id| keep(id)).collect();
        if found.is_empty() && !optional {
            bail!("invalid system call '{token}'");
        }
        set.extend(found);
    }
    if inverted {
        named.clear();
    }
    Ok((Some(set), inverted, named))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    fn names(set: &BTreeSet<SyscallId>) -> Vec<String> {
        set.iter().map(SyscallId::name).collect()
    }

    #[test]
    fn the_class_data_holds_the_four_tables_and_this_architecture_reads_its_two() {
        let data = include_str!("../data/strace-classes.tsv");
        let mut tables: Vec<&str> = data
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split('\t').next())
            .collect();
        tables.dedup();
        assert_eq!(tables, ["x86_64", "i386", "aarch64", "arm"]);
        let read = |t: &str| {
            data.lines()
                .filter(|l| l.starts_with(&format!("{t}\t")))
                .count()
        };
        let native = class_table().iter().filter(|r| !r.0).count();
        let compat = class_table().iter().filter(|r| r.0).count();
        assert_eq!((native, compat), (read(NATIVE_TABLE), read(COMPAT_TABLE)));
        assert!(native > 300 && compat > 400, "{native} {compat}");
        // Each table's read by its own number: x86_64 0, i386 3, aarch64 63, arm 3.
        let file = class("%desc").unwrap();
        let read_nr = if cfg!(target_arch = "x86_64") { 0 } else { 63 };
        assert!(file.contains(&SyscallId::native(read_nr)));
        assert!(file.contains(&SyscallId::compat(3)));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn plain_names_are_shown_with_zero_rows_and_both_tables() {
        let s = parse(&["read,close".into()]).unwrap();
        assert_eq!(s.named, ["read", "close"]);
        assert!(s.shows("read") && s.shows("close") && s.shows("i386:close"));
        assert!(!s.shows("write"));
        let s = parse(&["trace=close@64".into()]).unwrap();
        assert!(s.shows("close") && !s.shows("i386:close"));
        let s = parse(&["trace=close@32".into()]).unwrap();
        assert!(!s.shows("close") && s.shows("i386:close"));
        assert!(s.named.is_empty());
        assert_eq!(
            parse(&["clsoe".into()]).unwrap_err().to_string(),
            "unknown syscall 'clsoe' (did you mean 'close'?)"
        );
        // `?` lets a name be unknown.
        assert!(parse(&["?nosuchcall,read".into()]).unwrap().shows("read"));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn negation_regex_numbers_all_none() {
        let s = parse(&["trace=!futex".into()]).unwrap();
        assert!(!s.shows("futex") && s.shows("read") && s.shows("syscall_0x258"));
        assert!(s.named.is_empty());
        let s = parse(&["trace=/^epoll".into()]).unwrap();
        for n in ["epoll_wait", "epoll_ctl", "epoll_pwait", "i386:epoll_wait"] {
            assert!(s.shows(n), "{n}");
        }
        assert!(!s.shows("read"));
        let s = parse(&["trace=3".into()]).unwrap();
        assert!(s.shows("close") && !s.shows("read"));
        assert!(s.shows("i386:read"), "i386 number 3 is read");
        assert!(parse(&["trace=all".into()]).unwrap().is_all());
        let none = parse(&["trace=none".into()]).unwrap();
        assert!(!none.shows("read"));
        assert!(none.is_none());
        assert!(!parse(&["trace=!none".into()]).unwrap().is_none());
        assert!(parse(&["trace=!all".into()]).unwrap().is_none());
        assert!(!parse(&["trace=!read".into()]).unwrap().is_none());
        assert!(!parse(&["trace=read".into()]).unwrap().is_none());
        assert!(parse(&["trace=!none".into()]).unwrap().shows("read"));
        assert!(!parse(&["trace=!all".into()]).unwrap().shows("read"));
        // A later trace= replaces an earlier one.
        let s = parse(&["trace=read".into(), "trace=write".into()]).unwrap();
        assert!(!s.shows("read") && s.shows("write"));
        assert_eq!(
            parse(&["trace=/[".into()]).unwrap_err().to_string(),
            "-e trace=/[: not a regular expression (unclosed character class); for a literal name, leave out the /"
        );
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn classes_are_strace_s() {
        let file = class("%file").unwrap();
        for n in ["open", "openat", "stat", "execve", "i386:open"] {
            assert!(file.contains(&syscall_names::number(n).unwrap()), "{n}");
        }
        assert!(!file.contains(&syscall_names::number("read").unwrap()));
        assert_eq!(class("file"), class("%FILE"));
        assert_eq!(class("%network"), class("%net"));
        let net = names(&class("%net").unwrap());
        assert!(net.contains(&"socket".to_string()) && net.contains(&"i386:socket".to_string()));
        assert!(class("%nosuch").is_none());
        assert_eq!(
            parse(&["trace=%nosuch".into()])
                .unwrap_err()
                .to_string()
                .split(" (")
                .next()
                .unwrap(),
            "-e trace=%nosuch: no such class"
        );
        let s = parse(&["trace=%net,%process".into()]).unwrap();
        assert!(s.shows("connect") && s.shows("clone") && !s.shows("read"));
    }

    #[test]
    fn status_and_other_qualifiers() {
        assert_eq!(
            parse(&["status=successful".into()]).unwrap().status,
            Some(Status::Successful)
        );
        assert_eq!(
            parse(&["status=!successful".into()]).unwrap().status,
            Some(Status::Failed)
        );
        assert_eq!(parse(&["status=all".into()]).unwrap().status, None);
        assert_eq!(
            parse(&["status=successful,failed".into()]).unwrap().status,
            None
        );
        assert_eq!(
            parse(&["status=!failed".into()]).unwrap().status,
            Some(Status::Successful)
        );
        assert_eq!(parse(&["status=!none".into()]).unwrap().status, None);
        assert!(parse(&["status=!all".into()]).is_err());
        // `?` lets a class be unknown too.
        assert!(
            parse(&["trace=?%nosuch,read".into()])
                .unwrap()
                .shows("read")
        );
        assert!(
            parse(&["status=unfinished".into()])
                .unwrap_err()
                .to_string()
                .starts_with("-e status=unfinished: syscost counts the calls that return")
        );
        assert!(
            parse(&["abbrev=none".into()])
                .unwrap_err()
                .to_string()
                .starts_with(
                    "-e abbrev=: strace's abbrev qualifier is about how calls are printed"
                )
        );
        assert!(parse(&["inject=read:error=EIO".into()]).is_err());
    }
}
