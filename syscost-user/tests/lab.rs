//! The echo-server lab: the server echoes exactly in every mode, the load generator's
//! counts match, and (as root) syscost's per-request figures agree with the load.

mod common;

use std::{
    io::{BufRead, BufReader, Read},
    process::Stdio,
};

use common::*;
use syscost_user::profile::per_unit;

/// Reads lines until the server says where it listens; its port.
fn port_from(stderr: &mut impl BufRead) -> u16 {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "server ended before listening"
        );
        if let Some(rest) = line.split("listening on 127.0.0.1:").nth(1) {
            return rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    }
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
                "60",
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

fn start_server(args: &[&str]) -> (Reaped, BufReader<std::process::ChildStderr>, u16) {
    let mut server = syscost()
        .args([
            "lab",
            "echo-server",
            "--addr",
            "127.0.0.1:0",
            "--duration",
            "60",
        ])
        .args(args)
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let port = port_from(&mut err);
    (server, err, port)
}

fn finish(mut server: Reaped, mut err: BufReader<std::process::ChildStderr>) -> String {
    assert!(server.wait_exit().success());
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    rest
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
}

/// `syscost run --per accept4 -- echo-server --max-conns N` with N connections of load.
fn profile_server(
    t: &RootTest,
    server: &[&str],
    load_args: &[&str],
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
        .args(["--duration", "60"])
        .args(server)
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = BufReader::new(run.stderr.take().unwrap());
    let port = port_from(&mut err);
    let out = load(port, load_args);
    assert!(out.contains("errors=0"), "{out}");
    assert!(run.wait_exit().success());
    read_profile(&json_path)
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
    let plain = profile_server(
        &t,
        &["--mode", "et", "--max-conns", "300"],
        &["-n", "300", "-c", "1"],
    );
    let short = profile_server(
        &t,
        &["--mode", "et", "--stop-on-short-read", "--max-conns", "300"],
        &["-n", "300", "-c", "1"],
    );
    // Not one per connection: when the client's FIN is already there, the read after the
    // request returns 0 instead of failing.
    assert!(
        eagain(&plain) >= 50,
        "plain ET: {} EAGAIN reads",
        eagain(&plain)
    );
    assert!(
        eagain(&short) < eagain(&plain) / 4,
        "{} vs {}",
        eagain(&short),
        eagain(&plain)
    );
    // Fewer reads; the total of all syscalls also depends on how wake-ups batch, so it
    // is not asserted.
    assert!(calls(&short, "read") < calls(&plain, "read"));
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
    assert!(out.contains(" accept4"), "{out}");
    assert!(out.contains("per accept4: "), "{out}");
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
        .args(["lab", "echo-server", "--duration", "10"])
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = BufReader::new(server.stderr.take().unwrap());
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
