//! `syscost diff` of two profiles: per syscall, what went up, what went down, which
//! errors appeared or disappeared, and which latency changes the two histograms tell
//! apart from the spread of the calls. Pure: built from two `Profile`s. The shape `diff`
//! keeps for two single profiles; more profiles, several runs a side or labels are
//! `variants`.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use serde::Serialize;

use super::shared::{
    DiffSort, LatencyLine, blocking_syscalls, ns, num, pretty_json, render_latency_tests,
    trim_lines,
};
use crate::{
    latency,
    profile::{Profile, per_unit},
    report::stats::{self, RankTest},
};

/// A before/after pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Pair {
    pub before: f64,
    pub after: f64,
}

impl Pair {
    pub fn change(&self) -> f64 {
        self.after - self.before
    }

    /// Change in percent of `before`; `None` when `before` is 0.
    pub fn change_pct(&self) -> Option<f64> {
        (self.before != 0.0).then(|| 100.0 * self.change() / self.before)
    }
}

/// One syscall's numbers on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffRow {
    pub name: String,
    pub calls: Pair,
    pub errors: Pair,
    pub total_ns: Pair,
    /// Of `total_ns`, time on a CPU.
    pub oncpu_ns: Pair,
    pub avg_ns: Pair,
}

/// One errno count that changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrnoShift {
    pub syscall: String,
    pub errno: String,
    pub count: Pair,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diff {
    /// Unit syscall when normalised (`--per`), with the unit counts of both sides.
    pub per: Option<String>,
    pub units: Pair,
    pub rows: Vec<DiffRow>,
    pub total: DiffRow,
    pub errnos: Vec<ErrnoShift>,
    /// Whether both profiles measured the on-CPU split; when one did not (`--no-offcpu`,
    /// or a version 1 file), the on-CPU figures mean nothing and are not shown.
    pub oncpu_tracked: bool,
    /// Whether both sides split errors by errno; a side read from a `top --json` file
    /// (or narrowed by `--process`) has errors per syscall only.
    pub errnos_tracked: bool,
    /// Each syscall's latency judged from its two histograms (both sides with
    /// histograms, at least `stats::MIN_RANK_CALLS` calls a side).
    pub latency: Vec<LatencyShift>,
    /// The time in blocking calls and in the others, with the on-CPU split on both sides.
    pub blocking: Option<Blocking>,
}

/// One syscall's latency, before against after: the rank test of its histograms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyShift {
    pub syscall: String,
    #[serde(flatten)]
    pub test: RankTest,
    /// `p_value` times the number of syscalls compared (Bonferroni), at most 1.
    pub p_adjusted: f64,
    /// `p_adjusted` below 0.05: a change beyond the spread of the calls themselves.
    pub significant: bool,
}

/// Time in the calls that mostly block (switched out more than half their time, both
/// sides together) and in the others.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Blocking {
    pub syscalls: Vec<String>,
    pub blocking_calls_ns: Pair,
    pub other_calls_ns: Pair,
}

/// Compares two profiles, optionally per successful call of `per` on each side.
pub fn diff(before: &Profile, after: &Profile, per: Option<&str>, sort: DiffSort) -> Result<Diff> {
    diff_counting_units_in(before, after, per, (before, after), sort)
}

