//! The threads' pane and a thread's detail.

use super::figures::count;

use crate::tui::app::App;
use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    style::{Modifier, Style},
    text::Line,
    widgets::{Block, Paragraph, Row, Table, TableState},
};
use syscost_report::{units::human_ns, untrusted::shown};

/// The threads' view's detail: the selected thread's share of the process's calls and
/// time, and what it is in now (the table is sorted by time, as here).
pub(super) fn render_thread_detail(frame: &mut Frame, app: &App, area: Rect) {
    let mut threads: Vec<_> = app.threads.iter().collect();
    threads.sort_by_key(|t| std::cmp::Reverse(t.total_ns));
    let Some(t) = threads.get(app.selected) else {
        frame.render_widget(Block::bordered().title(" thread "), area);
        return;
    };
    let calls: u64 = app.threads.iter().map(|t| t.calls).sum();
    let ns: u64 = app.threads.iter().map(|t| t.total_ns).sum();
    let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
    let lines = vec![
        Line::from(format!(
            " {} calls, {:.1}% of the process's {}",
            count(t.calls as f64),
            pct(t.calls, calls),
            count(calls as f64)
        )),
        Line::from(format!(
            " {} in syscalls, {:.1}% of the process's {}",
            human_ns(t.total_ns),
            pct(t.total_ns, ns),
            human_ns(ns)
        )),
        Line::from(format!(
            " in a syscall now: {}",
            if t.now.is_empty() {
                "no"
            } else {
                t.now.as_str()
            }
        )),
        Line::from(" (since the thread was first seen; per-syscall figures are the process's)"),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!(
            " thread {} ({}) ",
            t.tid,
            shown(&t.comm)
        ))),
        area,
    );
}

pub(super) fn render_threads(frame: &mut Frame, app: &App, area: Rect) {
    let total: u64 = app.threads.iter().map(|t| t.total_ns).sum();
    let mut threads: Vec<_> = app.threads.iter().collect();
    threads.sort_by_key(|t| std::cmp::Reverse(t.total_ns));
    let rows: Vec<Row> = threads
        .into_iter()
        .map(|t| {
            let pct = if total == 0 {
                0.0
            } else {
                100.0 * t.total_ns as f64 / total as f64
            };
            Row::new(vec![
                t.tid.to_string(),
                shown(&t.comm).into_owned(),
                count(t.calls as f64),
                format!("{pct:.2}"),
                t.now.clone(),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(16),
            Constraint::Length(10),
            Constraint::Length(7),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(["tid", "comm", "calls", "% time", "in syscall now"])
            .style(Style::new().bold().underlined()),
    )
    .block(Block::bordered().title(" threads (live): sorted by time "))
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(app.selected));
    frame.render_stateful_widget(table, area, &mut state);
}
