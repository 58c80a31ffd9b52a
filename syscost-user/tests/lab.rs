//! The echo-server lab: the server echoes exactly in every mode, the load generator's
//! counts match, and (as root) syscost's per-request figures agree with the load.

mod common;

use std::{
    io::{Read as _, Write as _},
    process::Stdio,
    time::Duration,
};

use common::*;
use syscost_user::profile::per_unit;

/// How long the server and the load may run at most (`--duration`): they stop by
/// themselves long before, at their count, however slow the machine.
fn at_most() -> String {
    PATIENCE.as_secs().to_string()
}

/// Reads lines until the server says where it listens
/// ("echo-server: listening on 127.0.0.1:PORT (...), pid PID"); its port and pid.
fn listening(stderr: &mut StderrLines) -> (u16, u32) {
    let line = stderr.until("the server's listening line", |l| {
        l.contains("listening on 127.0.0.1:")
    });
    let port = line
        .split("listening on 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    let pid = line
        .rsplit(", pid ")
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line:?}"));
    (port, pid)
}

fn port_from(stderr: &mut StderrLines) -> u16 {
    listening(stderr).0
}

fn load(port: u16, args: &[&str]) -> String {
    let o = output(
        syscost()
            .args([
                "lab",
                "echo-load",
                "--addr",
                &format!("127.0.0.1:{port}"),
                "--duration",
                &at_most(),
            ])
            .args(args),
    );
    assert!(
        o.status.success(),
        "echo-load failed: {}{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

fn start_server(args: &[&str]) -> (Reaped, StderrLines, u16) {
    let mut server = syscost()
        .args([
            "lab",
            "echo-server",
            "--addr",
            "127.0.0.1:0",
            "--duration",
            &at_most(),
        ])
        .args(args)
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(server.stderr.take().unwrap(), "the server's stderr");
    let port = port_from(&mut err);
    (server, err, port)
}

fn finish(mut server: Reaped, mut err: StderrLines) -> String {
    assert!(server.wait_exit().success());
    err.rest().join("\n")
}

#[test]
fn server_echoes_exactly_in_every_mode() {
    for mode in [
        &["--mode", "lt"][..],
        &["--mode", "et"],
        &["--mode", "et", "--stop-on-short-read"],
    ] {
        let (server, err, port) = start_server(&[mode, &["--max-conns", "400"]].concat());
        let out = load(port, &["-n", "400", "-c", "8"]);
        assert!(
            out.contains("connections=400 requests=400 errors=0"),
            "{mode:?}: {out}"
        );
        let summary = finish(server, err);
        assert!(
            summary.contains("connections=400 bytes=4800"),
            "{mode:?}: {summary}"
        );
    }
}

#[test]
fn keepalive_sends_many_requests_per_connection() {
    let (server, err, port) = start_server(&["--mode", "et", "--max-conns", "50"]);
    let out = load(port, &["-n", "50", "-c", "4", "--keepalive", "8"]);
    assert!(
        out.contains("connections=50 requests=400 errors=0"),
        "{out}"
    );
    assert!(finish(server, err).contains("connections=50 bytes=4800"));
}

#[test]
fn load_generator_reports_refused_connections() {
    // Nothing listens on this port once the listener is dropped.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = output(syscost().args([
        "lab",
        "echo-load",
        "--addr",
        &format!("127.0.0.1:{port}"),
        "-n",
        "3",
    ]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("connections=3 requests=0 errors=3"),
        "{}",
        stdout(&o)
    );
    // And why, once.
    assert_eq!(
        stderr(&o),
        format!(
            "syscost: 3 of 3 connections failed; one of them: cannot connect to 127.0.0.1:{port}: Connection refused (os error 111) (is `syscost lab echo-server` listening there?)\n"
        )
    );
}

