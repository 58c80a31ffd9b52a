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

use anyhow::{Context as _, Result};
use ratatui::crossterm::event::{Event, KeyEventKind};

use crate::cli::{TopArgs, TopSort, seconds};
use syscost_engine::{
    cgroup, process,
    process_table::ProcessRow,
    session::{SessionHandle, Watch},
    tracer::{Auto, TracerOptions},
};
use syscost_report::{
    profile::{ProcessTotals, TOP_SCHEMA, TopDocument},
    untrusted,
};
use syscost_views::tui::{self, LiveOptions, top::TopView};

/// The slot of the process drilled into.
const DRILL_SLOT: u32 = 1;

/// The programs `top` loads: every process (or a cgroup's) with per-process figures,
/// the full statistics only for the process drilled into.
pub fn tracer_options(offcpu: bool, auto: Auto) -> TracerOptions {
    TracerOptions {
        offcpu,
        slots: DRILL_SLOT + 1,
        auto,
        top: true,
        pool_from_slot: DRILL_SLOT,
        ..Default::default()
    }
}

pub fn top(args: &TopArgs) -> Result<i32> {
    if let Some(p) = &args.json {
        syscost_report::report::json::check_writable(p)?;
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
    let tracer = super::load_tracer(
        tracer_options(!args.no_offcpu, auto),
        &crate::cli::SlowArgs::default(),
    )?;
    let every = seconds(args.interval).unwrap_or(Duration::from_secs(1));
    let session = super::start_session(
        tracer,
        super::SessionSetup {
            interval: every,
            watch: Watch::Nothing,
            run_stats: !args.no_run_stats,
            echo_slow: false,
            keep_slow: 0,
            top_totals: true,
        },
    )?;
    let handle = session.handle();
    let duration = seconds(args.duration);
    let started = Instant::now();
    if !args.no_tui && std::io::stdout().is_terminal() {
        live(&handle, args, scope, every, duration)?;
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
        std::fs::write(p, json).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(0)
}

/// The text mode: a table every interval (each sample's step) until a signal or `-d`.
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
    loop {
        let until = Instant::now() + Duration::from_millis(50);
        if stop.wait_until(deadline.map_or(until, |d| d.min(until))) {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        while let Ok(sample) = samples.try_recv() {
            let secs = sample
                .taken
                .duration_since(sample.since)
                .as_secs_f64()
                .max(1e-3);
            let step = &sample.top;
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

/// The live view: the process table, and the per-syscall view of a process on Enter.
fn live(
    session: &SessionHandle,
    args: &TopArgs,
    scope: String,
    every: Duration,
    duration: Option<Duration>,
) -> Result<()> {
    let mut screen = tui::Screen::open()?;
    session.measure_own_cost();
    let mut view = TopView::new(scope, args.sort);
    view.offcpu = session.offcpu_tracked();
    let mut samples = session.subscribe();
    let started = Instant::now();
    let deadline = duration.map(|d| started + d);
    let mut dirty = true;
    loop {
        if dirty {
            view.elapsed = started.elapsed();
            screen.terminal.draw(|f| tui::top::render(f, &view))?;
            dirty = false;
        }
        if screen.terminated() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        match screen.input.recv_timeout(Duration::from_millis(50)) {
            Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => {
                match view.handle_key(k) {
                    tui::top::Action::Quit => break,
                    tui::top::Action::Drill { pid, threads } => {
                        // No samples wait for this view while it is away.
                        drop(samples);
                        let (ended, back) =
                            drill(&mut screen, session, pid, threads, every, deadline)?;
                        samples = back;
                        if ended == tui::Ended::Quit {
                            break;
                        }
                    }
                    tui::top::Action::Continue => {}
                }
                dirty = true;
            }
            Ok(Event::Resize(..)) => dirty = true,
            Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        while let Ok(sample) = samples.try_recv() {
            view.dropped = sample.snapshot(0).dropped();
            view.own_cost = match &sample.own_cost {
                Ok(Some(r)) => r.to_string(),
                Ok(None) => "measuring".to_string(),
                Err(why) => why.clone(),
            };
            let secs = sample.taken.duration_since(sample.since).as_secs_f64();
            view.apply(sample.top.interval.clone(), secs);
            dirty = true;
        }
    }
    Ok(())
}

/// Shows process `pid`'s syscalls (its statistics moved to the drill-down slot while
/// shown) until Esc or quit; and the samples for the process table from the moment the
/// per-process steps start again.
fn drill(
    screen: &mut tui::Screen,
    session: &SessionHandle,
    pid: u32,
    threads: bool,
    every: Duration,
    deadline: Option<Instant>,
) -> Result<(
    tui::Ended,
    std::sync::mpsc::Receiver<std::sync::Arc<syscost_engine::session::Sample>>,
)> {
    let Ok(target) = process::open(pid) else {
        // Gone since the last refresh: nothing to show.
        return Ok((tui::Ended::Back, session.subscribe()));
    };
    session.watch(Watch::Process {
        pid,
        pidfd: target.pidfd.try_clone()?,
    });
    session.drill(pid)?;
    // A sample of the drilled process's threads before the view starts.
    session.sample_now()?;
    let options = LiveOptions {
        interval: every,
        duration: deadline.map(|d| d.saturating_duration_since(Instant::now())),
        per: None,
        hint: Some("from syscost top: figures since Enter · Esc goes back".to_string()),
        ..Default::default()
    };
    let result = tui::live_with(
        screen, session, &target, DRILL_SLOT, true, threads, &options,
    );
    // Back to the per-process figures only, whatever happened; subscribed first, so
    // the first step after it reaches the table.
    let samples = session.subscribe();
    session.drill(0)?;
    session.watch(Watch::Nothing);
    Ok((result?.1, samples))
}

/// Rows sorted and cut to `rows` (0: all); how many were left out.
fn shown(rows: &[ProcessRow], sort: TopSort, n: usize) -> (Vec<ProcessRow>, usize) {
    let mut rows = rows.to_vec();
    tui::top::sort_rows(&mut rows, sort);
    let more = if n > 0 && rows.len() > n {
        rows.len() - n
    } else {
        0
    };
    rows.truncate(if n == 0 { rows.len() } else { n });
    (rows, more)
}

/// The on-CPU figure of a column `width` wide, or `-` when it was not measured
/// (`--no-offcpu`), as the live view shows it.
fn oncpu_cell(ns: u64, per_secs: f64, offcpu: bool, width: usize) -> String {
    if offcpu {
        format!("{:>width$.3}", ns as f64 / 1e9 / per_secs)
    } else {
        format!("{:>width$}", "-")
    }
}

/// The per-process table of one interval, as rates; `offcpu`: the on-CPU split was
/// measured.
pub fn render_rates(
    rows: &[ProcessRow],
    secs: f64,
    sort: TopSort,
    n: usize,
    offcpu: bool,
) -> String {
    let (rows, more) = shown(rows, sort, n);
    let mut out = format!(
        "{:>8} {:<16} {:<24} {:>10} {:>9} {:>9} {:>9} {:>4}  {}\n",
        "PID",
        "COMM",
        "CGROUP",
        "CALLS/s",
        "ERRORS/s",
        "TIME s/s",
        "ONCPU s/s",
        "THR",
        "TOP SYSCALL (s/s)"
    );
    for r in rows {
        let top = r
            .top_syscall()
            .map(|(id, ns)| format!("{} {:.3}", id.name(), ns as f64 / 1e9 / secs))
            .unwrap_or_default();
        out += &format!(
            "{:>8} {:<16} {:<24} {:>10.1} {:>9.1} {:>9.3} {} {:>4}  {}{}\n",
            r.pid,
            untrusted::shown(&r.comm),
            untrusted::shown(&cgroup::short(&r.cgroup)),
            r.calls() as f64 / secs,
            r.errors() as f64 / secs,
            r.total_ns() as f64 / 1e9 / secs,
            oncpu_cell(r.oncpu_ns(), secs, offcpu, 9),
            threads_cell(&r),
            top,
            if r.exited { " (exited)" } else { "" }
        );
    }
    if more > 0 {
        out += &format!("... {more} more processes (-n 0 shows all)\n");
    }
    out
}

/// The calls in flight when tracing began (each process's or thread's first event seen
/// was an exit): not in the rows, said in a line of their own when there were any.
fn unpaired_line(unpaired: u64) -> String {
    if unpaired == 0 {
        return String::new();
    }
    format!("unpaired {unpaired}: calls in flight when tracing began, in no row\n")
}

/// A row's THR: its threads now, `-` once it has exited (the row ends in "(exited)").
fn threads_cell(r: &ProcessRow) -> String {
    if r.exited {
        "-".to_string()
    } else {
        r.threads.to_string()
    }
}

/// The totals since the start, per process, under a line that starts with `title`.
pub fn render_totals(
    title: &str,
    rows: &[ProcessRow],
    secs: f64,
    sort: TopSort,
    n: usize,
    dropped: u64,
    offcpu: bool,
) -> String {
    let (shown_rows, more) = shown(rows, sort, n);
    let calls: u64 = rows.iter().map(|r| r.calls()).sum();
    let mut out = format!(
        "{title}: {} made {calls} syscalls in {secs:.1} s; dropped {dropped}\n",
        syscost_report::units::counted(rows.len(), "process", "processes")
    );
    out += &format!(
        "{:>8} {:<16} {:<24} {:>12} {:>9} {:>10} {:>10} {:>4}  {}\n",
        "PID", "COMM", "CGROUP", "CALLS", "ERRORS", "TIME s", "ONCPU s", "THR", "TOP SYSCALL (s)"
    );
    for r in shown_rows {
        let top = r
            .top_syscall()
            .map(|(id, ns)| format!("{} {:.3}", id.name(), ns as f64 / 1e9))
            .unwrap_or_default();
        out += &format!(
            "{:>8} {:<16} {:<24} {:>12} {:>9} {:>10.3} {} {:>4}  {}{}\n",
            r.pid,
            untrusted::shown(&r.comm),
            untrusted::shown(&cgroup::short(&r.cgroup)),
            r.calls(),
            r.errors(),
            r.total_ns() as f64 / 1e9,
            oncpu_cell(r.oncpu_ns(), 1.0, offcpu, 10),
            threads_cell(&r),
            top,
            if r.exited { " (exited)" } else { "" }
        );
    }
    if more > 0 {
        out += &format!("... {more} more processes (-n 0 shows all; --json keeps every one)\n");
    }
    out
}

/// The totals as JSON ([`TopDocument`]).
/// `(dropped, switch_ins_unseen)`: the counters of the whole run.
pub fn to_json(
    rows: &[ProcessRow],
    secs: f64,
    (dropped, switch_ins_unseen): (u64, u64),
    offcpu: bool,
    cgroup: Option<&str>,
) -> Result<String> {
    let doc = TopDocument {
        schema: TOP_SCHEMA,
        arch: std::env::consts::ARCH.to_string(),
        cgroup: cgroup.map(str::to_string),
        duration_secs: secs,
        offcpu_tracked: offcpu,
        dropped,
        switch_ins_unseen,
        processes: rows.iter().map(ProcessTotals::from).collect(),
    };
    Ok(syscost_report::untrusted::json_safe(serde_json::to_string_pretty(&doc)?) + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscost_common::{TopKey, TopValue};

    fn row(pid: u32, comm: &str, calls: u64, ns: u64) -> ProcessRow {
        let mut r = ProcessRow {
            pid,
            comm: comm.into(),
            cgroup: "/system.slice/x.service".into(),
            threads: 1,
            ..Default::default()
        };
        r.syscalls.insert(
            syscost_engine::process_table::top_id(&TopKey { tgid: pid, key: 39 }),
            TopValue {
                calls,
                errors: 0,
                total_ns: ns,
                offcpu_ns: 0,
            },
        );
        r
    }

    #[test]
    fn text_tables_and_json() {
        let rows = [row(1, "a", 100, 1_000_000), row(2, "b", 300, 5_000_000)];
        let t = render_rates(&rows, 2.0, TopSort::Time, 1, true);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(
            lines[1].contains(" b ") && lines[1].contains("150.0"),
            "{t}"
        );
        assert!(lines[1].contains("getpid 0.003"), "{t}");
        assert!(lines[2].starts_with("... 1 more"), "{t}");
        let t = render_totals("syscost top", &rows, 2.0, TopSort::Pid, 0, 7, true);
        assert!(t.starts_with("syscost top: 2 processes made 400 syscalls in 2.0 s; dropped 7"));
        // Without the on-CPU split: `-`, not the wall time again.
        let t = render_totals("syscost top", &rows[..1], 2.0, TopSort::Pid, 0, 0, false);
        assert!(
            t.starts_with("syscost top: 1 process made 100 syscalls"),
            "{t}"
        );
        let row = t.lines().nth(2).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!((cols[5], cols[6]), ("0.001", "-"), "{t}");
        let t = render_rates(&rows, 2.0, TopSort::Time, 0, false);
        let cols: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(cols[6], "-", "{t}");
        let j: serde_json::Value =
            serde_json::from_str(&to_json(&rows, 2.0, (7, 0), true, None).unwrap()).unwrap();
        assert_eq!(j["processes"][1]["calls"], 300);
        assert_eq!(j["processes"][1]["syscalls"][0]["name"], "getpid");
        assert_eq!(j["dropped"], 7);
    }

    #[test]
    fn an_exited_process_shows_no_thread_count() {
        let mut gone = row(3, "c", 10, 1_000);
        gone.threads = 0;
        gone.exited = true;
        let rows = [row(1, "a", 100, 1_000_000), gone];
        for t in [
            render_totals("t", &rows, 1.0, TopSort::Pid, 0, 0, true),
            render_rates(&rows, 1.0, TopSort::Pid, 0, true),
        ] {
            let cols = |pid: &str| -> Vec<String> {
                let l = t
                    .lines()
                    .find(|l| l.split_whitespace().next() == Some(pid))
                    .unwrap();
                l.split_whitespace().map(String::from).collect()
            };
            assert_eq!(cols("1")[7], "1", "{t}");
            assert_eq!(cols("3")[7], "-", "{t}");
            assert!(
                t.lines()
                    .any(|l| l.trim_start().starts_with("3 ") && l.ends_with("(exited)")),
                "{t}"
            );
        }
    }

    /// What `top` writes, its reader reads: the same processes, and the sums of them.
    #[test]
    fn top_files_as_written_read_back() {
        use syscost_engine::process_table::ProcessRow;
        let mut row = ProcessRow {
            pid: 7,
            comm: "w".into(),
            cgroup: "/".into(),
            threads: 2,
            ..Default::default()
        };
        let mut add = |nr: u64, calls: u64, total_ns: u64, offcpu_ns: u64| {
            row.syscalls.insert(
                syscost_report::syscall_names::number(&syscost_report::syscall_names::name(
                    false, nr,
                ))
                .unwrap(),
                syscost_common::TopValue {
                    calls,
                    errors: 1,
                    total_ns,
                    offcpu_ns,
                },
            );
        };
        add(39, 10, 5_000, 1_000);
        // An exit record's figures as the kernel had them: off-CPU above the total.
        add(0, 3, 900, 1_200);
        let text = to_json(&[row.clone()], 1.5, (0, 0), true, None).unwrap();
        let p = syscost_report::report::json::parse(text.as_bytes()).unwrap();
        assert_eq!(p.processes.len(), 1);
        assert_eq!(p.totals(), (13, 2, 5_900));
        let read = p.syscall("read").unwrap();
        assert_eq!((read.oncpu_ns, read.offcpu_ns), (0, 900));
        assert_eq!(p.processes[0].oncpu_ns, 4_000);
        // Names this build does not know read as written.
        let text = text.replace("\"getpid\"", "\"getpid_v2\"");
        let p = syscost_report::report::json::parse(text.as_bytes()).unwrap();
        assert!(p.syscall("getpid_v2").is_some());
    }
}
