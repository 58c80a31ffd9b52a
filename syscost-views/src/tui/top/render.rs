//! `top`'s view drawn: the header, the table of the mode shown, the footer.

use ratatui::{
    Frame,
    layout::{Constraint, Layout},
    style::{Color, Modifier, Style, Stylize as _},
    text::Line,
    widgets::{Cell, Paragraph, Row, Table, TableState},
};

use super::state::{Mode, TopView};
use crate::tui::fit_parts;
use syscost_report::report::top::ProcessRow;
use syscost_report::{
    units::{human_ns, thousands},
    untrusted::shown,
};

/// A rate, the same way in the header and the table: whole numbers with thousands
/// separators (one decimal below 10, where a whole number would say little), millions
/// from 1,000,000: at most 7 characters below a billion.
fn rate(n: f64) -> String {
    if n >= 999_995_000.0 {
        format!("{:.0}M", n / 1e6)
    } else if n >= 999_999.5 {
        format!("{:.2}M", n / 1e6)
    } else if n >= 10.0 || n == 0.0 {
        thousands(n.round() as u64)
    } else {
        format!("{n:.1}")
    }
}

/// Seconds in syscalls per second of wall time.
fn secs_per_sec(ns: u64, secs: f64) -> String {
    format!("{:.3}", ns as f64 / 1e9 / secs)
}

/// A column of a table: its title, width, whether it holds numbers (right-aligned),
/// and, when it may go on a narrow screen, its rank in the order columns go (0 first).
struct Col {
    title: &'static str,
    width: u16,
    numeric: bool,
    drop: Option<u8>,
}

const fn col(title: &'static str, width: u16, numeric: bool, drop: Option<u8>) -> Col {
    Col {
        title,
        width,
        numeric,
        drop,
    }
}

/// The cgroup column's width in `g`'s table.
const CGROUP_WIDE: u16 = 40;

/// The end of `s` in at most `width` characters, `…` marking what was cut.
fn tail(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep: String = s.chars().skip(n - width.saturating_sub(1)).collect();
    format!("…{keep}")
}

/// Which columns fit in `width` (what is left goes to an empty last column):
/// those that may go, in their order, until the rest fit.
fn fitting(cols: &[Col], width: u16) -> Vec<bool> {
    let mut keep = vec![true; cols.len()];
    let need = |keep: &[bool]| -> u32 {
        let shown: Vec<&Col> = cols
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c)
            .collect();
        shown.iter().map(|c| u32::from(c.width)).sum::<u32>() + shown.len().saturating_sub(1) as u32
    };
    let mut order: Vec<(u8, usize)> = cols
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.drop.map(|r| (r, i)))
        .collect();
    order.sort();
    for (_, i) in order {
        if need(&keep) <= u32::from(width) {
            break;
        }
        keep[i] = false;
    }
    keep
}

/// The keys, one a line, for `?`: every one whole at 80 columns.
pub(super) const HELP: [(&str, &str); 11] = [
    ("Enter", "drill into a process (its syscalls) or a syscall"),
    ("t", "a process's threads"),
    ("y", "by syscall (again: back to processes)"),
    ("g", "by cgroup (Enter: its processes)"),
    ("Esc", "back; in the processes, clear the filter"),
    ("s / S", "sort by the next column / reverse"),
    ("/", "filter by name, cgroup, pid or syscall"),
    ("p", "pause (the figures stay as they are)"),
    ("↑↓ PgUp PgDn", "move"),
    ("q", "quit"),
    ("?", "this help (any key closes it)"),
];

