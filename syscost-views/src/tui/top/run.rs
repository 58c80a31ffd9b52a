//! `syscost top`'s live view in the shared loop ([`crate::tui::live`]): the process
//! table fed by the session's samples, and on Enter the per-syscall view of a process
//! (attach's, its statistics moved to the drill-down slot while it is shown).

use std::time::{Duration, Instant};

use anyhow::Result;
use ratatui::{Frame, crossterm::event::KeyEvent};
use syscost_engine::{
    process,
    session::{SessionHandle, Subscription, Watch},
};

use super::state::{Action, TopView};
use crate::tui::{
    Ended, Screen,
    attach::{LiveOptions, live_with},
    live::{self, Exit, Step},
};

/// What the process table needs besides its view's state.
pub struct TopLive {
    /// The command's `-d`: the end, counted from when the view opens.
    pub duration: Option<Duration>,
    /// The slot of the kernel side's full statistics the drill-down's process moves to.
    pub drill_slot: u32,
    /// `--stacks`: the drill-down has the callers pane.
    pub callers_pane: bool,
}

/// A drill-down asked for by a key.
struct Drill {
    pid: u32,
    threads: bool,
}

/// The process table as the loop drives it.
struct Table {
    view: TopView,
    started: Instant,
}

impl live::View for Table {
    type Leave = Drill;

    fn draw(&mut self, frame: &mut Frame) {
        self.view.elapsed = self.started.elapsed();
        super::render::render(frame, &self.view);
    }

    fn key(&mut self, key: KeyEvent) -> Step<Drill> {
        match self.view.handle_key(key) {
            Action::Quit => Step::Quit,
            Action::Drill { pid, threads } => Step::Leave(Drill { pid, threads }),
            Action::Continue => Step::Continue,
        }
    }

    fn samples(&mut self, samples: &Subscription) -> Result<bool> {
        let mut shown = false;
        while let Ok(sample) = samples.try_recv() {
            let view = &mut self.view;
            view.dropped = sample.snapshot(0).dropped();
            view.own_cost = match &sample.own_cost {
                Ok(Some(r)) => r.to_string(),
                Ok(None) => "measuring".to_string(),
                Err(why) => why.clone(),
            };
            let secs = sample.taken.duration_since(sample.since).as_secs_f64();
            view.apply(sample.top.interval.clone(), secs);
            shown = true;
        }
        Ok(shown)
    }
}

/// Runs the process table (`view`) until the user quits, a signal, the terminal goes
/// away, or the end; a drill-down and back in between as often as asked.
pub fn run(session: &SessionHandle, mut view: TopView, options: &TopLive) -> Result<()> {
    let mut screen = Screen::open()?;
    session.measure_own_cost();
    view.offcpu = session.offcpu_tracked();
    let mut samples = session.subscribe();
    let started = Instant::now();
    let deadline = options.duration.map(|d| started + d);
    let mut table = Table { view, started };
    while let Exit::Leave(Drill { pid, threads }) =
        live::drive(&mut screen, &samples, deadline, &mut table)?
    {
        // No samples wait for the table while it is away.
        drop(samples);
        let (ended, back) = drill(&mut screen, session, pid, threads, deadline, options)?;
        samples = back;
        if ended == Ended::Quit {
            break;
        }
    }
    Ok(())
}

/// Shows process `pid`'s syscalls (its statistics moved to the drill-down slot while
/// shown) until Esc or quit; and the samples for the process table from the moment the
/// per-process steps start again.
fn drill(
    screen: &mut Screen,
    session: &SessionHandle,
    pid: u32,
    threads: bool,
    deadline: Option<Instant>,
    options: &TopLive,
) -> Result<(Ended, Subscription)> {
    let Ok(target) = process::open(pid) else {
        // Gone since the last refresh: nothing to show.
        return Ok((Ended::Back, session.subscribe()));
    };
    session.watch(Watch::Process {
        pid,
        pidfd: target.pidfd.try_clone()?,
    });
    session.drill(pid)?;
    // A sample of the drilled process's threads before the view starts.
    session.sample_now()?;
    let live_options = LiveOptions {
        duration: deadline.map(|d| d.saturating_duration_since(Instant::now())),
        per: None,
        hint: Some(
            "from syscost top: syscalls since Enter, threads since first seen · Esc goes back"
                .to_string(),
        ),
        callers_pane: options.callers_pane,
        ..Default::default()
    };
    let result = live_with(
        screen,
        session,
        &target,
        options.drill_slot,
        true,
        threads,
        &live_options,
    );
    // Back to the per-process figures only, whatever happened; subscribed first, so
    // the first step after it reaches the table.
    let samples = session.subscribe();
    session.drill(0)?;
    session.watch(Watch::Nothing);
    Ok((result?.1, samples))
}
