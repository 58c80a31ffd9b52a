//! The `strace -c` summary table, column for column, so the two read side by side:
//!
//! ```text
//! % time     seconds  usecs/call     calls    errors syscall
//! ------ ----------- ----------- --------- --------- ----------------
//!  77.53    0.000069           3        23           close
//! ```
//!
//! With `-L` the columns p50, p99 and max follow the syscall name.

use crate::{
    profile::{Profile, SortKey, SyscallProfile, per_unit},
    units::human_ns,
};

/// How to print the table.
#[derive(Clone, Debug, Default)]
pub struct TableOptions {
    pub sort: SortKey,
    /// Add p50, p99 and max columns.
    pub latency: bool,
    /// Add calls and time per call of this syscall (per request, when it is `accept4`).
    pub per: Option<String>,
    /// strace's columns in this order (its `-U`), instead of the usual ones.
    pub columns: Option<Columns>,
    /// A line after the table (what `-z` or `-Z` counted).
    pub note: Option<String>,
    /// The time columns show `-`: the calls counted are not those timed (`-z`, `-Z`).
    pub no_times: bool,
    /// Rows were chosen by `-e` (with `-z`/`-Z`, rows also go for lack of such calls).
    pub selected: bool,
}

/// A column of strace's summary, as its `-U` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    TimePercent,
    TotalTime,
    MinTime,
    MaxTime,
    AvgTime,
    Calls,
    Errors,
    Name,
}

impl Column {
    /// strace 6.1's names of the column (its count.c), the first the usual one.
    const NAMES: &[(Column, &[&str])] = &[
        (
            Column::TimePercent,
            &["time-percent", "time", "time_percent"],
        ),
        (
            Column::TotalTime,
            &["total-time", "time-total", "time_total", "total_time"],
        ),
        (
            Column::MinTime,
            &["min-time", "min_time", "shortest", "time_min", "time-min"],
        ),
        (
            Column::MaxTime,
            &["max-time", "longest", "max_time", "time_max", "time-max"],
        ),
        (
            Column::AvgTime,
            &["avg-time", "avg_time", "time_avg", "time-avg"],
        ),
        (Column::Calls, &["calls", "count"]),
        (Column::Errors, &["errors", "error"]),
        (
            Column::Name,
            &["name", "syscall", "syscall_name", "syscall-name"],
        ),
    ];

    /// Its header in strace's table.
    fn header(self) -> &'static str {
        match self {
            Column::TimePercent => "% time",
            Column::TotalTime => "seconds",
            Column::MinTime => "shortest",
            Column::MaxTime => "longest",
            Column::AvgTime => "usecs/call",
            Column::Calls => "calls",
            Column::Errors => "errors",
            Column::Name => "syscall",
        }
    }
}

/// `-U`'s columns, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Columns(pub Vec<Column>);

/// Parses `-U` as strace does: its column names, comma-separated, each once; the name
/// column is added last when it is not asked for (a table without it means nothing).
pub fn parse_columns(s: &str) -> Result<Columns, String> {
    let mut out = Vec::new();
    for name in s.split(',') {
        let Some(&(c, _)) = Column::NAMES
            .iter()
            .find(|(_, names)| names.contains(&name))
        else {
            let known: Vec<&str> = Column::NAMES.iter().map(|(_, n)| n[0]).collect();
            return Err(format!(
                "unknown column '{name}' (strace's: {})",
                known.join(", ")
            ));
        };
        if out.contains(&c) {
            return Err(format!("column '{name}' is given more than once"));
        }
        out.push(c);
    }
    if !out.contains(&Column::Name) {
        out.push(Column::Name);
    }
    Ok(Columns(out))
}

