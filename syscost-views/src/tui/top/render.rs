//! `top`'s view drawn: the header, the table of the mode shown, the footer.

use ratatui::{
    Frame,
    layout::{Constraint, Layout},
    style::{Color, Modifier, Style, Stylize as _},
    text::Line,
    widgets::{Cell, Paragraph, Row, Table, TableState},
};

use super::{Mode, TopView};
use syscost_report::{units::human_ns, untrusted::shown};

fn rate(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2}M", n / 1e6)
    } else if n >= 1e4 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.1}")
    }
}

/// Seconds in syscalls per second of wall time.
fn secs_per_sec(ns: u64, secs: f64) -> String {
    format!("{:.3}", ns as f64 / 1e9 / secs)
}

pub fn render(frame: &mut Frame, v: &TopView) {
    let [header, main, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let calls: u64 = v.rows.iter().map(|r| r.calls()).sum();
    let ns: u64 = v.rows.iter().map(|r| r.total_ns()).sum();
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
    let mut first = vec![
        ratatui::text::Span::from(" syscost top ").bold().reversed(),
        ratatui::text::Span::from(format!(
            " {} · {} with syscalls · {:02}:{:02}:{:02} · {mode}",
            v.scope,
            syscost_report::units::counted(v.rows.len(), "process", "processes"),
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
    let second = Line::from(format!(
        " {} syscalls/s · {} s/s in syscalls · dropped {} · own cost {}",
        rate(v.per_sec(calls)),
        secs_per_sec(ns, v.interval_secs),
        v.dropped,
        v.own_cost
    ));
    frame.render_widget(Paragraph::new(vec![Line::from(first), second]), header);

    let secs = v.interval_secs;
    let (head, widths, rows): (Vec<&str>, Vec<Constraint>, Vec<Row>) = match v.mode {
        Mode::Processes | Mode::Cgroups => {
            let cg = v.mode == Mode::Cgroups;
            // A cgroup's row: how many of the processes with syscalls are in it.
            let mut in_cgroup: std::collections::HashMap<&str, usize> = Default::default();
            if cg {
                for r in &v.rows {
                    *in_cgroup.entry(r.cgroup.as_str()).or_default() += 1;
                }
            }
            let rows = v
                .process_rows()
                .into_iter()
                .map(|r| {
                    let top = r
                        .top_syscall()
                        .map(|(id, t)| format!("{} {}", id.name(), secs_per_sec(t, secs)))
                        .unwrap_or_default();
                    Row::new(vec![
                        Cell::from(if cg {
                            in_cgroup
                                .get(r.cgroup.as_str())
                                .copied()
                                .unwrap_or(0)
                                .to_string()
                        } else {
                            r.pid.to_string()
                        }),
                        Cell::from(shown(&r.comm).into_owned()),
                        Cell::from(if cg {
                            shown(&r.cgroup).into_owned()
                        } else {
                            shown(&syscost_report::report::top::short_cgroup(&r.cgroup))
                                .into_owned()
                        }),
                        Cell::from(rate(v.per_sec(r.calls()))),
                        Cell::from(rate(v.per_sec(r.errors()))),
                        Cell::from(secs_per_sec(r.total_ns(), secs)),
                        Cell::from(if v.offcpu {
                            secs_per_sec(r.oncpu_ns(), secs)
                        } else {
                            "-".to_string()
                        }),
                        Cell::from(if r.exited && !cg {
                            "exit".to_string()
                        } else {
                            r.threads.to_string()
                        }),
                        Cell::from(top),
                    ])
                })
                .collect();
            (
                vec![
                    if cg { "PROCS" } else { "PID" },
                    if cg { "NAME" } else { "COMM" },
                    "CGROUP",
                    "CALLS/s",
                    "ERR/s",
                    "TIME s/s",
                    "ONCPU s/s",
                    "THR",
                    "TOP SYSCALL s/s",
                ],
                vec![
                    Constraint::Length(8),
                    Constraint::Length(16),
                    Constraint::Length(if cg { 40 } else { 24 }),
                    Constraint::Length(9),
                    Constraint::Length(8),
                    Constraint::Length(9),
                    Constraint::Length(9),
                    Constraint::Length(5),
                    Constraint::Min(16),
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
                    Row::new(vec![
                        Cell::from(id.name()),
                        Cell::from(rate(v.per_sec(s.calls))),
                        Cell::from(rate(v.per_sec(s.errors))),
                        Cell::from(secs_per_sec(s.total_ns, secs)),
                        Cell::from(secs_per_sec(s.total_ns - s.offcpu_ns.min(s.total_ns), secs)),
                        Cell::from(
                            human_ns(s.total_ns.checked_div(s.calls).unwrap_or(0)).to_string(),
                        ),
                        Cell::from(procs.len().to_string()),
                        Cell::from(busiest),
                    ])
                })
                .collect();
            (
                vec![
                    "SYSCALL",
                    "CALLS/s",
                    "ERR/s",
                    "TIME s/s",
                    "ONCPU s/s",
                    "AVG",
                    "PROCS",
                    "BUSIEST",
                ],
                vec![
                    Constraint::Length(20),
                    Constraint::Length(9),
                    Constraint::Length(8),
                    Constraint::Length(9),
                    Constraint::Length(9),
                    Constraint::Length(9),
                    Constraint::Length(6),
                    Constraint::Min(16),
                ],
                rows,
            )
        }
        Mode::SyscallProcesses(id) => {
            let rows = v
                .syscall_process_rows(id)
                .into_iter()
                .map(|(pid, comm, s)| {
                    Row::new(vec![
                        Cell::from(pid.to_string()),
                        Cell::from(shown(&comm).into_owned()),
                        Cell::from(rate(v.per_sec(s.calls))),
                        Cell::from(rate(v.per_sec(s.errors))),
                        Cell::from(secs_per_sec(s.total_ns, secs)),
                        Cell::from(
                            human_ns(s.total_ns.checked_div(s.calls).unwrap_or(0)).to_string(),
                        ),
                    ])
                })
                .collect();
            (
                vec!["PID", "COMM", "CALLS/s", "ERR/s", "TIME s/s", "AVG"],
                vec![
                    Constraint::Length(8),
                    Constraint::Length(16),
                    Constraint::Length(9),
                    Constraint::Length(8),
                    Constraint::Length(9),
                    Constraint::Min(9),
                ],
                rows,
            )
        }
    };
    let table = Table::new(rows, widths)
        .header(
            Row::new(head).style(Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)),
        )
        .row_highlight_style(Style::new().bg(Color::Blue).fg(Color::White));
    let mut state = TableState::default().with_selected(Some(v.selected));
    frame.render_stateful_widget(table, main, &mut state);
    let text = if v.editing_filter {
        " filter by name, cgroup, pid or syscall: type, Enter to keep, Esc to clear".to_string()
    } else if v.show_help {
        " Enter: drill into a process (its syscalls, histograms) or a syscall (its processes) · t: a process's threads · y: by syscall · g: by cgroup · Esc: back · s/S: sort · /: filter · p: pause · q: quit".to_string()
    } else {
        format!(
            " q quit ↑↓ move Enter drill t threads y syscalls g cgroups s/S sort ({:?}) / filter p pause ? help",
            v.sort
        )
        .to_lowercase()
    };
    frame.render_widget(Paragraph::new(text).fg(Color::DarkGray), footer);
}
