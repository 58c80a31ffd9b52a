//! What each key does to `top`'s view.

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::state::{Action, Mode, TopView, next_sort};

impl TopView {
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if crate::tui::keys::is_interrupt(key) {
            return Action::Quit;
        }
        if self.editing_filter {
            crate::tui::keys::edit_filter(&mut self.filter, &mut self.editing_filter, key);
            self.clamp();
            return Action::Continue;
        }
        if self.show_help {
            self.show_help = false;
            return if key.code == KeyCode::Char('q') {
                Action::Quit
            } else {
                Action::Continue
            };
        }
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Esc => match self.mode {
                Mode::SyscallProcesses(_) => self.mode = Mode::Syscalls,
                Mode::Syscalls | Mode::Cgroups => self.mode = Mode::Processes,
                Mode::Processes => {
                    self.filter.clear();
                    self.cgroup_filter = None;
                }
            },
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected += 1,
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected += 10,
            KeyCode::Home => self.selected = 0,
            KeyCode::Char('s') => self.sort = next_sort(self.sort),
            KeyCode::Char('S') => self.reverse = !self.reverse,
            KeyCode::Char('/') => self.editing_filter = true,
            KeyCode::Char('p') => self.paused = !self.paused,
            KeyCode::Char('?') => self.show_help = true,
            KeyCode::Char('y') => {
                self.mode = match self.mode {
                    Mode::Syscalls | Mode::SyscallProcesses(_) => Mode::Processes,
                    _ => Mode::Syscalls,
                };
                self.selected = 0;
            }
            KeyCode::Char('g') => {
                self.mode = match self.mode {
                    Mode::Cgroups => Mode::Processes,
                    _ => Mode::Cgroups,
                };
                self.selected = 0;
            }
            KeyCode::Enter | KeyCode::Char('t') => {
                let threads = key.code == KeyCode::Char('t');
                if let Some(pid) = self.selected_pid() {
                    return Action::Drill { pid, threads };
                }
                if self.mode == Mode::Syscalls
                    && let Some((id, _, _)) = self.syscall_rows().get(self.selected)
                {
                    self.mode = Mode::SyscallProcesses(*id);
                    self.selected = 0;
                }
                if self.mode == Mode::Cgroups
                    && let Some(r) = self.process_rows().get(self.selected)
                {
                    self.cgroup_filter = Some(r.cgroup.to_string());
                    self.mode = Mode::Processes;
                    self.selected = 0;
                }
            }
            _ => {}
        }
        self.clamp();
        Action::Continue
    }
}
