//! syscost's commands driven as a user runs them (the binary): it runs or attaches to a
//! workload with a known number of syscalls, and the counts must be exact. Needs root.
//! (`syscost-engine/tests/in_process.rs` drives the engine in-process.)

mod common;

use std::{
    io::Write as _,
    process::{Command, Stdio},
    time::Duration,
};

use common::*;

/// Latencies a getppid can plausibly have: above 20 ns, below 1 ms on average.
fn assert_plausible_getppid(p: &syscost_user::profile::Profile) {
    let s = p.syscall("getppid").expect("getppid seen");
    assert!(s.avg_ns > 20 && s.avg_ns < 1_000_000, "avg {} ns", s.avg_ns);
    assert!(
        s.min_ns <= s.p50_ns
            && s.p50_ns <= s.p90_ns
            && s.p90_ns <= s.p99_ns
            && s.p99_ns <= s.max_ns,
        "{s:?}"
    );
    assert!(s.min_ns <= s.avg_ns && s.avg_ns <= s.max_ns);
    assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), s.calls);
    assert_eq!(s.errors, 0);
}

#[test]
fn run_counts_getppid_exactly() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, p) = run_workload(&t, &["getppid", "100000"]);
    assert_eq!(calls(&p, "getppid"), 100_000);
    assert_eq!(
        calls(&p, "execve"),
        1,
        "the first traced syscall is the exec"
    );
    assert_eq!((p.unpaired, p.dropped), (0, 0));
    assert_plausible_getppid(&p);
    // A getppid never blocks: no voluntary switch, and time switched out only where it
    // was preempted (a loaded machine may preempt the loop inside a call).
    assert!(p.offcpu_tracked);
    let g = p.syscall("getppid").unwrap();
    assert_eq!(g.voluntary_switches, 0, "{g:?}");
    if g.involuntary_switches == 0 {
        assert_eq!(
            g.offcpu_ns, 0,
            "switched out {} ns, never preempted",
            g.offcpu_ns
        );
    }
}

#[test]
fn blocking_read_is_off_cpu() {
    let Some(t) = root_test!() else {
        return;
    };
    let (o, p) = run_workload(&t, &["pipe-block", "50", "20"]);
    let own = printed(&o, "mean_ns");
    let r = p.syscall("readv").expect("readv seen");
    assert_eq!(r.calls, 50);
    assert!(
        r.offcpu_ns as f64 > 0.9 * r.total_ns as f64,
        "readv blocked {} of {} ns",
        r.offcpu_ns,
        r.total_ns
    );
    // The time switched out is the wait the workload itself measured (its readv blocks
    // until the writer wakes 20 ms later), not the wall time by construction.
    let blocked = r.offcpu_ns as f64 / r.calls as f64;
    assert!(
        (blocked - own).abs() < 0.10 * own,
        "readv blocked {blocked} ns a call, the workload waited {own} ns"
    );
    assert!(
        r.voluntary_switches >= 50,
        "{} voluntary switches",
        r.voluntary_switches
    );
    let mean = r.avg_ns as f64;
    assert!(
        (mean - own).abs() / own < 0.05,
        "syscost mean {mean} ns, workload's own {own} ns"
    );
    // --no-offcpu: nothing measured, and the profile says so.
    let json = t.path("no-offcpu.json");
    let o = output(
        syscost()
            .args(["run", "--no-offcpu", "-o", "/dev/null", "--json"])
            .arg(&json)
            .args(["--", workload_path(), "pipe-block", "3", "5"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let q = read_profile(&json);
    assert!(!q.offcpu_tracked);
    assert_eq!(q.syscall("readv").unwrap().offcpu_ns, 0);
}

#[test]
fn run_counts_errors_by_errno() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, p) = run_workload(&t, &["close-ebadf", "5000"]);
    let close = p.syscall("close").unwrap();
    assert!(close.calls >= 5000, "{}", close.calls);
    assert_eq!(close.errors, 5000);
    assert_eq!(close.errnos.len(), 1);
    assert_eq!(close.errnos["EBADF"], 5000);
}

#[test]
fn run_counts_every_thread() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, p) = run_workload(&t, &["threads", "8", "10000"]);
    assert_eq!(calls(&p, "getppid"), 80_000);
    assert_eq!(calls(&p, "clone3") + calls(&p, "clone"), 8);
    // A new thread's return from clone is not an unpaired exit.
    assert_eq!((p.unpaired, p.dropped), (0, 0));
    assert_plausible_getppid(&p);
}

