//! The line that says syscost is tracing (watching, serving) means every call from then
//! on is counted: in each mode, a workload that starts its calls at that line, and not
//! a moment later, is counted exactly. In the kernel matrix too, where every start is
//! slow. Needs root.

mod common;

use std::{io::Write as _, process::Stdio};

use common::*;

/// Calls each workload makes; odd, so that no round number can pass by accident.
const N: u64 = 20_001;

fn sigint(pid: u32) {
    // SAFETY: signals a child of this test.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
}

/// Lets a workload waiting on stdin go.
fn release(w: &mut Reaped) {
    writeln!(w.stdin.as_mut().unwrap()).unwrap();
}

#[test]
fn attach_counts_from_its_tracing_line() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("p.json");
    let (mut w, _out) = waiting(&["getppid", &N.to_string()]);
    let (tracer, _err) = attach(w.id(), &["--json", json.to_str().unwrap()]);
    release(&mut w);
    assert!(w.wait_exit().success());
    // It ends by itself when its target exits.
    let o = tracer.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(calls(&read_profile(&json), "getppid"), N);
}

#[test]
fn attach_f_counts_the_children_forked_after_its_tracing_line() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("f.json");
    let (mut w, _out) = waiting(&["fork", "3", &N.to_string()]);
    let (tracer, first, _err) = started(
        syscost()
            .args([
                "attach",
                "--no-tui",
                "-f",
                "-p",
                &w.id().to_string(),
                "--json",
            ])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(first.starts_with("syscost: tracing process"), "{first}");
    release(&mut w);
    assert!(w.wait_exit().success());
    sigint(tracer.id());
    let o = tracer.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(calls(&read_profile(&json), "getppid"), 3 * N);
}

