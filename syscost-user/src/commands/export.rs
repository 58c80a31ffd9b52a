//! `syscost export -p PID[,PID...]`: no terminal and no table, the processes' counters on
//! an OpenMetrics endpoint until a signal or `-d`.
//!
//! Each process has a tracer of its own, so each has series of its own (the kernel side
//! sums every process it traces). Every tracer runs on every syscall of the machine, so
//! each added process adds its filter's cost to all of them. When a process exits its
//! programs are unloaded and its final counts stay on the endpoint.

use std::{collections::BTreeSet, time::Duration};

use anyhow::{Context as _, Result, bail};
use tokio::{
    io::unix::AsyncFd,
    signal::unix::{SignalKind, signal},
    sync::mpsc,
    time::sleep,
};

use crate::{
    cli::{ExportArgs, seconds},
    metrics::{Source, server::MetricsServer},
    process,
    tracer::{Tracer, TracerOptions},
};

pub fn export(args: &ExportArgs) -> Result<i32> {
    let duration = seconds(args.duration, "-d")?;
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
    let targets = pids
        .iter()
        .map(|&pid| process::open(pid))
        .collect::<Result<Vec<_>>>()?;

    let listener = MetricsServer::bind(args.metrics_addr)?;
    let stats = if args.no_run_stats {
        None
    } else {
        super::run_time_stats()
    };
    let mut tracers = Vec::new();
    let mut sources = Vec::new();
    for t in &targets {
        let mut tracer = Tracer::load(TracerOptions {
            follow_forks: args.follow_forks,
            offcpu: !args.no_offcpu,
        })?;
        tracer.trace_process(t.pid)?;
        sources.push(Source::new(
            t.pid,
            t.comm.clone(),
            tracer.reader()?,
            stats.is_some(),
        ));
        tracers.push(Some(tracer));
    }
    let sources = std::sync::Arc::new(sources);
    let server = MetricsServer::start(listener, sources.clone())?;
    let names: Vec<String> = targets
        .iter()
        .map(|t| format!("{} ({})", t.pid, t.comm))
        .collect();
    eprintln!(
        "syscost: serving the syscalls of process {} at http://{}/metrics; Ctrl-C to stop",
        names.join(", "),
        server.local_addr()
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    runtime.block_on(async {
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        let mut sighup = signal(SignalKind::hangup())?;
        let (exits, mut exited) = mpsc::unbounded_channel();
        for (i, t) in targets.into_iter().enumerate() {
            // SAFETY: the OwnedFd moves into the AsyncFd and stays open as long as it lives.
            let fd = unsafe {
                AsyncFd::register_with_interest(t.pidfd, tokio::io::Interest::READABLE)
            }
            .map_err(|e| anyhow::anyhow!("cannot watch process {}: {e}", t.pid))?;
            let exits = exits.clone();
            tokio::spawn(async move {
                let _ = fd.readable().await;
                let _ = exits.send((i, t.pid));
            });
        }
        let deadline = sleep(duration.unwrap_or(Duration::MAX / 4));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = sigint.recv() => break,
                _ = sigterm.recv() => break,
                _ = sighup.recv() => break,
                _ = &mut deadline, if duration.is_some() => break,
                Some((i, pid)) = exited.recv() => {
                    // Its children may live on under -f; otherwise nothing is left to
                    // trace and the programs would only cost every syscall of the machine.
                    if !args.follow_forks {
                        sources[i].run_ns();
                        tracers[i] = None;
                    }
                    eprintln!("syscost: process {pid} exited; its final counts stay on the endpoint");
                }
            }
        }
        anyhow::Ok(())
    })?;
    drop(server);
    drop(tracers);
    Ok(0)
}