/// `syscost run --per accept4 -- echo-server --max-conns N` with N connections of load.
fn profile_server(
    t: &RootTest,
    server: &[&str],
    load_args: &[&str],
) -> syscost_user::profile::Profile {
    profile_server_with(t, server, |port, _| {
        let out = load(port, load_args);
        assert!(out.contains("errors=0"), "{out}");
    })
}

/// [`profile_server`] with the connections made by `drive(port, server's pid)`.
fn profile_server_with(
    t: &RootTest,
    server: &[&str],
    drive: impl FnOnce(u16, u32),
) -> syscost_user::profile::Profile {
    let json_path = t.path("server.json");
    let mut run = syscost()
        .args(["run", "--per", "accept4", "-o", "/dev/null", "--json"])
        .arg(&json_path)
        .args([
            "--",
            env!("CARGO_BIN_EXE_syscost"),
            "lab",
            "echo-server",
            "--addr",
            "127.0.0.1:0",
        ])
        .args(["--duration", &at_most()])
        .args(server)
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(run.stderr.take().unwrap(), "syscost run's stderr");
    let (port, pid) = listening(&mut err);
    drive(port, pid);
    let status = run.wait_exit();
    assert!(status.success(), "syscost run: {status}: {:?}", err.rest());
    read_profile(&json_path)
}

/// Whether a `/proc/PID/syscall` line says the task is blocked in an epoll wait
/// (glibc's epoll_wait is the epoll_pwait syscall where there is no epoll_wait).
fn in_epoll_wait(line: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    let waits = [libc::SYS_epoll_wait, libc::SYS_epoll_pwait];
    #[cfg(not(target_arch = "x86_64"))]
    let waits = [libc::SYS_epoll_pwait];
    let nr = line.split_whitespace().next().and_then(|n| n.parse().ok());
    nr.is_some_and(|nr: libc::c_long| waits.contains(&nr))
}

/// `n` connections one after the other, each of one 12-byte request: the client reads
/// the echo, then waits until the server (`pid`, one thread) is blocked in epoll_wait,
/// done with what it read, and only then closes. The client's FIN so never comes
/// before the server's read after the request: in ET mode that read fails with EAGAIN,
/// on every connection.
fn one_request_each_closed_when_the_server_waits(port: u16, pid: u32, n: u64) {
    let state = format!("/proc/{pid}/task/{pid}/syscall");
    for i in 0..n {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.write_all(b"hello syscos").unwrap();
        let mut echo = [0u8; 12];
        s.read_exact(&mut echo)
            .unwrap_or_else(|e| panic!("connection {i}: no echo: {e}"));
        assert_eq!(&echo, b"hello syscos", "connection {i}");
        wait_until(
            &format!("the server to wait in epoll after connection {i}'s echo"),
            PATIENCE,
            Duration::from_micros(100),
            || {
                let line = std::fs::read_to_string(&state).unwrap_or_default();
                if in_epoll_wait(&line) {
                    Ok(())
                } else {
                    Err(format!("; its state: {}", line.trim()))
                }
            },
        );
    }
}

#[test]
fn per_request_attribution_of_the_server() {
    let Some(t) = root_test!() else {
        return;
    };
    let n = 300;
    let p = profile_server(
        &t,
        &["--mode", "lt", "--max-conns", "300"],
        &["-n", "300", "-c", "4"],
    );
    assert_eq!(calls(&p, "accept4"), n);
    assert!(calls(&p, "close") >= n, "close {}", calls(&p, "close"));
    assert!(calls(&p, "epoll_ctl") >= 2 * n);
    // What each request costs, known from the server's code: one accept4, an
    // epoll_ctl ADD and DEL (plus the listener's ADD), one echo write (plus the
    // server's two lines on stderr).
    assert_eq!(calls(&p, "epoll_ctl"), 2 * n + 1);
    assert_eq!(calls(&p, "write"), n + 2);
    let u = per_unit(&p, "accept4").unwrap();
    assert_eq!(u.units, n);
    // accept4, epoll_ctl x2, read x2, write, close, and epoll_waits: at least 8 a request.
    assert!(u.calls >= 8.0, "{} syscalls per request", u.calls);

    // Keep-alive: 8 requests per connection, so close per request drops to about 1/8.
    let k = profile_server(
        &t,
        &["--mode", "lt", "--max-conns", "40"],
        &["-n", "40", "-c", "4", "--keepalive", "8"],
    );
    assert_eq!(calls(&k, "accept4"), 40);
    let close_per_request = calls(&k, "close") as f64 / 320.0;
    assert!(
        close_per_request < 0.2,
        "close per request {close_per_request}"
    );
    // 320 echoes and the server's two lines on stderr.
    assert_eq!(calls(&k, "write"), 322);
}

