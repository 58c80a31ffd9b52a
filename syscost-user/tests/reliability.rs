//! Faults, load and bad input: syscost ended every way leaves nothing loaded and the
//! target unharmed; thread churn and thousands of threads keep counts exact; a table
//! that cannot hold an event says so in `dropped`. Needs root.

mod common;

use std::{
    io::Write as _,
    process::{Child, Command, Stdio},
    time::Duration,
};

use common::*;

fn signal(child: &Child, sig: i32) {
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// A workload blocked on stdin that, once told, makes `n` getppid calls in `k` threads
/// and prints its own result.
fn waiting_workload(k: u64, n: u64) -> (Reaped, StdoutLines) {
    waiting(&["threads", &k.to_string(), &n.to_string()])
}

#[test]
fn attach_ended_by_any_signal_unloads_and_spares_the_target() {
    let Some(t) = root_test!() else {
        return;
    };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
        let (mut work, _out) = waiting_workload(2, 50_000);
        // attach() waits for the line syscost prints once its signal handlers are in.
        let (tracer, _err) = attach(work.id(), &[]);
        signal(&tracer, sig);
        let o = tracer.into_inner().output_within();
        if sig == libc::SIGKILL {
            assert_eq!(o.status.code(), None, "killed");
        } else {
            assert!(o.status.success(), "signal {sig}: {}", stderr(&o));
            assert!(stdout(&o).contains("% time"), "signal {sig}: final table");
        }
        assert_eq!(
            t.wait_for_unload(),
            Vec::<String>::new(),
            "after signal {sig}"
        );
        // The target was never touched: it still runs and finishes its work.
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
        assert!(work.wait_exit().success(), "target after signal {sig}");
    }
}

/// Waits until `parent`'s first child runs a program whose comm starts with `comm`.
fn wait_for_child(parent: &Child, comm: &str) {
    wait_until(
        "the command to start",
        Duration::from_secs(10),
        Duration::from_millis(20),
        || {
            first_child(parent.id())
                .and_then(|k| std::fs::read_to_string(format!("/proc/{k}/comm")).ok())
                .is_some_and(|c| c.starts_with(comm))
                .then_some(())
                .ok_or_else(String::new)
        },
    );
}

