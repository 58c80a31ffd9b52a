//! A syscall's detail: its figures and its latency histogram.

use super::figures::count;
use super::slow::{render_callers, render_slow_stack};
use super::threads::render_thread_detail;

use crate::tui::app::App;
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Color, Stylize as _},
    text::{Line, Span},
    widgets::{Block, Paragraph},
};
use syscost_report::{latency, units::human_ns};

/// Merges the non-empty buckets into at most `rows` bars: (label, count).
pub fn histogram_bars(
    s: &syscost_report::profile::SyscallProfile,
    rows: usize,
) -> Vec<(String, u64)> {
    let Ok(dense) = latency::to_dense(&s.histogram) else {
        return Vec::new();
    };
    let (Some(first), Some(last)) = (
        dense.iter().position(|&c| c > 0),
        dense.iter().rposition(|&c| c > 0),
    ) else {
        return Vec::new();
    };
    let span = last - first + 1;
    let per_bar = span.div_ceil(rows.max(1));
    (first..=last)
        .step_by(per_bar)
        .map(|start| {
            let end = (start + per_bar - 1).min(last);
            let n: u64 = dense[start..=end].iter().sum();
            let lo = syscost_common::latency_bucket::bucket_lower(start);
            let hi = syscost_common::latency_bucket::bucket_upper(end);
            (format!("{:>7}-{:<7}", human_ns(lo), human_ns(hi)), n)
        })
        .collect()
}

pub(super) fn render_detail(frame: &mut Frame, app: &App, area: Rect) {
    if app.show_slow {
        render_slow_stack(frame, app, area);
        return;
    }
    if app.show_callers && !app.show_threads {
        render_callers(frame, app, area);
        return;
    }
    if app.show_threads {
        render_thread_detail(frame, app, area);
        return;
    }
    let Some(s) = app.selected_row() else {
        frame.render_widget(Block::bordered().title(" detail "), area);
        return;
    };
    let block = Block::bordered().title(format!(
        " {}: {} calls · min {} · avg {} · p90 {} · max {} ",
        s.name,
        count(s.calls as f64),
        human_ns(s.min_ns),
        human_ns(s.avg_ns),
        // As the table shows percentiles: to their buckets' two digits.
        syscost_report::units::percentile_below(s.p90_ns, s.max_ns),
        human_ns(s.max_ns)
    ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [hist_area, err_area] =
        // 24: "on-CPU 100% blocked   0%".
        Layout::horizontal([Constraint::Fill(3), Constraint::Length(24)]).areas(inner);
    let bars = histogram_bars(s, hist_area.height as usize);
    let max = bars.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let bar_width = (hist_area.width as usize).saturating_sub(26);
    let lines: Vec<Line> = bars
        .iter()
        .map(|(label, n)| {
            let len = (*n as f64 / max as f64 * bar_width as f64).round() as usize;
            Line::from(vec![
                Span::from(label.clone()),
                Span::from(" "),
                Span::from("█".repeat(len)).fg(Color::Green),
                Span::from(format!(" {}", count(*n as f64))),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), hist_area);
    let mut errs: Vec<Line> = Vec::new();
    if app.shown().offcpu_tracked && s.total_ns > 0 {
        // Where the time went: on a CPU (solid) or switched out (light).
        let on = s.oncpu_ns as f64 / s.total_ns as f64;
        let width = (err_area.width as usize).saturating_sub(1).max(1);
        let solid = (on * width as f64).round() as usize;
        errs.push(Line::from(format!(
            "on-CPU {:>3.0}% blocked {:>3.0}%",
            on * 100.0,
            100.0 - on * 100.0
        )));
        errs.push(Line::from(vec![
            Span::from("█".repeat(solid)).fg(Color::Green),
            Span::from("░".repeat(width - solid)).fg(Color::Yellow),
        ]));
        errs.push(Line::from(format!(
            "switches {}v {}i",
            count(s.voluntary_switches as f64),
            count(s.involuntary_switches as f64)
        )));
    }
    errs.push(Line::from("errors").bold());
    if s.errnos.is_empty() {
        errs.push(Line::from("none"));
    }
    let mut errnos: Vec<_> = s.errnos.iter().collect();
    errnos.sort_by_key(|(_, c)| std::cmp::Reverse(**c));
    for (name, c) in errnos {
        errs.push(Line::from(format!("{name:<12}{:>9}", count(*c as f64))));
    }
    frame.render_widget(Paragraph::new(errs), err_area);
}
