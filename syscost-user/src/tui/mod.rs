//! The live terminal view of `syscost attach` (and `syscost demo`).
//!
//! `app` holds the state, `handler` maps keys to changes, `ui` draws; this module owns
//! the terminal and the sampler that reads the kernel's counters every interval.

pub mod app;
pub mod handler;
pub mod ui;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use self::app::{App, Overhead, Sample, TargetInfo, ThreadRow};
use crate::{
    collector::Snapshot,
    process::{self, Process},
    profile::Target,
    syscall_names,
    tracer::{RunTimeStats, Tracer},
};

/// Settings of the live view.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// Refresh interval.
    pub interval: Duration,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// `--per` unit syscall.
    pub per: Option<String>,
    /// A line of advice under the header.
    pub hint: Option<String>,
    /// Turn BPF run-time statistics on for the own-cost figure.
    pub run_stats: bool,
}

static TERMINATE: AtomicBool = AtomicBool::new(false);

extern "C" fn on_terminate(_: libc::c_int) {
    TERMINATE.store(true, Ordering::Relaxed);
}

/// Restores the terminal when dropped, on every way out of the loop.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Reads the kernel's counters and turns them into samples for the view.
struct Sampler {
    pid: u32,
    attached: Instant,
    baseline: Option<Snapshot>,
    previous: Snapshot,
    previous_at: Instant,
    previous_runs: (u64, u64),
    comms: HashMap<u32, String>,
}

impl Sampler {
    fn target(&self, comm: &str) -> Target {
        Target {
            pid: self.pid,
            comm: comm.to_string(),
            command: None,
        }
    }

    fn sample(
        &mut self,
        tracer: &mut Tracer,
        comm: &str,
        stats_on: bool,
    ) -> Result<(Snapshot, Sample)> {
        let now = tracer.snapshot()?;
        let at = Instant::now();
        let secs = at.duration_since(self.previous_at).as_secs_f64();
        let interval = now.since(&self.previous);
        let cumulative = match &self.baseline {
            Some(b) => now.since(b),
            None => now.clone(),
        };
        let runs = tracer.program_run_totals();
        let overhead = stats_on.then(|| {
            let (dt, dc) = (
                runs.0.saturating_sub(self.previous_runs.0),
                runs.1.saturating_sub(self.previous_runs.1),
            );
            Overhead {
                ns_per_run: if dc == 0 { 0.0 } else { dt as f64 / dc as f64 },
                cpu_percent: 100.0 * dt as f64 / (secs.max(1e-9) * 1e9),
            }
        });
        let tids = task_ids(self.pid);
        let threads = tracer
            .thread_stats(&tids)?
            .into_iter()
            .map(|(tid, s)| ThreadRow {
                tid,
                comm: self
                    .comms
                    .entry(tid)
                    .or_insert_with(|| thread_comm(self.pid, tid))
                    .clone(),
                calls: s.calls,
                total_ns: s.total_ns,
                top: syscall_names::name(s.top_nr),
            })
            .collect();
        let duration_ns = self.attached.elapsed().as_nanos() as u64;
        let sample = Sample {
            cumulative: cumulative.to_profile(
                self.target(comm),
                duration_ns,
                tracer.offcpu_tracked(),
            )?,
            interval: interval.to_profile(
                self.target(comm),
                (secs * 1e9) as u64,
                tracer.offcpu_tracked(),
            )?,
            interval_secs: secs,
            attached_for: self.attached.elapsed(),
            threads,
            thread_count: tids.len(),
            overhead,
        };
        self.previous = now.clone();
        self.previous_at = at;
        self.previous_runs = runs;
        Ok((now, sample))
    }
}

/// Reads terminal events on a thread of its own, so that the loop keeps control when
/// the input side misbehaves (on a hung-up terminal the reader spins on end-of-file; the
/// loop notices the hang-up and ends the process).
fn spawn_input() -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(ev) = event::read() {
            if tx.send(ev).is_err() {
                break;
            }
        }
    });
    rx
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

fn task_ids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn thread_comm(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// Runs the live view until the user quits, SIGTERM/SIGHUP, or `duration`. Returns the
/// last snapshot (cumulative since load) for the final table.
pub fn run(tracer: &mut Tracer, target: &Process, options: &LiveOptions) -> Result<Snapshot> {
    // Statistics are optional: without them the header says n/a.
    let stats = options
        .run_stats
        .then(|| RunTimeStats::enable().ok())
        .flatten();
    TERMINATE.store(false, Ordering::Relaxed);
    crate::signals::catch(&[libc::SIGTERM, libc::SIGHUP, libc::SIGINT], on_terminate);
    let first = tracer.snapshot()?;
    let mut sampler = Sampler {
        pid: target.pid,
        attached: Instant::now(),
        baseline: None,
        previous: first.clone(),
        previous_at: Instant::now(),
        previous_runs: tracer.program_run_totals(),
        comms: HashMap::new(),
    };
    // The first screen shows nothing yet: what the tracer counted before this point has no
    // interval to be a rate of (it is in the first sample's cumulative figures).
    let empty =
        first
            .since(&first)
            .to_profile(sampler.target(&target.comm), 0, tracer.offcpu_tracked())?;
    let info = TargetInfo {
        pid: target.pid,
        comm: target.comm.clone(),
        threads: process::thread_count(target.pid),
    };
    let mut app = App::new(info, empty);
    app.per = options.per.clone();
    app.hint = options.hint.clone();

    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let _guard = TerminalGuard;
    let input = spawn_input();
    let interval = options.interval.max(Duration::from_millis(100));
    let deadline = options.duration.map(|d| Instant::now() + d);
    let mut next_tick = Instant::now() + interval;
    let mut latest = first;
    let mut dirty = true;
    loop {
        if dirty {
            terminal.draw(|f| ui::render(f, &app))?;
            dirty = false;
        }
        let now = Instant::now();
        if TERMINATE.load(Ordering::Relaxed)
            || deadline.is_some_and(|d| now >= d)
            || terminal_hung_up()
        {
            break;
        }
        let wait = next_tick
            .saturating_duration_since(now)
            .min(Duration::from_millis(200));
        match input.recv_timeout(wait) {
            Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => {
                if handler::handle_key(&mut app, k) == handler::Action::Quit {
                    break;
                }
                dirty = true;
            }
            Ok(Event::Resize(..)) => dirty = true,
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The input thread ended: the terminal is gone.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if app.reset_requested {
            app.reset_requested = false;
            sampler.baseline = Some(latest.clone());
            app.clear_history();
        }
        let exited = !app.exited && process::has_exited(&target.pidfd);
        if !app.exited && (exited || Instant::now() >= next_tick) {
            let (snap, sample) = sampler.sample(tracer, &target.comm, stats.is_some())?;
            latest = snap;
            let was_paused = app.paused;
            if exited {
                // The last sample is shown even when paused: the view freezes on it.
                app.paused = false;
                app.exited = true;
            }
            app.apply(sample);
            app.paused = was_paused && !exited;
            next_tick = Instant::now() + interval;
            dirty = true;
        }
    }
    drop(terminal);
    Ok(if app.exited {
        latest
    } else {
        tracer.snapshot()?
    })
}
