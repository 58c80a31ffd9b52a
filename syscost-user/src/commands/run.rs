//! `syscost run -- CMD`: profile a command from its first syscall.
//!
//! The child is forked by hand, not with `std::process::Command` (whose `spawn` waits
//! for the exec): it stops itself with SIGSTOP before exec, syscost adds its pid to the
//! traced set, then continues it. Its first traced syscall is the execve.
//!
//! The child dies with syscost (SIGKILL as its parent-death signal): a syscost killed
//! or panicking leaves no command behind, stopped or running. The kernel clears that
//! signal when the command execs a set-user-ID or set-group-ID program or one with file
//! capabilities (`sudo`, `ping`): such a command outlives a killed syscost; so do the
//! processes the command starts itself.

use std::{
    ffi::CString,
    fs,
    io::Read as _,
    os::{fd::FromRawFd as _, unix::ffi::OsStrExt as _},
    time::Instant,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    cli::RunArgs,
    plan::{Plan, programs},
};
use syscost_engine::{process, session::Watch};
use syscost_report::{output::Owner, profile::Target};

pub fn run(args: &RunArgs) -> Result<i32> {
    super::check_outputs(
        &args.view,
        &[
            args.json.as_deref(),
            args.output.as_deref(),
            args.calls_by_stack.stacks.as_deref(),
        ],
    )?;
    let program = crate::program::find_program(&args.command[0])?;
    // Who the command runs as, known before anything is loaded.
    let run_as = args.user.as_deref().map(RunAs::resolve).transpose()?;
    // The files written are the command's user's (-u), else the sudo caller's.
    let owner = run_as
        .as_ref()
        .map(|u| Owner {
            uid: u.uid,
            gid: u.gid,
        })
        .or_else(Owner::invoker);
    let mut plan = Plan::new(programs::command(), args.groups())?;
    let mut tracer = plan.load()?;

    // Signal handlers are in place before the command starts, so there is no moment in
    // which a Ctrl-C meant for the command ends syscost instead. (The command gets the
    // dispositions syscost was started with back before its exec.)
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let entered = runtime.enter();
    let signals = super::Signals::catch()?;
    // Each signal goes on to the command; syscost ends when it does.
    syscost_engine::signals::forwarding();
    drop(entered);

    let comm = process::exec_comm(&program);
    if run_as.is_none() {
        note_root_under_sudo();
    }
    let child = spawn_stopped(&program, &args.command, run_as.as_ref())?;
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
    let session = plan.start(tracer, Watch::Nothing).map_err(abandon)?;
    let metrics = super::serve_metrics(
        plan.listener.take(),
        &session.handle(),
        syscost_views::metrics::Source::new(pid, comm.clone(), 0),
        plan.reports_slow(),
    )
    .map_err(abandon)?;
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let started = Instant::now();
    if let Some((_, errno)) = child.exec_error()? {
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
                sig = signals.next() => match sig? {
                    libc::SIGINT => {}
                    // SAFETY: passes the signal on to our own child.
                    other => unsafe {
                        libc::kill(pid as i32, other);
                    },
                },
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
    super::add_slow(&mut profile, plan.slow.as_ref(), finished.slow);
    super::write_stacks(
        Some(&mut profile),
        plan.stacks_out.as_ref(),
        finished.stacks,
        owner,
        None,
    )?;
    let table = super::save_and_render(profile, &args.view, args.json.as_deref(), owner)?;
    match &args.output {
        Some(path) => syscost_report::output::write(path, table.as_bytes(), owner)?,
        None => {
            use std::io::Write as _;
            let _ = std::io::stderr().write_all(table.as_bytes());
        }
    }
    Ok(status)
}

/// The user `-u` names: who the command runs as.
#[derive(Debug)]
struct RunAs {
    name: String,
    uid: libc::uid_t,
    gid: libc::gid_t,
    /// Its supplementary groups, its own group among them.
    groups: Vec<libc::gid_t>,
}

impl RunAs {
    /// The user called `spec`, or of uid `spec`, from the password database.
    fn resolve(spec: &str) -> Result<Self> {
        let mut buf = vec![0u8; 16 * 1024];
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let name = CString::new(spec).context("the user name has a NUL byte")?;
        // SAFETY: the buffers outlive the calls; `found` points into `pw` or is null.
        let rc = unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if (rc != 0 || found.is_null())
            && let Ok(uid) = spec.parse::<libc::uid_t>()
        {
            // SAFETY: as above.
            unsafe {
                libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found)
            };
        }
        if found.is_null() {
            bail!("-u {spec}: no such user");
        }
        // SAFETY: getpw*_r filled `pw`, its strings in `buf`.
        let user = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }.to_owned();
        let (uid, gid) = (pw.pw_uid, pw.pw_gid);
        let mut groups = vec![0 as libc::gid_t; 64];
        loop {
            let mut n = groups.len() as libc::c_int;
            // SAFETY: `groups` holds `n` entries; getgrouplist says how many it needs.
            let rc = unsafe { libc::getgrouplist(user.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
            if rc >= 0 {
                groups.truncate(n as usize);
                break;
            }
            if groups.len() >= 65_536 {
                bail!("-u {spec}: cannot list the user's groups");
            }
            groups.resize((n as usize).max(groups.len() * 2), 0);
        }
        Ok(Self {
            name: user.to_string_lossy().into_owned(),
            uid,
            gid,
            groups,
        })
    }
}

/// Under sudo, without -u: the command runs as root, and one line says how to run it
/// as the caller.
fn note_root_under_sudo() {
    // SAFETY: plain getter.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    if let Ok(user) = std::env::var("SUDO_USER")
        && !user.is_empty()
        && user != "root"
    {
        eprintln!(
            "syscost: the command runs as root (syscost runs under sudo); -u {user} runs it as {user}"
        );
    }
}

/// Where the child failed, before its command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Groups = 1,
    Gid = 2,
    Uid = 3,
    Exec = 4,
    DeathSignal = 5,
}

