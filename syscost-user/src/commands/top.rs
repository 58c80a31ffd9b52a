//! `syscost top`: every process of the machine (or of a cgroup), live.
//!
//! One set of programs traces every process but syscost (or every process of the
//! cgroup): per-process figures for all of them in the kernel's per-process table, and
//! full statistics (histograms, errnos) in slot 1 for the one process drilled into,
//! while it is shown (the kernel side's `DRILL`).

use std::{
    io::IsTerminal as _,
    time::{Duration, Instant},
};

use anyhow::Result;

use crate::{
    cli::{TopArgs, seconds},
    plan::{DRILL_SLOT, Plan, programs},
};
use syscost_engine::{
    cgroup,
    session::{SessionHandle, Watch},
    tracer::{Auto, TracerOptions},
};
use syscost_report::{
    report::top::{render_rates, render_totals, to_json, unpaired_line},
    untrusted,
};
use syscost_views::tui::{
    self,
    top::{TopLive, TopView},
};

pub fn top(args: &TopArgs) -> Result<i32> {
    if let Some(p) = &args.json {
        syscost_report::output::check(p)?;
    }
    let mut cgroup_path = None;
    let (auto, scope) = match &args.cgroup {
        Some(path) => {
            let cg = cgroup::resolve(path)?;
            cgroup_path = Some(cg.path.clone());
            (
                Auto::Cgroup {
                    id: cg.id,
                    level: cg.level,
                },
                format!("cgroup {}", untrusted::shown(&cg.path)),
            )
        }
        None => (Auto::All, "the machine".to_string()),
    };
    // top has no --slow: its programs report no slow call. With --stacks the process
    // drilled into is counted by stack (the kernel keeps stacks for full statistics).
    let plan = Plan::new(
        TracerOptions {
            stack_sample_every: args
                .stacks
                .then_some(syscost_engine::by_stack::SAMPLE_EVERY),
            ..programs::machine(auto)
        },
        args.groups(),
    )?;
    let session = plan.start(plan.load()?, Watch::Nothing)?;
    let handle = session.handle();
    let duration = seconds(args.timing.duration);
    let started = Instant::now();
    if !args.live.no_tui && std::io::stdout().is_terminal() {
        let live = TopLive {
            duration,
            drill_slot: DRILL_SLOT,
            callers_pane: args.stacks,
        };
        tui::top::run(&handle, TopView::new(scope, args.sort), &live)?;
    } else {
        text(&handle, args, &scope, duration, started)?;
    }
    let offcpu = handle.offcpu_tracked();
    // The last syscalls, then the totals.
    let finished = session.finish()?;
    let totals = finished.top_totals;
    // Every slot's counters: the drill-down's slot counts the drilled process's calls
    // (and their losses) while it is shown.
    let sum =
        |f: fn(&syscost_engine::collector::Snapshot) -> u64| finished.snapshots.iter().map(f).sum();
    let (dropped, unpaired, unseen): (u64, u64, u64) = (
        sum(syscost_engine::collector::Snapshot::dropped),
        sum(syscost_engine::collector::Snapshot::unpaired),
        sum(syscost_engine::collector::Snapshot::switch_ins_unseen),
    );
    let elapsed = started.elapsed().as_secs_f64();
    let mut out = render_totals(
        "syscost top",
        &totals,
        elapsed,
        args.sort,
        args.rows,
        dropped,
        offcpu,
    );
    out += &unpaired_line(unpaired);
    if let Some(line) = syscost_report::report::strace_table::switch_ins_unseen_line(unseen) {
        out += &line;
        out.push('\n');
    }
    super::print_out(&out);
    if let Some(p) = &args.json {
        let json = to_json(
            &totals,
            elapsed,
            (dropped, unseen),
            offcpu,
            cgroup_path.as_deref(),
        )?;
        syscost_report::output::write(
            p,
            json.as_bytes(),
            syscost_report::output::Owner::invoker(),
        )?;
    }
    Ok(0)
}

/// The text mode: a table every interval (each tick's step, with those of the samples
/// taken between ticks) until a signal or `-d`.
fn text(
    session: &SessionHandle,
    args: &TopArgs,
    scope: &str,
    duration: Option<Duration>,
    started: Instant,
) -> Result<()> {
    let samples = session.subscribe();
    let stop = syscost_engine::signals::Stop::catch()?;
    let offcpu = session.offcpu_tracked();
    eprintln!("syscost: watching {scope}; Ctrl-C to stop");
    let deadline = duration.map(|d| started + d);
    // The steps of samples taken between ticks (an own-cost window closed), and when
    // the first of them began: their rows go into the next tick's table, so that each
    // table is an interval's.
    let mut held = syscost_engine::process_table::PendingSteps::default();
    let mut held_since: Option<Instant> = None;
    loop {
        // Asleep until a sample, a signal or the end.
        syscost_engine::wake::wait(&[stop.fd(), samples.fd()], deadline);
        if stop.stopped() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        while let Ok(sample) = samples.try_recv() {
            if !sample.due {
                held_since.get_or_insert(sample.since);
                held.absorb(sample.top.clone());
                continue;
            }
            let merged;
            let (step, since) = match held_since.take() {
                None => (&sample.top, sample.since),
                Some(since) => {
                    held.absorb(sample.top.clone());
                    merged = held.take();
                    (&merged, since)
                }
            };
            let secs = sample.taken.duration_since(since).as_secs_f64().max(1e-3);
            super::print_out(&format!(
                "--- {:.1} s: {} with syscalls in the last {:.2} s ---\n",
                started.elapsed().as_secs_f64(),
                syscost_report::units::counted(step.interval.len(), "process", "processes"),
                secs
            ));
            super::print_out(&render_rates(
                &step.interval,
                secs,
                args.sort,
                args.rows,
                offcpu,
            ));
        }
    }
    Ok(())
}
