//! `syscost attach -p PID`: profile a running process until Ctrl-C, `-d`, or its exit.

use std::{
    io::IsTerminal as _,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};

use crate::{
    cli::{AttachArgs, ViewArgs, seconds},
    plan::{Plan, programs},
};
use syscost_engine::{
    cgroup,
    collector::Snapshot,
    process,
    sampler::Intervals,
    session::{SessionHandle, Watch},
    tracer::{Auto, TracerOptions},
};
use syscost_report::profile::Target;
use syscost_views::{
    metrics::Source,
    tui::attach::{self as live, LiveOptions},
};

/// Why tracing stopped.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Interrupted,
    Duration,
    TargetExited,
}

pub fn attach(args: &AttachArgs) -> Result<i32> {
    Attach::resolve(args)?.run()
}

/// `attach` resolved: the plan, the process it follows, and how its figures are shown.
/// `demo` makes one of its own.
pub(super) struct Attach<'a> {
    pub plan: Plan,
    /// The process traced and watched for its exit (with a cgroup, syscost's own, whose
    /// exit never fires).
    pub target: process::Process,
    pub cgroup: Option<cgroup::Cgroup>,
    /// What the text and the live view's header call it.
    pub label: String,
    /// `-f`: the descendants that exist now traced too.
    pub follow_forks: bool,
    /// `--per-process`: the cgroup's profile split by process.
    pub per_process: bool,
    /// The live view; otherwise text (the summary, or a table each interval).
    pub tui: bool,
    pub duration: Option<Duration>,
    /// A table each interval, in text.
    pub every: Option<Duration>,
    pub view: &'a ViewArgs,
    pub json: Option<&'a Path>,
    /// A line of advice for the live view (the demo's; otherwise the endpoint's).
    pub hint: Option<String>,
}

/// How the text and the live view name process `t`.
pub(super) fn process_label(t: &process::Process) -> String {
    format!(
        "process {} ({})",
        t.pid,
        syscost_report::untrusted::shown(&t.comm)
    )
}

impl<'a> Attach<'a> {
    fn resolve(args: &'a AttachArgs) -> Result<Self> {
        super::check_outputs(
            &args.view,
            &[args.json.as_deref(), args.calls_by_stack.stacks.as_deref()],
        )?;
        if args.per_process && args.cgroup.is_none() {
            anyhow::bail!("--per-process splits a --cgroup profile: give --cgroup PATH");
        }
        let cgroup = args.cgroup.as_deref().map(cgroup::resolve).transpose()?;
        // A cgroup has no pid to watch for its exit: syscost's own never fires.
        let (target, label) = match &cgroup {
            Some(cg) => (
                process::open(std::process::id())?,
                format!("cgroup {}", syscost_report::untrusted::shown(&cg.path)),
            ),
            None => {
                let t = process::open(args.pid.context("give -p PID or --cgroup PATH")?)?;
                let label = process_label(&t);
                (t, label)
            }
        };
        // strace's -c (the summary only) and -C (intervals as text) print text.
        let tui = !args.live.no_tui
            && !args.live_text
            && !args.view.summary_only
            && std::io::stdout().is_terminal();
        let groups = args.groups();
        // strace's -C: the live text, a table each second unless -i says otherwise.
        let every = groups.interval;
        let plan = Plan::new(
            TracerOptions {
                follow_forks: args.follow_forks,
                auto: cgroup.as_ref().map_or(Auto::Off, |cg| Auto::Cgroup {
                    id: cg.id,
                    level: cg.level,
                }),
                per_process: args.per_process,
                ..programs::process()
            },
            groups,
        )?
        .live(tui);
        Ok(Self {
            every,
            plan,
            target,
            cgroup,
            label,
            follow_forks: args.follow_forks,
            per_process: args.per_process,
            tui,
            duration: seconds(args.timing.duration),
            view: &args.view,
            json: args.json.as_deref(),
            hint: None,
        })
    }

