//! The `strace -c` summary table, column for column, so the two read side by side:
//!
//! ```text
//! % time     seconds  usecs/call     calls    errors syscall
//! ------ ----------- ----------- --------- --------- ----------------
//!  77.53    0.000069           3        23           close
//! ```
//!
//! With `-L` the columns p50, p99 and max follow the syscall name.

use std::cmp::Reverse;

use clap::ValueEnum;

use crate::{
    profile::{Profile, SyscallProfile},
    units::human_ns,
};

/// Sort order of the rows (like strace's `-S`); each but `name` sorts largest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Total time in the syscall.
    #[default]
    Time,
    Calls,
    Errors,
    /// Average latency.
    Avg,
    /// 99th percentile latency.
    P99,
    Name,
}

/// How to print the table.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableOptions {
    pub sort: SortKey,
    /// Add p50, p99 and max columns.
    pub latency: bool,
}

const DASHES: &str = "------ ----------- ----------- --------- --------- ----------------";
const LATENCY_DASHES: &str = " --------- --------- ---------";

/// Rows in display order.
pub fn sorted(profile: &Profile, key: SortKey) -> Vec<&SyscallProfile> {
    let mut rows: Vec<&SyscallProfile> = profile.syscalls.iter().collect();
    // Ties keep syscall-number order, as strace does.
    rows.sort_by_key(|s| s.nr);
    match key {
        SortKey::Time => rows.sort_by_key(|s| Reverse(s.total_ns)),
        SortKey::Calls => rows.sort_by_key(|s| Reverse(s.calls)),
        SortKey::Errors => rows.sort_by_key(|s| Reverse(s.errors)),
        SortKey::Avg => rows.sort_by_key(|s| Reverse(s.avg_ns)),
        SortKey::P99 => rows.sort_by_key(|s| Reverse(s.p99_ns)),
        SortKey::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
    }
    rows
}

fn line(pct: f64, total_ns: u64, calls: u64, errors: u64, name: &str) -> String {
    let usecs_per_call = if calls == 0 {
        0
    } else {
        total_ns / 1000 / calls
    };
    let errors = if errors == 0 {
        String::new()
    } else {
        errors.to_string()
    };
    format!(
        "{pct:>6.2} {:>11.6} {usecs_per_call:>11} {calls:>9} {errors:>9} {name}",
        total_ns as f64 / 1e9
    )
}

fn latency_cols(p50: u64, p99: u64, max: u64) -> String {
    format!(
        " {:>9} {:>9} {:>9}",
        human_ns(p50),
        human_ns(p99),
        human_ns(max)
    )
}

/// The table, with a line about unpaired and dropped events when there were any.
pub fn render(profile: &Profile, options: TableOptions) -> String {
    let (calls, errors, total_ns) = profile.totals();
    let mut out = String::new();
    let mut push = |s: String| {
        out.push_str(s.trim_end());
        out.push('\n');
    };
    let header = format!(
        "{:>6} {:>11} {:>11} {:>9} {:>9} {}",
        "% time", "seconds", "usecs/call", "calls", "errors", "syscall"
    );
    if options.latency {
        push(format!(
            "{header:<67}{:>10}{:>10}{:>10}",
            "p50", "p99", "max"
        ));
        push(format!("{DASHES}{LATENCY_DASHES}"));
    } else {
        push(header);
        push(DASHES.to_string());
    }
    for s in sorted(profile, options.sort) {
        let pct = if total_ns == 0 {
            0.0
        } else {
            100.0 * s.total_ns as f64 / total_ns as f64
        };
        let mut row = line(pct, s.total_ns, s.calls, s.errors, &s.name);
        if options.latency {
            row = format!("{row:<67}{}", latency_cols(s.p50_ns, s.p99_ns, s.max_ns));
        }
        push(row);
    }
    push(if options.latency {
        format!("{DASHES}{LATENCY_DASHES}")
    } else {
        DASHES.to_string()
    });
    push(line(100.0, total_ns, calls, errors, "total"));
    if profile.unpaired > 0 || profile.dropped > 0 {
        push(format!(
            "syscost: {} syscall exits without a seen enter (in flight when tracing began), {} events dropped",
            profile.unpaired, profile.dropped
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{SCHEMA_VERSION, Target};
    use std::collections::BTreeMap;

    fn row(name: &str, nr: u32, calls: u64, errors: u64, total_ns: u64) -> SyscallProfile {
        let mut errnos = BTreeMap::new();
        if errors > 0 {
            errnos.insert("ENOENT".to_string(), errors);
        }
        SyscallProfile {
            name: name.to_string(),
            nr,
            calls,
            errors,
            errnos,
            total_ns,
            avg_ns: total_ns / calls,
            min_ns: 100,
            max_ns: 9_000,
            p50_ns: 1_100,
            p90_ns: 2_000,
            p99_ns: 8_500,
            histogram: vec![],
        }
    }

    fn profile() -> Profile {
        Profile {
            version: SCHEMA_VERSION,
            arch: "x86_64".into(),
            target: Target {
                pid: 1,
                comm: "ls".into(),
                command: None,
            },
            duration_ns: 1_000_000,
            unpaired: 0,
            dropped: 0,
            syscalls: vec![
                row("read", 0, 7, 0, 2_000),
                row("close", 3, 23, 0, 69_000),
                row("write", 1, 5, 0, 20_000),
                row("openat", 257, 40, 19, 2_000),
            ],
        }
    }

    #[test]
    fn matches_strace_layout() {
        let text = render(&profile(), TableOptions::default());
        let expected = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 74.19    0.000069           3        23           close
 21.51    0.000020           4         5           write
  2.15    0.000002           0         7           read
  2.15    0.000002           0        40        19 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.000093           1        75        19 total
";
        assert_eq!(text, expected);
    }

    #[test]
    fn latency_columns_and_sorting() {
        let opts = TableOptions {
            sort: SortKey::Calls,
            latency: true,
        };
        let text = render(&profile(), opts);
        let expected = "\
% time     seconds  usecs/call     calls    errors syscall                p50       p99       max
------ ----------- ----------- --------- --------- ---------------- --------- --------- ---------
  2.15    0.000002           0        40        19 openat              1.10us    8.50us    9.00us
 74.19    0.000069           3        23           close               1.10us    8.50us    9.00us
  2.15    0.000002           0         7           read                1.10us    8.50us    9.00us
 21.51    0.000020           4         5           write               1.10us    8.50us    9.00us
------ ----------- ----------- --------- --------- ---------------- --------- --------- ---------
100.00    0.000093           1        75        19 total
";
        assert_eq!(text, expected);
    }

    #[test]
    fn sort_keys() {
        let p = profile();
        let names = |k| {
            sorted(&p, k)
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(SortKey::Name), ["close", "openat", "read", "write"]);
        assert_eq!(names(SortKey::Errors)[0], "openat");
        assert_eq!(names(SortKey::Avg), ["write", "close", "read", "openat"]);
        // Equal p99 everywhere: syscall-number order.
        assert_eq!(names(SortKey::P99), ["read", "write", "close", "openat"]);
    }

    #[test]
    fn reports_unpaired_and_dropped() {
        let mut p = profile();
        p.unpaired = 2;
        let text = render(&p, TableOptions::default());
        assert!(text.ends_with(
            "syscost: 2 syscall exits without a seen enter (in flight when tracing began), 0 events dropped\n"
        ));
    }

    #[test]
    fn empty_profile() {
        let mut p = profile();
        p.syscalls.clear();
        let text = render(&p, TableOptions::default());
        assert!(text.ends_with("100.00    0.000000           0         0           total\n"));
    }
}
