//! The subcommands.

pub mod attach;
pub mod demo;
pub mod doctor;
pub mod export;
pub mod lab;
pub mod report;
pub mod run;
pub mod top;

use std::path::Path;

use anyhow::{Context as _, Result};

use crate::cli::ViewArgs;
use syscost_engine::session::SessionHandle;
use syscost_report::{
    output::{self, Owner},
    profile::Profile,
    report::{json, strace_table},
};
use syscost_views::metrics::{Metrics, Source, server::MetricsServer};

/// Saves the full profile as JSON if asked (given to `owner`), then renders the table
/// the view asks for.
fn save_and_render(
    profile: Profile,
    view: &ViewArgs,
    json_path: Option<&Path>,
    owner: Option<Owner>,
) -> Result<String> {
    if let Some(path) = json_path {
        json::write(&profile, path, owner)?;
    }
    let sel = view.selection()?;
    if sel.is_none() {
        // `-e none`: strace prints no table, nor does syscost.
        return Ok(String::new());
    }
    let mut options = view.table();
    options.selected = !sel.is_all();
    let mut shown = match sel.status {
        Some(status) => {
            options.note = Some(syscost_report::strace_filter::status_note(status));
            options.no_times = true;
            syscost_report::strace_filter::counted(&profile, status)
        }
        None => profile.clone(),
    };
    sel.narrow(&mut shown);
    // The --per figures count every syscall a unit makes, not only the rows shown.
    Ok(strace_table::render_of(&shown, &profile, &options))
}

/// Starts the metrics endpoint for one traced process or cgroup on `listener` if there
/// is one.
fn serve_metrics(
    listener: Option<syscost_views::metrics::server::Bound>,
    session: &SessionHandle,
    source: Source,
    slow: bool,
) -> Result<Option<MetricsServer>> {
    let Some(listener) = listener else {
        return Ok(None);
    };
    let metrics = Metrics::new(session.clone(), vec![source])
        .with_slow(slow)
        .with_stacks(session.features().on.contains(&"stacks"));
    let server = MetricsServer::start(listener, std::sync::Arc::new(metrics))?;
    eprintln!("syscost: metrics at {}", server.url());
    note_own_cost(session);
    Ok(Some(server))
}

/// Says in one line why the own-cost series is left out, when it is for lack of a
/// privilege (not when `--no-run-stats` asked for it).
fn note_own_cost(session: &SessionHandle) {
    if let Some(why) = session.own_cost_unavailable()
        && why.starts_with("n/a")
    {
        eprintln!("syscost: own cost {why}: syscost_bpf_run_seconds_total is left out");
    }
}

/// Puts the slow calls into the profile (after the programs are unloaded, so every
/// call sent has been read).
fn add_slow(
    profile: &mut Profile,
    spec: Option<&syscost_engine::slow::spec::SlowSpec>,
    slow: Option<(Vec<syscost_report::profile::SlowCall>, u64)>,
) {
    if let (Some(spec), Some((calls, evicted))) = (spec, slow) {
        profile.slow_threshold = Some(spec.describe());
        profile.slow_calls = calls;
        profile.slow_dropped += evicted;
    }
}

/// `--stacks`: the calls by stack into the profile (when there is one), their folded
/// lines or pprof profile into the file (given to `owner`), and a line on stderr saying
/// what it holds. `traced_ns`: how long it traced, where there is no profile to say.
fn write_stacks(
    profile: Option<&mut Profile>,
    out: Option<&crate::plan::StacksOut>,
    stacks: Option<syscost_report::profile::CallStacks>,
    owner: Option<Owner>,
    traced_ns: Option<u64>,
) -> Result<()> {
    use syscost_report::report::{
        call_stacks::{Format, folded, summary},
        pprof,
    };
    let (Some(out), Some(stacks)) = (out, stacks) else {
        return Ok(());
    };
    let bytes = match out.format {
        Format::Folded => folded(&stacks, out.weight).into_bytes(),
        Format::Pprof => {
            // The wall clock at the start: now less how long it traced (the profile's
            // duration; a service, without a profile, says).
            let duration_ns = traced_ns
                .or(profile.as_ref().map(|p| p.duration_ns))
                .unwrap_or(0);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            pprof::encode(
                &stacks,
                pprof::Window {
                    start_unix_ns: now.saturating_sub(duration_ns) as i64,
                    duration_ns: duration_ns as i64,
                    note: None,
                },
            )
        }
    };
    // The table and the JSON are still written when the stacks file cannot be.
    match output::write(&out.path, &bytes, owner) {
        Ok(()) => eprintln!("{}", summary(&stacks, &out.path.display().to_string())),
        Err(e) => eprintln!("syscost: --stacks: {e:#}"),
    }
    if let Some(profile) = profile {
        profile.stacks = Some(stacks);
    }
    Ok(())
}