pub fn render(frame: &mut Frame, v: &TopView) {
    let [header, main, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let width = frame.area().width;
    // The figures of what is shown: a filter narrows the header's counts too.
    let filtered = !v.filter.is_empty() || v.cgroup_filter.is_some();
    // The process or cgroup table's rows, filtered and sorted once for the header and
    // the table.
    let table_rows = matches!(v.mode, Mode::Processes | Mode::Cgroups).then(|| v.process_rows());
    let shown_rows: &[ProcessRow] = match &table_rows {
        Some(rows) if filtered && v.mode == Mode::Processes => rows,
        _ => &v.rows,
    };
    let calls: u64 = shown_rows.iter().map(|r| r.calls()).sum();
    let ns: u64 = shown_rows.iter().map(|r| r.total_ns()).sum();
    let s = v.elapsed.as_secs();
    let mode = match v.mode {
        Mode::Processes => match &v.cgroup_filter {
            Some(cg) => format!("processes of {} (Esc: all)", shown(cg)),
            None => "processes".to_string(),
        },
        Mode::Cgroups => "cgroups".to_string(),
        Mode::Syscalls => "syscalls".to_string(),
        Mode::SyscallProcesses(id) => format!("processes making {}", id.name()),
    };
    let processes = if filtered && v.mode == Mode::Processes {
        format!(
            "{} of {} with syscalls",
            shown_rows.len(),
            syscost_report::units::counted(v.rows.len(), "process", "processes")
        )
    } else {
        format!(
            "{} with syscalls",
            syscost_report::units::counted(v.rows.len(), "process", "processes")
        )
    };
    let mut first = vec![
        ratatui::text::Span::from(" syscost top ").bold().reversed(),
        ratatui::text::Span::from(format!(
            " {} · {processes} · {:02}:{:02}:{:02} · {mode}",
            v.scope,
            s / 3600,
            s / 60 % 60,
            s % 60
        )),
    ];
    if v.paused {
        first.push(
            ratatui::text::Span::from("  PAUSED ")
                .bold()
                .fg(Color::Yellow),
        );
    }
    let mut parts = Vec::new();
    if !v.filter.is_empty() {
        // A long filter must not push the figures out.
        parts.push(format!("filter \"{}\"", tail(&shown(&v.filter), 24)));
    }
    parts.extend([
        format!("{} syscalls/s", rate(v.per_sec(calls))),
        format!("{} s/s in syscalls", secs_per_sec(ns, v.interval_secs)),
        format!("dropped {}", v.dropped),
        format!("own cost {}", v.own_cost),
    ]);
    let second = Line::from(fit_parts(&parts, " · ", usize::from(width)));
    frame.render_widget(Paragraph::new(vec![Line::from(first), second]), header);

    let secs = v.interval_secs;
    let (cols, cells): (Vec<Col>, Vec<Vec<String>>) = match v.mode {
        Mode::Processes | Mode::Cgroups => {
            let cg = v.mode == Mode::Cgroups;
            // A cgroup's row: how many of the processes with syscalls are in it.
            let mut in_cgroup: std::collections::HashMap<&str, usize> = Default::default();
            if cg {
                for r in &v.rows {
                    *in_cgroup.entry(&*r.cgroup).or_default() += 1;
                }
            }
            let rows = table_rows
                .into_iter()
                .flatten()
                .map(|r| {
                    let top = r
                        .top_syscall()
                        .map(|(id, t)| format!("{} {}", id.name(), secs_per_sec(t, secs)))
                        .unwrap_or_default();
                    vec![
                        (if cg {
                            in_cgroup.get(&*r.cgroup).copied().unwrap_or(0).to_string()
                        } else {
                            r.pid.to_string()
                        }),
                        shown(&r.comm).into_owned(),
                        if cg {
                            // The end of the path tells cgroups apart.
                            tail(&shown(&r.cgroup), usize::from(CGROUP_WIDE))
                        } else {
                            shown(&syscost_report::report::top::short_cgroup(&r.cgroup))
                                .into_owned()
                        },
                        rate(v.per_sec(r.calls())),
                        rate(v.per_sec(r.errors())),
                        secs_per_sec(r.total_ns(), secs),
                        if v.offcpu {
                            secs_per_sec(r.oncpu_ns(), secs)
                        } else {
                            "-".to_string()
                        },
                        if r.exited && !cg {
                            "exit".to_string()
                        } else {
                            r.threads.to_string()
                        },
                        top,
                    ]
                })
                .collect();
            (
                vec![
                    col(if cg { "PROCS" } else { "PID" }, 7, true, None),
                    // A cgroup's short name repeats the end of its path: it goes first.
                    col(if cg { "NAME" } else { "COMM" }, 15, false, cg.then_some(3)),
                    col(
                        "CGROUP",
                        if cg { CGROUP_WIDE } else { 19 },
                        false,
                        (!cg).then_some(4),
                    ),
                    col("CALLS/s", 9, true, None),
                    col("ERR/s", 7, true, Some(2)),
                    col("TIME s/s", 9, true, None),
                    col("ONCPU s/s", 9, true, Some(0)),
                    col("THR", 6, true, Some(1)),
                    col("TOP SYSCALL s/s", 16, false, Some(if cg { 4 } else { 3 })),
                ],
                rows,
            )
        }
        Mode::Syscalls => {
            let rows = v
                .syscall_rows()
                .into_iter()
                .map(|(id, s, procs)| {
                    let busiest = procs
                        .first()
                        .map(|p| format!("{} ({})", syscost_report::untrusted::shown(&p.1), p.0))
                        .unwrap_or_default();
                    vec![
                        id.name().to_string(),
                        rate(v.per_sec(s.calls)),
                        rate(v.per_sec(s.errors)),
                        secs_per_sec(s.total_ns, secs),
                        secs_per_sec(s.total_ns - s.offcpu_ns.min(s.total_ns), secs),
                        human_ns(s.total_ns.checked_div(s.calls).unwrap_or(0)),
                        procs.len().to_string(),
                        busiest,
                    ]
                })
                .collect();
            (
                vec![
                    col("SYSCALL", 18, false, None),
                    col("CALLS/s", 9, true, None),
                    col("ERR/s", 7, true, Some(1)),
                    col("TIME s/s", 9, true, None),
                    col("ONCPU s/s", 9, true, Some(0)),
                    col("AVG", 8, true, None),
                    col("PROCS", 5, true, Some(2)),
                    col("BUSIEST", 16, false, None),
                ],
                rows,
            )
        }
        Mode::SyscallProcesses(id) => {
            let rows = v
                .syscall_process_rows(id)
                .into_iter()
                .map(|(pid, comm, s)| {
                    vec![
                        pid.to_string(),
                        shown(&comm).into_owned(),
                        rate(v.per_sec(s.calls)),
                        rate(v.per_sec(s.errors)),
                        secs_per_sec(s.total_ns, secs),
                        human_ns(s.total_ns.checked_div(s.calls).unwrap_or(0)),
                    ]
                })
                .collect();
            (
                vec![
                    col("PID", 7, true, None),
                    col("COMM", 15, false, None),
                    col("CALLS/s", 9, true, None),
                    col("ERR/s", 7, true, None),
                    col("TIME s/s", 9, true, None),
                    col("AVG", 8, true, None),
                ],
                rows,
            )
        }
    };
    // The columns that fit; numbers right-aligned under right-aligned titles; what is
    // left over goes to an empty column at the end, so that no column stretches.
    let keep = fitting(&cols, width);
    let cell = |c: &Col, text: String| {
        if c.numeric {
            Cell::from(Line::from(text).right_aligned())
        } else {
            Cell::from(text)
        }
    };
    // A text column at the end (a top syscall, a busiest process) takes what is left;
    // numbers keep their width, an empty column after them taking the rest.
    let last = keep.iter().rposition(|k| *k).unwrap_or(0);
    let text_last = !cols[last].numeric;
    let widths: Vec<Constraint> = cols
        .iter()
        .enumerate()
        .filter(|(i, _)| keep[*i])
        .map(|(i, c)| {
            if i == last && text_last {
                Constraint::Min(c.width)
            } else {
                Constraint::Length(c.width)
            }
        })
        .chain((!text_last).then_some(Constraint::Fill(1)))
        .collect();
    let head: Vec<Cell> = cols
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| cell(c, c.title.to_string()))
        .collect();
    let rows: Vec<Row> = cells
        .into_iter()
        .map(|r| {
            Row::new(
                cols.iter()
                    .zip(&keep)
                    .zip(r)
                    .filter(|((_, k), _)| **k)
                    .map(|((c, _), text)| cell(c, text))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let table = Table::new(rows, widths)
        .header(
            Row::new(head).style(Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)),
        )
        .row_highlight_style(Style::new().bg(Color::Blue).fg(Color::White));
    let mut state = TableState::default().with_selected(Some(v.selected));
    frame.render_stateful_widget(table, main, &mut state);
    let text = if v.editing_filter {
        format!(
            " filter: {}_  (name, cgroup, pid or syscall; Enter keeps it, Esc clears it)",
            shown(&v.filter)
        )
    } else {
        // As many keys as fit, "? help" always last.
        let sort = format!("{:?}", v.sort).to_lowercase();
        let parts = [
            "q quit".to_string(),
            "Enter drill".to_string(),
            "/ filter".to_string(),
            "t threads".to_string(),
            "y syscalls".to_string(),
            "g cgroups".to_string(),
            format!("s sort ({sort})"),
            "p pause".to_string(),
        ];
        let room = usize::from(width).saturating_sub("  ? help".len());
        let keys = fit_parts(&parts, "  ", room);
        format!("{keys}  ? help")
    };
    frame.render_widget(Paragraph::new(text).fg(Color::DarkGray), footer);
    if v.show_help {
        let w = HELP
            .iter()
            .map(|(_, d)| 14 + d.chars().count() + 3)
            .max()
            .unwrap_or(40)
            .min(usize::from(width)) as u16;
        let h = (HELP.len() as u16 + 2).min(frame.area().height);
        let area = ratatui::layout::Rect {
            x: frame.area().width.saturating_sub(w) / 2,
            y: frame.area().height.saturating_sub(h) / 2,
            width: w,
            height: h,
        };
        let lines: Vec<Line> = HELP
            .iter()
            .map(|(k, d)| Line::from(format!(" {k:<13}{d}")))
            .collect();
        frame.render_widget(ratatui::widgets::Clear, area);
        frame.render_widget(
            Paragraph::new(lines).block(ratatui::widgets::Block::bordered().title(" keys ")),
            area,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rate fits the 7 columns of ERR/s, so a right-aligned cell never loses its
    /// leading digits.
    #[test]
    fn rates_fit_seven_columns() {
        for n in [
            0.0, 0.5, 9.94, 10.0, 999.4, 12_345.0, 999_999.4, 999_999.6, 1.234e6, 9.99e8, 1.2e10,
        ] {
            let r = rate(n);
            assert!(r.chars().count() <= 7, "{n}: {r}");
        }
        assert_eq!(rate(999_999.6), "1.00M");
        assert_eq!(rate(12_345.0), "12,345");
        assert_eq!(
            tail("/kubepods.slice/cri-containerd-abc.scope", 12),
            "…d-abc.scope"
        );
        assert_eq!(tail("short", 12), "short");
    }
}