/// The same, `per`'s units counted in `units_in` (the whole profiles, when `-e` left
/// the unit's row out of `before` and `after`).
pub fn diff_counting_units_in(
    before: &Profile,
    after: &Profile,
    per: Option<&str>,
    units_in: (&Profile, &Profile),
    sort: DiffSort,
) -> Result<Diff> {
    if before.arch != after.arch {
        bail!(
            "the profiles come from different architectures ({} and {}): their syscall tables differ, so syscost does not compare them",
            before.arch,
            after.arch
        );
    }
    let units = match per {
        Some(unit) => {
            let u = |p: &Profile, side: &str| {
                per_unit(p, unit).map(|u| u.units as f64).ok_or_else(|| {
                    anyhow::anyhow!(
                        "the {side} profile has no successful {unit} calls to normalise by"
                    )
                })
            };
            Pair {
                before: u(units_in.0, "before")?,
                after: u(units_in.1, "after")?,
            }
        }
        None => Pair {
            before: 1.0,
            after: 1.0,
        },
    };
    let names: BTreeSet<&str> = before
        .syscalls
        .iter()
        .chain(&after.syscalls)
        .map(|s| s.name.as_str())
        .collect();
    let pair = |f: &dyn Fn(&Profile) -> u64| Pair {
        before: f(before) as f64 / units.before,
        after: f(after) as f64 / units.after,
    };
    let mut rows: Vec<DiffRow> = names
        .iter()
        .map(|&name| {
            let get = |p: &Profile, f: fn(&crate::profile::SyscallProfile) -> u64| {
                p.syscall(name).map_or(0, f)
            };
            DiffRow {
                name: name.to_string(),
                calls: pair(&|p| get(p, |s| s.calls)),
                errors: pair(&|p| get(p, |s| s.errors)),
                total_ns: pair(&|p| get(p, |s| s.total_ns)),
                oncpu_ns: pair(&|p| get(p, |s| s.oncpu_ns)),
                avg_ns: Pair {
                    before: get(before, |s| s.avg_ns) as f64,
                    after: get(after, |s| s.avg_ns) as f64,
                },
            }
        })
        .collect();
    let key = |r: &DiffRow| -> f64 {
        match sort {
            DiffSort::Change => r.calls.change().abs(),
            DiffSort::Calls => r.calls.after,
            DiffSort::Time => r.total_ns.after,
            DiffSort::Errors => r.errors.after,
            DiffSort::Name => 0.0,
        }
    };
    // Rows whose calls did not change come after those whose did, by how much their
    // time changed: a syscall that got slower stands before the start-up's one-offs.
    let time_change = |r: &DiffRow| r.total_ns.change().abs();
    if sort != DiffSort::Name {
        rows.sort_by(|a, b| {
            key(b)
                .total_cmp(&key(a))
                .then_with(|| time_change(b).total_cmp(&time_change(a)))
                .then_with(|| a.name.cmp(&b.name))
        });
    }
    let (bc, be, bt) = before.totals();
    let (ac, ae, at) = after.totals();
    let avg = |t: u64, c: u64| t.checked_div(c).unwrap_or(0) as f64;
    let total = DiffRow {
        name: "total".into(),
        calls: Pair {
            before: bc as f64 / units.before,
            after: ac as f64 / units.after,
        },
        errors: Pair {
            before: be as f64 / units.before,
            after: ae as f64 / units.after,
        },
        total_ns: Pair {
            before: bt as f64 / units.before,
            after: at as f64 / units.after,
        },
        oncpu_ns: pair(&|p| p.syscalls.iter().map(|s| s.oncpu_ns).sum()),
        avg_ns: Pair {
            before: avg(bt, bc),
            after: avg(at, ac),
        },
    };
    let errnos_tracked = !before.totals_only && !after.totals_only;
    let mut errnos = Vec::new();
    // A side without an errno split has no errnos to compare, not errnos gone.
    for &name in names.iter().filter(|_| errnos_tracked) {
        let empty = BTreeMap::new();
        let eb = before.syscall(name).map_or(&empty, |s| &s.errnos);
        let ea = after.syscall(name).map_or(&empty, |s| &s.errnos);
        let errs: BTreeSet<&String> = eb.keys().chain(ea.keys()).collect();
        for e in errs {
            let count = Pair {
                before: eb.get(e).copied().unwrap_or(0) as f64 / units.before,
                after: ea.get(e).copied().unwrap_or(0) as f64 / units.after,
            };
            if count.before != count.after {
                errnos.push(ErrnoShift {
                    syscall: name.to_string(),
                    errno: e.clone(),
                    count,
                });
            }
        }
    }
    errnos.sort_by(|a, b| b.count.change().abs().total_cmp(&a.count.change().abs()));
    let mut latency = Vec::new();
    for &name in names.iter().filter(|_| errnos_tracked) {
        let dense = |p: &Profile| {
            p.syscall(name)
                .map(|s| latency::to_dense(&s.histogram))
                .transpose()
        };
        let (Some(hb), Some(ha)) = (dense(before)?, dense(after)?) else {
            continue;
        };
        if let Some(test) = stats::rank_test(&hb, &ha) {
            latency.push(LatencyShift {
                syscall: name.to_string(),
                test,
                p_adjusted: test.p_value,
                significant: false,
            });
        }
    }
    let m = latency.len();
    for l in &mut latency {
        l.p_adjusted = stats::bonferroni(l.test.p_value, m);
        l.significant = l.p_adjusted < 1.0 - stats::CONFIDENCE;
    }
    let oncpu_tracked = before.offcpu_tracked && after.offcpu_tracked;
    let blocking = oncpu_tracked.then(|| {
        let syscalls = blocking_syscalls(&names, [before, after].into_iter());
        let in_calls = |want: bool| {
            pair(&|p: &Profile| {
                p.syscalls
                    .iter()
                    .filter(|s| syscalls.contains(&s.name) == want)
                    .map(|s| s.total_ns)
                    .sum()
            })
        };
        Blocking {
            blocking_calls_ns: in_calls(true),
            other_calls_ns: in_calls(false),
            syscalls,
        }
    });
    Ok(Diff {
        per: per.map(str::to_string),
        units,
        rows,
        total,
        errnos,
        oncpu_tracked,
        errnos_tracked,
        latency,
        blocking,
    })
}

