//! What both live views (attach's and top's) do alike with the terminal's input: the
//! keys pressed as they come, Ctrl-C, and the filter edited with `/`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What the terminal said, one event at a time ([`super::Screen::next_input`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A key pressed (not released or repeated).
    Key(KeyEvent),
    /// The screen is to be drawn again (the terminal was resized).
    Redraw,
    /// The terminal is gone (its input's reader ended).
    Gone,
    /// Nothing waits.
    Nothing,
}

/// Ctrl-C: both views end on it, whatever they are doing.
pub fn is_interrupt(key: KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// A key while the filter is edited: typed text, Backspace, Enter keeps the filter, Esc
/// clears it; other keys do nothing.
pub fn edit_filter(filter: &mut String, editing: &mut bool, key: KeyEvent) {
    match key.code {
        KeyCode::Char(c) => filter.push(c),
        KeyCode::Backspace => {
            filter.pop();
        }
        KeyCode::Enter => *editing = false,
        KeyCode::Esc => {
            filter.clear();
            *editing = false;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn the_filter_takes_text_enter_keeps_it_and_esc_clears_it() {
        let (mut f, mut editing) = (String::new(), true);
        for c in "epollx".chars() {
            edit_filter(&mut f, &mut editing, key(KeyCode::Char(c)));
        }
        edit_filter(&mut f, &mut editing, key(KeyCode::Backspace));
        edit_filter(&mut f, &mut editing, key(KeyCode::Up));
        assert_eq!((f.as_str(), editing), ("epoll", true));
        edit_filter(&mut f, &mut editing, key(KeyCode::Enter));
        assert_eq!((f.as_str(), editing), ("epoll", false));
        editing = true;
        edit_filter(&mut f, &mut editing, key(KeyCode::Esc));
        assert_eq!((f.as_str(), editing), ("", false));
        assert!(is_interrupt(KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL
        )));
        assert!(!is_interrupt(key(KeyCode::Char('c'))));
    }
}
