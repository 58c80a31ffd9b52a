//! `syscost attach -p PID`: profile a running process until Ctrl-C, `-d`, or its exit.

use std::{
    io::IsTerminal as _,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use tokio::{
    io::unix::AsyncFd,
    signal::unix::{SignalKind, signal},
    time::{MissedTickBehavior, interval_at, sleep},
};

use crate::{
    cli::{AttachArgs, seconds},
    collector::Snapshot,
    process,
    profile::Target,
    sampler::{Sampler, Series, SharedSampler},
    tracer::{Tracer, TracerOptions},
    tui::{self, LiveOptions},
};

/// Why tracing stopped.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Interrupted,
    Duration,
    TargetExited,
}

pub fn attach(args: &AttachArgs) -> Result<i32> {
    attach_with(args, None)
}

/// `attach`, with an optional line of advice for the live view (the demo's).
pub fn attach_with(args: &AttachArgs, hint: Option<String>) -> Result<i32> {
    super::check_outputs(&args.view, &[args.json.as_deref()])?;
    let duration = seconds(args.duration);
    let every = seconds(args.interval);
    let target = process::open(args.pid)?;
    let listener = super::bind_metrics(args.metrics_addr)?;
    let mut tracer = Tracer::load(TracerOptions {
        follow_forks: args.follow_forks,
        offcpu: !args.no_offcpu,
        slots: 1,
    })?;
    tracer.trace_process(target.pid)?;
    if process::has_exited(&target.pidfd) {
        anyhow::bail!("process {} exited before tracing began", target.pid);
    }
    let offcpu = tracer.offcpu_tracked();
    let sampler = Sampler::new(tracer, !args.no_run_stats).shared();
    let metrics = super::serve_metrics(listener, &sampler, target.pid, &target.comm)?;
    let hint = hint.or_else(|| {
        metrics
            .as_ref()
            .map(|m| format!("metrics at http://{}/metrics", m.local_addr()))
    });
    let info = Target {
        pid: target.pid,
        comm: target.comm.clone(),
        command: None,
    };
    let started = Instant::now();
    let last = if !args.no_tui && std::io::stdout().is_terminal() {
        let options = LiveOptions {
            interval: every.unwrap_or(Duration::from_secs(1)),
            duration,
            per: args.view.per.clone(),
            hint,
        };
        tui::run(&sampler, &target, &options)?
    } else {
        text(&sampler, target, args, duration, every, &info, started)?
    };
    let profile = last.to_profile(info, started.elapsed().as_nanos() as u64, offcpu)?;
    drop(metrics);
    sampler.lock().unwrap_or_else(|e| e.into_inner()).unload()?;
    super::print_out(&super::finish(profile, &args.view, args.json.as_deref())?);
    Ok(0)
}

/// The text mode: a table per `-i` interval if asked, until a signal, `-d` or the
/// target's exit; the last snapshot.
fn text(
    sampler: &SharedSampler,
    target: process::Process,
    args: &AttachArgs,
    duration: Option<Duration>,
    every: Option<Duration>,
    info: &Target,
    started: Instant,
) -> Result<Snapshot> {
    let snapshot = || {
        sampler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .snapshot(0)
    };
    let offcpu = sampler
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .offcpu_tracked();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let end = runtime.block_on(async {
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        let mut sighup = signal(SignalKind::hangup())?;
        // Said once the signals are caught: from this line on, Ctrl-C ends the profile.
        eprintln!(
            "syscost: tracing process {} ({}), {} threads; Ctrl-C to stop",
            target.pid,
            target.comm,
            process::thread_count(target.pid)
        );
        // SAFETY: the OwnedFd moves into the AsyncFd and stays open as long as it lives.
        let exited = unsafe { AsyncFd::register_with_interest(target.pidfd, tokio::io::Interest::READABLE) }
            .map_err(|e| anyhow::anyhow!("cannot watch the target's pidfd: {e}"))?;
        let deadline = sleep(duration.unwrap_or(Duration::MAX / 4));
        tokio::pin!(deadline);
        let period = every.unwrap_or(Duration::from_secs(3600));
        let mut ticks = interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut series = Series::new(snapshot()?);
        let end = loop {
            tokio::select! {
                _ = sigint.recv() => break End::Interrupted,
                _ = sigterm.recv() => break End::Interrupted,
                _ = sighup.recv() => break End::Interrupted,
                _ = &mut deadline, if duration.is_some() => break End::Duration,
                _ = exited.readable() => break End::TargetExited,
                _ = ticks.tick(), if every.is_some() => {
                    let step = series.next(snapshot()?);
                    let profile = step.interval.to_profile(info.clone(), (step.interval_secs * 1e9) as u64, offcpu)?;
                    super::print_out(&format!(
                        "--- interval ending {:.1} s after attach ({:.2} s) ---\n",
                        started.elapsed().as_secs_f64(),
                        step.interval_secs
                    ));
                    super::print_out(&super::finish(profile, &args.view, None)?);
                }
            }
        };
        anyhow::Ok(end)
    })?;

    let last = snapshot()?;
    if end == End::TargetExited {
        eprintln!("syscost: process {} exited", args.pid);
    }
    Ok(last)
}