#[test]
fn stopping_on_short_reads_saves_the_failing_read() {
    let Some(t) = root_test!() else {
        return;
    };
    let eagain = |p: &syscost_user::profile::Profile| {
        p.syscall("read")
            .and_then(|r| r.errnos.get("EAGAIN").copied())
            .unwrap_or(0)
    };
    // Each client closes only once the server waits again, done with its request: the
    // server's read after the request always comes before the FIN (were the FIN there,
    // that read would return 0 instead of failing, as it may under a load generator).
    let n = 300;
    let max = n.to_string();
    let plain = profile_server_with(&t, &["--mode", "et", "--max-conns", &max], |port, pid| {
        one_request_each_closed_when_the_server_waits(port, pid, n)
    });
    let short = profile_server_with(
        &t,
        &["--mode", "et", "--stop-on-short-read", "--max-conns", &max],
        |port, pid| one_request_each_closed_when_the_server_waits(port, pid, n),
    );
    // Plain ET reads until a read fails: one EAGAIN a connection. Stopping on the short
    // read of the request saves exactly that read: no EAGAIN, one read fewer each.
    assert_eq!(
        (eagain(&plain), eagain(&short)),
        (n, 0),
        "EAGAIN reads, plain and stopping on short reads"
    );
    assert_eq!(
        calls(&plain, "read") - calls(&short, "read"),
        n,
        "reads: plain {}, stopping on short reads {}",
        calls(&plain, "read"),
        calls(&short, "read")
    );
}

#[test]
fn demo_runs_and_cleans_up() {
    let Some(_t) = root_test!() else {
        return;
    };
    // The demo's helpers inherit this mark: processes of other tests do not have it.
    let mark = format!("SYSCOST_DEMO_TEST={}", std::process::id());
    let o = output(
        syscost()
            .env("SYSCOST_DEMO_TEST", std::process::id().to_string())
            .args(["demo", "--no-tui", "-d", "1.5", "--rate", "300"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let accept4: Vec<&str> = out.lines().filter(|l| l.contains("accept4")).collect();
    assert!(
        out.contains(" accept4"),
        "no accept4 row in the demo's {} lines",
        out.lines().count()
    );
    assert!(out.contains("per accept4: "), "{accept4:?}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|pid| pid.parse::<u32>().is_ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == mark.as_bytes()))
        })
        .collect();
    assert!(left.is_empty(), "helpers left running: {left:?}");
}

/// The server listens on loopback unless told otherwise: with no `--addr`, the kernel's
/// socket table has it on 127.0.0.1 only.
#[test]
fn the_server_listens_on_loopback_by_default() {
    let mut server = syscost()
        .args(["lab", "echo-server", "--duration", &at_most()])
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(server.stderr.take().unwrap(), "the server's stderr");
    let port = port_from(&mut err);
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let tcp6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    // Listening sockets (state 0A) on the server's port, by local address.
    let listening: Vec<String> = tcp
        .lines()
        .chain(tcp6.lines())
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (addr, p) = f.get(1)?.split_once(':')?;
            (f.get(3) == Some(&"0A") && u16::from_str_radix(p, 16).ok() == Some(port))
                .then(|| addr.to_string())
        })
        .collect();
    assert_eq!(listening, vec!["0100007F".to_string()], "port {port}");
    let _ = server.kill();
}
