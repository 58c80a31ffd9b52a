//! Drawing: a pure function of the state. One function per pane.

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Color, Modifier, Style, Stylize as _},
    text::{Line, Span},
    widgets::{Block, Cell, Clear, Paragraph, Row, Table, TableState},
};

use super::app::{App, View};
use syscost_report::{latency, profile::per_unit, units::human_ns, untrusted::shown};

/// Draws the whole screen.
pub fn render(frame: &mut Frame, app: &App) {
    let detail_height = if frame.area().height >= 30 { 12 } else { 8 };
    // The stuck line takes the third line when nothing else uses it.
    let third_used = app.exited || app.per.is_some();
    let header_height =
        3 + u16::from(app.hint.is_some()) + u16::from(!app.stuck.is_empty() && third_used);
    let [header, main, detail, footer] = Layout::vertical([
        Constraint::Length(header_height),
        Constraint::Min(5),
        Constraint::Length(detail_height),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    render_header(frame, app, header);
    if app.show_slow {
        render_slow(frame, app, main);
    } else if app.show_threads {
        render_threads(frame, app, main);
    } else {
        render_table(frame, app, main);
    }
    render_detail(frame, app, detail);
    render_footer(frame, app, footer);
    if app.show_help {
        render_help(frame, frame.area());
    }
}

fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn count(n: f64) -> String {
    if n >= 10_000_000.0 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 100_000.0 {
        format!("{:.0}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

fn render_header(frame: &mut Frame, app: &App, area: Rect) {
    let view = match app.view {
        View::Cumulative => "cumulative",
        View::Interval => "last interval",
    };
    let mut first = vec![
        Span::from(" syscost ").bold().reversed(),
        Span::from(format!(
            " {} · {} thread{} · attached {} · {view}",
            app.target.label.clone().unwrap_or_else(|| format!(
                "pid {} ({})",
                app.target.pid,
                shown(&app.target.comm)
            )),
            app.target.threads,
            if app.target.threads == 1 { "" } else { "s" },
            clock(app.attached_for)
        )),
    ];
    if app.paused {
        first.push(Span::from("  PAUSED ").bold().fg(Color::Yellow));
    }
    let shown = app.shown();
    let own = match (app.overhead, &app.overhead_note) {
        (Some(o), _) => format!("own cost {o}"),
        (None, Some(note)) => format!("own cost: {note}"),
        (None, None) => "own cost: n/a".to_string(),
    };
    let slow = if app.slow.is_some() {
        format!(
            " · slow {} ({} not reported)",
            app.slow_received, app.cumulative.slow_dropped
        )
    } else {
        String::new()
    };
    let second = Line::from(format!(
        " {} syscalls/s · unpaired {} · dropped {}{slow} · {own}",
        count(app.events_per_sec()),
        shown.unpaired,
        shown.dropped
    ));
    let third = if app.exited {
        Line::from(format!(
            " process {} exited: view frozen, q to quit",
            app.target.pid
        ))
        .style(Style::new().fg(Color::White).bg(Color::Red).bold())
    } else {
        match app.per.as_deref() {
            Some(unit) => match per_unit(shown, unit) {
                Some(u) => Line::from(if shown.offcpu_tracked {
                    format!(
                        " per {unit}: {:.2} syscalls, {} in syscalls, {} of it on a CPU",
                        u.calls,
                        human_ns(u.ns.round() as u64),
                        human_ns(u.oncpu_ns.round() as u64)
                    )
                } else {
                    format!(
                        " per {unit}: {:.2} syscalls, {} in syscalls ({} successful {unit} calls)",
                        u.calls,
                        human_ns(u.ns.round() as u64),
                        u.units
                    )
                })
                .bold(),
                None => Line::from(format!(" per {unit}: no {unit} calls yet")),
            },
            // A default measurement this kernel lacks, said where the view is read.
            None => match shown.unavailable.first() {
                Some(why) => Line::from(format!(" this kernel: {why}")),
                None => Line::from(""),
            },
        }
    };
    let third_used = app.exited || app.per.is_some();
    let mut lines = vec![Line::from(first), second];
    if third_used || app.stuck.is_empty() {
        lines.push(third);
    }
    if let Some(longest) = app.stuck.first() {
        let more = match app.stuck.len() - 1 {
            0 => String::new(),
            n => format!(
                " · {n} more over {}",
                human_ns(crate::tui::app::STUCK_AFTER.as_nanos() as u64)
            ),
        };
        lines.push(
            Line::from(format!(
                " stuck: tid {} in {} for {} ({}){more}",
                longest.tid,
                longest.syscall,
                human_ns(longest.elapsed.as_nanos() as u64),
                if longest.blocked {
                    "switched out"
                } else {
                    "on a CPU"
                }
            ))
            .fg(Color::Yellow)
            .bold(),
        );
    }
    if let Some(hint) = &app.hint {
        lines.push(Line::from(format!(" {hint}")).fg(Color::Cyan));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// A sparkline as text, one character per sample, scaled to the largest.
pub fn spark(history: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let tail = &history[history.len().saturating_sub(width)..];
    let max = tail.iter().copied().max().unwrap_or(0);
    tail.iter()
        .map(|&v| match (v * 7 + max / 2).checked_div(max) {
            Some(level) => BARS[level as usize],
            None => ' ',
        })
        .collect()
}

fn render_table(frame: &mut Frame, app: &App, area: Rect) {
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

/// The threads' view's detail: the selected thread's share of the process's calls and
/// time, and what it is in now (the table is sorted by time, as here).
fn render_thread_detail(frame: &mut Frame, app: &App, area: Rect) {
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

fn render_threads(frame: &mut Frame, app: &App, area: Rect) {
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

/// Whether a frame's module is the C library or its loader, whose syscall wrappers
/// (`__GI___clock_nanosleep`) are the innermost frames of nearly every call.
fn in_c_library(f: &syscost_report::profile::Frame) -> bool {
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
fn called_from(stack: &[syscost_report::profile::Frame]) -> String {
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
fn render_slow(frame: &mut Frame, app: &App, area: Rect) {
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
fn tail(raw: &str, width: usize) -> String {
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
fn render_slow_stack(frame: &mut Frame, app: &App, area: Rect) {
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
fn render_callers(frame: &mut Frame, app: &App, area: Rect) {
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
            let mut text = syscost_report::report::stacks::frames_line(s, 4);
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

fn render_detail(frame: &mut Frame, app: &App, area: Rect) {
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

fn render_footer(frame: &mut Frame, app: &App, area: Rect) {
    if let Some(notice) = &app.notice {
        frame.render_widget(Paragraph::new(format!(" {notice}")).fg(Color::Yellow), area);
        return;
    }
    let text = if app.editing_filter {
        format!(
            " filter: {}_  (a syscall's name; Enter keeps it, Esc clears it)",
            shown(&app.filter)
        )
    } else {
        let mut parts: Vec<String> = Vec::new();
        if app.drilled {
            parts.push("Esc back to top".into());
        }
        parts.extend(
            [
                "q quit",
                "s/S sort",
                "/ filter",
                "p pause",
                "r reset",
                "c view",
                "t threads",
            ]
            .map(String::from),
        );
        if app.slow.is_some() && !app.drilled {
            parts.push("l slow calls".into());
        }
        if app.stacks.is_some() {
            parts.push("w callers".into());
        }
        // As many keys as fit, "? help" always last.
        let room = (area.width as usize).saturating_sub("  ? help".len());
        format!("{}  ? help", crate::tui::fit_parts(&parts, "  ", room))
    };
    frame.render_widget(Paragraph::new(text).fg(Color::DarkGray), area);
}

fn render_help(frame: &mut Frame, area: Rect) {
    let keys = [
        ("q  Esc  Ctrl-C", "quit (prints the final table)"),
        ("↑ ↓  PgUp PgDn", "move the selection"),
        ("Home  End", "first / last row"),
        ("s", "next sort column"),
        ("S", "reverse the sort"),
        ("/", "filter syscalls by name"),
        ("p", "pause the display (collection goes on)"),
        ("r", "reset the view's counters"),
        ("c", "cumulative / last interval"),
        ("t", "per-thread view"),
        ("l", "slow calls, with --slow (Esc back)"),
        ("w", "callers of the selected syscall, with --stacks"),
        ("?", "this help (any key closes it)"),
    ];
    let lines: Vec<Line> = keys
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::from(format!(" {k:<16}")).bold(),
                Span::from(*what),
            ])
        })
        .collect();
    // Every line whole: the widest key and description, the borders, a space.
    let widest = keys
        .iter()
        .map(|(_, what)| 17 + what.chars().count())
        .max()
        .unwrap_or(40) as u16;
    let w = (widest + 3).min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let popup = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" keys ")),
        popup,
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_names_keep_their_end() {
        assert_eq!(super::tail("pipe:[123]", 20), "pipe:[123]");
        assert_eq!(super::tail("/tmp/a/b/c/d/e/f/g/file.txt", 10), "…/file.txt");
        // Cut between escapes, never inside one.
        assert_eq!(super::tail("/tmp/x\u{1b}\u{1b}\u{1b}", 10), "…\\33\\33\\33");
        assert_eq!(super::tail("/tmp/xy\u{1b}", 8), "…p/xy\\33");
        assert_eq!(super::tail("\u{1b}\u{1b}\u{1b}\u{1b}", 10), "…\\33\\33\\33");
    }

    use super::*;
    use crate::tui::app::tests::{sample_app, syscall};
    use crate::tui::handler::handle_key;
    use ratatui::{
        Terminal,
        backend::TestBackend,
        crossterm::event::{KeyCode, KeyEvent},
    };

    fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| render(f, app)).unwrap();
        t
    }

    /// The text of a drawn screen, line by line.
    fn text(t: &Terminal<TestBackend>) -> String {
        let buf = t.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_slow_call_is_named_by_the_programs_own_frame_then_the_wrapper() {
        let frame = |function: &str, module: &str| syscost_report::profile::Frame {
            addr: 1,
            function: Some(function.into()),
            location: None,
            module: Some(module.into()),
            unknown: None,
            mapping: None,
        };
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        let stack = [
            frame("__GI___clock_nanosleep", libc),
            frame("__nanosleep", libc),
            frame("syscost_workload::work", "/usr/bin/syscost-workload"),
            frame("main", "/usr/bin/syscost-workload"),
        ];
        assert_eq!(
            called_from(&stack),
            "syscost_workload::work via __GI___clock_nanosleep"
        );
        assert_eq!(called_from(&stack[2..]), "syscost_workload::work");
        assert_eq!(called_from(&stack[..2]), "__GI___clock_nanosleep");
        assert_eq!(called_from(&[]), "");
    }

    /// `w` with --stacks: the selected syscall's stacks by calls and by time, estimated
    /// splits marked, other syscalls' and (drilled from top) other processes' left out.
    #[test]
    fn callers_pane_of_the_selected_syscall() {
        use syscost_report::profile::{CallStack, CallStacks, Frame};
        let mut app = sample_app();
        let name = app.selected_row().expect("a selected row").name.clone();
        let stack = |pid, syscall: &str, f: &[&str], calls, ns, estimated| CallStack {
            pid,
            comm: "app".into(),
            syscall: syscall.into(),
            calls,
            total_ns: ns,
            frames: f
                .iter()
                .map(|n| Frame {
                    function: Some(n.to_string()),
                    ..Frame::default()
                })
                .collect(),
            estimated,
            ..CallStack::default()
        };
        app.stacks = Some(std::sync::Arc::new(CallStacks {
            stacks: vec![
                stack(
                    4242,
                    &name,
                    &["wrapper", "many_calls", "main"],
                    900,
                    1_000,
                    false,
                ),
                stack(
                    4242,
                    &name,
                    &["wrapper", "slow_calls", "main"],
                    100,
                    9_000_000,
                    true,
                ),
                stack(4242, "not_it", &["elsewhere"], 5, 5, false),
                stack(7, &name, &["other_process"], 5, 5, false),
            ],
            ..CallStacks::default()
        }));
        assert!(!text(&draw(&app, 140, 32)).contains("callers of"));
        handle_key(&mut app, KeyEvent::from(KeyCode::Char('w')));
        let shown = text(&draw(&app, 140, 32));
        assert!(
            shown.contains(&format!("callers of {name} since the start: 3 stacks")),
            "{shown}"
        );
        assert!(
            shown.contains("by calls") && shown.contains("by time"),
            "{shown}"
        );
        assert!(shown.contains("wrapper < many_calls < main"), "{shown}");
        assert!(shown.contains("estimated split"), "{shown}");
        // The estimated line is marked, the exact one is not.
        let marked = |needle: &str| {
            shown
                .lines()
                .map(|l| l.chars().take(70).collect::<String>())
                .find(|l| l.contains(needle))
                .is_some_and(|l| l.contains('~'))
        };
        assert!(marked("slow_calls") && !marked("many_calls"), "{shown}");
        assert!(!shown.contains("elsewhere"), "{shown}");
        // By time, the slow caller comes first: its line is above the other's on the right.
        let right = |needle: &str| {
            shown.lines().position(|l| {
                let half: String = l.chars().skip(70).collect();
                half.contains(needle)
            })
        };
        let (slow, many) = (right("slow_calls"), right("many_calls"));
        assert!(slow.is_some() && many.is_some() && slow < many, "{shown}");
        // Drilled from top: that process's stacks alone.
        app.stacks_of = Some(4242);
        let shown = text(&draw(&app, 140, 32));
        assert!(
            shown.contains("2 stacks") && !shown.contains("other_process"),
            "{shown}"
        );
    }

    #[test]
    fn main_table_wide() {
        let mut app = sample_app();
        app.per = Some("accept4".into());
        insta::assert_snapshot!(draw(&app, 140, 32).backend());
    }

    #[test]
    fn main_table_80x24() {
        let mut app = sample_app();
        app.per = Some("accept4".into());
        app.hint = Some("watch close and epoll_ctl: the per-request cost is in the header".into());
        insta::assert_snapshot!(draw(&app, 80, 24).backend());
    }

    /// Names are shown whole (the column is as wide as the longest), and the detail
    /// pane's "blocked NN%" is never cut, at 80 and at 140 columns.
    #[test]
    fn long_names_and_the_split_fit() {
        let mut p = crate::tui::app::tests::server_profile(1);
        p.syscalls
            .push(syscall("clock_nanosleep", 230, 10, 0, 1_000_000));
        p.syscalls
            .push(syscall("i386:clock_nanosleep_time64", 407, 5, 0, 900_000));
        let mut app = App::new(
            crate::tui::app::TargetInfo {
                pid: 1,
                comm: "x".into(),
                threads: 1,
                label: None,
            },
            crate::tui::app::tests::server_profile(0),
        );
        app.apply(crate::tui::app::tests::sample_of(p.clone(), p, 1));
        for (w, h) in [(80, 30), (140, 32)] {
            for selected in [0, 2] {
                app.selected = selected;
                let t = draw(&app, w, h);
                let b = t.backend().buffer();
                let text: String = (0..b.area.height)
                    .map(|y| {
                        (0..b.area.width)
                            .map(|x| b[(x, y)].symbol())
                            .collect::<String>()
                            + "\n"
                    })
                    .collect();
                assert!(text.contains("│clock_nanosleep "), "{w} columns:\n{text}");
                // At 80 columns the 27 characters do not fit beside the others: cut,
                // and marked as cut.
                let long = if w == 80 {
                    "│i386:clock_nan… "
                } else {
                    "│i386:clock_nanosleep_time64 "
                };
                assert!(text.contains(long), "{w} columns:\n{text}");
                assert!(
                    text.contains("on-CPU 100% blocked   0%"),
                    "{w} columns:\n{text}"
                );
            }
        }
    }

    #[test]
    fn histogram_pane_of_selected_row() {
        let mut app = sample_app();
        app.selected = 2;
        insta::assert_snapshot!(draw(&app, 100, 30).backend());
    }

    #[test]
    fn a_stuck_call_in_the_header() {
        let mut app = sample_app();
        app.stuck = vec![
            crate::tui::app::StuckCall {
                tid: 4243,
                syscall: "read".into(),
                elapsed: std::time::Duration::from_millis(31_200),
                blocked: true,
            },
            crate::tui::app::StuckCall {
                tid: 4244,
                syscall: "futex".into(),
                elapsed: std::time::Duration::from_millis(1_500),
                blocked: true,
            },
        ];
        insta::assert_snapshot!(draw(&app, 80, 24).backend());
    }

    #[test]
    fn main_table_160x45() {
        let mut app = sample_app();
        app.per = Some("accept4".into());
        insta::assert_snapshot!(draw(&app, 160, 45).backend());
    }

    /// The footer keeps "? help" at 80 columns, and a key that cannot act says why.
    #[test]
    fn keys_that_cannot_act_say_why() {
        let mut app = sample_app();
        let s = text(&draw(&app, 80, 24));
        assert!(
            s.lines().last().unwrap().trim_end().ends_with("? help"),
            "{s}"
        );
        for (k, why) in [('l', "--slow DURATION"), ('w', "--stacks FILE")] {
            crate::tui::handler::handle_key(
                &mut app,
                ratatui::crossterm::event::KeyEvent::new(
                    ratatui::crossterm::event::KeyCode::Char(k),
                    ratatui::crossterm::event::KeyModifiers::NONE,
                ),
            );
            let s = text(&draw(&app, 80, 24));
            assert!(s.lines().last().unwrap().contains(why), "{k}: {s}");
        }
    }

    /// `?`: every key's line whole at 80 columns.
    #[test]
    fn help_lines_are_whole_at_80() {
        let mut app = sample_app();
        app.show_help = true;
        let s = text(&draw(&app, 80, 24));
        for what in [
            "callers of the selected syscall, with --stacks",
            "slow calls, with --slow (Esc back)",
        ] {
            assert!(s.contains(what), "{what} cut:\n{s}");
        }
    }

    #[test]
    fn per_thread_view() {
        let mut app = sample_app();
        app.show_threads = true;
        insta::assert_snapshot!(draw(&app, 80, 24).backend());
    }

    #[test]
    fn help_overlay() {
        let mut app = sample_app();
        app.show_help = true;
        insta::assert_snapshot!(draw(&app, 80, 24).backend());
    }

    #[test]
    fn exited_banner_and_pause() {
        let mut app = sample_app();
        app.exited = true;
        app.paused = true;
        app.filter = "e".into();
        insta::assert_snapshot!(draw(&app, 80, 24).backend());
    }

    #[test]
    fn sparkline_text() {
        assert_eq!(spark(&[0, 1, 2, 4, 8], 10), "▁▂▃▅█");
        assert_eq!(spark(&[5, 5], 1), "█");
        assert_eq!(spark(&[0, 0], 5), "  ");
        assert_eq!(spark(&[], 5), "");
    }

    #[test]
    fn histogram_bars_merge_to_fit() {
        let s = syscall("read", 0, 1000, 0, 2_000);
        let bars = histogram_bars(&s, 3);
        assert!(!bars.is_empty() && bars.len() <= 3, "{bars:?}");
        assert_eq!(bars.iter().map(|b| b.1).sum::<u64>(), 1000);
    }
}