#[test]
fn run_follows_forked_children() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, p) = run_workload(&t, &["fork", "4", "10000"]);
    assert_eq!(calls(&p, "getppid"), 40_000);
    assert_eq!(calls(&p, "wait4"), 4);
    assert_eq!((p.unpaired, p.dropped), (0, 0));
}

#[test]
fn nanosleep_latency_matches_the_workloads_own_timing() {
    let Some(t) = root_test!() else {
        return;
    };
    let (o, p) = run_workload(&t, &["nanosleep", "100", "1000"]);
    let own = printed(&o, "mean_ns");
    // glibc's nanosleep is the clock_nanosleep syscall.
    let s = p.syscall("clock_nanosleep").expect("clock_nanosleep seen");
    assert_eq!(s.calls, 100);
    let ours = s.avg_ns as f64;
    // The workload times the libc call from outside (clock reads, the wrapper, the
    // kernel's entry and exit), syscost the syscall between its tracepoints: never more.
    // Less by an amount that depends on the CPU (a few us here, some 90 us on an
    // emulated arm64 one): the bound below is the kernel's own instead, every 1 ms
    // sleep at least 1 ms between its tracepoints.
    assert!(
        ours <= own * 1.005,
        "syscost mean {ours} ns, workload's own {own} ns"
    );
    assert!(s.min_ns >= 1_000_000, "a 1 ms sleep took {} ns", s.min_ns);
}

#[test]
fn run_returns_the_commands_exit_status() {
    let Some(_t) = root_test!() else {
        return;
    };
    let o = output(syscost().args(["run", "--", workload_path(), "exit", "7"]));
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("% time     seconds  usecs/call"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["run", "--", "sh", "-c", "kill -9 $$"]));
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
}