/// Writes to stdout; a closed stdout (a pipe reader gone, a terminal hung up) is not
/// worth a panic at the end of a profile.
fn print_out(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Writes text that is not a profile table (bench, compare, JSON) to stdout.
pub(crate) fn print_json(text: &str) {
    print_out(text);
}

/// strace's -O, once: why syscost subtracts nothing.
pub(crate) fn note_overhead(view: &ViewArgs) {
    if view.overhead.is_some() {
        eprintln!(
            "syscost: -O: nothing is subtracted: the times are the kernel's, from each syscall's entry to its exit, which tracing does not lengthen; syscost's own cost is measured apart (the live view's header, syscost compare)"
        );
    }
}

/// Fails early on options that would only fail at the end of a long profile.
fn check_outputs(view: &ViewArgs, paths: &[Option<&Path>]) -> Result<()> {
    view.selection()?;
    note_overhead(view);
    for p in paths.iter().flatten() {
        output::check(p)?;
    }
    Ok(())
}

/// `syscost bench`.
pub fn bench(args: &crate::cli::BenchArgs) -> Result<i32> {
    if let Some(cpu) = args.cpu {
        crate::bench::micro::pin(cpu)?;
    }
    let rows = crate::bench::micro::run(args.reps.max(1))?;
    if args.json {
        print_json(&(serde_json::to_string(&rows)? + "\n"));
    } else {
        print_out(&crate::bench::micro::render(&rows));
    }
    Ok(0)
}

/// `syscost compare`.
pub fn compare(args: &crate::cli::CompareArgs) -> Result<i32> {
    print_json(&crate::bench::compare::compare(args)?);
    Ok(0)
}

/// `syscost man DIR`: the manual pages generated from the command-line definitions:
/// `syscost.1` and `syscost-COMMAND.1` for each visible command.
pub fn man_pages(dir: &Path) -> Result<i32> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    let owner = Owner::invoker();
    let write = |name: &str, cmd: clap::Command| -> Result<()> {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .title(name.to_uppercase())
            .render(&mut page)
            .context("cannot render a manual page")?;
        // Pages are for every user to read.
        output::write_mode(&dir.join(format!("{name}.1")), &page, owner, 0o644)
    };
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("syscost-{}", sub.get_name());
        // The page's NAME and SYNOPSIS say `syscost COMMAND`.
        let display = format!("syscost {}", sub.get_name());
        write(
            &name,
            sub.clone()
                .display_name(display)
                .bin_name(format!("syscost {}", sub.get_name())),
        )?;
    }
    write("syscost", cmd)?;
    Ok(0)
}

/// `syscost refresh-cost -p PID`: traces PID, then times `refreshes` refreshes (a
/// consistent snapshot and the profile made of it), in this process's CPU time.
pub fn refresh_cost(pid: u32, refreshes: u32) -> Result<i32> {
    let target = syscost_engine::process::open(pid)?;
    let mut tracer = syscost_engine::tracer::Tracer::load(syscost_engine::tracer::TracerOptions {
        follow_forks: false,
        offcpu: true,
        slots: 1,
        ..Default::default()
    })?;
    tracer.trace_process(target.pid)?;
    let mut sampler = syscost_engine::sampler::Sampler::new(tracer, false);
    // Let the target's syscalls fill their entries first.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let cpu = || {
        // SAFETY: fills one rusage.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
        us(ru.ru_utime) + us(ru.ru_stime)
    };
    let n = refreshes.max(1);
    let (cpu0, wall0) = (cpu(), std::time::Instant::now());
    let mut in_use = 0;
    for _ in 0..n {
        let snap = sampler.snapshot(0)?;
        let profile = snap.to_profile(syscost_report::profile::Target::default(), 1, true)?;
        in_use = profile.syscalls.len();
    }
    let (cpu_us, wall) = (cpu() - cpu0, wall0.elapsed());
    print_out(&format!(
        "refresh: {in_use} syscalls in use, {:.0} us of CPU per refresh ({:.0} us wall), {n} refreshes\n",
        cpu_us / f64::from(n),
        wall.as_secs_f64() * 1e6 / f64::from(n)
    ));
    Ok(0)
}

/// `syscost floor [VARIANT]`: holds the floor (or a candidate's) programs attached until
/// stdin reaches its end.
pub fn floor(variant: &str) -> Result<i32> {
    let programs = syscost_engine::tracer::probes::load_floor(variant)?;
    print_out("floor programs attached\n");
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    drop(programs);
    Ok(0)
}

/// The signals that stop a command ([`syscost_engine::signals::Stop`], the one way
/// syscost learns it is told to stop), awaited in an event loop: made inside the
/// loop's runtime, before the line that says Ctrl-C stops.
struct Signals {
    /// A duplicate of [`syscost_engine::signals::Stop::fd`], watched by the loop.
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    stop: syscost_engine::signals::Stop,
}

impl Signals {
    /// Catches SIGINT, SIGTERM and SIGHUP (inside a runtime).
    fn catch() -> Result<Self> {
        use std::os::fd::{BorrowedFd, OwnedFd};
        let stop = syscost_engine::signals::Stop::catch()?;
        // SAFETY: Stop's descriptor stays open as long as the process.
        let watched: OwnedFd = unsafe { BorrowedFd::borrow_raw(stop.fd()) }
            .try_clone_to_owned()
            .context("cannot watch for signals")?;
        // SAFETY: the duplicate moves into the AsyncFd and stays open as long as it lives.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(watched, tokio::io::Interest::READABLE)
        }
        .map_err(|e| anyhow::anyhow!("cannot watch for signals: {e}"))?;
        Ok(Self { fd, stop })
    }

    /// The next signal, in the order they came.
    async fn next(&self) -> Result<libc::c_int> {
        loop {
            let mut ready = self.fd.readable().await?;
            match self.stop.next_signal() {
                Some(sig) => return Ok(sig),
                None => ready.clear_ready(),
            }
        }
    }
}
