//! Keys -> state changes.

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::app::{App, View};

/// What the loop should do after a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    Continue,
    Quit,
    /// Leave a drill-down for the view it came from.
    Back,
}

const PAGE: isize = 10;

pub fn handle_key(app: &mut App, key: KeyEvent) -> Action {
    if super::keys::is_interrupt(key) {
        return Action::Quit;
    }
    app.notice = None;
    if app.editing_filter {
        super::keys::edit_filter(&mut app.filter, &mut app.editing_filter, key);
        app.clamp_selection();
        return Action::Continue;
    }
    if app.show_help {
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            _ => app.show_help = false,
        }
        return Action::Continue;
    }
    match key.code {
        KeyCode::Esc if app.show_slow => {
            app.show_slow = false;
            app.selected = 0;
        }
        KeyCode::Esc if app.drilled => return Action::Back,
        KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
        KeyCode::Up | KeyCode::Char('k') => app.move_selection(-1),
        KeyCode::Down | KeyCode::Char('j') => app.move_selection(1),
        KeyCode::PageUp => app.move_selection(-PAGE),
        KeyCode::PageDown => app.move_selection(PAGE),
        KeyCode::Home | KeyCode::Char('g') => app.selected = 0,
        KeyCode::End | KeyCode::Char('G') => app.move_selection(isize::MAX / 2),
        KeyCode::Char('s') => app.sort = app.sort.next(),
        KeyCode::Char('S') => app.reverse = !app.reverse,
        KeyCode::Char('/') => app.editing_filter = true,
        KeyCode::Char('p') => app.paused = !app.paused,
        KeyCode::Char('r') => app.reset_requested = true,
        KeyCode::Char('t') => {
            app.show_threads = !app.show_threads;
            app.show_slow = false;
            app.selected = 0;
        }
        KeyCode::Char('w') if app.stacks.is_some() => app.show_callers = !app.show_callers,
        KeyCode::Char('w') => {
            app.notice = Some(if app.drilled {
                "w shows a syscall's callers: start top with --stacks".into()
            } else {
                "w shows a syscall's callers: start with --stacks FILE (calls by user stack)".into()
            });
        }
        KeyCode::Char('l') if app.slow.is_none() => {
            app.notice = Some(if app.drilled {
                "l shows slow calls, which top does not keep: syscost attach -p PID --slow 1ms"
                    .into()
            } else {
                "l shows the slow calls: start with --slow DURATION (e.g. --slow 1ms)".into()
            });
        }
        KeyCode::Char('l') if app.slow.is_some() => {
            app.show_slow = !app.show_slow;
            app.show_threads = false;
            app.selected = 0;
        }
        KeyCode::Char('c') => {
            app.view = match app.view {
                View::Cumulative => View::Interval,
                View::Interval => View::Cumulative,
            }
        }
        KeyCode::Char('?') => app.show_help = true,
        _ => {}
    }
    app.clamp_selection();
    Action::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::{SortColumn, tests::sample_app};
    use ratatui::crossterm::event::{KeyEvent, KeyModifiers};

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn quit_keys() {
        let mut app = sample_app();
        assert_eq!(handle_key(&mut app, key(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(handle_key(&mut app, key(KeyCode::Esc)), Action::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(handle_key(&mut app, ctrl_c), Action::Quit);
        app.drilled = true;
        assert_eq!(handle_key(&mut app, key(KeyCode::Esc)), Action::Back);
        assert_eq!(handle_key(&mut app, key(KeyCode::Char('q'))), Action::Quit);
    }

    #[test]
    fn movement_is_clamped() {
        let mut app = sample_app();
        handle_key(&mut app, key(KeyCode::Down));
        handle_key(&mut app, key(KeyCode::Down));
        assert_eq!(app.selected, 2);
        handle_key(&mut app, key(KeyCode::PageDown));
        assert_eq!(app.selected, 5);
        handle_key(&mut app, key(KeyCode::Home));
        assert_eq!(app.selected, 0);
        handle_key(&mut app, key(KeyCode::Up));
        assert_eq!(app.selected, 0);
        handle_key(&mut app, key(KeyCode::End));
        assert_eq!(app.selected, 5);
    }

    #[test]
    fn sort_filter_pause_reset_view_threads_help() {
        let mut app = sample_app();
        handle_key(&mut app, key(KeyCode::Char('s')));
        assert_eq!(app.sort, SortColumn::Avg);
        handle_key(&mut app, key(KeyCode::Char('S')));
        assert!(app.reverse);
        handle_key(&mut app, key(KeyCode::Char('/')));
        for c in "epol".chars() {
            handle_key(&mut app, key(KeyCode::Char(c)));
        }
        // 'q' while typing a filter is text, not quit.
        assert_eq!(
            handle_key(&mut app, key(KeyCode::Char('q'))),
            Action::Continue
        );
        handle_key(&mut app, key(KeyCode::Backspace));
        handle_key(&mut app, key(KeyCode::Enter));
        assert_eq!(app.filter, "epol");
        assert_eq!(app.rows().len(), 2);
        handle_key(&mut app, key(KeyCode::Char('/')));
        handle_key(&mut app, key(KeyCode::Esc));
        assert_eq!(app.filter, "");
        handle_key(&mut app, key(KeyCode::Char('p')));
        assert!(app.paused);
        handle_key(&mut app, key(KeyCode::Char('r')));
        assert!(app.reset_requested);
        handle_key(&mut app, key(KeyCode::Char('c')));
        assert_eq!(app.view, View::Interval);
        handle_key(&mut app, key(KeyCode::Char('t')));
        assert!(app.show_threads);
        assert_eq!(app.row_count(), 1);
        handle_key(&mut app, key(KeyCode::Char('?')));
        assert!(app.show_help);
        handle_key(&mut app, key(KeyCode::Char('x')));
        assert!(!app.show_help);
    }
}
