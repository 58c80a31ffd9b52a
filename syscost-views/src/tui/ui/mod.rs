//! Drawing: a pure function of the state. One function per pane.
//!
//! The panes by file: the header, the footer and the help here; the syscalls' table
//! (`table`), a syscall's detail and its histogram (`detail`), the threads (`threads`),
//! the slow calls and the callers (`slow`).

use super::app::{App, View};
use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Color, Style, Stylize as _},
    text::{Line, Span},
    widgets::{Block, Clear, Paragraph},
};
use syscost_report::{profile::per_unit, units::human_ns, untrusted::shown};

mod detail;
mod figures;
mod slow;
mod table;
#[cfg(test)]
mod tests;
mod threads;

pub use self::detail::*;
use self::{
    figures::{clock, count},
    slow::*,
    table::*,
    threads::*,
};

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
