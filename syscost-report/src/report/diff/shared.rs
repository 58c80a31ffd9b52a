//! What the two shapes of `syscost diff` share: the sort order, the way numbers are
//! written, which syscalls block, and the latency tests of single runs.

use std::collections::BTreeSet;

use clap::ValueEnum;
use serde::Serialize;

use crate::{
    profile::Profile,
    report::stats::{CONFIDENCE, RankTest},
    units::human_ns,
};

/// Sort order of `syscost diff`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DiffSort {
    /// Absolute change in calls, largest first.
    #[default]
    Change,
    /// Calls after, largest first.
    Calls,
    /// Time after, largest first.
    Time,
    /// Errors after, largest first.
    Errors,
    /// Name.
    Name,
}

/// A count (two decimals per unit).
pub(super) fn num(v: f64, per_unit: bool) -> String {
    if per_unit {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    }
}

pub(super) fn ns(v: f64) -> String {
    human_ns(v.round() as u64)
}

/// Lines without trailing blanks.
pub(super) fn trim_lines(text: String) -> String {
    text.lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

/// Pretty JSON and a newline (a diff and a comparison always serialise: plain data).
pub(super) fn pretty_json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("plain data serialises");
    s.push('\n');
    s
}

/// The syscalls of `names` that block: switched out more than half their time over
/// `runs` together (the runs with the on-CPU split).
pub fn blocking_syscalls<'a>(
    names: &BTreeSet<&str>,
    runs: impl Iterator<Item = &'a Profile> + Clone,
) -> Vec<String> {
    names
        .iter()
        .filter(|&&name| {
            let (off, total) = runs
                .clone()
                .filter_map(|p| p.syscall(name))
                .fold((0u128, 0u128), |(o, t), s| {
                    (o + s.offcpu_ns as u128, t + s.total_ns as u128)
                });
            total > 0 && 2 * off > total
        })
        .map(|s| s.to_string())
        .collect()
}

/// A rank test to print: the syscall, the variant, the test and its p adjusted over
/// the syscalls compared.
pub struct LatencyLine<'a> {
    pub syscall: &'a str,
    pub variant: usize,
    pub test: &'a RankTest,
    pub p_adjusted: f64,
}

impl LatencyLine<'_> {
    fn significant(&self) -> bool {
        self.p_adjusted < 1.0 - CONFIDENCE
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// The latency tests of single runs: those beyond the spread of the calls one per
/// line, largest shift first, the others named on one line per profile. `label` names
/// the profiles of a table of variants (`None`: before and after).
pub fn render_latency_tests(
    tests: &[LatencyLine],
    label: Option<&dyn Fn(usize) -> String>,
) -> String {
    let mut out = String::from(
        "latency, one run on a side: each call a sample, the two histograms compared by a rank test\n",
    );
    let (base, other) = if label.is_some() {
        ("base med", "median")
    } else {
        ("before", "after")
    };
    let w = tests
        .iter()
        .map(|t| label.map_or(0, |l| l(t.variant).chars().count()))
        .max()
        .unwrap_or(0)
        .max(if label.is_some() { "profile".len() } else { 0 });
    let nw = tests
        .iter()
        .map(|t| t.syscall.len())
        .max()
        .unwrap_or(0)
        .max(16);
    let profile = |k: usize| label.map_or(String::new(), |l| l(k));
    if tests.iter().any(LatencyLine::significant) {
        out.push_str(&format!(
            "{:<nw$} {:<w$} {:>10} {:>10} {:>8} {:>7} {:>7}\n",
            "syscall",
            if label.is_some() { "profile" } else { "" },
            base,
            other,
            "shift",
            "longer",
            "p"
        ));
    }
    let mut variants: Vec<usize> = tests.iter().map(|t| t.variant).collect();
    variants.dedup();
    let shift = |t: &LatencyLine| {
        let r = t.test;
        (r.median_before_ns > 0.0).then(|| 100.0 * r.median_shift_ns() / r.median_before_ns)
    };
    for k in variants {
        let mut within = Vec::new();
        let mut shown: Vec<&LatencyLine> = Vec::new();
        for t in tests.iter().filter(|t| t.variant == k) {
            if t.significant() {
                shown.push(t);
            } else {
                within.push(t.syscall);
            }
        }
        let size = |t: &LatencyLine| shift(t).map_or(f64::INFINITY, f64::abs);
        shown.sort_by(|a, b| size(b).total_cmp(&size(a)));
        for t in shown {
            let r = t.test;
            out.push_str(&format!(
                "{:<nw$} {:<w$} {:>10} {:>10} {:>8} {:>6.0}% {:>7}\n",
                t.syscall,
                profile(k),
                ns(r.median_before_ns),
                ns(r.median_after_ns),
                shift(t).map_or(String::new(), |s| format!("{s:+.1}%")),
                100.0 * r.prob_longer,
                p_value(t.p_adjusted)
            ));
        }
        if !within.is_empty() {
            let who = label.map_or(String::new(), |l| format!("{}: ", l(k)));
            out.push_str(&format!(
                "{who}within the spread of the calls (adjusted p >= {:.2}): {}\n",
                1.0 - CONFIDENCE,
                within.join(", ")
            ));
        }
    }
    out.push_str(&format!(
        "(medians interpolated within their buckets; longer: the chance that a call {} took longer\nthan one {}; p adjusted for the number of syscalls compared, Bonferroni)\n",
        if label.is_some() { "of the profile" } else { "after" },
        if label.is_some() { "of the baseline" } else { "before" },
    ));
    out
}
