//! `syscost export -p PID[,PID...]`: no terminal and no table, the processes' counters on
//! an OpenMetrics endpoint until a signal or `-d`.
//!
//! One set of programs traces all the processes, each in a statistics slot of its own,
//! so each has series of its own and a process more costs its tables, not another
//! program on every syscall of the machine. A process that exits keeps its final counts
//! on the endpoint; when all have exited (and no children are followed), the programs
//! are unloaded and the endpoint serves the final figures until stopped.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result, bail};

use crate::{
    cli::{ExportArgs, seconds},
    plan::Plan,
};
use syscost_engine::{
    process,
    session::Watch,
    tracer::{Auto, TracerOptions},
};
use syscost_views::metrics::{Metrics, Source, server::MetricsServer};

/// Processes one export keeps apart: each costs 170 KB of statistics per CPU, and the
/// pool's positions are 16-bit.
pub const MAX_PROCESSES: usize = 256;

pub fn export(args: &ExportArgs) -> Result<i32> {
    if args.per_process && args.cgroup.is_none() {
        bail!("--per-process splits a --cgroup profile: give --cgroup PATH");
    }
    if let Some(p) = &args.calls_by_stack.stacks {
        if args.top {
            bail!(
                "--stacks counts the calls of the processes export profiles in full (-p, --cgroup); --top keeps per-process figures only"
            );
        }
        syscost_report::output::check(p)?;
    }
    if args.top || args.cgroup.is_some() {
        return export_scope(args);
    }
    let duration = seconds(args.timing.duration);
    let mut seen = BTreeSet::new();
    let pids: Vec<u32> = args
        .pids
        .iter()
        .copied()
        .filter(|p| seen.insert(*p))
        .collect();
    if pids.is_empty() {
        bail!("no process to export: give -p PID[,PID...]");
    }
    if pids.len() > MAX_PROCESSES {
        bail!(
            "export keeps at most {MAX_PROCESSES} processes apart, not {}: run one export per group of processes",
            pids.len()
        );
    }
    let targets = pids
        .iter()
        .map(|&pid| process::open(pid))
        .collect::<Result<Vec<_>>>()?;

    // Its totals since the start are the final figures the endpoint keeps.
    let mut plan = Plan::new(
        TracerOptions {
            follow_forks: args.follow_forks,
            slots: targets.len() as u32,
            ..Default::default()
        },
        args.groups(),
    )?
    .service(true);
    let mut tracer = plan.load()?;
    let mut sources = Vec::new();
    for (slot, t) in (0..).zip(&targets) {
        tracer.trace_process_in(t.pid, slot)?;
        if process::has_exited(&t.pidfd) {
            bail!("process {} exited before tracing began", t.pid);
        }
        sources.push(Source::new(t.pid, t.comm.clone(), slot));
    }
    let session = plan.start(tracer, Watch::Nothing)?;
    let started = std::time::Instant::now();
    let handle = session.handle();
    let (server, pusher) = serve(
        Metrics::new(handle.clone(), sources)
            .with_slow(plan.reports_slow())
            .with_stacks(plan.stacks_out.is_some()),
        &mut plan,
        args,
    )?;
    let names: Vec<String> = targets
        .iter()
        .map(|t| format!("{} ({})", t.pid, syscost_report::untrusted::shown(&t.comm)))
        .collect();
    // The signals are caught before the line that says Ctrl-C stops.
    let stop = syscost_engine::signals::Stop::catch()?;
    eprintln!(
        "syscost: serving the syscalls of process {} at {}; Ctrl-C to stop",
        names.join(", "),
        server.url()
    );
    super::note_own_cost(&handle);
    note_push(args);

    let deadline = duration.map(|d| std::time::Instant::now() + d);
    // The targets still running.
    let mut running: Vec<process::Process> = targets;
    loop {
        let pidfds = running
            .iter()
            .map(|t| std::os::fd::AsRawFd::as_raw_fd(&t.pidfd));
        let fds: Vec<std::os::fd::RawFd> = std::iter::once(stop.fd()).chain(pidfds).collect();
        // Asleep until a signal, a target's exit or `-d`.
        let ready = syscost_engine::wake::wait(&fds, deadline);
        if stop.stopped() || deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let (gone, alive): (Vec<_>, Vec<_>) = running
            .into_iter()
            .zip(ready.into_iter().skip(1))
            .partition(|(_, exited)| *exited);
        running = alive.into_iter().map(|(t, _)| t).collect();
        let ended = gone.len();
        for (i, (t, _)) in gone.into_iter().enumerate() {
            // The endpoint serves the latest sample: one is taken now, with the process's
            // final counts (its threads are gone, each call counted), before the line
            // says they are there. With nothing left to trace (children may live on
            // under -f) the programs would only cost every syscall of the machine:
            // unloaded, with a last sample.
            let unloaded = if running.is_empty() && !args.follow_forks && i + 1 == ended {
                handle.unload()?
            } else {
                handle.sample_now()?;
                false
            };
            eprintln!(
                "syscost: process {} exited; its final counts stay on the endpoint",
                t.pid
            );
            if unloaded {
                eprintln!(
                    "syscost: every process exited; programs unloaded, serving the final counts until stopped"
                );
            }
        }
    }
    drop(pusher);
    drop(server);
    let finished = session.finish()?;
    super::write_stacks(
        None,
        plan.stacks_out.as_ref(),
        finished.stacks,
        syscost_report::output::Owner::invoker(),
        Some(started.elapsed().as_nanos() as u64),
    )?;
    Ok(0)
}

