//! The metrics endpoint against clients that hold on to it: a flood of idle connections
//! under the service's descriptor limit, a head never finished, answers never read,
//! a connection that asks for ever, scrapes at once, and wrong passwords by the dozen.
//! Each waits on what it observes (an answer, a count, a socket the server let go of),
//! with a deadline that fails loudly. Needs root (the endpoint serves a tracer).

mod common;

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    os::fd::FromRawFd as _,
    process::{Command, Stdio},
    time::Duration,
};

use common::*;

/// The endpoint's connections unless told otherwise (`--metrics-max-connections`).
const MAX_CONNECTIONS: usize = 64;
/// Answers on one connection, the last with `Connection: close`.
const REQUESTS_PER_CONNECTION: usize = 100;

fn sigint(pid: u32) {
    // SAFETY: signals a process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
}

/// `cmd`'s process starts with at most `n` descriptors, as under the service's limit.
fn limit_descriptors(cmd: &mut Command, n: u64) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// This test process may open `n` descriptors (its soft limit raised to its hard one
/// if need be): a flood is a client's descriptors.
fn allow_descriptors(n: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reads and writes one rlimit.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        assert!(
            limit.rlim_max >= n,
            "this test opens {n} connections: its hard descriptor limit is {}",
            limit.rlim_max
        );
        if limit.rlim_cur < n {
            limit.rlim_cur = limit.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
}

/// Descriptors process `pid` holds.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Starts `cmd` (an export), waits for its serving line; the process, its endpoint and
/// the lines of its stderr after (read as they come: hold them while it runs).
fn serving(cmd: &mut Command) -> (Reaped, String, StderrLines) {
    let (export, first, err) = started(cmd.stdout(Stdio::null()));
    assert!(first.starts_with("syscost: serving"), "{first}");
    let addr = endpoint_in(&first);
    (export, addr, err)
}

/// The one answer of a `Connection: close` request sent on `s`, read to the end: its
/// status and head (lowercase), or why there is none.
fn answer_of(mut s: TcpStream) -> Result<(u16, String), String> {
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let (status, head) = status_and_head(&raw).ok_or_else(|| format!("no answer: {raw:?}"))?;
    Ok((status, head))
}

/// The status and head (lowercase) of the response at the start of `raw`.
fn status_and_head(raw: &[u8]) -> Option<(u16, String)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, head))
}

/// The responses read from one connection, in order: each one's status and head.
/// Bodies are skipped by their `content-length`; a response cut short ends the list.
fn responses(raw: &[u8]) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some((status, head)) = status_and_head(rest) {
        let Some(len) = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
        else {
            break;
        };
        let start = head.len() + 4;
        if rest.len() < start + len {
            break;
        }
        out.push((status, head));
        rest = &rest[start + len..];
    }
    out
}

/// A GET /metrics to send on a connection, with `extra` headers.
fn get_request(addr: &str, extra: &str) -> String {
    format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n")
}

/// A connection to `addr` whose receive buffer is as small as the kernel allows: a
/// client that reads nothing holds little of what is sent to it, so the sender's writes
/// soon find no room.
fn small_window_connection(addr: &str) -> TcpStream {
    let to: SocketAddr = addr.parse().unwrap();
    let SocketAddr::V4(v4) = to else {
        panic!("{addr}: an IPv4 endpoint")
    };
    // SAFETY: a new socket, its receive buffer set before it connects, handed to a
    // TcpStream that owns it from then on.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let size: libc::c_int = 4096;
        assert_eq!(
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&raw const size).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            ),
            0
        );
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: v4.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*v4.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        assert_eq!(
            libc::connect(
                fd,
                (&raw const sin).cast(),
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ),
            0,
            "connect: {}",
            std::io::Error::last_os_error()
        );
        stream
    }
}

