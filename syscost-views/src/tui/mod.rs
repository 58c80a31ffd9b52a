//! The live terminal views: `syscost attach`'s (and `syscost demo`'s) in `attach`, with
//! its state in `app`, its keys in `handler` and its drawing in `ui`; `syscost top`'s in
//! `top`. Both run one loop (`live`), read keys alike (`keys`) and are fed by the
//! session's samples (see [`syscost_engine::session`]); this module owns the terminal.

pub mod app;
pub mod attach;
pub mod handler;
pub mod keys;
pub mod live;
pub mod top;
pub mod ui;

/// Parts joined by `sep` from the left, as many whole parts as fit in `width` (a
/// footer's keys, a header's figures): a part is shown whole or not at all.
pub(crate) fn fit_parts(parts: &[String], sep: &str, width: usize) -> String {
    let mut out = String::new();
    for p in parts {
        let next = if out.is_empty() {
            format!(" {p}")
        } else {
            format!("{out}{sep}{p}")
        };
        if next.chars().count() > width {
            break;
        }
        out = next;
    }
    out
}

use std::{
    sync::{Arc, mpsc},
    time::Instant,
};

use anyhow::{Context as _, Result};
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use syscost_engine::{session::Subscription, signals::Stop, wake::Wake};

/// Restores the terminal when dropped, on every way out of the loop.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
        syscost_engine::signals::terminal_given_back();
    }
}

/// Reads terminal events on a thread of its own, so that the loop keeps control when
/// the input side misbehaves (on a hung-up terminal the reader spins on end-of-file; the
/// loop notices the hang-up and ends the process).
/// The events are sent with a wake-up the view's loop sleeps on (set again when the
/// reader ends, which the loop sees as the channel gone).
fn spawn_input() -> (mpsc::Receiver<Event>, Arc<Wake>) {
    let (tx, rx) = mpsc::channel();
    let wake = Arc::new(Wake::new());
    let woken = wake.clone();
    std::thread::spawn(move || {
        while let Ok(ev) = event::read() {
            if tx.send(ev).is_err() {
                break;
            }
            woken.set();
        }
        drop(tx);
        woken.set();
    });
    (rx, wake)
}

/// Whether the terminal on stdin has gone away (its pty closed): then there is nobody to
/// draw for, and the input library would spin on end-of-file.
fn terminal_hung_up() -> bool {
    let mut pfd = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// The terminal the live views draw on.
pub type Term = ratatui::DefaultTerminal;

/// The terminal set up for a live view, restored however the view ends.
pub struct Screen {
    pub terminal: Term,
    input: mpsc::Receiver<Event>,
    input_wake: Arc<Wake>,
    stop: Stop,
    _guard: TerminalGuard,
}

impl Screen {
    /// Takes the terminal; SIGTERM, SIGHUP and SIGINT end the view (see
    /// [`Screen::terminated`]).
    pub fn open() -> Result<Self> {
        let stop = Stop::catch()?;
        // Kept for a second signal, which ends syscost at once (the guard restores it
        // on every other way out).
        syscost_engine::signals::terminal_taken();
        let terminal = ratatui::try_init().context("cannot set up the terminal")?;
        let (input, input_wake) = spawn_input();
        Ok(Self {
            terminal,
            input,
            input_wake,
            stop,
            _guard: TerminalGuard,
        })
    }

    /// Whether a signal asked to end, or the terminal went away.
    pub fn terminated(&self) -> bool {
        self.stop.stopped() || terminal_hung_up()
    }

    /// Sleeps until a key (or another terminal event), a sample of `samples`, a signal,
    /// the terminal's hang-up, or `until`: a view's loop is woken by what it shows, not
    /// by a clock of its own.
    pub fn wait(&self, samples: &Subscription, until: Option<Instant>) {
        syscost_engine::wake::wait_or_hangup(
            &[self.stop.fd(), self.input_wake.fd(), samples.fd()],
            &[libc::STDIN_FILENO],
            until,
        );
    }

    /// The next thing the terminal said, if anything waits (never blocks): a key
    /// pressed, a resize, or that it is gone; other events are passed over.
    pub fn next_input(&self) -> keys::Input {
        loop {
            // Cleared before the look: an event sent after it sets it again.
            self.input_wake.clear();
            match self.input.try_recv() {
                Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => {
                    return keys::Input::Key(k);
                }
                Ok(Event::Resize(..)) => return keys::Input::Redraw,
                Ok(_) => continue,
                Err(mpsc::TryRecvError::Empty) => return keys::Input::Nothing,
                Err(mpsc::TryRecvError::Disconnected) => return keys::Input::Gone,
            }
        }
    }
}

/// How a live view ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Quit, a signal, `duration`, or the terminal gone: the whole command ends.
    Quit,
    /// Esc in a drill-down: back to the view it came from.
    Back,
}