#[test]
fn run_ended_by_signals_leaves_the_command_running() {
    let Some(t) = root_test!() else {
        return;
    };
    // SIGINT sent to syscost alone: it keeps waiting for the command, then reports.
    let json = t.path("int.json");
    let mut run = syscost()
        .args(["run", "-o", "/dev/null", "--json"])
        .arg(&json)
        .args(["--", workload_path(), "nanosleep", "20", "50000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    // Once the command runs (its exec done), syscost is past loading.
    wait_for_child(&run, "syscost-workloa");
    signal(&run, libc::SIGINT);
    assert!(run.wait_exit().success());
    assert_eq!(
        read_profile(&json)
            .syscall("clock_nanosleep")
            .unwrap()
            .calls,
        20
    );

    // SIGTERM sent to syscost is passed on to the command; syscost still reports.
    let json = t.path("term.json");
    let run = syscost()
        .args(["run", "-o", "/dev/null", "--json"])
        .arg(&json)
        .args(["--", workload_path(), "sleep", "60000"])
        .spawn_reaped();
    wait_for_child(&run, "syscost-workloa");
    signal(&run, libc::SIGTERM);
    let mut run = run;
    assert_eq!(run.wait_exit().code(), Some(128 + libc::SIGTERM));
    assert!(read_profile(&json).syscall("execve").is_some());

    // SIGKILL: syscost is gone, its programs unload, the command finishes on its own.
    let marker = t.path("done");
    let script = format!(
        "{} getppid 200000 >/dev/null && touch {}",
        workload_path(),
        marker.display()
    );
    let mut run = syscost()
        .args(["run", "--", "sh", "-c", &format!("sleep 0.5; {script}")])
        .spawn_reaped();
    wait_for_child(&run, "sh");
    signal(&run, libc::SIGKILL);
    run.wait_exit();
    assert_eq!(t.wait_for_unload(), Vec::<String>::new());
    wait_until(
        "the command to finish",
        Duration::from_secs(10),
        Duration::from_millis(50),
        || marker.exists().then_some(()).ok_or_else(String::new),
    );
}

#[test]
fn thread_churn_and_2000_threads_count_exactly() {
    let Some(t) = root_test!() else {
        return;
    };
    // Churn while attached: 50 rounds of 20 threads that live for 200 calls each.
    let (mut work, _out) = waiting(&["churn", "50", "20", "200"]);
    let json = t.path("churn.json");
    let (tracer, _err) = attach(work.id(), &["--json", json.to_str().unwrap()]);
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    assert!(tracer.into_inner().output_within().status.success());
    let p = read_profile(&json);
    assert_eq!(calls(&p, "getppid"), 50 * 20 * 200);
    assert_eq!(calls(&p, "clone3") + calls(&p, "clone"), 1000);
    // The read that was blocked on stdin at attach time is the only unpaired exit.
    assert_eq!((p.unpaired, p.dropped), (1, 0));
    let (_, p) = run_workload(&t, &["threads", "2000", "50"]);
    assert_eq!(calls(&p, "getppid"), 100_000);
    assert_eq!((p.unpaired, p.dropped), (0, 0));
}

/// Restores a sysctl when dropped.
struct Sysctl {
    path: &'static str,
    old: String,
}

impl Sysctl {
    fn set(path: &'static str, value: &str) -> Self {
        let old = std::fs::read_to_string(path).unwrap();
        std::fs::write(path, value).unwrap();
        Self { path, old }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, self.old.trim());
    }
}

#[test]
fn threads_with_ids_beyond_the_old_pid_max_are_counted() {
    let Some(t) = root_test!() else {
        return;
    };
    // The tables do not depend on pid_max: syscost loads while pid_max is the old
    // default (32,768); it is then raised to the 64-bit maximum and the workload's
    // threads get ids above 4,000,000. They are counted like any other.
    let (mut work, mut out) = waiting_workload(4, 1000);
    let json = t.path("high.json");
    let tids: Vec<u32> = {
        let _max = Sysctl::set("/proc/sys/kernel/pid_max", "32768");
        let (tracer, _err) = attach(work.id(), &["--json", json.to_str().unwrap()]);
        std::fs::write("/proc/sys/kernel/pid_max", "4194304").unwrap();
        std::fs::write("/proc/sys/kernel/ns_last_pid", "4000000").unwrap();
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
        let line = out.next().unwrap().unwrap();
        assert!(work.wait_exit().success());
        let o = tracer.into_inner().output_within();
        assert!(o.status.success());
        line.strip_prefix("tids=")
            .unwrap_or_else(|| panic!("{line}"))
            .split(',')
            .map(|t| t.parse().unwrap())
            .collect()
    };
    assert_eq!(tids.len(), 4);
    assert!(
        tids.iter().all(|&t| t > 4_000_000),
        "the threads' ids: {tids:?}"
    );
    let p = read_profile(&json);
    assert_eq!(calls(&p, "getppid"), 4000);
    assert_eq!((p.dropped, p.unpaired), (0, 1));
}

#[test]
fn attach_and_detach_50_times_leaks_nothing() {
    let Some(t) = root_test!() else {
        return;
    };
    let mut busy = Command::new(workload_path())
        .args(["getppid", "100000000000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let fds = |pid: u32| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    let target_fds = fds(busy.id());
    for i in 0..50 {
        let o = output(syscost().args([
            "attach",
            "--no-tui",
            "-d",
            "0.01",
            "-p",
            &busy.id().to_string(),
        ]));
        assert!(o.status.success(), "run {i}: {}", stderr(&o));
        assert!(stdout(&o).contains(" getppid"), "run {i}");
    }
    assert_eq!(t.wait_for_unload(), Vec::<String>::new());
    assert_eq!(fds(busy.id()), target_fds, "the target's fds are untouched");
    busy.kill().unwrap();
    busy.wait_exit();
}

#[test]
fn missing_btf_is_one_clear_line() {
    let Some(_t) = root_test!() else {
        return;
    };
    // A private mount namespace hides the kernel's BTF from syscost alone.
    let o = output(
        Command::new("unshare")
            .args(["-m", "sh", "-c"])
            .arg(format!(
                "mount --bind /dev/null /sys/kernel/btf/vmlinux && exec {} run -- true",
                env!("CARGO_BIN_EXE_syscost")
            )),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("syscost: cannot read /sys/kernel/btf/vmlinux: syscost needs a kernel built with CONFIG_DEBUG_INFO_BTF"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_reused_pid_is_not_counted() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("reuse.json");
    // The traced command forks a child that sleeps and exits, then waits for a line on
    // stdin: it is still traced while the pid is reused.
    let script = format!("{} sleep 300; read line", workload_path());
    let mut run = syscost()
        .args(["run", "-o", "/dev/null", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::piped())
        .spawn_reaped();
    wait_for_child(&run, "sh");
    let sh = first_child(run.id()).unwrap();
    let child = wait_until(
        "the traced child",
        Duration::from_secs(10),
        Duration::from_millis(5),
        || first_child(sh).ok_or_else(String::new),
    );
    wait_until(
        "the traced child to exit",
        Duration::from_secs(10),
        Duration::from_millis(5),
        || {
            (!std::path::Path::new(&format!("/proc/{child}")).exists())
                .then_some(())
                .ok_or_else(String::new)
        },
    );
    // An unrelated process gets the child's pid (made to, through ns_last_pid; another
    // process of the machine may take it first, so it tries until it has it) and makes
    // 5,000 getppid calls.
    let mut reuser = wait_until(
        "a process with the reused pid",
        Duration::from_secs(20),
        Duration::from_millis(10),
        || {
            std::fs::write("/proc/sys/kernel/ns_last_pid", (child - 1).to_string()).unwrap();
            let mut w = Command::new(workload_path())
                .args(["--wait-stdin", "getppid", "5000"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn_reaped();
            if w.id() == child {
                Ok(w)
            } else {
                let _ = w.kill();
                Err(format!(": got pid {} instead of {child}", w.id()))
            }
        },
    );
    writeln!(reuser.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(reuser.wait_exit().success());
    writeln!(run.stdin.as_mut().unwrap(), "end").unwrap();
    assert!(run.wait_exit().success());
    let p = read_profile(&json);
    // The shell asks for its parent's pid itself (for $PPID): as many times as in the
    // same script run where no pid is reused. The process that reused the pid, with its
    // 5,000 calls, counts for none.
    let control = t.path("control.json");
    let o = output(
        syscost()
            .args(["run", "-o", "/dev/null", "--json"])
            .arg(&control)
            .args(["--", "sh", "-c", &script])
            .stdin({
                std::fs::write(t.path("line"), "end\n").unwrap();
                std::fs::File::open(t.path("line")).unwrap()
            }),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = calls(&read_profile(&control), "getppid");
    assert!(expected < 10, "the shell alone: {expected} getppid");
    assert_eq!(
        calls(&p, "getppid"),
        expected,
        "the process that reused pid {child} was counted"
    );
}

#[test]
fn ten_seconds_on_both_cores_counts_exactly_and_stays_light() {
    let Some(t) = root_test!() else {
        return;
    };
    // Two threads as fast as they can, about 10 s here, tallying 2 x 15,000,000 calls.
    let (mut work, _out) = waiting_workload(2, 15_000_000);
    let json = t.path("busy.json");
    let (tracer, mut err) = attach(work.id(), &["-i", "1", "--json", json.to_str().unwrap()]);
    let started = std::time::Instant::now();
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    // Sample syscost's own CPU time while the target runs.
    let ticks = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or("");
        // After the comm: state(3) ... utime(14) stime(15), i.e. the 12th and 13th
        // fields (some before them, such as tpgid, can be -1: no filtering).
        let f: Vec<&str> = after.split_whitespace().collect();
        let field = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        field(11) + field(12)
    };
    let t0 = ticks(tracer.id());
    std::thread::sleep(Duration::from_secs(6));
    let used = ticks(tracer.id()) - t0;
    assert!(work.wait_exit().success());
    let elapsed = started.elapsed();
    let o = tracer.into_inner().output_within();
    assert!(o.status.success());
    assert!(err.any(|l| l.is_ok_and(|l| l.contains("exited"))));
    // 100 ticks a second: at most 1% of one core over the 6 s sampled.
    assert!(used <= 6, "syscost used {used} ticks in 6 s");
    // Responsive: an interval table for about every second of the run.
    let intervals = stdout(&o).matches("--- interval ending").count() as u64;
    assert!(
        intervals + 2 >= elapsed.as_secs(),
        "{intervals} interval tables in {elapsed:?}"
    );
    assert_eq!(calls(&read_profile(&json), "getppid"), 30_000_000);
}

/// How many times the programs of ids `ids` have run, as the kernel counts them: only
/// while BPF run-time statistics are on, for any program of the machine.
fn run_counts(ids: &[u32]) -> u64 {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter(|p| ids.contains(&p.id()))
        .map(|p| p.run_count())
        .sum()
}

/// BPF run-time statistics are on only in the own-cost windows (1 s in every 10 s) and
/// off once syscost ends. A second tracer of the same busy process, with
/// `--no-run-stats`, is the witness: the kernel counts its programs' runs only while
/// statistics are on, so its counts move only in the windows of the endpoint's syscost.
#[test]
fn run_time_statistics_are_on_only_in_the_own_cost_windows() {
    let Some(_t) = root_test!() else {
        return;
    };
    let busy = Command::new(workload_path())
        .args(["getppid", "100000000000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let pid = busy.id().to_string();
    let before: Vec<u32> = loaded_syscost_programs().iter().map(|p| p.0).collect();
    let (witness, _werr) = attach(busy.id(), &["--no-run-stats"]);
    let ids: Vec<u32> = loaded_syscost_programs()
        .iter()
        .map(|p| p.0)
        .filter(|id| !before.contains(id))
        .collect();
    assert!(!ids.is_empty());
    assert_eq!(run_counts(&ids), 0, "statistics were on before the test");
    let (mut export, first, _err) = started(
        syscost()
            .args(["export", "--metrics-addr", "127.0.0.1:0", "-p", &pid])
            .stdout(Stdio::null()),
    );
    let addr = endpoint_in(&first);
    // Scraped every 100 ms for 12 s (the endpoint's scrapes drive its windows): the
    // witness's count moves for about a second at the start and at 10 s, and not
    // otherwise.
    let (mut moving, mut still) = (Duration::ZERO, Duration::ZERO);
    let mut last = run_counts(&ids);
    let started_at = std::time::Instant::now();
    let mut at = started_at;
    while started_at.elapsed() < Duration::from_secs(12) {
        scrape_text(&addr);
        std::thread::sleep(Duration::from_millis(100));
        let now = run_counts(&ids);
        // The time since the last look, measured (a loaded machine stretches it).
        let took = at.elapsed();
        at = std::time::Instant::now();
        if now > last {
            moving += took;
        } else {
            still += took;
        }
        last = now;
    }
    assert!(
        moving >= Duration::from_millis(1500) && moving <= Duration::from_millis(3000),
        "statistics on for {moving:?} of 12 s (two windows of 1 s expected)"
    );
    assert!(
        still >= Duration::from_secs(9),
        "statistics off for {still:?} of 12 s"
    );
    // SAFETY: signals the export this test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGINT) };
    assert!(export.wait_exit().success());
    // syscost ended: nothing keeps them on.
    let ended = run_counts(&ids);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        run_counts(&ids),
        ended,
        "statistics left on after syscost ended"
    );
    drop(witness);
    drop(busy);
}