/// A forked child stopped before its exec.
struct StoppedChild {
    pid: u32,
    /// Read end of a close-on-exec pipe: EOF when the exec succeeded, else the stage
    /// that failed and its errno.
    exec_status: fs::File,
}

impl StoppedChild {
    /// Waits for the exec; the stage and errno if it failed.
    fn exec_error(mut self) -> Result<Option<(Stage, i32)>> {
        let mut buf = [0u8; 8];
        let n = loop {
            match self.exec_status.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r.context("reading the exec status pipe")?,
            }
        };
        if n != 8 {
            return Ok(None);
        }
        let stage = match i32::from_ne_bytes(buf[..4].try_into().expect("4 bytes")) {
            1 => Stage::Groups,
            2 => Stage::Gid,
            3 => Stage::Uid,
            5 => Stage::DeathSignal,
            _ => Stage::Exec,
        };
        Ok(Some((
            stage,
            i32::from_ne_bytes(buf[4..].try_into().expect("4 bytes")),
        )))
    }
}

/// Forks the command's process, as `run_as` when given (its groups, group and user set
/// before it stops, so that the first call traced is still the execve), stopped before
/// its exec, killed when the calling thread ends (call it from the thread that lives as
/// long as syscost: the kernel's parent is the thread that forked).
fn spawn_stopped(
    program: &std::path::Path,
    argv: &[String],
    run_as: Option<&RunAs>,
) -> Result<StoppedChild> {
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
    // SAFETY: plain getter.
    let syscost = unsafe { libc::getpid() };

    let dispositions = syscost_engine::signals::ChildDispositions::inherited();
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe2");
    }
    // SAFETY: the child only calls sigaction, setgroups, setgid, setuid, prctl, getppid,
    // raise, execv, write and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        // SAFETY: async-signal-safe calls only, on memory prepared before the fork.
        unsafe {
            let fail = |stage: Stage| -> ! {
                let report = [stage as i32, *libc::__errno_location()];
                libc::write(fds[1], report.as_ptr().cast(), 8);
                libc::_exit(127);
            };
            libc::close(fds[0]);
            // The signal dispositions the command would have had without syscost.
            dispositions.apply();
            if let Some(u) = run_as {
                if libc::setgroups(u.groups.len(), u.groups.as_ptr()) != 0 {
                    fail(Stage::Groups);
                }
                if libc::setgid(u.gid) != 0 {
                    fail(Stage::Gid);
                }
                if libc::setuid(u.uid) != 0 {
                    fail(Stage::Uid);
                }
            }
            // After the change of user, which clears it; a syscost that died before it
            // was set is seen as a parent that is no longer syscost.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                fail(Stage::DeathSignal);
            }
            if libc::getppid() != syscost {
                libc::_exit(127);
            }
            libc::raise(libc::SIGSTOP);
            libc::execv(path.as_ptr(), argv_ptrs.as_ptr());
            fail(Stage::Exec);
        }
    }
    // SAFETY: we own both fds.
    unsafe { libc::close(fds[1]) };
    let exec_status = unsafe { fs::File::from_raw_fd(fds[0]) };
    let mut status = 0;
    let r = loop {
        // SAFETY: waits for our own child to stop.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break r;
        }
    };
    let child = StoppedChild {
        pid: pid as u32,
        exec_status,
    };
    if r != pid || !libc::WIFSTOPPED(status) {
        // It ended before stopping: switching to the user failed, and it said how.
        if let (Some(u), Some((stage, errno))) = (run_as, child.exec_error()?) {
            bail!(
                "cannot run the command as {} (uid {}, gid {}): {} failed: {}",
                u.name,
                u.uid,
                u.gid,
                match stage {
                    Stage::Groups => "setgroups",
                    Stage::Gid => "setgid",
                    Stage::Uid => "setuid",
                    Stage::DeathSignal => "prctl(PR_SET_PDEATHSIG)",
                    Stage::Exec => "exec",
                },
                std::io::Error::from_raw_os_error(errno)
            );
        }
        bail!("the command's process ended before it could be traced");
    }
    Ok(child)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// How long the test waits for one event before it fails.
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

    /// Not a test of its own: the syscost that `a_stopped_command_dies_with_syscost`
    /// kills (run with SYSCOST_TEST_PARENT set). Starts `sleep` stopped before its
    /// exec, as `run` does, says its pid and waits on stdin.
    #[test]
    #[ignore = "run by a_stopped_command_dies_with_syscost"]
    fn parent_of_a_stopped_command() {
        if std::env::var_os("SYSCOST_TEST_PARENT").is_none() {
            return;
        }
        let program = which::which("sleep").expect("sleep is installed");
        let child = spawn_stopped(&program, &["sleep".into(), "600".into()], None).unwrap();
        println!("stopped child {}", child.pid);
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }

    /// A syscost killed while its command is held stopped before its exec (the
    /// programs still loading) takes the command with it.
    #[test]
    fn a_stopped_command_dies_with_syscost() {
        use std::io::BufRead as _;
        let mut parent = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "commands::run::tests::parent_of_a_stopped_command",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SYSCOST_TEST_PARENT", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = parent.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(l);
            }
        });
        let kill = |pid: i32| {
            // SAFETY: signals a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        };
        let child: i32 = loop {
            let Ok(line) = rx.recv_timeout(PATIENCE) else {
                kill(parent.id() as i32);
                panic!("the parent said no child's pid within {PATIENCE:?}");
            };
            // After libtest's "test NAME ... " on the same line.
            if let Some((_, pid)) = line.split_once("stopped child ") {
                break pid.trim().parse().unwrap();
            }
        };
        // SAFETY: pidfd_open of our grandchild, alive: its parent waits for it.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) } as i32;
        assert!(
            pidfd >= 0,
            "pidfd_open: {}",
            std::io::Error::last_os_error()
        );
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap();
        let state = stat.rsplit_once(") ").unwrap().1.chars().next();
        assert_eq!(state, Some('T'), "held stopped: {stat}");
        kill(parent.id() as i32);
        parent.wait().unwrap();
        let mut fd = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polls one pidfd of ours, with a deadline.
        let ready = unsafe { libc::poll(&mut fd, 1, PATIENCE.as_millis() as i32) };
        if ready != 1 {
            kill(child);
        }
        // SAFETY: closes our pidfd.
        unsafe { libc::close(pidfd) };
        assert_eq!(
            ready, 1,
            "the stopped command {child} was still there {PATIENCE:?} after its parent was killed"
        );
    }
}
