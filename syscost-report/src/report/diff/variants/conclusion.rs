//! The comparison's conclusion in words, one line per variant.

use super::{super::shared::*, model::*};

pub(super) fn pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p.abs() >= 1000.0 => format!("{p:+.0}%"),
        // What is left of a count is not rounded away: -99.98%, not -100.0%.
        Some(p) if p > -100.0 && p <= -99.95 => format!("{p:+.2}%"),
        Some(p) => format!("{p:+.1}%"),
        None => "new".into(),
    }
}

/// A change in a few words: "-32.7%", "new", "gone".
pub(super) fn moved(base: f64, c: &Change) -> String {
    if base != 0.0 && base + c.change == 0.0 {
        "gone".into()
    } else {
        pct(c.change_pct)
    }
}

/// Variant `k`'s conclusion against the baseline: one line, and one on blocking time.
pub(super) fn conclusion(c: &Comparison, k: usize) -> Vec<String> {
    let per = c.per.is_some();
    let label = &c.profiles[k].label;
    fn change_of(r: &Row, k: usize) -> &CellChange {
        r.profiles[k].change.as_ref().expect("not the baseline")
    }
    let mut parts = Vec::new();

    let (b, o) = (&c.total.profiles[0], &c.total.profiles[k]);
    let t = change_of(&c.total, k);
    let mut calls = if t.calls.change == 0.0 {
        format!("syscalls unchanged ({})", num(b.calls.mean, per))
    } else if t.calls.verdict == Verdict::WithinNoise {
        format!(
            "syscalls within the noise ({} -> {})",
            num(b.calls.mean, per),
            num(o.calls.mean, per)
        )
    } else {
        format!(
            "syscalls {} ({} -> {})",
            pct(t.calls.change_pct),
            num(b.calls.mean, per),
            num(o.calls.mean, per)
        )
    };
    let mut by_calls: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| change_of(r, k).calls.worth_saying())
        .collect();
    by_calls.sort_by(|x, y| {
        change_of(y, k)
            .calls
            .change
            .abs()
            .total_cmp(&change_of(x, k).calls.change.abs())
    });
    for r in by_calls.iter().take(3) {
        calls += &format!(
            ", {} {}",
            r.name,
            moved(r.profiles[0].calls.mean, &change_of(r, k).calls)
        );
    }
    parts.push(calls);

    if t.errors.worth_saying() {
        let mut errors = format!(
            "errors {} ({} -> {})",
            moved(b.errors.mean, &t.errors),
            num(b.errors.mean, per),
            num(o.errors.mean, per)
        );
        let mut said: Vec<&ErrnoRow> = c
            .errnos
            .iter()
            .filter(|e| {
                e.profiles[k]
                    .change
                    .as_ref()
                    .is_some_and(Change::worth_saying)
            })
            .collect();
        let size = |e: &ErrnoRow| {
            e.profiles[k]
                .change
                .as_ref()
                .map_or(0.0, |c| c.change.abs())
        };
        said.sort_by(|x, y| size(y).total_cmp(&size(x)));
        let shifts: Vec<String> = said
            .into_iter()
            .take(2)
            .map(|e| {
                format!(
                    "{} {} {} -> {}",
                    e.syscall,
                    e.errno,
                    num(e.profiles[0].value.mean, per),
                    num(e.profiles[k].value.mean, per)
                )
            })
            .collect();
        if !shifts.is_empty() {
            errors += &format!(": {}", shifts.join(", "));
        }
        parts.push(errors);
    }

    // Latency: a rank test's verdict is of the distribution, so its median shift is
    // what is said; else the mean's change.
    let shift = |r: &Row| -> (f64, String) {
        let a = &change_of(r, k).avg_ns;
        match &a.rank_test {
            Some(t) if t.median_before_ns > 0.0 => {
                let p = 100.0 * t.median_shift_ns() / t.median_before_ns;
                (
                    p,
                    format!(
                        "{} median {} ({} -> {})",
                        r.name,
                        pct(Some(p)),
                        ns(t.median_before_ns),
                        ns(t.median_after_ns)
                    ),
                )
            }
            _ => (
                a.change_pct.unwrap_or(0.0),
                format!(
                    "{} {} ({} -> {})",
                    r.name,
                    pct(a.change_pct),
                    ns(r.profiles[0].avg_ns.mean),
                    ns(r.profiles[k].avg_ns.mean)
                ),
            ),
        }
    };
    let mut slower: Vec<(f64, String)> = c
        .rows
        .iter()
        .filter(|r| r.blocking != Some(true))
        .filter(|r| change_of(r, k).avg_ns.verdict == Verdict::Significant)
        .map(shift)
        .collect();
    slower.sort_by(|x, y| y.0.abs().total_cmp(&x.0.abs()));
    if !slower.is_empty() {
        let l: Vec<String> = slower.into_iter().take(3).map(|(_, s)| s).collect();
        parts.push(format!("latency {}", l.join(", ")));
    }

    let mut lines = Vec::new();
    match (&c.time[0], &c.time[k]) {
        (Some(base), Some(split)) => {
            let other = split
                .other_calls_ns
                .change
                .as_ref()
                .expect("not the baseline");
            let worked_more = other.worth_saying() && other.change > 0.0;
            if other.worth_saying() {
                parts.push(format!(
                    "time in non-blocking calls {} ({} -> {})",
                    pct(other.change_pct),
                    ns(base.other_calls_ns.value.mean),
                    ns(split.other_calls_ns.value.mean)
                ));
            }
            let blocked = split
                .blocking_calls_ns
                .change
                .as_ref()
                .expect("not the baseline");
            lines.push(format!("{label}: {}", parts.join("; ")));
            if blocked.worth_saying() {
                let why = match (blocked.change > 0.0, worked_more) {
                    (true, false) => "the process waited longer, it did not work longer",
                    (true, true) => "the process waited longer (and worked longer: above)",
                    (false, _) => "the process waited less",
                };
                lines.push(format!(
                    "  time in blocking calls ({}) {} ({} -> {}): {why}",
                    c.blocking.join(", "),
                    pct(blocked.change_pct),
                    ns(base.blocking_calls_ns.value.mean),
                    ns(split.blocking_calls_ns.value.mean)
                ));
            }
        }
        _ => {
            if t.total_ns.worth_saying() {
                parts.push(format!(
                    "time {} ({} -> {}), not split into blocking and other calls (a profile without the on-CPU split)",
                    pct(t.total_ns.change_pct),
                    ns(b.total_ns.mean),
                    ns(o.total_ns.mean)
                ));
            }
            lines.push(format!("{label}: {}", parts.join("; ")));
        }
    }
    lines
}