/// Whether process `pid` still holds its end of the TCP connection whose other end is
/// `client` (the kernel's table of sockets: the server's end, its inode among `pid`'s
/// descriptors). Once the server closed it, the end is gone or no process's.
fn holds_connection(pid: u32, server: &str, client: SocketAddr) -> bool {
    let server: SocketAddr = server.parse().unwrap();
    let hex = |a: SocketAddr| {
        let SocketAddr::V4(v4) = a else {
            panic!("{a}: IPv4")
        };
        // /proc/net/tcp: the address as the kernel's u32 in host order, the port in hex.
        format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(v4.ip().octets()),
            v4.port()
        )
    };
    let (local, remote) = (hex(server), hex(client));
    let inode = std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1) == Some(&local.as_str()) && f.get(2) == Some(&remote.as_str()))
                .then(|| f.get(9).map(|i| i.to_string()))
                .flatten()
        });
    let Some(inode) = inode.filter(|i| i != "0") else {
        return false;
    };
    let link = format!("socket:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy() == link))
}

/// getppid calls a second and seconds of the paced workload: its calls span several of
/// syscost's samples.
const PACED: (u64, u64) = (2_000, 3);

/// `export --top` under a 1,024-descriptor limit (the usual soft limit, which the
/// service's unit used to leave) while 1,100 idle connections are held open to its
/// endpoint: it holds at most its 64 (the rest closed as they come, and counted), so
/// its descriptors never run out; a paced workload started then in a cgroup of the
/// test's has every one of its 6,000 getppid counted; and the endpoint answers once the
/// connections it held reach their idle deadline, the flood still open.
#[test]
fn a_flood_of_idle_connections_neither_takes_the_endpoint_nor_loses_counts() {
    let Some(_t) = root_test!() else {
        return;
    };
    let flood = 1_100;
    allow_descriptors(flood as u64 + 256);
    let cg = TestCgroup::new("flood");
    let (mut export, addr, _err) = serving(limit_descriptors(
        syscost().args([
            "export",
            "--top",
            "--top-n",
            "1000",
            "--metrics-addr",
            "127.0.0.1:0",
        ]),
        1024,
    ));
    let before = descriptors(export.id());
    let (rate, secs) = PACED;
    // Moved into the cgroup before its work (no getppid before it, unlike a shell's).
    let (mut work, _out) = waiting(&["paced", &rate.to_string(), &secs.to_string()]);
    cg.enter(work.id());
    let to: SocketAddr = addr.parse().unwrap();
    let held: Vec<TcpStream> = (0..flood)
        .map(|i| {
            TcpStream::connect_timeout(&to, PATIENCE)
                .unwrap_or_else(|e| panic!("connection {i} of the flood: {e}"))
        })
        .collect();
    let during = descriptors(export.id());
    assert!(
        during <= before + MAX_CONNECTIONS + 8,
        "syscost holds {during} descriptors with {flood} connections open to it, {before} before"
    );
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    let calls = (rate * secs) as f64;
    let getppid = |text: &str| {
        sample_value(
            text,
            "syscost_cgroup_syscalls_total",
            &[("cgroup", &cg.path), ("syscall", "getppid")],
        )
    };
    let text = scrape_until(
        &addr,
        &format!("an answer with the cgroup's {calls} getppid, {flood} connections open"),
        |text| match getppid(text) {
            Some(n) if n >= calls => Ok(text.to_string()),
            n => Err(format!(": {n:?} so far")),
        },
    );
    assert_eq!(getppid(&text), Some(calls));
    let refused = sample_value(&text, "syscost_scrape_connections_refused_total", &[])
        .expect("syscost_scrape_connections_refused_total");
    assert!(
        refused >= (flood - MAX_CONNECTIONS) as f64,
        "{refused} connections refused of {flood}"
    );
    drop(held);
    sigint(export.id());
    assert!(export.wait_exit().success());
}

/// The raw syscalls the workload of the stalling test makes, each with a histogram of
/// its own on the endpoint: a large answer.
const NUMBERS: std::ops::Range<u32> = 600..640;