    /// Loads the programs, traces the target, shows it until the end, and prints (and
    /// saves) the profile.
    pub(super) fn run(self) -> Result<i32> {
        let Self {
            mut plan,
            target,
            cgroup,
            mut label,
            follow_forks,
            per_process,
            tui,
            duration,
            every,
            view,
            json,
            hint,
        } = self;
        let mut tracer = plan.load()?;
        let mut descendants = 0;
        if cgroup.is_none() {
            tracer.trace_process(target.pid)?;
            if process::has_exited(&target.pidfd) {
                anyhow::bail!("process {} exited before tracing began", target.pid);
            }
            if follow_forks {
                descendants = trace_descendants(&mut tracer, target.pid)?;
                label = format!(
                    "{label} and {} (-f)",
                    syscost_report::units::counted(descendants, "descendant", "descendants")
                );
            }
        }
        let offcpu = tracer.offcpu_tracked();
        let features = tracer.features().clone();
        let watch = match &cgroup {
            Some(cg) => Watch::Cgroup(cg.dir.clone()),
            None => Watch::Process {
                pid: target.pid,
                pidfd: target
                    .pidfd
                    .try_clone()
                    .context("cannot watch the target's pidfd")?,
            },
        };
        let session = plan.start(tracer, watch)?;
        let handle = session.handle();
        let source = match &cgroup {
            Some(cg) => Source::cgroup(cg.path.clone(), 0),
            None => Source::new(target.pid, target.comm.clone(), 0),
        };
        let metrics =
            super::serve_metrics(plan.listener.take(), &handle, source, plan.reports_slow())?;
        let hint = hint.or_else(|| metrics.as_ref().map(|m| format!("metrics at {}", m.url())));
        let info = match &cgroup {
            Some(cg) => Target::cgroup(&cg.path),
            None => Target::process(target.pid, &target.comm),
        };
        let started = Instant::now();
        let target_pid = target.pid;
        let last = if tui {
            let options = LiveOptions {
                duration,
                per: view.per.clone(),
                hint,
                label: cgroup.as_ref().map(|_| label.clone()),
                slow: plan.reports_slow(),
                callers_pane: plan.stacks_out.is_some(),
            };
            let last = live::run(&handle, &target, &options)?;
            if !view.syscalls.is_empty() || view.successful || view.failed || view.columns.is_some()
            {
                eprintln!(
                    "syscost: the live view showed every syscall and call; -e, -z, -Z and -U apply to the summary below"
                );
            }
            last
        } else {
            text(
                &handle,
                target,
                &label,
                cgroup.is_some(),
                view,
                duration,
                every,
                &info,
                started,
            )?
        };
        let elapsed = started.elapsed();
        let mut profile = last
            .to_profile(info, elapsed.as_nanos() as u64, offcpu)?
            .with_features(&features);
        drop(metrics);
        let finished = session.finish()?;
        let processes = if per_process {
            finished.top_totals
        } else {
            Vec::new()
        };
        let top_dropped = last.counters[syscost_common::counter::DROPPED_TOP as usize];
        profile.processes = processes.iter().map(Into::into).collect();
        super::add_slow(&mut profile, plan.slow.as_ref(), finished.slow);
        super::write_stacks(
            Some(&mut profile),
            plan.stacks_out.as_ref(),
            finished.stacks,
            syscost_report::output::Owner::invoker(),
            None,
        )?;
        if profile.totals().0 == 0 && cgroup.is_none() {
            eprintln!(
                "syscost: {}",
                no_call_seen(target_pid, follow_forks, descendants)
            );
        }
        let table = super::save_and_render(
            profile,
            view,
            json,
            syscost_report::output::Owner::invoker(),
        )?;
        let mut out = String::new();
        if every.is_some() && !tui && !table.is_empty() {
            // After the intervals' tables, the total has a heading of its own.
            out += &format!("--- the whole run ({:.2} s) ---\n", elapsed.as_secs_f64());
        }
        out += &table;
        if per_process {
            out += "\n";
            out += &syscost_report::report::top::render_totals(
                "by process",
                &processes,
                elapsed.as_secs_f64(),
                crate::cli::TopSort::Time,
                0,
                top_dropped,
                offcpu,
            );
        }
        super::print_out(&out);
        Ok(0)
    }
}

/// `-f`: the processes descended from `root` that exist now, traced too; those forked
/// after their parent was traced are the fork hook's (a traced parent's children are
/// added as they are forked). So /proc is scanned again only for descendants that may
/// have been forked before their parent was traced (started no later than a tick after
/// it), until a scan finds none (20 scans at most). A descendant is traced after its
/// pidfd is open and its parent and start time checked again (a pid reused in between
/// is not taken for it), and taken out again if it exits before it is added (its exit
/// hook ran first). How many are traced.
fn trace_descendants(tracer: &mut syscost_engine::tracer::Tracer, root: u32) -> Result<usize> {
    // When each process of the tree was traced (clock ticks since boot).
    let mut traced_at: std::collections::BTreeMap<u32, u64> =
        std::collections::BTreeMap::from([(root, process::now_ticks())]);
    let mut count = 0;
    for _ in 0..20 {
        let found: Vec<process::Descendant> = process::descendants(root)
            .into_iter()
            .filter(|d| !traced_at.contains_key(&d.pid))
            // Forked after its parent was traced: the fork hook has it.
            .filter(|d| traced_at.get(&d.ppid).is_none_or(|&at| d.start <= at + 1))
            .collect();
        if found.is_empty() {
            break;
        }
        for d in found {
            traced_at.insert(d.pid, process::now_ticks());
            let Ok(p) = process::open(d.pid) else {
                continue;
            };
            if process::parent_and_start_of(d.pid) != Some((d.ppid, d.start)) {
                continue;
            }
            if let Err(e) = tracer.trace_process(d.pid) {
                eprintln!("syscost: descendant {} not traced: {e:#}", d.pid);
                continue;
            }
            if process::has_exited(&p.pidfd) {
                tracer.untrace_process(d.pid)?;
            } else {
                count += 1;
            }
        }
    }
    Ok(count)
}