/// A process moved into the cgroup after the line, making its calls and exiting there,
/// as fast as it can: all of them, in `attach --cgroup` and in `top --cgroup`.
#[test]
fn cgroup_modes_count_a_process_that_runs_and_exits_after_the_line() {
    let Some(t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("ready");
    let json = t.path("cg.json");
    let (tracer, first, _err) = started(
        syscost()
            .args(["attach", "--no-tui", "--cgroup", &cg.path, "--json"])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(first.starts_with("syscost: tracing cgroup"), "{first}");
    let o = output(&mut cg.run_inside(&format!("getppid {N}")));
    assert!(o.status.success(), "{}", stderr(&o));
    sigint(tracer.id());
    let o = tracer.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    assert_eq!(
        (calls(&p, "getppid"), p.dropped),
        (N, 0),
        "attach --cgroup: getppid and dropped"
    );

    assert_eq!(
        top_getppid_of_one_started_at_the_line(
            &t,
            &["--cgroup", &cg.path],
            "syscost: watching",
            cg.run_inside(&format!("getppid {N}")),
        ),
        N,
        "top --cgroup"
    );
}

/// `syscost top --no-tui --json FILE ARGS` started, `workload` started at its first line
/// (which starts with `line`) and awaited, top stopped: the getppid calls in the
/// workload's row of the file.
fn top_getppid_of_one_started_at_the_line(
    t: &RootTest,
    args: &[&str],
    line: &str,
    mut workload: std::process::Command,
) -> u64 {
    let json = t.path("top.json");
    let (top, first, _err) = started(
        syscost()
            .args(["top", "--no-tui", "--json"])
            .arg(&json)
            .args(args)
            .stdout(Stdio::piped()),
    );
    assert!(first.starts_with(line), "{first}");
    let mut c = workload.stdout(Stdio::null()).spawn_reaped();
    let pid = c.id();
    assert!(c.wait_exit().success());
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = top_json(&json);
    let row = rows
        .get(&pid)
        .unwrap_or_else(|| panic!("top {args:?}: no row for {pid} of {} rows", rows.len()));
    syscall_calls(row, "getppid")
}

/// `top` over the machine: a process started at the line has all its calls in its row.
#[test]
fn top_counts_from_its_watching_line() {
    let Some(t) = root_test!() else {
        return;
    };
    let mut workload = std::process::Command::new(workload_path());
    workload.args(["getppid", &N.to_string()]);
    assert_eq!(
        top_getppid_of_one_started_at_the_line(&t, &[], "syscost: watching the machine", workload),
        N,
        "top"
    );
}

/// `export -p`: the first scrape after the workload, released at the serving line, ends
/// holds every call; and a SIGINT at once after the line ends it cleanly.
#[test]
fn export_counts_from_its_serving_line() {
    let Some(_t) = root_test!() else {
        return;
    };
    let (mut w, _out) = waiting(&["getppid", &N.to_string()]);
    let (export, first, mut err) = started(syscost().args([
        "export",
        "-p",
        &w.id().to_string(),
        "--metrics-addr",
        "127.0.0.1:0",
    ]));
    assert!(first.starts_with("syscost: serving"), "{first}");
    let addr = endpoint_in(&first);
    release(&mut w);
    assert!(w.wait_exit().success());
    // The endpoint keeps the final counts once the process has exited (said on stderr).
    err.until("the exit of the process", |l| l.contains("exited"));
    assert_eq!(getppid_series(&addr), N as f64);
    sigint(export.id());
    let status = export.into_inner().wait_exit();
    assert!(status.success(), "export after SIGINT: {status}");
}

/// `export --cgroup`: a process started in the cgroup at the serving line, making its
/// calls and exiting there, has every one in the cgroup's series.
#[test]
fn export_of_a_cgroup_counts_from_its_serving_line() {
    let Some(_t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("ready-export");
    let (export, first, _err) = started(syscost().args([
        "export",
        "--cgroup",
        &cg.path,
        "--metrics-addr",
        "127.0.0.1:0",
    ]));
    assert!(first.starts_with("syscost: serving"), "{first}");
    let addr = endpoint_in(&first);
    let o = output(&mut cg.run_inside(&format!("getppid {N}")));
    assert!(o.status.success(), "{}", stderr(&o));
    // The endpoint shows the latest sample: the count is there at a later scrape.
    let reached = scrape_until(
        &addr,
        &format!("the cgroup's {N} getppid"),
        |text| match getppid_in(text) {
            Some(n) if n >= N as f64 => Ok(n),
            n => Err(format!(": {n:?} so far")),
        },
    );
    assert_eq!(reached, N as f64);
    sigint(export.id());
    let status = export.into_inner().wait_exit();
    assert!(status.success(), "export after SIGINT: {status}");
}

/// The value of the endpoint's getppid series (`syscost_syscalls_total`), scraped now
/// (`export -p` takes a sample when its process exits, before it says so).
fn getppid_series(addr: &str) -> f64 {
    let text = scrape_text(addr);
    getppid_in(&text)
        .unwrap_or_else(|| panic!("no getppid series in:\n{}", &text[..text.len().min(2000)]))
}

/// The value of the getppid series (`syscost_syscalls_total`) of exposition `text`.
fn getppid_in(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.starts_with("syscost_syscalls_total{") && l.contains("syscall=\"getppid\""))?;
    Some(
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no value in {line}")),
    )
}

/// A SIGINT the moment each mode says it is ready ends it cleanly (exit 0), never by the
/// signal's default: the signals are caught before the line.
#[test]
fn a_sigint_at_the_line_ends_each_mode_cleanly() {
    let Some(_t) = root_test!() else {
        return;
    };
    let (w, _out) = waiting(&["getppid", "1"]);
    let pid = w.id().to_string();
    let modes: [&[&str]; 4] = [
        &["attach", "--no-tui", "-p", &pid],
        &["top", "--no-tui"],
        &["export", "-p", &pid, "--metrics-addr", "127.0.0.1:0"],
        &["export", "--top", "--metrics-addr", "127.0.0.1:0"],
    ];
    for args in modes {
        let (c, first, _err) = started(syscost().args(args).stdout(Stdio::null()));
        assert!(first.starts_with("syscost: "), "{args:?}: {first}");
        sigint(c.id());
        let status = c.into_inner().wait_exit();
        assert!(
            status.success(),
            "{args:?}: {status} after a SIGINT at {first:?}"
        );
    }
    drop(w);
}
