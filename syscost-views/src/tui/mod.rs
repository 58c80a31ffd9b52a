//! The live terminal view of `syscost attach` (and `syscost demo`).
//!
//! `app` holds the state, `handler` maps keys to changes, `ui` draws; this module owns
//! the terminal and feeds the view the session's samples (see [`syscost_engine::session`]).

pub mod app;
pub mod handler;
pub mod keys;
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
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use self::app::{App, Refresh, STUCK_AFTER, StuckCall, TargetInfo, ThreadRow};
use syscost_engine::{
    collector::Snapshot,
    process::Process,
    sampler::Intervals,
    session::{self, SessionHandle, Subscription},
    signals::Stop,
    wake::Wake,
};
use syscost_report::{
    profile::{Features, Target},
    units,
};

/// Settings of the live view.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// `--per` unit syscall.
    pub per: Option<String>,
    /// A line of advice under the header.
    pub hint: Option<String>,
    /// What the header names instead of the process (`cgroup /x`).
    pub label: Option<String>,
    /// With `--slow`: the `l` view of the slow calls the samples bring.
    pub slow: bool,
    /// With `--stacks`: the callers pane (`w`) of the calls by stack the samples bring.
    pub stacks: bool,
}

/// Restores the terminal when dropped, on every way out of the loop.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
        syscost_engine::signals::terminal_given_back();
    }
}

/// Turns the session's samples into the view's: the interval since the last one shown,
/// the threads' rows, the stuck calls. Pure: everything comes in the sample.
struct Feed {
    pid: u32,
    slot: u32,
    attached: Instant,
    intervals: Intervals,
    offcpu: bool,
    features: Features,
}

impl Feed {
    fn target(&self, comm: &str) -> Target {
        Target::process(self.pid, comm)
    }