/// Clients that stall are hung up on: one that sends half a head, at its head's
/// deadline; one that asks for answers and never reads them (its window closed), at the
/// deadline of the answer it does not read (the server lets go of its end before the
/// client read anything, having sent fewer answers than asked); and one that keeps
/// asking, after its 100th answer, which says `Connection: close`.
#[test]
fn clients_that_stall_or_keep_asking_are_hung_up_on() {
    let Some(_t) = root_test!() else {
        return;
    };
    let numbers: Vec<String> = NUMBERS.map(|n| n.to_string()).collect();
    let (mut work, _out) = waiting(
        &[
            &["numbers", "2"][..],
            &numbers.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    let (mut export, addr, _err) = serving(syscost().args([
        "export",
        "-p",
        &work.id().to_string(),
        "--metrics-addr",
        "127.0.0.1:0",
    ]));
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    let last = format!("syscall_{:#x}", NUMBERS.end - 1);
    let body = scrape_until(&addr, "the workload's last raw syscall", |text| {
        sample_value(text, "syscost_syscalls_total", &[("syscall", &last)])
            .map(|_| text.to_string())
            .ok_or_else(|| format!(": {} bytes", text.len()))
    });

    // Half a head: closed at its deadline (end of file or a reset, never an answer).
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .unwrap();
    half.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut got = Vec::new();
    match half.read_to_end(&mut got) {
        Ok(_) => assert!(got.is_empty(), "an answer to half a head: {got:?}"),
        Err(e) => assert_eq!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset,
            "half a head still open after {} s",
            PATIENCE.as_secs()
        ),
    }

    // Answers never read: enough of them to fill the socket's buffers on both sides
    // (the kernel's largest send buffer, and a receive buffer at its smallest), fewer
    // than a connection's last.
    let send_max: usize = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    let asked = (2 * send_max + (1 << 20)).div_ceil(body.len());
    assert!(
        asked < REQUESTS_PER_CONNECTION,
        "answers of {} bytes: {asked} needed to fill {send_max} bytes of buffers",
        body.len()
    );
    let mut deaf = small_window_connection(&addr);
    let client = deaf.local_addr().unwrap();
    deaf.write_all(get_request(&addr, "").repeat(asked).as_bytes())
        .unwrap();
    let pid = export.id();
    let holds = |held: bool| {
        let addr = addr.clone();
        move || {
            if holds_connection(pid, &addr, client) == held {
                Ok(())
            } else {
                Err(String::new())
            }
        }
    };
    wait_until(
        "syscost to accept a connection",
        PATIENCE,
        Duration::from_millis(10),
        holds(true),
    );
    wait_until(
        "syscost to let go of a connection whose answers are not read",
        PATIENCE,
        Duration::from_millis(100),
        holds(false),
    );
    // What reached the client before: fewer answers than asked for.
    deaf.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut raw = Vec::new();
    let _ = deaf.read_to_end(&mut raw);
    let answered = responses(&raw).len();
    assert!(
        answered < asked,
        "{answered} answers of {asked} reached a client that read none"
    );

    // A connection that keeps asking: its 100th answer is its last.
    let mut eager = TcpStream::connect(&addr).unwrap();
    eager
        .write_all(
            get_request(&addr, "")
                .repeat(REQUESTS_PER_CONNECTION + 1)
                .as_bytes(),
        )
        .unwrap();
    eager.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut raw = Vec::new();
    let _ = eager.read_to_end(&mut raw);
    let answers = responses(&raw);
    assert_eq!(answers.len(), REQUESTS_PER_CONNECTION);
    assert!(answers.iter().all(|(status, _)| *status == 200));
    let (_, last_head) = answers.last().unwrap();
    assert!(
        last_head.contains("\r\nconnection: close"),
        "the last answer's head: {last_head}"
    );
    assert!(
        !answers[0].1.contains("connection: close"),
        "{}",
        answers[0].1
    );
    sigint(export.id());
    assert!(export.wait_exit().success());
}

/// `--metrics-addr :PORT` (the exporters' "every interface") answers on IPv6 and IPv4
/// both, one socket for the two. On a host without IPv6 it says so in one line and
/// listens on IPv4, which alone is asked then.
#[test]
fn a_port_alone_listens_on_ipv6_and_ipv4() {
    let Some(_t) = root_test!() else {
        return;
    };
    let ipv6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    let (mut work, _out) = waiting(&["getppid", "0"]);
    let (mut export, first, mut err) = started(
        syscost()
            .args([
                "export",
                "-p",
                &work.id().to_string(),
                "--metrics-addr",
                ":0",
            ])
            .stdout(Stdio::null()),
    );
    let serving = if first.starts_with("syscost: serving") {
        first
    } else {
        assert!(!ipv6, "with IPv6 here: {first}");
        assert!(first.contains("no IPv6"), "{first}");
        err.line().expect("the serving line")
    };
    let addr = endpoint_in(&serving);
    let port = match ipv6 {
        true => addr.strip_prefix("[::]:"),
        false => addr
            .strip_prefix("[::]:")
            .or_else(|| addr.strip_prefix("0.0.0.0:")),
    }
    .unwrap_or_else(|| panic!("not every interface: {addr}"));
    let mut asked = vec![format!("127.0.0.1:{port}")];
    if ipv6 {
        asked.push(format!("[::1]:{port}"));
    } else {
        eprintln!("no IPv6 loopback here: IPv4 alone asked");
    }
    for a in &asked {
        let text = scrape_text(a);
        assert!(
            sample_value(&text, "syscost_samples_total", &[]).is_some_and(|n| n >= 1.0),
            "{a}: {text}"
        );
    }
    sigint(export.id());
    assert!(export.wait_exit().success());
    let _ = work.kill();
}

/// Scrapes that come at once are answered from one sample, the session's latest: the
/// number of samples taken (`syscost_samples_total`) is the same in every answer and
/// after them, and the answers are the same bytes. The interval is an hour, so no
/// sample is due while the test runs; a scrape that took one would count it.
#[test]
fn scrapes_at_once_are_answered_from_one_sample() {
    let Some(_t) = root_test!() else {
        return;
    };
    let (mut work, _out) = waiting(&["getppid", "0"]);
    let (mut export, addr, _err) = serving(syscost().args([
        "export",
        "-p",
        &work.id().to_string(),
        "-i",
        "3600",
        "--metrics-addr",
        "127.0.0.1:0",
    ]));
    let samples = |text: &str| {
        sample_value(text, "syscost_samples_total", &[])
            .unwrap_or_else(|| panic!("no syscost_samples_total in:\n{text}"))
    };
    let first = samples(&scrape_text(&addr));
    let scrapes = 32;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(scrapes));
    let answers: Vec<String> = (0..scrapes)
        .map(|_| {
            let (addr, barrier) = (addr.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                scrape_text(&addr)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    for text in &answers {
        assert_eq!(samples(text), first, "a sample taken by a scrape");
        assert_eq!(text, &answers[0]);
    }
    assert_eq!(samples(&scrape_text(&addr)), first);
    sigint(export.id());
    assert!(export.wait_exit().success());
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
}

/// The answers that ended on the non-blocking connections `pending` (read so far into
/// `read`, one buffer each): those connections are taken out, their answers given.
fn poll(pending: &mut Vec<TcpStream>, read: &mut Vec<Vec<u8>>) -> Vec<(u16, String)> {
    let mut i = 0;
    let mut done = Vec::new();
    while i < pending.len() {
        let mut buf = [0u8; 4096];
        match pending[i].read(&mut buf) {
            Ok(0) => {
                pending.remove(i);
                let raw = read.remove(i);
                done.push(status_and_head(&raw).unwrap_or((0, format!("{raw:?}"))));
                continue;
            }
            Ok(n) => read[i].extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("a wrong password's connection: {e}"),
        }
        i += 1;
    }
    done
}

/// bcrypt's cost in the test's password file: a check of it takes long (hundreds of
/// milliseconds at the least) next to a request on loopback.
const COST: u32 = 12;

/// Wrong passwords by the dozen, at once, with a user's hash at a high cost: two are
/// checked, and every other is answered 503 with `Retry-After` before either check
/// ends, none queued; a right password already verified is answered 200 while those
/// checks still run (it needs none); then the two checked get their 401.
#[test]
fn wrong_passwords_never_queue_and_a_verified_one_never_waits() {
    use base64::Engine as _;
    let Some(t) = root_test!() else {
        return;
    };
    let web = t.path("web.yml");
    std::fs::write(
        &web,
        format!(
            "basic_auth_users:\n  prometheus: {}\n",
            bcrypt::hash("s3cret", COST).unwrap()
        ),
    )
    .unwrap();
    let (mut work, _out) = waiting(&["getppid", "0"]);
    let (mut export, addr, _err) = serving(
        syscost()
            .args([
                "export",
                "-p",
                &work.id().to_string(),
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .arg("--web.config.file")
            .arg(&web),
    );
    let auth = |password: &str| {
        format!(
            "Authorization: Basic {}\r\nConnection: close\r\n",
            base64::engine::general_purpose::STANDARD.encode(format!("prometheus:{password}"))
        )
    };
    let ask = |password: &str| {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(get_request(&addr, &auth(password)).as_bytes())
            .unwrap();
        s
    };
    // The right password, verified once (no check runs yet: a permit is free).
    let (status, head) = answer_of(ask("s3cret")).unwrap();
    assert_eq!(status, 200, "{head}");

    let wrong = 12;
    let mut pending: Vec<TcpStream> = (0..wrong).map(|_| ask("wrong")).collect();
    for s in &pending {
        s.set_nonblocking(true).unwrap();
    }
    // Answers as they come, without waiting on any one connection.
    let mut answered: Vec<(u16, String)> = Vec::new();
    let mut read = vec![Vec::new(); wrong];
    let busy = |answered: &[(u16, String)]| answered.iter().filter(|a| a.0 == 503).count();
    wait_until(
        "every wrong password but the two checked answered 503",
        PATIENCE,
        Duration::from_millis(5),
        || {
            answered.extend(poll(&mut pending, &mut read));
            if busy(&answered) >= wrong - 2 {
                Ok(())
            } else {
                Err(format!(": {answered:?}"))
            }
        },
    );
    // The verified password, while the checks run.
    let (status, head) = answer_of(ask("s3cret")).unwrap();
    assert_eq!(status, 200, "{head}");
    answered.extend(poll(&mut pending, &mut read));
    assert!(
        !pending.is_empty(),
        "both checks ended before the verified password was answered: {answered:?}"
    );
    wait_until(
        "the checked wrong passwords' answers",
        PATIENCE,
        Duration::from_millis(5),
        || {
            answered.extend(poll(&mut pending, &mut read));
            if pending.is_empty() {
                Ok(())
            } else {
                Err(format!(": {answered:?}"))
            }
        },
    );
    assert_eq!(answered.len(), wrong);
    for (status, head) in &answered {
        match status {
            503 => assert!(head.contains("\r\nretry-after: 1"), "{head}"),
            401 => assert!(head.contains("\r\nwww-authenticate: basic"), "{head}"),
            _ => panic!("a wrong password answered {status}: {head}"),
        }
    }
    assert!(busy(&answered) >= wrong - 2, "{answered:?}");
    let text = {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(get_request(&addr, &auth("s3cret")).as_bytes())
            .unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        raw
    };
    assert_eq!(
        sample_value(&text, "syscost_scrape_password_checks_refused_total", &[]),
        Some(busy(&answered) as f64),
        "{text}"
    );
    sigint(export.id());
    assert!(export.wait_exit().success());
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
}