/// `export --top` (the whole machine, bounded per-process and per-cgroup series) and
/// `export --cgroup PATH [--per-process]` (one cgroup as one profile, with histograms,
/// and bounded per-process series if asked): until a signal or `-d`.
fn export_scope(args: &ExportArgs) -> Result<i32> {
    let duration = seconds(args.timing.duration);
    let cgroup = args
        .cgroup
        .as_deref()
        .map(syscost_engine::cgroup::resolve)
        .transpose()?;
    let (auto, per_process, pool_from_slot) = match &cgroup {
        Some(cg) => (
            Auto::Cgroup {
                id: cg.id,
                level: cg.level,
            },
            args.per_process,
            0,
        ),
        // The whole machine keeps no histograms: per-process figures only.
        None => (Auto::All, true, 1),
    };
    // Runs for days and serves steps only: no per-process totals.
    let mut plan = Plan::new(
        TracerOptions {
            slots: 1,
            auto,
            per_process,
            pool_from_slot,
            ..Default::default()
        },
        args.groups(),
    )?
    .service(false);
    // The per-process series name their pods, from the first step on.
    plan.session.name_pods = per_process;
    let tracer = plan.load()?;
    let session = plan.start(tracer, Watch::Nothing)?;
    let started = std::time::Instant::now();
    let handle = session.handle();
    let sources = match &cgroup {
        Some(cg) => vec![Source::cgroup(cg.path.clone(), 0)],
        None => Vec::new(),
    };
    let mut metrics = Metrics::new(handle.clone(), sources)
        .with_slow(plan.reports_slow())
        .with_stacks(plan.stacks_out.is_some());
    if per_process {
        metrics = metrics.with_top(args.top_n as usize, cgroup.is_none());
    }
    let (server, pusher) = serve(metrics, &mut plan, args)?;
    let what = match &cgroup {
        Some(cg) => format!(
            "the syscalls of cgroup {}",
            syscost_report::untrusted::shown(&cg.path)
        ),
        None => format!(
            "the syscalls of every process, the {} busiest processes and cgroups apart",
            args.top_n
        ),
    };
    let stop = syscost_engine::signals::Stop::catch()?;
    eprintln!(
        "syscost: serving {what} at {}; Ctrl-C to stop",
        server.url()
    );
    super::note_own_cost(&handle);
    note_push(args);
    stop.wait(duration.map(|d| std::time::Instant::now() + d));
    drop(pusher);
    drop(server);
    let finished = session.finish()?;
    super::write_stacks(
        None,
        plan.stacks_out.as_ref(),
        finished.stacks,
        syscost_report::output::Owner::invoker(),
        Some(started.elapsed().as_nanos() as u64),
    )?;
    Ok(0)
}

/// The endpoint serving `metrics` on the plan's socket and, with `--otlp-endpoint`, the
/// pusher of the same figures (the endpoint then also serves what the pusher does).
fn serve(
    metrics: Metrics,
    plan: &mut crate::plan::Plan,
    args: &ExportArgs,
) -> Result<(MetricsServer, Option<syscost_views::metrics::otlp::Pusher>)> {
    use syscost_views::metrics::otlp::{Counters, Pusher};
    let counters = args
        .otlp_endpoint
        .as_ref()
        .map(|_| std::sync::Arc::new(Counters::default()));
    let metrics = std::sync::Arc::new(match &counters {
        Some(c) => metrics.with_otlp(c.clone()),
        None => metrics,
    });
    let server = MetricsServer::start(
        plan.listener.take().context("bound above")?,
        metrics.clone(),
    )?;
    let pusher = match (&args.otlp_endpoint, counters) {
        (Some(endpoint), Some(counters)) => {
            Some(Pusher::start(endpoint.clone(), metrics, counters)?)
        }
        _ => None,
    };
    Ok((server, pusher))
}

/// Says where the metrics are pushed, after the line that says they are served.
fn note_push(args: &ExportArgs) {
    if let Some(endpoint) = &args.otlp_endpoint {
        eprintln!("syscost: pushing the metrics to {endpoint} over OTLP/HTTP at every sample");
    }
}