/// Why a profile of process `pid` holds no call, in one line.
fn no_call_seen(pid: u32, follow: bool, descendants: usize) -> String {
    if follow {
        return format!(
            "no syscall seen: process {pid} and its {} made none while traced (idle, or \
             stopped)",
            syscost_report::units::counted(descendants, "descendant", "descendants")
        );
    }
    match process::descendants(pid).len() {
        0 => format!("no syscall seen: process {pid} made none while traced (idle, or stopped)"),
        n => format!(
            "no syscall seen: process {pid} made none while traced; its {} not followed \
             without -f",
            syscost_report::units::counted(n, "descendant is", "descendants are")
        ),
    }
}

/// The text mode: a table per `-i` interval if asked (each a sample the session's
/// clock published), until a signal, `-d` or the target's exit; the last snapshot.
#[allow(clippy::too_many_arguments)]
fn text(
    session: &SessionHandle,
    target: process::Process,
    label: &str,
    of_cgroup: bool,
    view: &ViewArgs,
    duration: Option<Duration>,
    every: Option<Duration>,
    info: &Target,
    started: Instant,
) -> Result<Snapshot> {
    let offcpu = session.offcpu_tracked();
    let target_pid = target.pid;
    // Subscribed before the line: the samples after it that the clock took at an
    // interval's end (`due`) are the interval tables'.
    let samples = session.subscribe();
    let stop = syscost_engine::signals::Stop::catch()?;
    // Said once the signals are caught: from this line on, Ctrl-C ends the profile.
    if of_cgroup {
        eprintln!("syscost: tracing {label}; Ctrl-C to stop");
    } else {
        eprintln!(
            "syscost: tracing {label}, {}; Ctrl-C to stop",
            syscost_report::units::counted(session.latest().thread_count, "thread", "threads")
        );
    }
    let deadline = duration.map(|d| Instant::now() + d);
    let period = every.unwrap_or(syscost_engine::session::NO_END);
    // From the load, as the final table: the intervals add up to it.
    let mut intervals = Intervals::new(Snapshot::empty());
    // One interval's table, under "--- {what} N s after attach (D s) ---"; a last part
    // with no call in it and shorter than a tenth of an interval (the run ended on an
    // interval's end) prints nothing: the intervals still add up to the total.
    let print_interval = |intervals: &mut Intervals,
                          (now, taken): (Snapshot, Instant),
                          what: &str|
     -> Result<()> {
        // Timed when the sample was taken, not when it is printed.
        let step = intervals.next_at(now, taken);
        let profile =
            step.interval
                .to_profile(info.clone(), (step.interval_secs * 1e9) as u64, offcpu)?;
        if what.starts_with("last")
            && profile.totals().0 == 0
            && step.interval_secs < period.as_secs_f64() / 10.0
        {
            return Ok(());
        }
        // No table (`-e none`): no heading either.
        let table = super::save_and_render(profile, view, None, None)?;
        if table.is_empty() {
            return Ok(());
        }
        super::print_out(&format!(
            "--- {what} {:.1} s after attach ({:.2} s) ---\n",
            started.elapsed().as_secs_f64(),
            step.interval_secs
        ));
        super::print_out(&table);
        Ok(())
    };
    let pidfd = std::os::fd::AsRawFd::as_raw_fd(&target.pidfd);
    let end = loop {
        // Asleep until a sample, a signal, the target's exit or `-d`.
        let ready = syscost_engine::wake::wait(&[stop.fd(), samples.fd(), pidfd], deadline);
        // The end first: a sample that came with it (the session samples the target's
        // exit at once) is not an interval's end, and its calls are the last part's.
        if stop.stopped() {
            break End::Interrupted;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break End::Duration;
        }
        if ready.get(2).copied().unwrap_or(false) {
            break End::TargetExited;
        }
        // An interval's table for each tick of the clock (not for a sample taken at an
        // event: an own-cost window closed for the endpoint of --metrics-addr).
        while let Ok(sample) = samples.try_recv() {
            if every.is_some() && sample.due {
                print_interval(
                    &mut intervals,
                    (sample.snapshot(0), sample.taken),
                    "interval ending",
                )?;
            }
        }
    };
    let final_sample = session.sample_now()?;
    let last = final_sample.snapshot(0);
    if every.is_some() {
        // The part after the last full interval: the intervals add up to the total.
        print_interval(
            &mut intervals,
            (last.clone(), final_sample.taken),
            "last interval, ending",
        )?;
    }

    if end == End::TargetExited {
        eprintln!("syscost: process {} exited", target_pid);
    }
    Ok(last)
}
