//! Faults, load and bad input: syscost ended every way leaves nothing loaded and the
//! target unharmed; thread churn and thousands of threads keep counts exact; a table
//! that cannot hold an event says so in `dropped`. Needs root.

mod common;

use std::{
    io::Write as _,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
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

/// An end that hangs (`SYSCOST_TEST_FAULT=hang-finish`, debug builds: the end stops
/// after it began, and says so): a second signal ends syscost at once, with a line that
/// says so and the status of a death by that signal, nothing left loaded, the target
/// unharmed.
#[test]
fn a_second_signal_ends_a_hung_end_at_once() {
    let Some(t) = root_test!() else {
        return;
    };
    let (mut work, _out) = waiting_workload(1, 1_000);
    let (tracer, first, mut err) = started(
        syscost()
            .env("SYSCOST_TEST_FAULT", "hang-finish")
            .args(["attach", "--no-tui", "-p", &work.id().to_string()])
            .stdout(Stdio::null()),
    );
    assert!(first.starts_with("syscost: tracing process"), "{first}");
    // One stops it, and it hangs in its end; the second ends it.
    signal(&tracer, libc::SIGINT);
    err.until("the end to hang", |l| {
        l == "syscost: test fault: the end hangs"
    });
    signal(&tracer, libc::SIGTERM);
    assert_eq!(
        ended_at_once(&t, tracer, &mut err),
        Some(128 + libc::SIGTERM)
    );
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success(), "the target");
}

/// `run`, whose command has ended, hangs in its end: the signals that `run` passed on
/// to its command count from then on, and the second ends syscost at once.
#[test]
fn a_second_signal_ends_a_hung_end_of_run_at_once() {
    let Some(t) = root_test!() else {
        return;
    };
    let (tracer, first, mut err) = started(
        syscost()
            .env("SYSCOST_TEST_FAULT", "hang-finish")
            .args(["run", "--", "true"])
            .stdout(Stdio::null()),
    );
    let hung = |l: &str| l == "syscost: test fault: the end hangs";
    if !hung(&first) {
        err.until("the end to hang", hung);
    }
    signal(&tracer, libc::SIGINT);
    signal(&tracer, libc::SIGTERM);
    let code = ended_at_once(&t, tracer, &mut err);
    assert!(
        [Some(128 + libc::SIGINT), Some(128 + libc::SIGTERM)].contains(&code),
        "status {code:?}"
    );
}

/// syscost, told twice, says it ended at once without a report and leaves nothing
/// loaded: its exit status.
fn ended_at_once(t: &RootTest, mut tracer: Reaped, err: &mut StderrLines) -> Option<i32> {
    let said = err.until("the line of the end at once", |l| {
        l.starts_with("syscost: ended at once")
    });
    assert!(said.contains("no report"), "{said}");
    let code = tracer.wait_exit().code();
    assert_eq!(t.wait_for_unload(), Vec::<String>::new());
    code
}

/// Waits until `parent`'s first child runs a program whose comm starts with `comm`.
fn wait_for_child(parent: &Child, comm: &str) {
    wait_until(
        "the command to start",
        PATIENCE,
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
}

/// A pidfd of process `pid`: readable once it has ended, whoever its parent is then.
fn pidfd(pid: u32) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd as _;
    // SAFETY: pidfd_open makes a descriptor this test owns.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    assert!(
        fd >= 0,
        "pidfd_open {pid}: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a descriptor just made, owned by nothing else.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) }
}

/// Processes alive (not zombies) in process group `pgid`.
fn alive_in_group(pgid: u32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let after = stat.rsplit_once(") ").map_or("", |(_, a)| a);
            let w: Vec<&str> = after.split_whitespace().collect();
            w.len() > 2 && w[0] != "Z" && w[2] == pgid.to_string()
        })
        .collect()
}

