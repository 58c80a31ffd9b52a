//! The comparison as a table (and its JSON).

use super::{super::shared::*, conclusion::*, model::*};

pub(super) fn mark(c: Option<&Change>) -> &'static str {
    match c.map(|c| c.verdict) {
        Some(Verdict::Significant) => "*",
        Some(Verdict::WithinNoise) => "~",
        _ => "",
    }
}

/// The comparison as text: the variants, the table, the time split, the errno
/// changes, the latency tests of single runs and the conclusion.
pub fn render(c: &Comparison, all: bool) -> String {
    let per = c.per.is_some();
    let w = c
        .profiles
        .iter()
        .map(|p| p.label.chars().count())
        .max()
        .unwrap_or(0)
        .max("profile".len());
    // Rows of under 0.1% of the calls and of the time in every profile, with no change
    // marked and no count change unjudged, named on one line unless `all`.
    let said = |ch: &Change| {
        ch.verdict == Verdict::Significant || (ch.verdict == Verdict::NotJudged && ch.change != 0.0)
    };
    let minor = |r: &Row| {
        r.profiles
            .iter()
            .zip(&c.total.profiles)
            .all(|(cell, total)| {
                cell.calls.mean * 1000.0 < total.calls.mean
                    && cell.total_ns.mean * 1000.0 < total.total_ns.mean
            })
            && r.profiles
                .iter()
                .filter_map(|p| p.change.as_ref())
                .all(|ch| {
                    !said(&ch.calls)
                        && !said(&ch.errors)
                        && ch.total_ns.verdict != Verdict::Significant
                        && ch.avg_ns.verdict != Verdict::Significant
                })
    };
    let nw = c
        .rows
        .iter()
        .filter(|r| all || !minor(r))
        .map(|r| r.name.chars().count())
        .chain(c.errnos.iter().map(|e| e.syscall.len() + 1 + e.errno.len()))
        .max()
        .unwrap_or(0)
        .max(16);
    let mut out = String::new();
    out.push_str("profiles (the first is the baseline):\n");
    for p in &c.profiles {
        let runs = p.files.len();
        let units = match (&c.per, &p.units) {
            (Some(unit), Some(u)) => format!(", {} successful {unit} a run", num(u.mean, false)),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {:<w$}  {runs} run{}{units}: {}\n",
            p.label,
            if runs == 1 { "" } else { "s" },
            p.files.join(" ")
        ));
    }
    if let Some(unit) = &c.per {
        out.push_str(&format!(
            "\ncalls, errors and time per successful {unit} call of each run\n"
        ));
    }
    out.push('\n');
    let head = format!(
        "{:<nw$} {:<w$} {:>11} {:>8} {:1} {:>9} {:>8} {:1} {:>9} {:>8} {:1} {:>8} {:>8} {:1}\n",
        "syscall",
        "profile",
        "calls",
        "change",
        "",
        "errors",
        "change",
        "",
        "time",
        "change",
        "",
        "avg",
        "change",
        ""
    );
    out.push_str(&head);
    let dashes = format!(
        "{} {} {} {} - {} {} - {} {} - {} {} -\n",
        "-".repeat(nw),
        "-".repeat(w),
        "-".repeat(11),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(8),
        "-".repeat(8),
        "-".repeat(8)
    );
    out.push_str(&dashes);
    let row = |out: &mut String, r: &Row| {
        for (k, cell) in r.profiles.iter().enumerate() {
            let ch = cell.change.as_ref();
            let p = |c: Option<&Change>, base: f64| match c {
                Some(c) if base == 0.0 && c.change == 0.0 => String::new(),
                Some(c) => pct(c.change_pct),
                None => String::new(),
            };
            let b = &r.profiles[0];
            let avg = if cell.avg_ns.runs.is_empty() {
                "-".to_string()
            } else {
                ns(cell.avg_ns.mean)
            };
            out.push_str(&format!(
                "{:<nw$} {:<w$} {:>11} {:>8} {:1} {:>9} {:>8} {:1} {:>9} {:>8} {:1} {:>8} {:>8} {:1}\n",
                if k == 0 { r.name.as_str() } else { "" },
                c.profiles[k].label,
                num(cell.calls.mean, per),
                p(ch.map(|c| &c.calls), b.calls.mean),
                mark(ch.map(|c| &c.calls)),
                num(cell.errors.mean, per),
                p(ch.map(|c| &c.errors), b.errors.mean),
                mark(ch.map(|c| &c.errors).filter(|_| b.errors.mean + cell.errors.mean > 0.0)),
                ns(cell.total_ns.mean),
                p(ch.map(|c| &c.total_ns), b.total_ns.mean),
                mark(ch.map(|c| &c.total_ns)),
                avg,
                if b.avg_ns.runs.is_empty() { String::new() } else { p(ch.map(|c| &c.avg_ns), b.avg_ns.mean) },
                mark(ch.map(|c| &c.avg_ns)),
            ));
        }
    };
    let mut folded = Vec::new();
    for r in &c.rows {
        if !all && minor(r) {
            folded.push(r.name.as_str());
        } else {
            row(&mut out, r);
        }
    }
    out.push_str(&dashes);
    row(&mut out, &c.total);
    if !folded.is_empty() {
        out.push_str(&format!(
            "({} more, each under 0.1% of the calls and of the time, no change marked: {}; --all shows them)\n",
            folded.len(),
            folded.join(", ")
        ));
    }
    out.push_str(&format!(
        "\n* beyond the noise: p < {:.2} from the spread between runs (Welch's t), or for latency with one run on\n  a side from a rank test of the two histograms (of the whole distribution: its median shift below),\n  adjusted for the number of syscalls compared (Bonferroni)\n~ within the noise; no mark: not judged (counts of one run on a side, latency of fewer than 20 calls a run)\n",
        1.0 - c.confidence
    ));

    // A figure per row, its profiles under it (those given: a profile without the
    // on-CPU split has no time split), each with its change and mark.
    let series_table =
        |out: &mut String, title: &str, rows: &[(String, Vec<(usize, &Series)>)], time: bool| {
            out.push_str(&format!(
                "\n{:<nw$} {:<w$} {:>11} {:>8}\n",
                title,
                "profile",
                if time { "time" } else { "count" },
                "change"
            ));
            for (name, s) in rows {
                let base = s.first().map_or(0.0, |(_, v)| v.value.mean);
                for (i, (k, v)) in s.iter().enumerate() {
                    let value = if time {
                        ns(v.value.mean)
                    } else {
                        num(v.value.mean, per)
                    };
                    let change = v.change.as_ref();
                    out.push_str(&format!(
                        "{:<nw$} {:<w$} {:>11} {:>8} {}\n",
                        if i == 0 { name.as_str() } else { "" },
                        c.profiles[*k].label,
                        value,
                        change.map_or(String::new(), |ch| moved(base, ch)),
                        mark(change)
                    ));
                }
            }
        };
    if c.time.iter().any(Option::is_some) {
        let col = |f: fn(&TimeSplit) -> &Series| {
            c.time
                .iter()
                .enumerate()
                .filter_map(|(k, t)| t.as_ref().map(|t| (k, f(t))))
                .collect::<Vec<_>>()
        };
        let figures = [
            ("on-CPU".to_string(), col(|t| &t.oncpu_ns)),
            ("switched out".to_string(), col(|t| &t.offcpu_ns)),
            ("blocking calls".to_string(), col(|t| &t.blocking_calls_ns)),
            ("other calls".to_string(), col(|t| &t.other_calls_ns)),
        ];
        series_table(&mut out, "time", &figures, true);
        out.push_str(&format!(
            "blocking calls: switched out more than half their time, over the runs with the on-CPU split: {}\n",
            if c.blocking.is_empty() {
                "none".to_string()
            } else {
                c.blocking.join(", ")
            }
        ));
    }
    let untracked: Vec<&str> = c
        .profiles
        .iter()
        .filter(|p| !p.oncpu_tracked)
        .map(|p| p.label.as_str())
        .collect();
    if !untracked.is_empty() {
        out.push_str(&format!(
            "\non-CPU split not tracked in {} (a profile without it): its time is not split, nor compared by it\n",
            untracked.join(", ")
        ));
    }
    if !c.errnos_tracked {
        out.push_str("\nerrno changes not known: a profile has errors per syscall only (a top file, or --process)\n");
    } else if !c.errnos.is_empty() {
        let rows: Vec<(String, Vec<(usize, &Series)>)> = c
            .errnos
            .iter()
            .map(|e| {
                (
                    format!("{} {}", e.syscall, e.errno),
                    e.profiles.iter().enumerate().collect(),
                )
            })
            .collect();
        series_table(&mut out, "errno", &rows, false);
    }
    let mut tests = Vec::new();
    for k in 1..c.profiles.len() {
        for r in &c.rows {
            let avg = &r.profiles[k]
                .change
                .as_ref()
                .expect("not the baseline")
                .avg_ns;
            if let (Some(test), Some(p_adjusted)) = (&avg.rank_test, avg.p_adjusted) {
                tests.push(LatencyLine {
                    syscall: &r.name,
                    variant: k,
                    test,
                    p_adjusted,
                });
            }
        }
    }
    if !tests.is_empty() {
        out.push('\n');
        let label = |k: usize| c.profiles[k].label.clone();
        out.push_str(&render_latency_tests(&tests, Some(&label)));
    }
    out.push_str(&format!("\nconclusion, against {}:\n", c.profiles[0].label));
    if single_runs(c) {
        out.push_str("  (one run on a side: its counts are shown without a verdict; give each variant several runs, comma-separated, for one)\n");
    }
    for l in &c.conclusion {
        out.push_str(&format!("  {l}\n"));
    }
    trim_lines(out)
}

pub(super) fn single_runs(c: &Comparison) -> bool {
    c.profiles.iter().any(|p| p.files.len() < 2)
}

/// The comparison as JSON.
pub fn to_json(c: &Comparison) -> String {
    pretty_json(c)
}