pub(super) fn signed(v: f64, per_unit: bool) -> String {
    if per_unit {
        format!("{v:+.2}")
    } else {
        format!("{v:+.0}")
    }
}

pub(super) fn pct(p: Option<f64>) -> String {
    match p {
        Some(p) => format!("{p:+.1}%"),
        None => "new".into(),
    }
}

/// The diff as a table, with a summary line and the errno shifts.
pub fn render(d: &Diff) -> String {
    let per = d.per.is_some();
    let mut out = String::new();
    if let Some(unit) = &d.per {
        out.push_str(&format!(
            "per successful {unit} call ({} before, {} after)\n",
            d.units.before, d.units.after
        ));
    }
    let line = |r: &DiffRow| {
        format!(
            "{:<16} {:>11} {:>11} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}\n",
            r.name,
            num(r.calls.before, per),
            num(r.calls.after, per),
            signed(r.calls.change(), per),
            if r.calls.before == 0.0 && r.calls.after == 0.0 {
                String::new()
            } else {
                pct(r.calls.change_pct())
            },
            num(r.errors.before, per),
            num(r.errors.after, per),
            ns(r.total_ns.before),
            ns(r.total_ns.after),
            ns(r.avg_ns.before),
            ns(r.avg_ns.after),
        )
    };
    out.push_str(&format!(
        "{:<16} {:>11} {:>11} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}\n",
        "syscall", "calls", "", "", "", "errors", "", "time", "", "avg", ""
    ));
    out.push_str(&format!(
        "{:<16} {:>11} {:>11} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}\n",
        "",
        "before",
        "after",
        "change",
        "change%",
        "before",
        "after",
        "before",
        "after",
        "before",
        "after"
    ));
    let dashes = format!(
        "{} {} {} {} {} {} {} {} {} {} {}\n",
        "-".repeat(16),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(10),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(9),
        "-".repeat(9),
        "-".repeat(9),
        "-".repeat(8),
        "-".repeat(8)
    );
    out.push_str(&dashes);
    for r in &d.rows {
        out.push_str(&line(r));
    }
    out.push_str(&dashes);
    out.push_str(&line(&d.total));
    let t = &d.total;
    let oncpu = if d.oncpu_tracked {
        format!(
            "on-CPU {} ({} -> {})",
            pct(t.oncpu_ns.change_pct()),
            ns(t.oncpu_ns.before),
            ns(t.oncpu_ns.after)
        )
    } else {
        "on-CPU not tracked (a profile without the on-CPU split)".to_string()
    };
    out.push_str(&format!(
        "\nsyscalls {} ({} -> {}), errors {} ({} -> {}), time {} ({} -> {}), {oncpu}\n",
        pct(t.calls.change_pct()),
        num(t.calls.before, per),
        num(t.calls.after, per),
        pct(t.errors.change_pct()),
        num(t.errors.before, per),
        num(t.errors.after, per),
        pct(t.total_ns.change_pct()),
        ns(t.total_ns.before),
        ns(t.total_ns.after),
    ));
    if !d.errnos_tracked {
        out.push_str(
            "\nerrno changes not known: a side has errors per syscall only (a top file, or --process)\n",
        );
    }
    if !d.errnos.is_empty() {
        out.push_str("\nerrno changes:\n");
        for e in &d.errnos {
            out.push_str(&format!(
                "  {} {} {} -> {}\n",
                e.syscall,
                e.errno,
                num(e.count.before, per),
                num(e.count.after, per)
            ));
        }
    }
    if let Some(b) = d
        .blocking
        .as_ref()
        .filter(|b| !b.syscalls.is_empty() && b.blocking_calls_ns.change() != 0.0)
    {
        out.push_str(&format!(
            "\ntime in blocking calls ({}) {} ({} -> {}): waiting, not work; in the other calls {} ({} -> {})\n",
            b.syscalls.join(", "),
            pct(b.blocking_calls_ns.change_pct()),
            ns(b.blocking_calls_ns.before),
            ns(b.blocking_calls_ns.after),
            pct(b.other_calls_ns.change_pct()),
            ns(b.other_calls_ns.before),
            ns(b.other_calls_ns.after),
        ));
    }
    if !d.latency.is_empty() {
        let lines: Vec<LatencyLine> = d
            .latency
            .iter()
            .map(|l| LatencyLine {
                syscall: &l.syscall,
                variant: 1,
                test: &l.test,
                p_adjusted: l.p_adjusted,
            })
            .collect();
        out.push('\n');
        out.push_str(&render_latency_tests(&lines, None));
    }
    trim_lines(out)
}