/// SIGKILL to `syscost run` takes its command with it (its parent-death signal), as
/// root and as another user (-u, whose change of user comes before the signal is set):
/// the command ends, its programs unload, nothing of the run is left alive.
#[test]
fn a_killed_run_takes_its_command_with_it() {
    let Some(t) = root_test!() else {
        return;
    };
    for user in [None, Some("nobody")] {
        let mut cmd = syscost();
        cmd.args(["run", "-o", "/dev/null"]);
        if let Some(u) = user {
            cmd.env_remove("LD_LIBRARY_PATH").args(["-u", u]);
        }
        let mut run = cmd
            .args(["--", workload_path(), "sleep", "600000"])
            .spawn_reaped();
        wait_for_child(&run, "syscost-workloa");
        let child = first_child(run.id()).expect("the command");
        // Taken while syscost, which waits for it, keeps its pid from being reused.
        let ended = pidfd(child);
        signal(&run, libc::SIGKILL);
        assert_eq!(run.wait_exit().code(), None, "killed");
        let mut fd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&ended),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polls one descriptor of ours, with the tests' deadline.
        let ready = unsafe { libc::poll(&mut fd, 1, PATIENCE.as_millis() as i32) };
        if ready != 1 {
            // SAFETY: ends the command this test started.
            unsafe { libc::kill(child as i32, libc::SIGKILL) };
        }
        assert_eq!(
            ready,
            1,
            "-u {user:?}: the command {child} still ran {} s after syscost was killed",
            PATIENCE.as_secs()
        );
        assert_eq!(t.wait_for_unload(), Vec::<String>::new(), "-u {user:?}");
        assert_eq!(
            alive_in_group(run.id()),
            Vec::<String>::new(),
            "-u {user:?}"
        );
    }
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

