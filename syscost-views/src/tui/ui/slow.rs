//! The slow calls' pane, a slow call's stack, and the callers by stack.

use super::figures::count;

use crate::tui::app::App;
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Color, Modifier, Style, Stylize as _},
    text::{Line, Span},
    widgets::{Block, Paragraph, Row, Table, TableState},
};
use syscost_report::{units::human_ns, untrusted::shown};

/// Whether a frame's module is the C library or its loader, whose syscall wrappers
/// (`__GI___clock_nanosleep`) are the innermost frames of nearly every call.
pub(super) fn in_c_library(f: &syscost_report::profile::Frame) -> bool {
    let Some(module) = f.module.as_deref() else {
        return false;
    };
    let file = module.rsplit('/').next().unwrap_or(module);
    [
        "libc.so",
        "libc-",
        "ld-linux",
        "ld-musl",
        "libpthread",
        "libc.musl",
    ]
    .iter()
    .any(|p| file.starts_with(p))
}

/// Where a slow call was made from: the program's own frame (the first outside the C
/// library) first, then the wrapper it called, when they differ.
pub(super) fn called_from(stack: &[syscost_report::profile::Frame]) -> String {
    let name =
        |f: &syscost_report::profile::Frame| f.function.as_deref().map(|n| shown(n).into_owned());
    let wrapper = stack.first().filter(|f| in_c_library(f)).and_then(name);
    let own = stack.iter().find(|f| !in_c_library(f)).and_then(name);
    match (own, wrapper) {
        (Some(own), Some(w)) => format!("{own} via {w}"),
        (Some(own), None) => own,
        (None, Some(w)) => w,
        (None, None) => String::new(),
    }
}

/// The latest slow calls (`l`), newest first.
pub(super) fn render_slow(frame: &mut Frame, app: &App, area: Rect) {
    let calls = app.slow.as_deref().unwrap_or_default();
    let rows: Vec<Row> = calls
        .iter()
        .map(|c| {
            Row::new(vec![
                human_ns(c.latency_ns),
                human_ns(c.offcpu_ns),
                c.syscall.clone(),
                c.fd.as_deref().map(|f| tail(f, 20)).unwrap_or_default(),
                match &c.errno {
                    Some(e) => e.clone(),
                    None => c.ret.to_string(),
                },
                c.tid.to_string(),
                called_from(&c.stack),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(16),
            Constraint::Length(20),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(["latency", "blocked", "syscall", "fd", "ret", "tid", "from"])
            .style(Style::new().bold().underlined()),
    )
    .block(Block::bordered().title(format!(
        " slow calls: the latest {}, newest first (l: back) ",
        calls.len()
    )))
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(app.selected));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The end of a name a traced process chose, shown escaped, in at most `width`
/// characters (a path's end names the file), "…" first when cut. The cut is made in the
/// name, not in its escaped form, so no escape is shown in part.
pub(super) fn tail(raw: &str, width: usize) -> String {
    let full = shown(raw);
    if full.chars().count() <= width {
        return full.into_owned();
    }
    // An escaped character is at least as wide as itself: the longest end that fits
    // starts at most width - 1 characters from the end.
    let starts: Vec<usize> = raw.char_indices().map(|(i, _)| i).collect();
    let first = starts.len().saturating_sub(width.saturating_sub(1));
    for &i in &starts[first..] {
        let end = shown(&raw[i..]);
        if end.chars().count() < width {
            return format!("…{end}");
        }
    }
    "…".to_string()
}

/// The selected slow call's user stack.
pub(super) fn render_slow_stack(frame: &mut Frame, app: &App, area: Rect) {
    let call = app.slow.as_deref().and_then(|c| c.get(app.selected));
    let Some(c) = call else {
        frame.render_widget(Block::bordered().title(" stack "), area);
        return;
    };
    let mut lines: Vec<Line> = c
        .stack
        .iter()
        .map(|f| {
            Line::from(format!(
                "{:#014x} {}{}",
                f.addr,
                shown(f.function.as_deref().or(f.module.as_deref()).unwrap_or("?")),
                f.location
                    .as_deref()
                    .map(|l| format!("  {}", shown(l)))
                    .unwrap_or_default()
            ))
        })
        .collect();
    if !c.kernel_stack.is_empty() {
        let names: Vec<String> = c
            .kernel_stack
            .iter()
            .take(6)
            .map(|f| match &f.function {
                Some(name) => shown(name).into_owned(),
                None => format!("{:#x}", f.addr),
            })
            .collect();
        lines.push(Line::from(format!("blocked in: {}", names.join(" <- "))).fg(Color::Yellow));
    }
    let block = Block::bordered().title(format!(
        " {} of tid {} ({}): {}, user stack ",
        c.syscall,
        c.tid,
        shown(&c.comm),
        human_ns(c.latency_ns)
    ));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The callers pane (`w`): the selected syscall's stacks since the start, by calls on
/// the left and by time on the right, each with its share of the syscall's.
pub(super) fn render_callers(frame: &mut Frame, app: &App, area: Rect) {
    let callers = app.callers();
    let name = app.selected_row().map_or("", |s| s.name.as_str());
    let calls: u64 = callers.iter().map(|s| s.calls).sum();
    let ns: u64 = callers.iter().map(|s| s.total_ns).sum();
    let estimated = callers.iter().any(|s| s.estimated);
    let block = Block::bordered().title(format!(
        " callers of {name} since the start: {}, {} {}, {}{} · w back ",
        syscost_report::units::counted(callers.len(), "stack", "stacks"),
        count(calls as f64),
        if calls == 1 { "call" } else { "calls" },
        human_ns(ns),
        if estimated {
            " · ~ estimated split"
        } else {
            ""
        }
    ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [left, right] = Layout::horizontal([Constraint::Fill(1), Constraint::Fill(1)]).areas(inner);
    let rows = inner.height as usize;
    let column = |by_time: bool, width: u16| -> Vec<Line> {
        let mut sorted = callers.clone();
        if by_time {
            sorted.sort_by_key(|s| std::cmp::Reverse(s.total_ns));
        }
        let mut lines = vec![Line::from(if by_time { "by time" } else { "by calls" }).bold()];
        for s in sorted.iter().take(rows.saturating_sub(1)) {
            let (figure, share) = if by_time {
                (human_ns(s.total_ns), s.total_ns as f64 / ns.max(1) as f64)
            } else {
                (count(s.calls as f64), s.calls as f64 / calls.max(1) as f64)
            };
            let head = format!(
                "{}{figure:>7} {:>3.0}% ",
                if s.estimated { "~" } else { " " },
                share * 100.0
            );
            let room = (width as usize).saturating_sub(head.chars().count());
            let mut text = syscost_report::report::call_stacks::frames_line(s, 4);
            if text.chars().count() > room {
                text = text
                    .chars()
                    .take(room.saturating_sub(1))
                    .collect::<String>()
                    + "…";
            }
            lines.push(Line::from(vec![Span::from(head), Span::from(text)]));
        }
        if callers.is_empty() {
            lines.push(Line::from("no call of it counted by stack yet"));
        }
        lines
    };
    frame.render_widget(Paragraph::new(column(false, left.width)), left);
    frame.render_widget(Paragraph::new(column(true, right.width)), right);
}
