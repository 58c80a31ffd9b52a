//! The syscalls' table, the main pane.

use super::figures::{count, spark};

use crate::tui::app::App;
use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    style::{Modifier, Style},
    text::Line,
    widgets::{Block, Cell, Row, Table, TableState},
};
use syscost_report::{profile::per_unit, units::human_ns};

pub(super) fn render_table(frame: &mut Frame, app: &App, area: Rect) {
    let wide = area.width >= 100;
    let per = app
        .per
        .as_deref()
        .filter(|_| area.width >= 110)
        .and_then(|u| per_unit(app.shown(), u));
    let (_, _, total_ns) = app.shown().totals();
    let mut header = vec!["syscall", "calls", "calls/s", "errors", "% time", "avg"];
    let mut widths = vec![
        Constraint::Length(14),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(12),
        Constraint::Length(6),
        Constraint::Length(7),
    ];
    if wide {
        header.push("p50");
        widths.push(Constraint::Length(7));
    }
    header.extend(["p99", "max"]);
    widths.extend([Constraint::Length(7), Constraint::Length(7)]);
    // Average on-CPU and blocked time per call, when there is room.
    let split = area.width >= 120;
    if split {
        header.extend(["on-cpu", "blocked"]);
        widths.extend([Constraint::Length(7), Constraint::Length(7)]);
    }
    if per.is_some() {
        header.extend(["calls/req", "time/req"]);
        widths.extend([Constraint::Length(9), Constraint::Length(8)]);
    }
    if wide {
        header.push("calls/s, last 60 intervals");
        widths.push(Constraint::Fill(1));
    }
    let n_cols = widths.len();
    // The name column as wide as the longest name shown (`clock_nanosleep`,
    // `i386:clock_nanosleep_time64`), as far as the other columns leave room: those,
    // a space between each two, the borders and, when shown, 10 cells of sparkline.
    let fixed: u16 = widths[1..]
        .iter()
        .map(|c| match c {
            Constraint::Length(n) => *n,
            _ => 10,
        })
        .sum::<u16>()
        + (n_cols as u16 - 1)
        + 2;
    let longest = app
        .rows()
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0) as u16;
    let room = area.width.saturating_sub(fixed);
    // Without the sparkline the name column also takes what the others leave.
    let name = if wide {
        longest.max(7)
    } else {
        room.max(longest)
    };
    let name_width = usize::from(name.min(room.max(7)));
    widths[0] = Constraint::Length(name_width as u16);
    // The sparkline fills what the name and the fixed columns leave.
    let spark_width = if wide {
        usize::from(area.width.saturating_sub(fixed - 10))
            .saturating_sub(name_width)
            .clamp(10, 60)
    } else {
        0
    };
    let rows: Vec<Row> = app
        .rows()
        .into_iter()
        .map(|s| {
            let top_errno = s
                .errnos
                .iter()
                .max_by_key(|(_, c)| **c)
                .map(|(n, _)| n.as_str());
            let errors = match (s.errors, top_errno) {
                (0, _) => String::new(),
                (e, Some(n)) => format!("{} {n}", count(e as f64)),
                (e, None) => count(e as f64),
            };
            let pct = if total_ns == 0 {
                0.0
            } else {
                100.0 * s.total_ns as f64 / total_ns as f64
            };
            // A name longer than the room left ends in "…", never silently cut.
            let name = if s.name.chars().count() > name_width {
                let kept: String = s.name.chars().take(name_width.saturating_sub(1)).collect();
                kept + "…"
            } else {
                s.name.clone()
            };
            let mut cells = vec![
                name,
                count(s.calls as f64),
                count(app.rate(&s.name)),
                errors,
                format!("{pct:.2}"),
                human_ns(s.avg_ns),
            ];
            if wide {
                cells.push(syscost_report::units::percentile_below(s.p50_ns, s.max_ns));
            }
            cells.extend([
                syscost_report::units::percentile_below(s.p99_ns, s.max_ns),
                human_ns(s.max_ns),
            ]);
            if split {
                let per_call = |ns: u64| {
                    if app.shown().offcpu_tracked {
                        human_ns(ns / s.calls.max(1))
                    } else {
                        "-".to_string()
                    }
                };
                cells.extend([per_call(s.oncpu_ns), per_call(s.offcpu_ns)]);
            }
            if let Some(u) = per {
                cells.push(format!("{:.2}", s.calls as f64 / u.units as f64));
                cells.push(human_ns((s.total_ns as f64 / u.units as f64).round() as u64));
            }
            if wide {
                let h: Vec<u64> = app
                    .rates
                    .get(&s.name)
                    .map(|h| h.iter().copied().collect())
                    .unwrap_or_default();
                cells.push(spark(&h, spark_width));
            }
            Row::new(cells.into_iter().enumerate().map(|(i, c)| {
                // Numbers right-aligned; the name and the sparkline left.
                let last_numeric = i > 0 && !(wide && i == n_cols - 1);
                let line = Line::from(c);
                Cell::from(if last_numeric {
                    line.right_aligned()
                } else {
                    line
                })
            }))
        })
        .collect();
    let title = format!(
        " syscalls: sorted by {}{}{} ",
        app.sort.label(),
        if app.reverse { " (reversed)" } else { "" },
        if app.filter.is_empty() && !app.editing_filter {
            String::new()
        } else {
            format!(
                " · filter: {}{}",
                app.filter,
                if app.editing_filter { "_" } else { "" }
            )
        }
    );
    let table = Table::new(rows, widths)
        .header(
            Row::new(header.into_iter().enumerate().map(|(i, h)| {
                let line = Line::from(h);
                Cell::from(if i > 0 && !(wide && i == n_cols - 1) {
                    line.right_aligned()
                } else {
                    line
                })
            }))
            .style(Style::new().bold().underlined()),
        )
        .block(Block::bordered().title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(app.selected));
    frame.render_stateful_widget(table, area, &mut state);
}
