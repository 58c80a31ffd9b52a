//! `syscost attach`'s live view (and a drill-down from `syscost top`): one process's
//! syscalls, fed by the session's samples through the shared loop ([`super::live`]).
//! `app` holds its state, `handler` maps its keys, `ui` draws it.

use std::time::{Duration, Instant};

use anyhow::Result;
use ratatui::{Frame, crossterm::event::KeyEvent};

use super::{
    Ended, Screen,
    app::{App, Refresh, STUCK_AFTER, StuckCall, TargetInfo, ThreadRow},
    handler,
    live::{self, Exit, Step},
    ui,
};
use syscost_engine::{
    collector::Snapshot,
    process::Process,
    sampler::Intervals,
    session::{self, SessionHandle, Subscription},
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
    pub callers_pane: bool,
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
    app.stacks = options.callers_pane.then(Default::default);
    app.stacks_of = drilled.then_some(target.pid);

    let mut view = AttachView {
        app,
        feed,
        session,
        comm: target.comm.clone(),
        latest: first,
    };
    let deadline = options.duration.map(|d| Instant::now() + d);
    let ended = match live::drive(screen, &samples, deadline, &mut view)? {
        Exit::Quit => Ended::Quit,
        Exit::Leave(()) => Ended::Back,
    };
    // No view shows the thread list or the callers any more: the samples stop reading
    // names and stacks.
    session.want_thread_names(false);
    session.want_stacks(false);
    let last = if view.app.exited {
        view.latest
    } else {
        session.sample_now()?.snapshot(slot)
    };
    Ok((last, ended))
}

/// The per-syscall view in the shared loop: its state, and the feed that turns the
/// session's samples into its figures.
struct AttachView<'s> {
    app: App,
    feed: Feed,
    session: &'s SessionHandle,
    comm: String,
    /// The last snapshot shown (cumulative since load).
    latest: Snapshot,
}

impl live::View for AttachView<'_> {
    /// Esc in a drill-down: back to top's table.
    type Leave = ();

    fn draw(&mut self, frame: &mut Frame) {
        ui::render(frame, &self.app);
    }

    fn key(&mut self, key: KeyEvent) -> Step<()> {
        match handler::handle_key(&mut self.app, key) {
            handler::Action::Quit => Step::Quit,
            handler::Action::Back => Step::Leave(()),
            handler::Action::Continue => Step::Continue,
        }
    }

    fn samples(&mut self, samples: &Subscription) -> Result<bool> {
        let app = &mut self.app;
        // Threads' names are read only while the thread list is shown, the calls by stack
        // only while the callers pane is.
        self.session.want_thread_names(app.show_threads);
        self.session.want_stacks(app.show_callers);
        if app.reset_requested {
            app.reset_requested = false;
            self.feed.intervals.reset();
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
        let Some(s) = due else {
            return Ok(false);
        };
        let (snap, sample) = self.feed.sample(&s, &self.comm, app.show_threads)?;
        self.latest = snap;
        let was_paused = app.paused;
        if s.exited {
            // The last sample is shown even when paused: the view freezes on it.
            app.paused = false;
            app.exited = true;
        }
        app.apply(sample);
        app.paused = was_paused && !s.exited;
        Ok(true)
    }
}
