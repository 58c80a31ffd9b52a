//! `syscost run -- CMD`: profile a command from its first syscall.
//!
//! The child is forked by hand, not with `std::process::Command` (whose `spawn` waits
//! for the exec): it stops itself with SIGSTOP before exec, syscost adds its pid to the
//! traced set, then continues it. Its first traced syscall is the execve.

use std::{
    ffi::CString,
    fs,
    io::Read as _,
    os::{fd::FromRawFd as _, unix::ffi::OsStrExt as _},
    time::Instant,
};

use anyhow::{Context as _, Result, anyhow, bail};
use tokio::signal::unix::{SignalKind, signal};

use crate::{cli::RunArgs, process, profile::Target, session::Watch, tracer::TracerOptions};

pub fn run(args: &RunArgs) -> Result<i32> {
    super::check_outputs(&args.view, &[args.json.as_deref(), args.output.as_deref()])?;
    let program = which::which(&args.command[0])
        .map_err(|_| anyhow!("command not found: {}", args.command[0]))?;
    let listener = super::bind_metrics(args.metrics_addr)?;
    let mut tracer = super::load_tracer(
        TracerOptions {
            follow_forks: true,
            offcpu: !args.no_offcpu,
            slots: 1,
            ..Default::default()
        },
        &args.slow_calls,
    )?;

    // Signal handlers are in place before the command starts, so there is no moment in
    // which a Ctrl-C meant for the command ends syscost instead. (Caught signals are
    // reset to their defaults by the command's exec.)
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let entered = runtime.enter();
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    drop(entered);

    let comm = process::exec_comm(&program);
    let child = spawn_stopped(&program, &args.command)?;
    let pid = child.pid;
    // Until it is continued the child has run nothing: whatever fails before ends it.
    let abandon = |e: anyhow::Error| {
        // SAFETY: ends our own stopped child, which never ran the command.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let _ = wait(pid);
        e
    };
    tracer.trace_process(pid).map_err(abandon)?;
    let offcpu = tracer.offcpu_tracked();
    let features = tracer.features().clone();
    let session = super::start_session(
        tracer,
        super::SessionSetup {
            interval: std::time::Duration::from_secs(1),
            watch: Watch::Nothing,
            run_stats: !args.no_run_stats,
            echo_slow: true,
            keep_slow: crate::slow::reader::SlowLog::CAP,
            top_totals: true,
        },
    )
    .map_err(abandon)?;
    let metrics = super::serve_metrics(
        listener,
        &session.handle(),
        crate::metrics::Source::new(pid, comm.clone(), 0),
        args.slow_calls.slow.is_some(),
    )
    .map_err(abandon)?;
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let started = Instant::now();
    if let Some(errno) = child.exec_error()? {
        wait(pid)?;
        bail!(
            "cannot execute {}: {}",
            program.display(),
            std::io::Error::from_raw_os_error(errno)
        );
    }

    let status = runtime.block_on(async move {
        // Ctrl-C reaches the command through the terminal: syscost waits for it to exit
        // and prints the summary. SIGTERM and SIGHUP sent to syscost are passed on.
        let mut waiter = tokio::task::spawn_blocking(move || wait(pid));
        loop {
            tokio::select! {
                status = &mut waiter => break status.context("wait task failed")?,
                _ = sigint.recv() => {}
                _ = sigterm.recv() => unsafe { libc::kill(pid as i32, libc::SIGTERM); },
                _ = sighup.recv() => unsafe { libc::kill(pid as i32, libc::SIGHUP); },
            }
        }
    })?;
    let duration_ns = started.elapsed().as_nanos() as u64;
    drop(metrics);

    let target = Target::command(pid, &comm, &args.command);
    let finished = session.finish()?;
    let mut profile = finished
        .snapshot(0)
        .to_profile(target, duration_ns, offcpu)?
        .with_features(&features);
    super::add_slow(&mut profile, args.slow_calls.slow.as_ref(), finished.slow);
    let table = super::finish(profile, &args.view, args.json.as_deref())?;
    match &args.output {
        Some(path) => {
            fs::write(path, table).with_context(|| format!("cannot write {}", path.display()))?
        }
        None => {
            use std::io::Write as _;
            let _ = std::io::stderr().write_all(table.as_bytes());
        }
    }
    Ok(status)
}

/// A forked child stopped before its exec.
struct StoppedChild {
    pid: u32,
    /// Read end of a close-on-exec pipe: EOF when the exec succeeded, else the errno.
    exec_status: fs::File,
}

impl StoppedChild {
    /// Waits for the exec; the errno if it failed.
    fn exec_error(mut self) -> Result<Option<i32>> {
        let mut buf = [0u8; 4];
        let n = self
            .exec_status
            .read(&mut buf)
            .context("reading the exec status pipe")?;
        Ok((n == 4).then(|| i32::from_ne_bytes(buf)))
    }
}

fn spawn_stopped(program: &std::path::Path, argv: &[String]) -> Result<StoppedChild> {
    // Everything the child needs is prepared before the fork: after it, the child may
    // only make async-signal-safe calls.
    let path =
        CString::new(program.as_os_str().as_bytes()).context("command path has a NUL byte")?;
    let argv: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .context("an argument has a NUL byte")?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());

    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe2");
    }
    // SAFETY: the child only calls raise, execv, write and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        unsafe {
            libc::close(fds[0]);
            libc::raise(libc::SIGSTOP);
            libc::execv(path.as_ptr(), argv_ptrs.as_ptr());
            let errno = *libc::__errno_location();
            libc::write(fds[1], (&errno as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    // SAFETY: we own both fds.
    unsafe { libc::close(fds[1]) };
    let exec_status = unsafe { fs::File::from_raw_fd(fds[0]) };
    let mut status = 0;
    // SAFETY: waits for our own child to stop.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    if r != pid || !libc::WIFSTOPPED(status) {
        bail!("the command's process ended before it could be traced");
    }
    Ok(StoppedChild {
        pid: pid as u32,
        exec_status,
    })
}

/// Waits for the child to end: its exit code, or 128 + the signal that killed it.
fn wait(pid: u32) -> Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid as i32, &mut status, 0) };
        if r == pid as i32 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e).context("waitpid");
        }
    }
    Ok(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    })
}