/// Rows and total in strace's `-U` layout: each column as wide as its header or its
/// widest figure (the historical widths at least), the name left-aligned.
fn columns_table(profile: &Profile, columns: &[Column], sort: SortKey, times: bool) -> Vec<String> {
    let (calls, errors, total_ns) = profile.totals();
    let rows = profile.sorted(sort);
    let rows: Vec<&&SyscallProfile> = rows.iter().filter(|s| s.calls > 0).collect();
    let min_ns = rows.iter().map(|s| s.min_ns).min().unwrap_or(0);
    let max_ns = rows.iter().map(|s| s.max_ns).max().unwrap_or(0);
    let secs = |ns: u64| format!("{:.6}", ns as f64 / 1e9);
    let avg_us = |ns: u64, c: u64| ((ns as f64 / c.max(1) as f64) / 1e3) as u64;
    let width = |c: Column| -> usize {
        match c {
            Column::TimePercent => 6,
            Column::TotalTime => secs(total_ns).len().max(11),
            Column::MinTime => secs(min_ns).len().max(8),
            Column::MaxTime => secs(max_ns).len().max(8),
            Column::AvgTime => rows
                .iter()
                .map(|s| avg_us(s.total_ns, s.calls).to_string().len())
                .max()
                .unwrap_or(0)
                .max(11),
            Column::Calls => calls.to_string().len().max(9),
            Column::Errors => errors.to_string().len().max(9),
            Column::Name => rows
                .iter()
                .map(|s| s.name.len() + 1)
                .max()
                .unwrap_or(0)
                .max(16),
        }
    };
    let last = columns.len() - 1;
    let cell = |i: usize, c: Column, v: String| {
        let w = width(c);
        match c {
            Column::Name if i == last => v,
            Column::Name => format!("{v:<w$}"),
            _ => format!("{v:>w$}"),
        }
    };
    let is_time = |c: Column| {
        matches!(
            c,
            Column::TimePercent
                | Column::TotalTime
                | Column::MinTime
                | Column::MaxTime
                | Column::AvgTime
        )
    };
    let line = |vals: &dyn Fn(Column) -> String| {
        columns
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                cell(
                    i,
                    c,
                    if !times && is_time(c) {
                        "-".to_string()
                    } else {
                        vals(c)
                    },
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let dashes = columns
        .iter()
        .map(|&c| "-".repeat(width(c)))
        .collect::<Vec<_>>()
        .join(" ");
    let header = columns
        .iter()
        .enumerate()
        .map(|(i, &c)| cell(i, c, c.header().to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = vec![header, dashes.clone()];
    for s in &rows {
        out.push(line(&|c| match c {
            Column::TimePercent => format!(
                "{:.2}",
                if total_ns == 0 {
                    0.0
                } else {
                    100.0 * s.total_ns as f64 / total_ns as f64
                }
            ),
            Column::TotalTime => secs(s.total_ns),
            Column::MinTime => secs(s.min_ns),
            Column::MaxTime => secs(s.max_ns),
            Column::AvgTime => avg_us(s.total_ns, s.calls).to_string(),
            Column::Calls => s.calls.to_string(),
            // strace prints no 0 here.
            Column::Errors if s.errors == 0 => String::new(),
            Column::Errors => s.errors.to_string(),
            Column::Name => s.name.clone(),
        }));
    }
    out.push(dashes);
    out.push(line(&|c| match c {
        Column::TimePercent => "100.00".to_string(),
        Column::TotalTime => secs(total_ns),
        Column::MinTime => secs(min_ns),
        Column::MaxTime => secs(max_ns),
        Column::AvgTime => avg_us(total_ns, calls).to_string(),
        Column::Calls => calls.to_string(),
        Column::Errors if errors == 0 => String::new(),
        Column::Errors => errors.to_string(),
        Column::Name => "total".to_string(),
    }));
    out
}

const DASHES: &str = "------ ----------- ----------- --------- --------- ----------------";
const LATENCY_DASHES: &str = " --------- --------- --------- --------- ---------";
const PER_DASHES: &str = " ---------- ----------";

fn line(pct: f64, total_ns: u64, calls: u64, errors: u64, name: &str, times: bool) -> String {
    let usecs_per_call = (total_ns / 1000).checked_div(calls).unwrap_or(0);
    let errors = if errors == 0 {
        String::new()
    } else {
        errors.to_string()
    };
    if !times {
        return format!(
            "{:>6} {:>11} {:>11} {calls:>9} {errors:>9} {name}",
            "-", "-", "-"
        );
    }
    format!(
        "{pct:>6.2} {:>11.6} {usecs_per_call:>11} {calls:>9} {errors:>9} {name}",
        total_ns as f64 / 1e9
    )
}

/// p50, p99 and max ("-" for totals without a distribution), then the average on-CPU
/// and blocked time per call ("-" when the split was not measured).
fn latency_cols(s: &SyscallProfile, split: bool, distribution: bool) -> String {
    let per_call = |ns: u64| {
        if split {
            human_ns(ns / s.calls.max(1))
        } else {
            "-".to_string()
        }
    };
    let of_distribution = |shown: String| {
        if distribution { shown } else { "-".to_string() }
    };
    // Percentiles to their buckets' precision, never shown above the maximum; the
    // maximum is exact.
    let pct = |ns: u64| crate::units::percentile_below(ns, s.max_ns);
    format!(
        " {:>9} {:>9} {:>9} {:>9} {:>9}",
        of_distribution(pct(s.p50_ns)),
        of_distribution(pct(s.p99_ns)),
        of_distribution(human_ns(s.max_ns)),
        per_call(s.oncpu_ns),
        per_call(s.offcpu_ns)
    )
}

/// The table, with a line about unpaired and dropped events when there were any.
pub fn render(profile: &Profile, options: &TableOptions) -> String {
    render_of(profile, profile, options)
}

/// The table of `profile`'s rows, some of `all`'s (`-e`): the `--per` figures are of
/// every syscall of `all`, as a request makes them, and say so when rows are left out.
pub fn render_of(profile: &Profile, all: &Profile, options: &TableOptions) -> String {
    let per = options.per.as_deref().map(|u| (u, per_unit(all, u)));
    let filtered = if options.no_times {
        options.selected
    } else {
        all.syscalls.len() != profile.syscalls.len()
    };
    let mut out = String::new();
    let mut push = |s: String| {
        out.push_str(s.trim_end());
        out.push('\n');
    };
    if let Some(columns) = &options.columns {
        for l in columns_table(profile, &columns.0, sort_of(options), !options.no_times) {
            push(l);
        }
    } else {
        usual_table(profile, options, per, &mut push);
    }
    trailer(profile, all, options, per, filtered, &mut push);
    out
}

/// The row order: without times (`-z`, `-Z`), calls stand for time.
fn sort_of(options: &TableOptions) -> SortKey {
    match options.sort {
        SortKey::Time if options.no_times => SortKey::Calls,
        k => k,
    }
}

/// The usual columns, `-L`'s and `--per`'s after them.
fn usual_table(
    profile: &Profile,
    options: &TableOptions,
    per: Option<(&str, Option<crate::profile::PerUnit>)>,
    push: &mut dyn FnMut(String),
) {
    let (calls, errors, total_ns) = profile.totals();
    // Extra columns start after the 16-wide syscall name column.
    let extend = |row: String, latency: String, per: String| {
        if latency.is_empty() && per.is_empty() {
            row
        } else {
            format!("{row:<67}{latency}{per}")
        }
    };
    let dashes = || {
        let mut d = DASHES.to_string();
        if options.latency {
            d.push_str(LATENCY_DASHES);
        }
        if per.is_some() {
            d.push_str(PER_DASHES);
        }
        d
    };
    let header = format!(
        "{:>6} {:>11} {:>11} {:>9} {:>9} {}",
        "% time", "seconds", "usecs/call", "calls", "errors", "syscall"
    );
    let latency_header = if options.latency {
        format!(
            "{:>10}{:>10}{:>10}{:>10}{:>10}",
            "p50", "p99", "max", "on-cpu", "blocked"
        )
    } else {
        String::new()
    };
    let per_header = if per.is_some() {
        format!("{:>11}{:>11}", "calls/unit", "time/unit")
    } else {
        String::new()
    };
    push(extend(header, latency_header, per_header));
    push(dashes());
    let per_cols = |c: u64, ns: u64| match per {
        Some((_, Some(u))) => format!(
            " {:>10.2} {:>10}",
            c as f64 / u.units as f64,
            if options.no_times {
                "-".to_string()
            } else {
                human_ns((ns as f64 / u.units as f64).round() as u64)
            }
        ),
        Some((_, None)) => format!(" {:>10} {:>10}", "-", "-"),
        None => String::new(),
    };
    for s in profile.sorted(sort_of(options)) {
        let pct = if total_ns == 0 {
            0.0
        } else {
            100.0 * s.total_ns as f64 / total_ns as f64
        };
        let latency = if options.latency {
            latency_cols(
                s,
                profile.offcpu_tracked && !options.no_times,
                !profile.totals_only && !options.no_times,
            )
        } else {
            String::new()
        };
        let row = line(
            pct,
            s.total_ns,
            s.calls,
            s.errors,
            &s.name,
            !options.no_times,
        );
        push(extend(row, latency, per_cols(s.calls, s.total_ns)));
    }
    push(dashes());
    let latency_pad = if options.latency {
        " ".repeat(50)
    } else {
        String::new()
    };
    let total = line(100.0, total_ns, calls, errors, "total", !options.no_times);
    push(extend(total, latency_pad, per_cols(calls, total_ns)));
}

/// The line about calls whose return to a CPU was not seen, when there were any.
pub fn switch_ins_unseen_line(calls: u64) -> Option<String> {
    (calls > 0).then(|| {
        format!(
            "syscost: {} returned to a CPU unseen (the kernel reported the switch-out, no switch-in): their time from that switch-out counts as blocked, an upper bound",
            crate::units::counted(calls as usize, "call", "calls")
        )
    })
}

/// The lines after the table: per-unit figures, unpaired calls, calls whose return to a
/// CPU was not seen, slow calls, what the kernel lacks.
fn trailer(
    profile: &Profile,
    all: &Profile,
    options: &TableOptions,
    per: Option<(&str, Option<crate::profile::PerUnit>)>,
    filtered: bool,
    push: &mut dyn FnMut(String),
) {
    if let Some(note) = &options.note {
        push(note.clone());
    }
    match per {
        Some((unit, Some(u))) => push(format!(
            "per {unit}: {:.2} syscalls, {} in syscalls{} ({} successful {unit} calls){}",
            u.calls,
            human_ns(u.ns.round() as u64),
            if profile.offcpu_tracked {
                format!(", {} of it on a CPU", human_ns(u.oncpu_ns.round() as u64))
            } else {
                String::new()
            },
            u.units,
            if filtered {
                "; of every syscall, the rows -e left out included"
            } else {
                ""
            }
        )),
        Some((unit, None)) => push(format!(
            "per {unit}: no successful {unit} calls, so no per-unit figures"
        )),
        None => {}
    }
    if profile.unpaired > 0 || profile.dropped > 0 {
        push(format!(
            "syscost: {} syscall exits without a seen enter (in flight when tracing began), {} events dropped",
            profile.unpaired, profile.dropped
        ));
    }
    if let Some(line) = switch_ins_unseen_line(profile.switch_ins_unseen) {
        push(line);
    }
    if let Some(threshold) = &profile.slow_threshold {
        let mut by: std::collections::BTreeMap<&str, u64> = Default::default();
        for c in &profile.slow_calls {
            *by.entry(c.syscall.as_str()).or_default() += 1;
        }
        let mut by: Vec<(&str, u64)> = by.into_iter().collect();
        by.sort_by_key(|(n, c)| (std::cmp::Reverse(*c), *n));
        let list: Vec<String> = by.iter().map(|(n, c)| format!("{n} {c}")).collect();
        push(format!(
            "syscost: {} slow calls (--slow {threshold}){}{}",
            profile.slow_calls.len(),
            if list.is_empty() {
                String::new()
            } else {
                format!(": {}", list.join(", "))
            },
            if profile.slow_dropped > 0 {
                format!(
                    "; {} more not reported (ring buffer full, or beyond the 100,000 kept)",
                    profile.slow_dropped
                )
            } else {
                String::new()
            }
        ));
    }
    if profile.totals_only {
        push(format!(
            "syscost: summed over {}: calls, errors and time per syscall, without an errno split or latency distribution",
            crate::units::counted(
                all.processes
                    .iter()
                    .fold(0usize, |n, p| n.saturating_add(p.summed.max(1) as usize)),
                "process",
                "processes"
            )
        ));
    }
    // Last: what this kernel could not measure, where a reader of the table looks.
    for why in &profile.unavailable {
        push(format!("syscost: this kernel: {why}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Target;
    use std::collections::BTreeMap;

    fn row(name: &str, nr: u64, calls: u64, errors: u64, total_ns: u64) -> SyscallProfile {
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
            oncpu_ns: total_ns / 4,
            offcpu_ns: total_ns - total_ns / 4,
            voluntary_switches: calls / 2,
            involuntary_switches: 0,
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
            target: Target {
                pid: 1,
                comm: "ls".into(),
                command: None,
                cgroup: None,
            },
            duration_ns: 1_000_000,
            ..crate::fixtures::profile_of(vec![
                row("read", 0, 7, 0, 2_000),
                row("close", 3, 23, 0, 69_000),
                row("write", 1, 5, 0, 20_000),
                row("openat", 257, 40, 19, 2_000),
            ])
        }
    }

    #[test]
    fn matches_strace_layout() {
        let text = render(&profile(), &TableOptions::default());
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
            ..Default::default()
        };
        let text = render(&profile(), &opts);
        let expected = "\
% time     seconds  usecs/call     calls    errors syscall                p50       p99       max    on-cpu   blocked
------ ----------- ----------- --------- --------- ---------------- --------- --------- --------- --------- ---------
  2.15    0.000002           0        40        19 openat               1.1us     8.5us    9.00us      12ns      37ns
 74.19    0.000069           3        23           close                1.1us     8.5us    9.00us     750ns    2.25us
  2.15    0.000002           0         7           read                 1.1us     8.5us    9.00us      71ns     214ns
 21.51    0.000020           4         5           write                1.1us     8.5us    9.00us    1.00us    3.00us
------ ----------- ----------- --------- --------- ---------------- --------- --------- --------- --------- ---------
100.00    0.000093           1        75        19 total
";
        assert_eq!(text, expected);
    }

    #[test]
    fn sort_keys() {
        let p = profile();
        let names = |k| {
            p.sorted(k)
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(SortKey::Name), ["close", "openat", "read", "write"]);
        assert_eq!(names(SortKey::Oncpu)[0], "close");
        assert_eq!(names(SortKey::Offcpu)[..2], ["close", "write"]);
        assert_eq!(names(SortKey::Errors)[0], "openat");
        assert_eq!(names(SortKey::Avg), ["write", "close", "read", "openat"]);
        // Equal p99 everywhere: syscall-number order.
        assert_eq!(names(SortKey::P99), ["read", "write", "close", "openat"]);
    }

    #[test]
    fn reports_unpaired_and_dropped() {
        let mut p = profile();
        p.unpaired = 2;
        let text = render(&p, &TableOptions::default());
        assert!(text.ends_with(
            "syscost: 2 syscall exits without a seen enter (in flight when tracing began), 0 events dropped\n"
        ));
    }

    #[test]
    fn says_how_many_calls_came_back_unseen() {
        let mut p = profile();
        assert!(!render(&p, &TableOptions::default()).contains("unseen"));
        p.switch_ins_unseen = 1;
        assert!(render(&p, &TableOptions::default()).ends_with(
            "syscost: 1 call returned to a CPU unseen (the kernel reported the switch-out, no switch-in): their time from that switch-out counts as blocked, an upper bound\n"
        ));
        p.switch_ins_unseen = 3;
        assert!(render(&p, &TableOptions::default()).contains("syscost: 3 calls returned"));
    }

    #[test]
    fn a_measurement_the_kernel_lacks_is_the_last_line() {
        let mut p = profile();
        p.offcpu_tracked = false;
        p.unavailable = vec!["no on-CPU split: no task state here".into()];
        p.unpaired = 1;
        let text = render(&p, &TableOptions::default());
        assert_eq!(
            text.lines().last(),
            Some("syscost: this kernel: no on-CPU split: no task state here")
        );
        assert!(!render(&profile(), &TableOptions::default()).contains("this kernel"));
    }

    #[test]
    fn per_unit_columns_and_total_line() {
        let opts = TableOptions {
            sort: SortKey::Time,
            per: Some("write".into()),
            ..Default::default()
        };
        let text = render(&profile(), &opts);
        let expected = "\
% time     seconds  usecs/call     calls    errors syscall          calls/unit  time/unit
------ ----------- ----------- --------- --------- ---------------- ---------- ----------
 74.19    0.000069           3        23           close                  4.60     13.8us
 21.51    0.000020           4         5           write                  1.00     4.00us
  2.15    0.000002           0         7           read                   1.40      400ns
  2.15    0.000002           0        40        19 openat                 8.00      400ns
------ ----------- ----------- --------- --------- ---------------- ---------- ----------
100.00    0.000093           1        75        19 total                 15.00     18.6us
per write: 15.00 syscalls, 18.6us in syscalls, 4.65us of it on a CPU (5 successful write calls)
";
        assert_eq!(text, expected);
        let p = profile();
        let u = per_unit(&p, "write").unwrap();
        assert_eq!((u.units, u.calls, u.ns), (5, 15.0, 18_600.0));
        assert_eq!(per_unit(&p, "accept4"), None);
        // Failed calls are not units: 40 openat, 19 failed.
        assert_eq!(per_unit(&p, "openat").unwrap().units, 21);
        let none = TableOptions {
            per: Some("accept4".into()),
            ..TableOptions::default()
        };
        let text = render(&p, &none);
        assert!(
            text.contains(" close                     -          -\n"),
            "{text}"
        );
        assert!(
            text.ends_with("per accept4: no successful accept4 calls, so no per-unit figures\n")
        );
        // With -e: the rows shown, the per-unit figures of every syscall (15 a write, not
        // the 4.6 close alone makes), and said so.
        let per_write = TableOptions {
            per: Some("write".into()),
            ..TableOptions::default()
        };
        let mut shown = p.clone();
        crate::strace_filter::parse(&["close".into()])
            .unwrap()
            .narrow(&mut shown);
        let text = render_of(&shown, &p, &per_write);
        assert!(!text.contains(" openat"), "{text}");
        assert!(
            text.ends_with(
                "per write: 15.00 syscalls, 18.6us in syscalls, 4.65us of it on a CPU (5 successful write calls); of every syscall, the rows -e left out included\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_syscall_asked_for_that_made_no_call_has_a_row_of_zeros() {
        let mut shown = profile();
        crate::strace_filter::parse(&["close,fsync".into()])
            .unwrap()
            .narrow(&mut shown);
        let text = render(&shown, &TableOptions::default());
        let row = text
            .lines()
            .find(|l| l.ends_with(" fsync"))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["0.00", "0.000000", "0", "0", "fsync"],
            "{text}"
        );
        assert!(text.lines().any(|l| l.ends_with(" close")), "{text}");
    }

    #[test]
    fn empty_profile() {
        let mut p = profile();
        p.syscalls.clear();
        let text = render(&p, &TableOptions::default());
        assert!(text.ends_with("100.00    0.000000           0         0           total\n"));
    }

    /// Sums of processes (a top file) have no distribution: `-`, and a line says so.
    #[test]
    fn totals_only_rows_show_no_percentiles() {
        let mut p = profile();
        p.totals_only = true;
        let t = render(
            &p,
            &TableOptions {
                latency: true,
                ..Default::default()
            },
        );
        let close = t
            .lines()
            .find(|l| l.contains(" close "))
            .unwrap_or_else(|| panic!("{t}"));
        let cols: Vec<&str> = close.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, close, p50, p99, max, on-cpu, blocked
        assert_eq!(&cols[5..8], ["-", "-", "-"], "{t}");
        assert_eq!(cols[8], "750ns", "{t}");
        assert!(
            t.contains("syscost: summed over 0 processes: calls, errors and time per syscall"),
            "{t}"
        );
    }
}