    /// The view's sample of session sample `s`; the threads' rows only when they are
    /// shown.
    fn sample(
        &mut self,
        s: &session::Sample,
        comm: &str,
        with_threads: bool,
    ) -> Result<(Snapshot, Refresh)> {
        let now = s.snapshot(self.slot);
        let step = self.intervals.next_at(now.clone(), s.taken);
        let mut stuck: Vec<StuckCall> = s
            .threads
            .iter()
            .filter_map(|t| {
                let (id, elapsed) = t.state.in_syscall?;
                (elapsed >= STUCK_AFTER).then(|| StuckCall {
                    tid: t.state.tid,
                    syscall: id.name(),
                    elapsed,
                    blocked: t.state.switched_out,
                })
            })
            .collect();
        stuck.sort_by_key(|c| std::cmp::Reverse(c.elapsed));
        let threads = if with_threads {
            s.threads
                .iter()
                .map(|t| ThreadRow {
                    tid: t.state.tid,
                    comm: t.comm.clone(),
                    calls: t.state.calls,
                    total_ns: t.state.total_ns,
                    now: t
                        .state
                        .in_syscall
                        .map(|(id, d)| {
                            format!("{} for {}", id.name(), units::human_ns(d.as_nanos() as u64))
                        })
                        .unwrap_or_default(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let (overhead, overhead_note) = match &s.own_cost {
            Ok(Some(r)) => (Some(*r), None),
            Ok(None) => (None, Some("measuring".to_string())),
            Err(why) => (None, Some(why.clone())),
        };
        let offcpu = self.offcpu;
        let sample = Refresh {
            cumulative: step
                .cumulative
                .to_profile(
                    self.target(comm),
                    self.attached.elapsed().as_nanos() as u64,
                    offcpu,
                )?
                .with_features(&self.features),
            interval: step
                .interval
                .to_profile(self.target(comm), (step.interval_secs * 1e9) as u64, offcpu)?
                .with_features(&self.features),
            interval_secs: step.interval_secs,
            attached_for: self.attached.elapsed(),
            threads,
            thread_count: s.thread_count,
            slow: s.slow.as_ref().map(|(calls, _)| calls.clone()),
            slow_received: s.slow.as_ref().map_or(0, |(_, n)| *n),
            stacks: s.stacks.clone(),
            overhead,
            overhead_note,
            stuck,
        };
        Ok((now, sample))
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

/// A failure on purpose, for the tests that the terminal is restored however the view
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

/// How a live view ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Quit, a signal, `duration`, or the terminal gone: the whole command ends.
    Quit,
    /// Esc in a drill-down: back to the view it came from.
    Back,
}

/// Runs the live view until the user quits, SIGTERM/SIGHUP, or `duration`. Returns the
/// last snapshot shown (cumulative since load).
pub fn run(session: &SessionHandle, target: &Process, options: &LiveOptions) -> Result<Snapshot> {
    let mut screen = Screen::open()?;
    let (last, _) = live_with(&mut screen, session, target, 0, false, false, options)?;
    Ok(last)
}

/// The per-syscall view of process `target`, whose statistics are in `slot`, on an open
/// screen, fed by the session's samples (which watch its threads). `drilled`: entered
/// from `syscost top`, so Esc goes back and the figures start from now (the slot may
/// hold an earlier drill-down's); `threads`: start on the thread list.
pub fn live_with(
    screen: &mut Screen,
    session: &SessionHandle,
    target: &Process,
    slot: u32,
    drilled: bool,
    threads: bool,
    options: &LiveOptions,
) -> Result<(Snapshot, Ended)> {
    session.measure_own_cost();
    if options.slow {
        session.want(syscost_engine::session::Want::SLOW_CALLS);
    }
    let samples = session.subscribe();
    let latest = session.latest();
    let first = latest.snapshot(slot);
    let offcpu = session.offcpu_tracked();
    let mut feed = Feed {
        pid: target.pid,
        slot,
        attached: Instant::now(),
        intervals: Intervals::new_at(first.clone(), latest.taken),
        offcpu,
        features: session.features().clone(),
    };
    if drilled {
        feed.intervals.reset();
    }
    // The first screen shows nothing yet: what the tracer counted before this point has no
    // interval to be a rate of (it is in the first sample's cumulative figures).
    let empty = first
        .since(&first)
        .to_profile(feed.target(&target.comm), 0, offcpu)?;
    let info = TargetInfo {
        pid: target.pid,
        comm: target.comm.clone(),
        threads: latest.thread_count,
        label: options.label.clone(),
    };
    let mut app = App::new(info, empty);
    app.per = options.per.clone();
    app.hint = options.hint.clone();
    app.drilled = drilled;
    app.show_threads = threads;
    // The slow calls' view is there from the start with --slow, empty until calls come;
    // so is the callers pane with --stacks.
    app.slow = options.slow.then(Vec::new);
    app.stacks = options.stacks.then(Default::default);
    app.stacks_of = drilled.then_some(target.pid);

    let mut ended = Ended::Quit;
    let deadline = options.duration.map(|d| Instant::now() + d);
    let mut latest = first;
    let mut dirty = true;
    let mut fault = TestFault::from_env();
    loop {
        if dirty {
            screen.terminal.draw(|f| ui::render(f, &app))?;
            dirty = false;
        }
        fault.fire()?;
        let now = Instant::now();
        // The tests' hung view: it says so on the screen and never ends by itself.
        if screen.stop.stopped() && fault.deaf() {
            eprint!("\r\nsyscost: test fault: the view hangs\r\n");
            loop {
                std::thread::park();
            }
        }
        if screen.terminated() || deadline.is_some_and(|d| now >= d) {
            break;
        }
        screen.wait(
            &samples,
            [deadline, fault.due()].into_iter().flatten().min(),
        );
        let mut quit = false;
        while !quit {
            match screen.next_input() {
                keys::Input::Key(k) => {
                    match handler::handle_key(&mut app, k) {
                        handler::Action::Quit => quit = true,
                        handler::Action::Back => {
                            ended = Ended::Back;
                            quit = true;
                        }
                        handler::Action::Continue => {}
                    }
                    dirty = true;
                }
                keys::Input::Redraw => dirty = true,
                keys::Input::Nothing => break,
                keys::Input::Gone => quit = true,
            }
        }
        if quit {
            break;
        }
        // Threads' names are read only while the thread list is shown, the calls by stack
        // only while the callers pane is.
        session.want_thread_names(app.show_threads);
        session.want_stacks(app.show_callers);
        if app.reset_requested {
            app.reset_requested = false;
            feed.intervals.reset();
            app.clear_history();
        }
        // The newest sample that ends one of the session's intervals (its clock is the
        // view's), and the one that says the target exited at once (samples taken for
        // others, a scrape's or an own-cost window's, wait their turn).
        let mut due = None;
        while let Ok(s) = samples.try_recv() {
            if !app.exited && (s.exited || s.due) {
                due = Some(s);
            }
        }
        if let Some(s) = due {
            let (snap, sample) = feed.sample(&s, &target.comm, app.show_threads)?;
            latest = snap;
            let was_paused = app.paused;
            if s.exited {
                // The last sample is shown even when paused: the view freezes on it.
                app.paused = false;
                app.exited = true;
            }
            app.apply(sample);
            fault.arm();
            app.paused = was_paused && !s.exited;
            dirty = true;
        }
    }
    // No view shows the thread list or the callers any more: the samples stop reading
    // names and stacks.
    session.want_thread_names(false);
    session.want_stacks(false);
    let last = if app.exited {
        latest
    } else {
        session.sample_now()?.snapshot(slot)
    };
    Ok((last, ended))
}