/// The command `run` starts has the signal dispositions it would have had started
/// without syscost: the ones syscost was started with ignored (`nohup`, a background
/// job) still ignored, although syscost catches them for itself, and SIGPIPE at its
/// default although Rust's runtime ignores it in syscost.
#[test]
fn run_gives_the_command_the_signal_dispositions_it_would_have_had() {
    let Some(_t) = root_test!() else {
        return;
    };
    // SigIgn of the command's /proc status, started with SIGHUP and SIGQUIT ignored.
    let ignored_in = |cmd: &mut Command| -> String {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: sigaction is async-signal-safe; it touches only the child.
        unsafe {
            cmd.pre_exec(|| {
                for sig in [libc::SIGHUP, libc::SIGQUIT] {
                    libc::signal(sig, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        let o = output(cmd);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .unwrap_or_else(|| panic!("no SigIgn in {}", stdout(&o)))
            .trim()
            .to_string()
    };
    let bare = ignored_in(Command::new("cat").arg("/proc/self/status"));
    let traced =
        ignored_in(syscost().args(["run", "-o", "/dev/null", "--", "cat", "/proc/self/status"]));
    let bit = |mask: &str, sig: i32| u64::from_str_radix(mask, 16).unwrap() >> (sig - 1) & 1 == 1;
    assert!(
        bit(&bare, libc::SIGHUP) && bit(&bare, libc::SIGQUIT) && !bit(&bare, libc::SIGPIPE),
        "started bare, SigIgn {bare}"
    );
    assert_eq!(traced, bare, "SigIgn under syscost run, and bare");
}

#[test]
fn json_round_trips_through_report() {
    let Some(t) = root_test!() else {
        return;
    };
    let json_path = t.path("p.json");
    let table_path = t.path("table.txt");
    let o = output(
        syscost()
            .args(["run", "-L", "-S", "calls", "-o"])
            .arg(&table_path)
            .arg("--json")
            .arg(&json_path)
            .args(["--", workload_path(), "getppid", "1000"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("% time"),
        "-o sends the table to the file"
    );
    let report = output(
        syscost()
            .args(["report", "-L", "-S", "calls"])
            .arg(&json_path),
    );
    assert!(report.status.success(), "{}", stderr(&report));
    let table = std::fs::read_to_string(&table_path).unwrap();
    assert_eq!(stdout(&report), table);
    // Sorted by calls: getppid's row comes first.
    let first_row = table.lines().nth(2).unwrap();
    assert!(
        first_row.split_whitespace().any(|w| w == "getppid"),
        "{table}"
    );
}

/// Starts the workload blocked on stdin, attaches, lets it work, and checks that nothing
/// it did after the attach was missed.
#[test]
fn attach_misses_nothing_after_attaching() {
    let Some(t) = root_test!() else {
        return;
    };
    let mut work = Command::new(workload_path())
        .args(["--wait-stdin", "threads", "4", "25000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut lines = Lines::of(work.stdout.take().unwrap(), "stdout");
    assert_eq!(lines.next().unwrap().unwrap(), "ready");

    let json_path = t.path("attach.json");
    let (tracer, err) = attach(work.id(), &["--json", json_path.to_str().unwrap()]);

    // A bystander making the same syscall must not be counted.
    let mut bystander = Command::new(workload_path())
        .args(["getppid", "300000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    assert!(bystander.wait_exit().success());
    let o = tracer.into_inner().output_within();
    assert!(o.status.success());
    let rest: Vec<String> = err.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("exited")), "{rest:?}");

    let p = read_profile(&json_path);
    assert_eq!(calls(&p, "getppid"), 100_000);
    assert_eq!(calls(&p, "clone3") + calls(&p, "clone"), 4);
    // The read that was blocked when syscost attached.
    assert_eq!(p.unpaired, 1);
    assert_eq!(p.dropped, 0);
    assert_eq!(p.target.pid, work.id());
}

#[test]
fn attach_stops_after_duration_and_prints_intervals() {
    let Some(_t) = root_test!() else {
        return;
    };
    let mut sleeper = Command::new(workload_path())
        .args(["--die-with-parent", "sleep", "600000"])
        .spawn_reaped();
    let start = std::time::Instant::now();
    let o = output(syscost().args([
        "attach",
        "-p",
        &sleeper.id().to_string(),
        "-d",
        "1.2",
        "-i",
        "0.5",
    ]));
    let took = start.elapsed();
    sleeper.kill().unwrap();
    sleeper.wait_exit();
    assert!(o.status.success(), "{}", stderr(&o));
    // Traced for 1.2 s, then it stops (a hang fails at output's deadline).
    assert!(took >= Duration::from_millis(1200), "{took:?}");
    let out = stdout(&o);
    // A table every 0.5 s up to the end: two, or one where syscost was kept from running
    // past a tick (a missed tick is not made up; the first, due before the end, is
    // printed before it); then the last part and the final table.
    assert_interval_tables(&out);
    assert!(stderr(&o).contains("syscost: tracing process"));
    // Asleep the whole time: the empty table says why in a line.
    assert!(
        stderr(&o).contains(&format!(
            "syscost: no syscall seen: process {} made none while traced (idle, or stopped)",
            sleeper.id()
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn attach_follow_traces_the_tree_that_exists_at_attach() {
    let Some(t) = root_test!() else {
        return;
    };
    // Two children, each with a child of its own, all started and blocked before the
    // attach; let go after it, 1,000 getppid each (none by the parent).
    let (mut work, _out) = ready(Command::new(workload_path()).args(["tree-waiting", "2", "1000"]));
    let json = t.path("tree.json");
    let (tracer, first, _err) = started(
        syscost()
            .args([
                "attach",
                "--no-tui",
                "-f",
                "-p",
                &work.id().to_string(),
                "--json",
            ])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(
        first.starts_with(&format!(
            "syscost: tracing process {} (syscost-workloa) and 4 descendants (-f)",
            work.id()
        )),
        "{first}"
    );
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    let o = tracer.into_inner().output_within();
    assert!(o.status.success());
    let p = read_profile(&json);
    assert_eq!(calls(&p, "getppid"), 4000);
    // Each of the four was blocked in its read when syscost attached.
    assert_eq!(p.unpaired, 4 + 1, "the four reads and the parent's own");
    assert_eq!(p.dropped, 0);
}

#[test]
fn sigterm_ends_attach_cleanly() {
    let Some(_t) = root_test!() else {
        return;
    };
    // Calls made when told, so that some are in the table however busy the machine.
    let (mut work, mut done) = waiting(&["per-line", "1000"]);
    // attach() returns once syscost says it traces, which it says with its handlers in.
    let (tracer, err) = attach(work.id(), &[]);
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    done.until("the workload's `done`", |l| l == "done");
    // SAFETY: signals our own child.
    unsafe { libc::kill(tracer.id() as i32, libc::SIGTERM) };
    let o = tracer.into_inner().output_within();
    drop(work.stdin.take());
    assert!(work.wait_exit().success());
    assert!(
        o.status.success(),
        "{:?}",
        err.map_while(Result::ok).collect::<Vec<_>>()
    );
    assert_eq!(table_calls(&stdout(&o), "getppid"), Some(1000));
}

#[test]
fn not_root_is_one_clear_line() {
    let Some(_t) = root_test!() else {
        return;
    };
    let o = output(without_caps().args(["run", "--", "true"]));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "syscost: syscost needs root (or CAP_BPF and CAP_PERFMON) to load its kernel programs: run it with sudo\n"
    );
}

#[test]
fn a_pid_namespace_of_its_own_is_refused_in_one_line() {
    let Some(_t) = root_test!() else {
        return;
    };
    let expected = "syscost: syscost runs in a PID namespace of its own (a container without the host's PID namespace), where the kernel's process ids cannot be seen: run it in the host's PID namespace (docker run --pid=host, or nsenter -t 1 -p)\n";
    let unshare = || {
        let mut c = Command::new("unshare");
        c.args(["--pid", "--fork", "--mount-proc", "--"]);
        c
    };
    let o = output(
        unshare()
            .arg(env!("CARGO_BIN_EXE_syscost"))
            .args(["run", "--", "true"]),
    );
    assert_eq!((o.status.code(), stderr(&o).as_str()), (Some(1), expected));
    // attach to a busy process of that namespace, by the pid it has there (everything
    // in the namespace ends with its first process, the shell exec'd into syscost).
    let script = format!(
        "{} getppid 100000000000 & exec {} attach --no-tui -d 1 -p $!",
        workload_path(),
        env!("CARGO_BIN_EXE_syscost")
    );
    let o = output(unshare().args(["sh", "-c", &script]));
    assert_eq!((o.status.code(), stderr(&o).as_str()), (Some(1), expected));
}

/// syscost as the unprivileged user nobody, without any capability.
fn without_caps() -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--",
    ])
    .arg(env!("CARGO_BIN_EXE_syscost"));
    c
}

/// syscost as the unprivileged user nobody with CAP_BPF and CAP_PERFMON only.
fn with_bpf_caps() -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all,+bpf,+perfmon",
        "--ambient-caps=-all,+bpf,+perfmon",
        "--",
    ])
    .arg(env!("CARGO_BIN_EXE_syscost"));
    c
}

#[test]
fn every_command_works_with_cap_bpf_and_cap_perfmon() {
    let Some(_t) = root_test!() else {
        return;
    };
    let unprivileged = |o: &std::process::Output| {
        let err = stderr(o);
        assert!(!err.contains("not permitted"), "{err}");
        err
    };
    // run, with and without the metrics endpoint.
    let o = output(with_bpf_caps().args(["run", "--", workload_path(), "getppid", "1000"]));
    assert!(o.status.success(), "{}", unprivileged(&o));
    assert!(
        stderr(&o).lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 5 && w[3] == "1000" && w[4] == "getppid"
        }),
        "{}",
        stderr(&o)
    );
    let o = output(with_bpf_caps().args([
        "run",
        "--metrics-addr",
        "127.0.0.1:0",
        "-o",
        "/dev/null",
        "--",
        workload_path(),
        "getppid",
        "1000",
    ]));
    assert!(o.status.success(), "{}", unprivileged(&o));
    // The one thing these capabilities cannot have is said in one line.
    assert!(
        stderr(&o).contains(
            "syscost: own cost n/a: BPF run-time statistics need CAP_SYS_ADMIN: syscost_bpf_run_seconds_total is left out\n"
        ),
        "{}",
        stderr(&o)
    );
    // attach and export, to a process of another user.
    let target = Command::new(workload_path())
        .args(["--die-with-parent", "sleep", "600000"])
        .spawn_reaped();
    let pid = target.id().to_string();
    let o = output(with_bpf_caps().args(["attach", "--no-tui", "-d", "0.5", "-p", &pid]));
    assert!(o.status.success(), "{}", unprivileged(&o));
    assert!(stdout(&o).contains("% time"), "{}", stdout(&o));
    let o = output(with_bpf_caps().args([
        "export",
        "-d",
        "0.5",
        "--metrics-addr",
        "127.0.0.1:0",
        "-p",
        &pid,
    ]));
    assert!(o.status.success(), "{}", unprivileged(&o));
    drop(target);
    // top of the machine: a process of another user counted exactly.
    let (mut work, _out) = waiting(&["getppid", "3000"]);
    // Written by nobody.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&_t.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = _t.path("top.json");
    let (mut top, first, _err) = started(
        with_bpf_caps()
            .args(["top", "--no-tui", "-i", "0.5", "-n", "0", "--json"])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(first.starts_with("syscost: watching"), "{first}");
    let mut tables = Lines::of(top.stdout.take().unwrap(), "top's stdout");
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    // Its row in a table: top has seen its calls (the totals after the signal are top's
    // final read, whatever was left in the tables then).
    let pid = work.id().to_string();
    tables.until("the workload's row", |l| {
        l.split_whitespace().next() == Some(pid.as_str())
    });
    // SAFETY: signals the top this test started.
    unsafe { libc::kill(top.id() as i32, libc::SIGINT) };
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", unprivileged(&o));
    let rows = top_json(&json);
    let row = rows
        .get(&work.id())
        .unwrap_or_else(|| panic!("pid {} not among {} rows", work.id(), rows.len()));
    assert_eq!(syscall_calls(row, "getppid"), 3000, "{row}");
    // The demo (the lab's server and load, the server profiled) and compare.
    let o = output(with_bpf_caps().args(["demo", "--no-tui", "-d", "1", "--rate", "100"]));
    assert!(o.status.success(), "{}", unprivileged(&o));
    assert!(stdout(&o).contains("per accept4: "), "{}", stdout(&o));
    let o = output(with_bpf_caps().args(["compare", "--rounds", "1", "--reps", "100"]));
    assert!(o.status.success(), "{}", unprivileged(&o));
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("getpid() raw syscall")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn doctor_agrees_with_what_the_commands_manage() {
    let Some(_t) = root_test!() else {
        return;
    };
    let line = |out: &str, tag: &str, what: &str| {
        out.lines()
            .any(|l| l.starts_with(tag) && l[tag.len()..].trim_start().starts_with(what))
    };
    // As root: everything syscost needs, the own cost included (as `run` showed above).
    let o = output(syscost().arg("doctor"));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for what in [
        "privileges:",
        "BTF:",
        "PID namespace:",
        "raw tracepoints:",
        "BPF run-time statistics:",
    ] {
        assert!(line(&out, "ok", what), "{what} not ok:\n{out}");
    }
    assert!(
        line(&out, "info", "memory:") && out.contains("attach takes"),
        "{out}"
    );
    assert!(out.contains("fentry/fexit:"), "{out}");
    // With CAP_BPF and CAP_PERFMON: what `run`, `attach` and `export` manage there
    // (every_command_works_with_cap_bpf_and_cap_perfmon), and no own cost.
    let o = output(with_bpf_caps().arg("doctor"));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(line(&out, "ok", "raw tracepoints:"), "{out}");
    assert!(line(&out, "limited", "BPF run-time statistics:"), "{out}");
    // Without any: what every command refuses.
    let o = output(without_caps().arg("doctor"));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(line(&out, "MISSING", "privileges:"), "{out}");
}

/// `doctor` never names its own programs as another tracer's: it lists the loaded
/// programs before it loads its probes, which the kernel frees a moment after they are
/// unloaded (listed after them, 7 runs in 8 named them). Each run starts with none of
/// syscost's programs loaded, as the test's own start found the kernel.
#[test]
fn doctor_never_counts_its_own_programs_as_another_tracer() {
    let Some(t) = root_test!() else {
        return;
    };
    for run in 0..8 {
        assert_eq!(
            t.wait_for_unload(),
            Vec::<String>::new(),
            "run {run}: syscost's programs still loaded before doctor"
        );
        let out = stdout(&output(syscost().arg("doctor")));
        let line = out
            .lines()
            .find(|l| l.contains("other tracers:"))
            .unwrap_or_else(|| panic!("no other tracers line:\n{out}"));
        let ours = syscost_user::tracer::PROGRAM_NAME_PREFIXES
            .iter()
            .any(|prefix| line.contains(prefix));
        assert!(!ours, "run {run}: doctor named syscost's programs: {line}");
    }
}

/// On whatever kernel it runs (each of the kernel matrix's), `doctor` exits 0 exactly
/// when `run`, `attach` and `top` work with their defaults, and each measurement it
/// says this kernel has is on in the profiles those commands save.
#[test]
fn doctor_says_yes_exactly_when_the_default_commands_work() {
    let Some(t) = root_test!() else {
        return;
    };
    let o = output(syscost().arg("doctor"));
    let report = stdout(&o);
    let doctor_ok = o.status.code() == Some(0);
    let says = |tag: &str, what: &str| {
        report
            .lines()
            .any(|l| l.starts_with(tag) && l[tag.len()..].trim_start().starts_with(what))
    };

    let json = t.path("run.json");
    let run = output(
        syscost()
            .args(["run", "-o", "/dev/null", "--json"])
            .arg(&json)
            .args(["--", workload_path(), "getppid", "1000"]),
    );
    let run_ok = run.status.success() && calls(&read_profile(&json), "getppid") == 1000;

    let (mut w, _out) = waiting(&["getppid", "2000"]);
    let attach_json = t.path("attach.json");
    let attach = syscost()
        .args(["attach", "--no-tui", "--json"])
        .stdout(Stdio::null())
        .arg(&attach_json)
        .args(["-p", &w.id().to_string()])
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut attach = attach.into_inner();
    let mut err = Lines::of(attach.stderr.take().unwrap(), "stderr");
    let first = err
        .by_ref()
        .map_while(Result::ok)
        .find(|l| !l.starts_with("syscost: this kernel:"))
        .unwrap_or_default();
    let attach_ok = if first.starts_with("syscost: tracing process") {
        writeln!(w.stdin.as_mut().unwrap()).unwrap();
        let done = attach.wait_exit().success();
        done && calls(&read_profile(&attach_json), "getppid") == 2000
    } else {
        let _ = attach.kill();
        let _ = attach.wait();
        false
    };
    drop(w);

    let top = output(syscost().args(["top", "--no-tui", "-d", "1"]));
    let top_ok = top.status.success();

    assert_eq!(
        doctor_ok,
        run_ok && attach_ok && top_ok,
        "doctor:\n{report}\nrun: {}\nattach: {first}\ntop: {}",
        stderr(&run),
        stderr(&top)
    );
    assert_eq!(
        says("ok", "run and attach:"),
        run_ok && attach_ok,
        "{report}"
    );
    assert_eq!(says("ok", "top:"), top_ok, "{report}");
    // What doctor says of the on-CPU split is what the profiles say was on.
    if run_ok {
        let p = read_profile(&json);
        assert_eq!(
            says("ok", "on-CPU split:"),
            p.features.iter().any(|f| f == "offcpu"),
            "{report}\n{:?}",
            p.features
        );
    }
}

#[test]
fn version_names_the_commit_and_the_kernel_programs() {
    let o = output(syscost().arg("--version"));
    let v = stdout(&o);
    assert!(o.status.success());
    assert!(
        v.starts_with(&format!("syscost {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    // The commit it was built from, when built in a clone.
    if let Ok(o) = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        && o.status.success()
    {
        let commit = String::from_utf8_lossy(&o.stdout).trim().to_string();
        assert!(v.contains(&format!("(commit {commit},")), "{v} vs {commit}");
    }
    let id = v
        .split("kernel programs ")
        .nth(1)
        .unwrap_or("")
        .trim_end_matches(")\n");
    assert_eq!(id.len(), 16, "{v}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{v}");
}

#[test]
fn compare_runs_every_way_and_counts_exactly() {
    let Some(_t) = root_test!() else {
        return;
    };
    let tracefs_before = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .contains(" /sys/kernel/tracing ");
    let o = output(syscost().args([
        "compare",
        "--rounds",
        "1",
        "--json",
        "--",
        workload_path(),
        "getppid",
        "3000",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ways: Vec<&str> = v["ways"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    for way in ["Bare", "Syscost", "Strace"] {
        assert!(
            ways.contains(&way),
            "{way} missing: {ways:?} (skipped: {})",
            v["skipped"]
        );
    }
    let getppid = v["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "getppid")
        .expect("getppid row");
    assert_eq!(getppid["calls"], 3000);
    assert!(getppid["strace_ns"].as_u64().unwrap() > getppid["syscost_avg_ns"].as_u64().unwrap());
    let tracefs_after = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .contains(" /sys/kernel/tracing ");
    assert_eq!(
        tracefs_after, tracefs_before,
        "compare must leave tracefs as it found it"
    );

    // The micro-benchmark as the default workload, tiny.
    let o = output(syscost().args(["compare", "--rounds", "1", "--reps", "200"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("getpid() raw syscall"), "{text}");
    assert!(text.contains("strace -f -c"), "{text}");
}

/// This architecture's 32-bit ABI: the workload's name of it, the prefix of its
/// syscalls' names, and the 64-bit name of its getppid's number (64).
#[cfg(target_arch = "x86_64")]
const COMPAT: (&str, &str, &str) = ("i386", "i386:", "semget");
#[cfg(target_arch = "aarch64")]
const COMPAT: (&str, &str, &str) = ("arm", "arm:", "write");

/// A static 32-bit program (i386's, or on arm64 AArch32's; written by the workload as
/// bytes: no assembler or linker, so the test runs wherever the kernel runs 32-bit
/// programs, the matrix's VMs too) that calls getppid (32-bit syscall 64 on both) `n`
/// times (`int $0x80`, `svc #0`) and exits 0.
fn compat_getppid_program(dir: &std::path::Path, n: u32) -> std::path::PathBuf {
    let exe = dir.join("g32");
    let o = Command::new(workload_path())
        .args(["program", COMPAT.0, &n.to_string()])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    exe
}

#[test]
fn compat_syscalls_are_named_from_the_32_bit_table() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, prefix, native_64) = COMPAT;
    let getppid32 = format!("{prefix}getppid");
    let exe = compat_getppid_program(&t.dir, 1000);
    // The program itself works: it exits 0 (a kernel without 32-bit support fails here;
    // an arm64 CPU without AArch32, as the newest, cannot exec it: said, and a failure
    // under CI).
    let status = match Command::new(&exe).status() {
        Err(e) if e.raw_os_error() == Some(libc::ENOEXEC) => {
            assert!(
                !under_ci(),
                "this machine cannot exec a 32-bit program: {e}"
            );
            eprintln!(
                "\n*** SKIPPED compat_syscalls_are_named_from_the_32_bit_table: this machine cannot exec a 32-bit program ({e}) ***\n"
            );
            return;
        }
        s => s.unwrap(),
    };
    assert!(status.success(), "{status}");
    // 32-bit syscall 64 is getppid; as a 64-bit number it would be semget (x86_64) or
    // write (arm64).
    let exe = exe.to_str().unwrap();
    let (_, p) = {
        let json_path = t.path("g32.json");
        let o = output(
            syscost()
                .args(["run", "-o", "/dev/null", "--json"])
                .arg(&json_path)
                .args(["--", exe]),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        (o, read_profile(&json_path))
    };
    assert_eq!(calls(&p, &getppid32), 1000);
    assert_eq!(calls(&p, native_64), 0);
    assert_eq!(calls(&p, "getppid"), 0);
    // A 64-bit shell that execs the 32-bit program: the ABI is learnt again after exec.
    let json_path = t.path("sh.json");
    let o = output(
        syscost()
            .args(["run", "-o", "/dev/null", "--json"])
            .arg(&json_path)
            .args(["--", "sh", "-c", &format!("{exe}; true")]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json_path);
    assert_eq!(calls(&p, &getppid32), 1000);
    assert_eq!(calls(&p, native_64), 0);
    assert!(
        calls(&p, "wait4") >= 1,
        "the shell's own 64-bit calls keep their names"
    );
}

/// Calls per syscall in each strace-style table of `text`, in order.
fn tables(text: &str) -> Vec<std::collections::BTreeMap<String, u64>> {
    let mut out = Vec::new();
    let mut rows: Option<std::collections::BTreeMap<String, u64>> = None;
    for l in text.lines() {
        if l.starts_with("% time") {
            rows = Some(Default::default());
        } else if let Some(r) = rows.as_mut() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.last() == Some(&"total") {
                out.push(rows.take().unwrap());
            } else if !l.starts_with("---") && f.len() >= 5 {
                r.insert(f[f.len() - 1].to_string(), f[3].parse().unwrap());
            }
        }
    }
    out
}

/// `attach -i`: the interval tables, the last one up to the target's exit included, add
/// up to the final table, syscall by syscall, and that is exact. The workload makes its
/// calls in rounds, each when told, until six interval tables have been printed, however
/// fast the machine.
#[test]
fn interval_tables_add_up_to_the_final_table() {
    let Some(_t) = root_test!() else {
        return;
    };
    const ROUND: u64 = 20_000;
    const INTERVALS: usize = 6;
    // Already waiting (in 50 ms polls) when syscost attaches: the calls between the load
    // and the first interval are in it too.
    let (mut work, mut done) =
        ready(Command::new(workload_path()).args(["--wait-stdin", "per-line", &ROUND.to_string()]));
    let (mut tracer, _err) = attach(work.id(), &["-i", "0.2"]);
    let mut out = Lines::of(tracer.stdout.take().unwrap(), "syscost's stdout");
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    let mut text = Vec::new();
    let mut rounds = 0;
    let deadline = std::time::Instant::now() + PATIENCE;
    while text
        .iter()
        .filter(|l: &&String| l.starts_with("--- interval ending"))
        .count()
        < INTERVALS
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{INTERVALS} interval tables not printed within {} s ({rounds} rounds made); syscost printed: {:?}",
            PATIENCE.as_secs(),
            &text[text.len().saturating_sub(10)..]
        );
        writeln!(work.stdin.as_mut().unwrap()).unwrap();
        done.until("the workload's `done`", |l| l == "done");
        rounds += 1;
        // What syscost printed meanwhile.
        text.extend(std::iter::from_fn(|| out.line_ready()));
    }
    drop(work.stdin.take());
    assert!(work.wait_exit().success());
    text.extend(out.rest());
    assert!(tracer.wait_exit().success());
    let text = text.join("\n");
    let mut t = tables(&text);
    let last = t.pop().expect("the final table");
    assert!(
        text.contains("--- last interval, ending "),
        "no last interval in {} tables",
        t.len()
    );
    let mut sum = std::collections::BTreeMap::<String, u64>::new();
    for table in &t {
        for (name, calls) in table {
            *sum.entry(name.clone()).or_default() += calls;
        }
    }
    let differ: Vec<_> = sum
        .keys()
        .chain(last.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| sum.get(*k) != last.get(*k))
        .map(|k| format!("{k}: intervals {:?}, final {:?}", sum.get(k), last.get(k)))
        .collect();
    assert!(
        differ.is_empty(),
        "the {} intervals against the final table: {differ:?}",
        t.len()
    );
    // The first line was the go-ahead, each later one a round: every one counted.
    assert_eq!(last.get("getppid"), Some(&(rounds * ROUND)));
}

/// A kernel thread is refused end to end, in one line, before anything is loaded.
#[test]
fn a_kernel_thread_is_refused() {
    let Some(_t) = root_test!() else {
        return;
    };
    for args in [
        &["attach", "--no-tui", "-p", "2"][..],
        &["export", "--metrics-addr", "127.0.0.1:0", "-p", "2"],
    ] {
        let o = output(syscost().args(args));
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(
            stderr(&o),
            "syscost: process 2 (kthreadd) is a kernel thread: it makes no syscalls to profile\n",
            "{args:?}"
        );
    }
}

/// A call a seccomp filter refuses never enters (the kernel reports its exit only): it
/// is counted as unpaired, never as a call or a latency.
#[test]
fn calls_seccomp_refuses_are_unpaired() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, p) = run_workload(&t, &["seccomp", "700"]);
    assert_eq!(
        p.syscall("getppid").map(|s| s.calls),
        None,
        "refused calls counted"
    );
    assert_eq!(calls(&p, "prctl"), 2);
    assert_eq!((p.unpaired, p.dropped), (700, 0));
}