#[test]
fn threads_with_ids_beyond_the_old_pid_max_are_counted() {
    let Some(t) = root_test!() else {
        return;
    };
    // The tables do not depend on pid_max: syscost loads while pid_max is the old
    // default (32,768); it is then raised to the 64-bit maximum and the workload's
    // threads are made with ids from 4,000,001 (clone3 with set_tid). They are counted
    // like any other.
    let pid_max = PidMax::set(32_768);
    let (mut work, mut out) = waiting(&["threads-at", "4000001", "4", "1000"]);
    let json = t.path("high.json");
    let (tracer, _err) = attach(work.id(), &["--json", json.to_str().unwrap()]);
    pid_max.to(4_194_304);
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    let line = out.until("the threads' ids", |l| l.starts_with("tids="));
    assert!(work.wait_exit().success());
    let o = tracer.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    drop(pid_max);
    let tids: Vec<u32> = line["tids=".len()..]
        .split(',')
        .map(|t| t.parse().unwrap_or_else(|_| panic!("{line}")))
        .collect();
    assert_eq!(tids.len(), 4, "{line}");
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
    // A target that makes 1,000 getppid calls for each line it reads, then says `done`.
    let mut target = Command::new(workload_path())
        .args(["per-line", "1000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(target.stdout.take().unwrap(), "the target's stdout");
    let mut calls_made = |target: &mut Reaped, round: &str| {
        writeln!(target.stdin.as_mut().unwrap(), "{round}").unwrap();
        out.until(&format!("`done` after {round}"), |l| l == "done");
    };
    let fds = |pid: u32| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    // One round untraced first: the target is set up, every fd of its own open.
    calls_made(&mut target, "warm-up");
    let target_fds = fds(target.id());
    for i in 0..50 {
        let json = t.path(&format!("round-{i}.json"));
        let (tracer, _err) = attach(target.id(), &["--json", json.to_str().unwrap()]);
        calls_made(&mut target, &format!("round {i}"));
        signal(&tracer, libc::SIGINT);
        let o = tracer.into_inner().output_within();
        assert!(o.status.success(), "round {i}: {}", stderr(&o));
        assert_eq!(calls(&read_profile(&json), "getppid"), 1000, "round {i}");
    }
    assert_eq!(t.wait_for_unload(), Vec::<String>::new());
    assert_eq!(
        fds(target.id()),
        target_fds,
        "the target's fds are untouched"
    );
    // The end of its stdin ends it.
    drop(target.stdin.take());
    assert!(target.wait_exit().success());
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
    // The traced command makes a child at a free pid (clone3 with set_tid), which makes
    // 1,000 getppid calls and exits; once it is reaped the command waits for a line on
    // stdin, still traced, while an unrelated process is made with the child's pid (set_tid
    // again) and makes 5,000 getppid calls. Should another process take the pid in
    // between (the exec-at workload exits 3), the whole round is made again at another.
    for attempt in 0..5 {
        let mut run = syscost()
            .args(["run", "-o", "/dev/null", "--json"])
            .arg(&json)
            .args(["--", workload_path(), "fork-at"])
            .arg(free_pid(attempt, &[0]).to_string())
            .arg("1000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn_reaped();
        let mut out = Lines::of(run.stdout.take().unwrap(), "the traced command's stdout");
        let line = out.until("the traced child's pid", |l| l.starts_with("child="));
        let child: u32 = line["child=".len()..].parse().unwrap();
        let reuser = output(Command::new(workload_path()).args([
            "exec-at",
            &child.to_string(),
            workload_path(),
            "getppid",
            "5000",
        ]));
        writeln!(run.stdin.as_mut().unwrap(), "end").unwrap();
        assert!(run.wait_exit().success());
        if reuser.status.code() == Some(3) && attempt < 4 {
            continue;
        }
        assert!(reuser.status.success(), "{}", stderr(&reuser));
        // The child's own output may come first: its exec races the parent's line.
        assert!(
            stdout(&reuser)
                .lines()
                .any(|l| l == format!("child={child}")),
            "the unrelated process did not get pid {child}: {}",
            stdout(&reuser)
        );
        // The child's calls, and none of the process that reused its pid.
        assert_eq!(
            calls(&read_profile(&json), "getppid"),
            1000,
            "the traced child, then an unrelated process at its pid {child}: counted wrong"
        );
        return;
    }
}

/// Reads `lines` up to the next that `wanted` accepts, keeping every line in `kept`.
fn read_to(lines: &mut Lines, kept: &mut Vec<String>, awaited: &str, wanted: fn(&str) -> bool) {
    loop {
        let l = lines
            .line()
            .unwrap_or_else(|| panic!("syscost's stdout ended before {awaited}"));
        let done = wanted(&l);
        kept.push(l);
        if done {
            return;
        }
    }
}

#[test]
fn ten_seconds_on_both_cores_counts_exactly_and_stays_light() {
    let Some(t) = root_test!() else {
        return;
    };
    // Two threads calling getppid as fast as they can until told to stop; the workload
    // then says how many calls they made.
    let (mut work, mut out) = waiting(&["getppid-until", "2"]);
    let json = t.path("busy.json");
    let (mut tracer, mut err) = attach(work.id(), &["-i", "1", "--json", json.to_str().unwrap()]);
    let mut tables = Lines::of(tracer.stdout.take().unwrap(), "syscost's stdout");
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    wait_until(
        "the workload's two threads",
        PATIENCE,
        Duration::from_millis(5),
        || {
            let tasks =
                std::fs::read_dir(format!("/proc/{}/task", work.id())).map_or(0, |d| d.count());
            (tasks >= 3)
                .then_some(())
                .ok_or_else(|| format!(": {tasks} tasks"))
        },
    );
    // The window: from one interval table to the fifth after it, however long that
    // takes. syscost's CPU time in it, against the busy target's over the same window.
    let mut kept = Vec::new();
    let table = |l: &str| l.starts_with("--- interval ending");
    read_to(&mut tables, &mut kept, "an interval table", table);
    let (ours, theirs) = (cpu_ticks(tracer.id()), cpu_ticks(work.id()));
    for _ in 0..5 {
        read_to(&mut tables, &mut kept, "an interval table", table);
    }
    let used = cpu_ticks(tracer.id()) - ours;
    let target_used = cpu_ticks(work.id()) - theirs;
    writeln!(work.stdin.as_mut().unwrap(), "stop").unwrap();
    let line = out.until("the workload's count", |l| l.starts_with("calls="));
    let made: u64 = line["calls=".len()..].parse().unwrap();
    assert!(work.wait_exit().success());
    kept.extend(tables.rest());
    assert!(tracer.into_inner().wait_exit().success());
    err.until("syscost's line that the target exited", |l| {
        l.contains("exited")
    });
    // Light: its own work does not follow the calls; a twentieth of the target's CPU
    // time at most (a tick more for the ticks' rounding).
    assert!(
        used <= 1 + target_used / 20,
        "syscost used {used} ticks of CPU time while the target it traced used {target_used}"
    );
    assert_eq!(calls(&read_profile(&json), "getppid"), made);
    // The interval tables, the last one's partial interval included, add up to it. Each
    // ends at its total line: the final table follows the last under its own heading
    // (and the last interval may hold no getppid at all, its threads stopped before it).
    let mut sections = Vec::new();
    let mut open = false;
    for l in &kept {
        if l.starts_with("--- the whole run (") {
            break;
        }
        if l.starts_with("--- ") {
            sections.push(String::new());
            open = true;
        }
        if let Some(s) = sections.last_mut().filter(|_| open) {
            s.push_str(l);
            s.push('\n');
        }
        if l.trim_end().ends_with(" total") {
            open = false;
        }
    }
    let per_table: Vec<u64> = sections
        .iter()
        .map(|s| table_calls(s, "getppid").unwrap_or(0))
        .collect();
    assert!(
        sections
            .last()
            .is_some_and(|s| s.starts_with("--- last interval")),
        "no last interval table after {} tables",
        sections.len()
    );
    assert_eq!(
        per_table.iter().sum::<u64>(),
        made,
        "getppid of the {} tables: {per_table:?}",
        per_table.len()
    );
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

/// `syscost_bpf_measured_seconds_total` of the endpoint at `addr`: the wall time of the
/// own-cost windows closed so far.
fn measured_seconds(addr: &str) -> f64 {
    let text = scrape_text(addr);
    text.lines()
        .find_map(|l| l.strip_prefix("syscost_bpf_measured_seconds_total "))
        .and_then(|v| v.parse().ok())
        .expect("syscost_bpf_measured_seconds_total in the exposition")
}

/// Observations, `x` where the witness's count moved and `.` where it did not, with `|`
/// after each where a window was seen closed; runs counted ("3x|40.").
fn observed(moved: &[bool], closed: &[usize]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < moved.len() {
        let mut j = i + 1;
        while j < moved.len() && moved[j] == moved[i] && !closed.contains(&(j - 1)) {
            j += 1;
        }
        s.push_str(&format!("{}{}", j - i, if moved[i] { 'x' } else { '.' }));
        if closed.contains(&(j - 1)) {
            s.push('|');
        }
        i = j;
    }
    s
}

/// BPF run-time statistics are off in `export` unless `--run-stats` asks, and then on
/// only in the own-cost windows (1 s in every 10 s) and off once syscost ends. A second tracer, with `--no-run-stats`, is the witness: the
/// kernel counts its programs' runs (at every syscall of the machine) only while
/// statistics are on. The endpoint's `syscost_bpf_measured_seconds_total` grows as each
/// window closes; the witness's count moves in the scrapes up to a window's close and
/// stays put from then on until the next window.
#[test]
fn run_time_statistics_are_on_only_when_asked_and_in_the_own_cost_windows() {
    let Some(_t) = root_test!() else {
        return;
    };
    // The traced process: alive until its stdin says otherwise (or ends).
    let (mut target, _out) = waiting(&["getppid", "0"]);
    let pid = target.id().to_string();
    let before: Vec<u32> = loaded_syscost_programs().iter().map(|p| p.0).collect();
    let (witness, _werr) = attach(target.id(), &["--no-run-stats"]);
    let ids: Vec<u32> = loaded_syscost_programs()
        .iter()
        .map(|p| p.0)
        .filter(|id| !before.contains(id))
        .collect();
    assert!(!ids.is_empty());
    assert_eq!(run_counts(&ids), 0, "statistics were on before the test");
    // export leaves them off unless --run-stats asks (they would time the host's other
    // BPF programs too): its first window would open as it starts, and a scrape's
    // syscalls (this process's, syscost's) run the witness's programs.
    let (mut quiet, first, _err) = started(
        syscost()
            .args(["export", "--metrics-addr", "127.0.0.1:0", "-p", &pid])
            .stdout(Stdio::null()),
    );
    let text = scrape_text(&endpoint_in(&first));
    assert!(
        !text.contains("syscost_bpf_measured_seconds_total"),
        "own-cost series without --run-stats"
    );
    assert_eq!(
        run_counts(&ids),
        0,
        "export turned the statistics on without --run-stats"
    );
    // SAFETY: signals the export this test started.
    unsafe { libc::kill(quiet.id() as i32, libc::SIGINT) };
    assert!(quiet.wait_exit().success());
    let (mut export, first, _err) = started(
        syscost()
            .args([
                "export",
                "--run-stats",
                "--metrics-addr",
                "127.0.0.1:0",
                "-p",
                &pid,
            ])
            .stdout(Stdio::null()),
    );
    let addr = endpoint_in(&first);
    // Observations back to back, each from one reading of the witness's count to the
    // next, a scrape in between: whether the count moved, and the windows' time so far.
    // Until two windows were seen closed and, after the second, one observation that
    // did not move.
    let (mut moved, mut seconds) = (Vec::new(), Vec::new());
    let mut closed: Vec<usize> = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    let mut count = run_counts(&ids);
    let waiting_for_off = |moved: &[bool], closed: &[usize]| {
        moved.last() == Some(&true) || closed.last() == Some(&(moved.len() - 1))
    };
    while closed.len() < 2 || (closed.len() == 2 && waiting_for_off(&moved, &closed)) {
        assert!(
            Instant::now() < deadline,
            "timed out after {} s waiting for two own-cost windows to close: {}",
            PATIENCE.as_secs(),
            observed(&moved, &closed)
        );
        std::thread::sleep(Duration::from_millis(20));
        let m = measured_seconds(&addr);
        let now = run_counts(&ids);
        if m > seconds.last().copied().unwrap_or(0.0) {
            closed.push(moved.len());
        }
        moved.push(now > count);
        seconds.push(m);
        count = now;
    }
    let seen = observed(&moved, &closed);
    assert_eq!(closed.len(), 2, "{seen}");
    let (first_close, second_close) = (closed[0], closed[1]);
    // A window lasts 1 s at least: so much more measured time at each close.
    for &c in &closed {
        let grew = seconds[c] - if c == 0 { 0.0 } else { seconds[c - 1] };
        assert!(grew >= 0.999, "a window of {grew} s: {seen}");
    }
    // Where the count moved: in runs, each ending where a window closed (in that
    // observation or the one before).
    let runs_ending: Vec<usize> = (0..moved.len())
        .filter(|&i| moved[i] && moved.get(i + 1) != Some(&true))
        .collect();
    let after_first: Vec<usize> = runs_ending
        .iter()
        .copied()
        .filter(|&e| e > first_close)
        .collect();
    // After the first close: off, then one window's run ending at the second close,
    // then off again.
    assert!(
        !moved[first_close + 1],
        "statistics still on after the first window closed: {seen}"
    );
    assert_eq!(
        after_first.len(),
        1,
        "statistics on other than in one window between the closes: {seen}"
    );
    assert!(
        after_first[0] + 1 >= second_close && after_first[0] <= second_close,
        "statistics on, not up to the second window's close: {seen}"
    );
    // Up to the first close (the window opened as syscost started, maybe before the
    // first observation): on at most in one run, ending at it.
    assert!(
        runs_ending
            .iter()
            .filter(|&&e| e <= first_close)
            .all(|&e| e + 1 >= first_close),
        "statistics on before the first window's end: {seen}"
    );
    // SAFETY: signals the export this test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGINT) };
    assert!(export.wait_exit().success());
    // syscost ended: nothing keeps them on. Syscalls made now (this process's reads of
    // the counts are some) would run the witness's programs, counted if they were on.
    let ended = run_counts(&ids);
    for _ in 0..1000 {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::getppid() };
    }
    assert_eq!(
        run_counts(&ids),
        ended,
        "statistics left on after syscost ended"
    );
    drop(witness);
    writeln!(target.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(target.wait_exit().success());
}
