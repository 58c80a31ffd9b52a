//! `syscost demo`: the echo-server lab under a steady short-connection load, with the
//! live view attached to the server. Everything it starts is stopped when it ends.

use std::{
    io::IsTerminal as _,
    net::{Ipv4Addr, SocketAddrV4},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};

use crate::{
    cli::{DemoArgs, Mode, ViewArgs, seconds},
    plan::{Groups, Plan, programs},
};
use syscost_report::profile::SortKey;

/// The demo's helper processes, stopped (SIGTERM, then SIGKILL) when dropped.
struct Helpers(Vec<Child>);

impl Drop for Helpers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: signals our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        for c in &mut self.0 {
            while c.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

const HINT: &str = "per accept4 = per request. Watch close and epoll_ctl; epoll_wait is idle wait";

/// `cmd`'s process gets SIGTERM when the demo's main thread (which starts it) ends, however
/// it ends: a demo killed before its helpers are stopped leaves none running.
fn dies_with_the_demo(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec here.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// The port of the echo server's first line on `stderr` ("echo-server: listening on
/// 127.0.0.1:PORT ..."), awaited for at most 30 s; the rest of its lines are not read.
fn listening_port(stderr: Option<std::process::ChildStderr>) -> Result<u16> {
    use std::io::BufRead as _;
    let stderr = stderr.context("the echo server's stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // One line of a few dozen bytes; 4 KiB at the most.
        let mut line = String::new();
        let _ = std::io::BufReader::new(std::io::Read::take(stderr, 4096)).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| anyhow::anyhow!("the echo server did not say it listens within 30 s"))?;
    line.strip_prefix("echo-server: listening on 127.0.0.1:")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("the echo server did not start: {:?}", line.trim_end()))
}

pub fn demo(args: &DemoArgs) -> Result<i32> {
    syscost_engine::privileges::check()?;
    let exe = std::env::current_exe().context("cannot find the syscost executable")?;
    // The server takes a free port itself and says which (a port found free here and
    // given to it could be taken in between, by another test's server say).
    let mut helpers = Helpers(Vec::new());
    let mut server = Command::new(&exe);
    server.args(["lab", "echo-server", "--addr", "127.0.0.1:0", "--mode"]);
    server.arg(if args.mode == Mode::Et { "et" } else { "lt" });
    if args.stop_on_short_read {
        server.arg("--stop-on-short-read");
    }
    let mut server = dies_with_the_demo(&mut server)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start the echo server")?;
    let server_pid = server.id();
    let said = server.stderr.take();
    helpers.0.push(server);
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, listening_port(said)?);
    let load = dies_with_the_demo(&mut Command::new(&exe))
        .args(["lab", "echo-load", "--addr", &addr.to_string(), "--quiet"])
        .args(["-n", "1000000000000", "--duration", "86400"])
        .args(["-c", &args.concurrency.to_string()])
        .args(["--keepalive", &args.keepalive.to_string()])
        .args(["--rate", &args.rate.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the load generator")?;
    helpers.0.push(load);

    // The server traced as `attach -p` traces a process, shown with every syscall's
    // latency, per accepted connection.
    let target = syscost_engine::process::open(server_pid)?;
    let tui = !args.live.no_tui && std::io::stdout().is_terminal();
    let every = seconds(args.timing.interval);
    let view = ViewArgs {
        sort: SortKey::Time,
        latency: true,
        per: Some("accept4".into()),
        ..Default::default()
    };
    super::attach::Attach {
        plan: Plan::new(programs::process(), Groups::defaults(every))?.live(tui),
        label: super::attach::process_label(&target),
        target,
        cgroup: None,
        follow_forks: false,
        per_process: false,
        tui,
        duration: seconds(args.timing.duration),
        every,
        view: &view,
        json: None,
        hint: Some(HINT.to_string()),
    }
    .run()
}