/// The diff as JSON.
pub fn to_json(d: &Diff) -> String {
    pretty_json(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::syscall;

    fn profile(rows: Vec<crate::profile::SyscallProfile>) -> Profile {
        crate::fixtures::profile_of(rows)
    }

    /// The haproxy-like shape: reads that fail with EAGAIN disappear.
    fn before_after() -> (Profile, Profile) {
        let before = profile(vec![
            syscall("read", 0, 48_000, 22_000, 1_000),
            syscall("epoll_wait", 232, 400, 0, 280_000),
            syscall("accept4", 288, 100, 0, 5_000),
        ]);
        let after = profile(vec![
            syscall("read", 0, 28_000, 700, 1_000),
            syscall("epoll_wait", 232, 1_000, 0, 130_000),
            syscall("accept4", 288, 200, 0, 5_000),
            syscall("close", 3, 200, 0, 20_000),
        ]);
        (before, after)
    }

    #[test]
    fn golden_table() {
        let (b, a) = before_after();
        let d = diff(&b, &a, None, DiffSort::Change).unwrap();
        let expected = "\
syscall                calls                                    errors                time                avg
                      before       after     change  change%    before     after    before     after   before    after
---------------- ----------- ----------- ---------- -------- --------- --------- --------- --------- -------- --------
read                   48000       28000     -20000   -41.7%     22000       700    48.0ms    28.0ms   1.00us   1.00us
epoll_wait               400        1000       +600  +150.0%         0         0     112ms     130ms    280us    130us
close                      0         200       +200      new         0         0       0ns    4.00ms      0ns   20.0us
accept4                  100         200       +100  +100.0%         0         0     500us    1.00ms   5.00us   5.00us
---------------- ----------- ----------- ---------- -------- --------- --------- --------- --------- -------- --------
total                  48500       29400     -19100   -39.4%     22000       700     160ms     163ms   3.31us   5.54us

syscalls -39.4% (48500 -> 29400), errors -96.8% (22000 -> 700), time +1.6% (160ms -> 163ms), on-CPU -22.9% (59.7ms -> 46.0ms)

errno changes:
  read EAGAIN 22000 -> 700
";
        // What two profiles printed before the latency tests came is printed as it was,
        // and the new lines follow it.
        let text = render(&d);
        assert!(text.starts_with(expected), "{text}");
        assert_eq!(
            &text[expected.len()..],
            "
time in blocking calls (epoll_wait) +16.1% (112ms -> 130ms): waiting, not work; in the other calls -32.0% (48.5ms -> 33.0ms)

latency, one run on a side: each call a sample, the two histograms compared by a rank test
syscall               before      after    shift  longer       p
epoll_wait             280us      127us   -54.5%      9%  <0.001
within the spread of the calls (adjusted p >= 0.05): accept4, read
(medians interpolated within their buckets; longer: the chance that a call after took longer
than one before; p adjusted for the number of syscalls compared, Bonferroni)
"
        );
    }

    /// Against a side without an errno split (a top file), no errno is said to change.
    #[test]
    fn no_errno_changes_against_totals_only() {
        let (b, mut a) = before_after();
        a.totals_only = true;
        for s in &mut a.syscalls {
            s.errnos.clear();
        }
        let d = diff(&b, &a, None, DiffSort::Change).unwrap();
        assert!(!d.errnos_tracked);
        assert!(d.errnos.is_empty(), "{:?}", d.errnos);
        let text = render(&d);
        assert!(text.contains("errno changes not known"), "{text}");
        assert!(!text.contains("errno changes:"), "{text}");
    }

    #[test]
    fn per_unit_normalises_both_sides() {
        let (b, a) = before_after();
        let d = diff(&b, &a, Some("accept4"), DiffSort::Name).unwrap();
        assert_eq!(
            d.units,
            Pair {
                before: 100.0,
                after: 200.0
            }
        );
        let read = d.rows.iter().find(|r| r.name == "read").unwrap();
        assert_eq!(
            read.calls,
            Pair {
                before: 480.0,
                after: 140.0
            }
        );
        assert_eq!(
            read.errors,
            Pair {
                before: 220.0,
                after: 3.5
            }
        );
        // Averages are per call already: not divided.
        assert_eq!(
            read.avg_ns,
            Pair {
                before: 1_000.0,
                after: 1_000.0
            }
        );
        assert_eq!(
            d.total.calls,
            Pair {
                before: 485.0,
                after: 147.0
            }
        );
        assert_eq!(
            d.rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["accept4", "close", "epoll_wait", "read"]
        );
        let text = render(&d);
        assert!(
            text.starts_with("per successful accept4 call (100 before, 200 after)\n"),
            "{text}"
        );
        assert!(text.contains("  read EAGAIN 220.00 -> 3.50\n"), "{text}");
        let mut none = b.clone();
        none.syscalls.retain(|s| s.name != "accept4");
        let e = diff(&none, &a, Some("accept4"), DiffSort::Change).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the before profile has no successful accept4 calls to normalise by"
        );
    }

    #[test]
    fn json_output() {
        let (b, a) = before_after();
        let d = diff(&b, &a, None, DiffSort::Calls).unwrap();
        let v: serde_json::Value = serde_json::from_str(&to_json(&d)).unwrap();
        assert_eq!(v["rows"][0]["name"], "read");
        assert_eq!(v["rows"][0]["calls"]["before"], 48000.0);
        assert_eq!(v["total"]["errors"]["after"], 700.0);
        assert_eq!(v["errnos"][0]["errno"], "EAGAIN");
        assert!(v["per"].is_null());
    }

    #[test]
    fn on_cpu_is_not_compared_when_one_side_did_not_measure_it() {
        let (mut b, a) = before_after();
        b.offcpu_tracked = false;
        let d = diff(&b, &a, None, DiffSort::Change).unwrap();
        assert!(!d.oncpu_tracked);
        let text = render(&d);
        assert!(
            text.contains("on-CPU not tracked (a profile without"),
            "{text}"
        );
        assert!(!text.contains("on-CPU -"), "{text}");
        assert!(diff(&a, &a, None, DiffSort::Change).unwrap().oncpu_tracked);
    }

    #[test]
    fn architectures_must_match() {
        let (b, mut a) = before_after();
        a.arch = "aarch64".into();
        let e = diff(&b, &a, None, DiffSort::Change)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("the profiles come from different architectures (x86_64 and aarch64)"),
            "{e}"
        );
    }

    #[test]
    fn sorts() {
        let (b, a) = before_after();
        let names = |s| {
            diff(&b, &a, None, s)
                .unwrap()
                .rows
                .iter()
                .map(|r| r.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(DiffSort::Time)[0], "epoll_wait");
        assert_eq!(names(DiffSort::Errors)[0], "read");
        assert_eq!(
            names(DiffSort::Calls),
            // Equal calls after (200 each): the one whose time changed more first.
            ["read", "epoll_wait", "close", "accept4"]
        );
    }

    /// Rows whose calls did not change: the one whose time changed most first, the
    /// unchanged by name after it.
    #[test]
    fn unchanged_counts_go_by_the_change_in_time() {
        let before = profile(vec![
            syscall("access", 21, 1, 0, 3_000),
            syscall("write", 1, 5_000, 0, 18_000),
            syscall("brk", 12, 4, 0, 1_500),
            syscall("read", 0, 100, 0, 1_000),
        ]);
        let after = profile(vec![
            syscall("access", 21, 1, 0, 3_000),
            syscall("write", 1, 5_000, 0, 14_000),
            syscall("brk", 12, 4, 0, 5_000),
            syscall("read", 0, 150, 0, 1_000),
        ]);
        let names: Vec<String> = diff(&before, &after, None, DiffSort::Change)
            .unwrap()
            .rows
            .iter()
            .map(|r| r.name.clone())
            .collect();
        assert_eq!(names, ["read", "write", "brk", "access"]);
    }
}
