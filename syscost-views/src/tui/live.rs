//! The one loop both live views run (attach's and top's, and a drill-down from top):
//! the screen drawn when something changed, then asleep until a key, a sample, a signal,
//! the terminal's hang-up or the end; the keys first, then the samples. The loop has no
//! clock of its own: the session's samples are what wakes it. A view says what it draws,
//! what a key does and what the samples change ([`View`]).

use std::time::{Duration, Instant};

use anyhow::Result;
use ratatui::{Frame, crossterm::event::KeyEvent};
use syscost_engine::session::Subscription;

use super::{Screen, keys::Input};

/// What a key does to the loop.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<L> {
    /// The view goes on (drawn again).
    Continue,
    /// The command ends (q, Ctrl-C).
    Quit,
    /// The loop ends for its caller to do `L` (top's drill-down, a drill-down's way back).
    Leave(L),
}

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit<L> {
    /// Quit, a signal, the deadline, or the terminal gone: the command ends.
    Quit,
    /// A key's [`Step::Leave`].
    Leave(L),
}

/// A live view as the loop drives it.
pub trait View {
    /// What a key can leave the loop for.
    type Leave;
    /// The whole screen.
    fn draw(&mut self, frame: &mut Frame);
    /// One key pressed.
    fn key(&mut self, key: KeyEvent) -> Step<Self::Leave>;
    /// After the keys: the samples waiting taken in. Whether new figures are shown.
    fn samples(&mut self, samples: &Subscription) -> Result<bool>;
}

/// Runs `view` on `screen` until a key leaves, the user quits, a signal, the terminal
/// goes away, or `deadline`.
pub fn drive<V: View>(
    screen: &mut Screen,
    samples: &Subscription,
    deadline: Option<Instant>,
    view: &mut V,
) -> Result<Exit<V::Leave>> {
    let mut fault = TestFault::from_env();
    let mut dirty = true;
    // The keys already waiting are read before the first wait: typed while another
    // view had the screen (a drill-down left with Esc), they woke nothing since.
    let mut first = true;
    loop {
        if dirty {
            screen.terminal.draw(|f| view.draw(f))?;
            dirty = false;
        }
        fault.fire()?;
        // The tests' hung view: it says so on the screen and never ends by itself.
        if screen.stop.stopped() && fault.deaf() {
            eprint!("\r\nsyscost: test fault: the view hangs\r\n");
            loop {
                std::thread::park();
            }
        }
        if screen.terminated() || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Exit::Quit);
        }
        if !first {
            screen.wait(samples, [deadline, fault.due()].into_iter().flatten().min());
        }
        first = false;
        // Every key waiting, then the samples.
        loop {
            match screen.next_input() {
                Input::Key(k) => {
                    dirty = true;
                    match view.key(k) {
                        Step::Continue => {}
                        Step::Quit => return Ok(Exit::Quit),
                        Step::Leave(l) => return Ok(Exit::Leave(l)),
                    }
                }
                Input::Redraw => dirty = true,
                Input::Nothing => break,
                Input::Gone => return Ok(Exit::Quit),
            }
        }
        if view.samples(samples)? {
            fault.arm();
            dirty = true;
        }
    }
}

/// A failure on purpose, for the tests that the terminal is restored however a view
/// ends: `SYSCOST_TEST_FAULT=error` or `panic` makes the view fail that way 1 s after it
/// showed its first figures. Debug builds only (the tests'): a release build reads no
/// such variable.
struct TestFault(Option<(String, Option<Instant>)>);

impl TestFault {
    fn from_env() -> Self {
        #[cfg(debug_assertions)]
        let fault = std::env::var("SYSCOST_TEST_FAULT")
            .ok()
            .map(|how| (how, None));
        #[cfg(not(debug_assertions))]
        let fault = None;
        Self(fault)
    }

    /// `deaf`: the view hangs at a signal (and says so on the screen), for the tests
    /// that a second signal ends syscost at once.
    fn deaf(&self) -> bool {
        self.0.as_ref().is_some_and(|(how, _)| how == "deaf")
    }

    /// The view shows figures: the fault is due a second later.
    fn arm(&mut self) {
        if let Some((_, at @ None)) = &mut self.0 {
            *at = Some(Instant::now() + Duration::from_secs(1));
        }
    }

    /// When the armed fault fires, for the loop's wait (`deaf` fires at a signal, not
    /// at a time).
    fn due(&self) -> Option<Instant> {
        self.0
            .as_ref()
            .filter(|(how, _)| how != "deaf")
            .and_then(|(_, at)| *at)
    }

    fn fire(&mut self) -> Result<()> {
        match &self.0 {
            Some((how, Some(at))) if Instant::now() >= *at => match how.as_str() {
                "panic" => panic!("SYSCOST_TEST_FAULT=panic"),
                "error" => anyhow::bail!("SYSCOST_TEST_FAULT=error: the view failed on purpose"),
                // Not a timed fault: it stays until the signal.
                "deaf" => Ok(()),
                _ => {
                    self.0 = None;
                    Ok(())
                }
            },
            _ => Ok(()),
        }
    }
}
