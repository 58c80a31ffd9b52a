//! The live view end to end, in a real terminal (tmux): it shows the workload's syscall
//! with a growing count, survives a resize, quits on `q` with the final table, and
//! leaves nothing loaded. Needs root and tmux.

mod common;

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use common::*;

/// A tmux server of our own (own socket), killed when dropped, and a directory where
/// the pane's shell saves its terminal's settings before and after syscost.
struct Tmux {
    socket: String,
    dir: std::path::PathBuf,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn capture(&self) -> String {
        let o = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        wait_until(
            what,
            Duration::from_secs(15),
            Duration::from_millis(100),
            || {
                let screen = self.capture();
                if pred(&screen) {
                    Ok(screen)
                } else {
                    Err(format!("; screen:\n{screen}"))
                }
            },
        )
    }
}

impl Tmux {
    /// A pane variable (`#{...}`) as tmux sees it now.
    fn pane(&self, format: &str) -> String {
        let o = self
            .cmd()
            .args(["display-message", "-p", "-t", "t", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Types `keys` into the pane (tmux key names: "q", "Enter", "Escape").
    fn keys(&self, keys: &[&str]) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
        assert!(ok.success(), "send-keys {keys:?}");
    }

    /// The pid of syscost, the pane shell's child.
    fn syscost_pid(&self) -> i32 {
        let shell: u32 = self.pane("#{pane_pid}").parse().unwrap();
        first_child(shell).unwrap() as i32
    }

    /// After syscost ended (`EXIT=` shown): the terminal is as syscost found it. The
    /// settings are those the shell read (`stty -g`) right after syscost, before anything
    /// else touched the terminal: raw mode, echo off or output processing off would show;
    /// and tmux says the alternate screen is left and the cursor is shown again.
    fn assert_restored(&self, how: &str) {
        let read = |f: &str| {
            std::fs::read_to_string(self.dir.join(f)).unwrap_or_else(|e| panic!("{how}: {f}: {e}"))
        };
        let (before, after) = (read("tty-before"), read("tty-after"));
        assert!(before.contains(':'), "{how}: settings before: {before:?}");
        assert_eq!(
            after, before,
            "{how}: the terminal's settings were left changed"
        );
        assert_eq!(
            self.pane("#{alternate_on}"),
            "0",
            "{how}: alternate screen on"
        );
        assert_eq!(
            self.pane("#{cursor_flag}"),
            "1",
            "{how}: cursor left hidden"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A count as the view shows it: 950, 123k, 19.1M.
fn parse_count(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1e3),
        'M' => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    Some((num.parse::<f64>().ok()? * mult) as u64)
}

/// A busy getppid workload and `syscost attach` on it in a tmux pane of `w` x `h`;
/// `None` (with a loud line) when tmux is missing outside CI.
fn live_view(name: &str, w: u16, h: u16) -> Option<(Tmux, Reaped)> {
    let busy = Command::new(workload_path())
        .args(["getppid", "100000000000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    live_view_of(name, w, h, busy)
}

/// `syscost attach` on `target` in a tmux pane of `w` x `h`.
fn live_view_of(name: &str, w: u16, h: u16, busy: Reaped) -> Option<(Tmux, Reaped)> {
    let tmux = session(name, w, h, &format!("attach -p {}", busy.id()))?;
    Some((tmux, busy))
}

/// `syscost ARGS` in a tmux pane of `w` x `h`, followed by `EXIT=<status>`; `None` (with
/// a loud line) when tmux is missing outside CI.
fn session(name: &str, w: u16, h: u16, args: &str) -> Option<Tmux> {
    session_with(name, w, h, "", args)
}

/// [`session`] with `env` (`NAME=value ...`) in syscost's environment.
fn session_with(name: &str, w: u16, h: u16, env: &str, args: &str) -> Option<Tmux> {
    if Command::new("tmux").arg("-V").output().is_err() {
        skip(
            name,
            "tmux is not installed (cargo xtask setup installs it)",
        );
        return None;
    }
    let tmux = Tmux {
        socket: format!("syscost-test-{name}-{}", std::process::id()),
        dir: std::env::temp_dir().join(format!("syscost-tty-{name}-{}", std::process::id())),
    };
    std::fs::create_dir_all(&tmux.dir).unwrap();
    let dir = tmux.dir.display();
    let cmd = format!(
        // The terminal's settings are saved before syscost and right after it. Only after
        // a SIGKILL (nothing can restore a terminal then) is it left raw (no CR on LF) with
        // the cursor anywhere: `stty sane` and a fresh line keep the marker on a line of
        // its own.
        "stty -g > '{dir}/tty-before'; {env} {} {args}; rc=$?; stty -g > '{dir}/tty-after'; \
         [ $rc = 137 ] && stty sane; printf '\\nEXIT=%s\\n' $rc; sleep 60",
        env!("CARGO_BIN_EXE_syscost"),
    );
    let ok = tmux
        .cmd()
        .args([
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
            &cmd,
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    Some(tmux)
}

/// The width of the syscall table's box as drawn: its top line from `┌` to its closing
/// `┐`, and the bottom line as wide.
fn box_width(screen: &str) -> Option<usize> {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines.iter().position(|l| l.starts_with("┌ syscalls"))?;
    let width = |l: &str, end: char| {
        let l = l.trim_end();
        l.ends_with(end).then(|| l.chars().count())
    };
    let w = width(lines[top], '┐')?;
    let bottom = lines[top..].iter().find(|l| l.starts_with('└'))?;
    (width(bottom, '┘')? == w).then_some(w)
}

/// Calls shown in the table row of `name`, if the row is there.
fn row_calls(screen: &str, name: &str) -> Option<u64> {
    screen.lines().find_map(|l| {
        let l = l.trim_start_matches('│');
        let mut words = l.split_whitespace();
        (words.next()? == name)
            .then(|| parse_count(words.next()?))
            .flatten()
    })
}

/// Calls per second shown in the table row of `name`.
fn row_rate(screen: &str, name: &str) -> Option<u64> {
    screen.lines().find_map(|l| {
        let mut words = l.trim_start_matches('│').split_whitespace();
        (words.next()? == name)
            .then(|| parse_count(words.nth(1)?))
            .flatten()
    })
}

#[test]
fn live_view_shows_counts_resizes_and_quits_with_the_final_table() {
    let Some(_t) = root_test!() else {
        return;
    };
    let Some((tmux, mut busy)) = live_view("main", 120, 32) else {
        return;
    };

    let first = tmux.wait_for("a getppid row", |s| {
        row_calls(s, "getppid").is_some_and(|c| c > 0)
    });
    assert!(
        first.contains(&format!("pid {} (syscost-workloa)", busy.id())),
        "{first}"
    );
    // One getppid takes a few hundred ns: no interval can show more than a few million a
    // second, and a busy loop shows some.
    let rate = row_rate(&first, "getppid").unwrap();
    assert!(
        (1_000..10_000_000).contains(&rate),
        "calls/s {rate}: {first}"
    );
    // The own cost is measured within its first window, and shown as a figure.
    tmux.wait_for("a measured own cost", |s| {
        s.split("own cost ")
            .nth(1)
            .and_then(|rest| rest.split(" ns/event").next())
            .and_then(|n| n.trim().parse::<f64>().ok())
            .is_some_and(|ns| ns > 0.0)
    });
    let before = row_calls(&first, "getppid").unwrap();
    tmux.wait_for("the count to grow", |s| {
        row_calls(s, "getppid").is_some_and(|c| c > before)
    });

    // A small terminal: the view redraws to fit.
    tmux.cmd()
        .args(["resize-window", "-t", "t", "-x", "80", "-y", "24"])
        .status()
        .unwrap();
    // tmux clips what a program draws to the pane, so the widths are read off the frame
    // the view chose: the table's box closes at exactly the last column, and the key line
    // is the last line.
    assert_eq!(box_width(&first), Some(120), "{first}");
    let small = tmux.wait_for("the 80x24 layout", |s| {
        box_width(s) == Some(80)
            && s.lines().nth(23).is_some_and(|l| l.contains("q quit"))
            && row_calls(s, "getppid").is_some()
    });
    assert!(
        small.lines().any(|l| l.starts_with("┌ getppid:")),
        "detail pane: {small}"
    );

    tmux.keys(&["q"]);
    let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    assert!(done.contains("% time     seconds  usecs/call"), "{done}");
    assert!(
        done.lines().any(|l| l.trim_end().ends_with(" getppid")),
        "{done}"
    );
    assert!(!done.contains("own cost"), "the live view is gone: {done}");
    tmux.assert_restored("q");

    busy.kill().unwrap();
    busy.wait_exit();
}

#[test]
fn signals_restore_the_terminal_and_print_the_table() {
    let Some(t) = root_test!() else {
        return;
    };
    for (sig, name) in [
        (libc::SIGTERM, "term"),
        (libc::SIGINT, "int"),
        (libc::SIGHUP, "hup"),
        (libc::SIGKILL, "kill"),
    ] {
        let Some((tmux, mut busy)) = live_view(name, 100, 30) else {
            return;
        };
        tmux.wait_for("the live view", |s| row_calls(s, "getppid").is_some());
        let syscost_pid = tmux.syscost_pid();
        // SAFETY: signals the syscost process the test started.
        unsafe { libc::kill(syscost_pid, sig) };
        if sig == libc::SIGKILL {
            // Nothing can restore a terminal after SIGKILL, but the kernel unloads the
            // programs and the target runs on.
            tmux.wait_for("syscost to end", |s| s.contains("EXIT=137"));
            assert_eq!(t.wait_for_unload(), Vec::<String>::new());
            assert!(
                busy.try_wait().unwrap().is_none(),
                "the target is still running"
            );
        } else {
            let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
            assert!(
                done.contains("% time     seconds  usecs/call"),
                "signal {sig}: {done}"
            );
            assert!(
                !done.contains("own cost"),
                "signal {sig}: alternate screen left: {done}"
            );
            tmux.assert_restored(name);
        }
        busy.kill().unwrap();
        busy.wait_exit();
    }
}

/// An error and a panic after the view opened (`SYSCOST_TEST_FAULT`, 1 s after its first figures): the
/// terminal is restored before the message is printed, and the status says what
/// happened.
#[test]
fn an_error_or_a_panic_in_the_view_restores_the_terminal() {
    let Some(_t) = root_test!() else {
        return;
    };
    for (fault, status, message) in [
        ("error", "EXIT=1", "syscost: SYSCOST_TEST_FAULT=error"),
        ("panic", "EXIT=101", "SYSCOST_TEST_FAULT=panic"),
    ] {
        let busy = Command::new(workload_path())
            .args(["getppid", "100000000000"])
            .stdout(Stdio::null())
            .spawn_reaped();
        let Some(tmux) = session_with(
            fault,
            100,
            30,
            &format!("SYSCOST_TEST_FAULT={fault}"),
            &format!("attach -p {}", busy.id()),
        ) else {
            return;
        };
        tmux.wait_for("the live view", |s| row_calls(s, "getppid").is_some());
        let done = tmux.wait_for("syscost to fail", |s| s.contains(status));
        assert!(done.contains(message), "{fault}: {done}");
        assert!(
            !done.contains("own cost"),
            "{fault}: the view is still shown: {done}"
        );
        tmux.assert_restored(fault);
    }
}

/// The terminal goes away (the pane is killed with syscost in it): syscost ends by
/// itself and its programs leave the kernel.
#[test]
fn syscost_ends_when_its_terminal_goes_away() {
    let Some(t) = root_test!() else {
        return;
    };
    let Some((tmux, mut busy)) = live_view("gone", 100, 30) else {
        return;
    };
    tmux.wait_for("the live view", |s| row_calls(s, "getppid").is_some());
    let pid = tmux.syscost_pid();
    // Should it not end, it is killed when the test fails, not left tracing.
    struct KillOnDrop(i32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            // Gone by now when the test passed: only a syscost still there is killed.
            let comm = std::fs::read_to_string(format!("/proc/{}/comm", self.0));
            if comm.is_ok_and(|c| c.trim() == "syscost") {
                // SAFETY: signals the syscost process this test started.
                unsafe { libc::kill(self.0, libc::SIGKILL) };
            }
        }
    }
    let _syscost = KillOnDrop(pid);
    assert!(!loaded_syscost_programs().is_empty());
    tmux.cmd().args(["kill-pane", "-t", "t"]).status().unwrap();
    wait_until(
        "syscost to end",
        Duration::from_secs(10),
        Duration::from_millis(50),
        // Gone, or a zombie nobody has reaped yet (its shell died with the pane).
        || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat)
                if !stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z')) =>
            {
                Err(format!("; still running: {stat}"))
            }
            _ => Ok(()),
        },
    );
    assert_eq!(t.wait_for_unload(), Vec::<String>::new());
    assert!(busy.try_wait().unwrap().is_none(), "the target runs on");
    busy.kill().unwrap();
    busy.wait_exit();
}

/// With tables too small for the workload's threads, the live view's header, the table
/// printed on quit and the JSON say the same dropped figure.
#[test]
fn the_live_view_shows_the_dropped_figure_the_json_saves() {
    let Some(t) = root_test!() else {
        return;
    };
    use std::io::Write as _;
    let (mut work, _out) =
        ready(Command::new(workload_path()).args(["threads-waiting", "8", "20000"]));
    let pid = work.id();
    let json = t.path("dropped.json");
    let Some(tmux) = session_with(
        "dropped",
        120,
        32,
        "SYSCOST_TABLE_SIZES=thread_slots=1,thread_overflow=2",
        &format!("attach -p {pid} --json {}", json.display()),
    ) else {
        return;
    };
    tmux.wait_for("the live view", |s| s.contains(&format!("pid {pid}")));
    writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(work.wait_exit().success());
    let frozen = tmux.wait_for("the exited banner", |s| s.contains(" exited: view frozen"));
    let header: u64 = frozen
        .split(" · dropped ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap_or_else(|| panic!("no dropped figure: {frozen}"));
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    let p = read_profile(&json);
    assert!(p.dropped > 0, "nothing dropped");
    assert_eq!(header, p.dropped, "the header against the JSON: {frozen}");
    assert!(
        done.contains(&format!(" {} events dropped", p.dropped)),
        "the table against the JSON: {done}"
    );
}

#[test]
fn a_call_blocked_now_shows_as_stuck() {
    let Some(_t) = root_test!() else {
        return;
    };
    // One thread sleeping 8 s in clock_nanosleep, started once the view is up.
    let (work, _out) = waiting(&["sleep", "8000"]);
    let pid = work.id();
    let Some((tmux, mut work)) = live_view_of("stuck", 100, 30, work) else {
        return;
    };
    tmux.wait_for("the live view", |s| s.contains(&format!("pid {pid}")));
    {
        use std::io::Write as _;
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    }
    let started = std::time::Instant::now();
    let screen = tmux.wait_for("the stuck clock_nanosleep", |s| {
        s.lines().any(|l| {
            l.contains(" stuck: tid ")
                && l.contains(" in clock_nanosleep for ")
                && l.contains("(switched out)")
        })
    });
    // Shown while it is blocked: within 2 s of passing the 1 s mark, long before the
    // call returns after 8 s.
    assert!(
        started.elapsed() < Duration::from_secs(3) + Duration::from_millis(500),
        "shown after {:?}: {screen}",
        started.elapsed()
    );
    assert!(
        row_calls(&screen, "clock_nanosleep").is_none(),
        "the sleep has not returned: {screen}"
    );
    tmux.keys(&["q"]);
    tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
}

/// Calls per second in `syscost top`'s row of process `pid`.
fn top_rate(screen: &str, pid: u32) -> Option<u64> {
    screen.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next()? == pid.to_string())
            .then(|| parse_count(words.nth(2)?))
            .flatten()
    })
}

#[test]
fn top_shows_a_known_rate_and_drills_into_the_process() {
    let Some(_t) = root_test!() else {
        return;
    };
    // 10,000 getppid and 100 clock_nanosleep a second, paced by the clock.
    let work = Command::new(workload_path())
        .args(["paced", "10000", "60"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let pid = work.id();
    let Some(tmux) = session("top", 150, 40, "top") else {
        return;
    };
    tmux.wait_for("the workload's row", |s| top_rate(s, pid).is_some());
    // Past the first, partial interval.
    std::thread::sleep(Duration::from_millis(2500));
    let screen = tmux.capture();
    let rate = top_rate(&screen, pid).unwrap_or_else(|| panic!("no row for {pid}:\n{screen}"));
    assert!(
        (rate as f64 - 10_100.0).abs() <= 0.05 * 10_100.0,
        "shown {rate}/s, made 10,100/s:\n{screen}"
    );
    // By time, the pacing sleep is its top syscall (about 0.99 s/s).
    let row = screen
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        .unwrap();
    let sleep: f64 = row
        .split_once("clock_nanosleep ")
        .and_then(|(_, v)| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("top syscall by time: {row}"));
    assert!((0.9..=1.1).contains(&sleep), "{row}");
    // Drill down: filter by its pid, Enter.
    tmux.keys(&["/"]);
    tmux.keys(&[&pid.to_string()]);
    tmux.keys(&["Enter"]);
    tmux.keys(&["Enter"]);
    let drilled = tmux.wait_for("the drill-down table", |s| {
        s.contains("from syscost top") && row_calls(s, "getppid").is_some_and(|n| n > 0)
    });
    assert!(drilled.contains(&format!("pid {pid}")), "{drilled}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the process table again", |s| {
        s.contains(" syscost top ") && top_rate(s, pid).is_some()
    });
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the totals", |s| s.contains("EXIT=0"));
    assert!(done.contains("syscost top: "), "{done}");
    drop(work);
}

/// top's drill-down counts from the moment of the Enter: a process that made 3,000
/// getppid before it and 3,000 after shows exactly 3,000, not 6,000.
#[test]
fn tops_drill_down_counts_from_the_enter() {
    let Some(_t) = root_test!() else {
        return;
    };
    use std::io::Write as _;
    let mut work = Command::new(workload_path())
        .args(["per-line", "3000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(work.stdout.take().unwrap(), "stdout");
    let pid = work.id();
    let Some(tmux) = session("drill", 150, 40, "top") else {
        return;
    };
    tmux.wait_for("top's table", |s| s.contains(" syscost top "));
    // Seen by top: its first 3,000 calls.
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "done");
    tmux.wait_for("the workload's row", |s| top_rate(s, pid).is_some());
    tmux.keys(&["/"]);
    tmux.keys(&[&pid.to_string()]);
    tmux.keys(&["Enter"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the drill-down view", |s| {
        s.contains("from syscost top") && s.contains(&format!("pid {pid}"))
    });
    // After the Enter: 3,000 more.
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "done");
    let screen = tmux.wait_for("the calls made since the Enter", |s| {
        row_calls(s, "getppid").is_some_and(|n| n >= 3000)
    });
    std::thread::sleep(Duration::from_millis(1500));
    let settled = tmux.capture();
    assert_eq!(
        row_calls(&settled, "getppid"),
        Some(3000),
        "before:\n{screen}\nnow:\n{settled}"
    );
    // Back, and into the same process again: the second drill-down counts from its own
    // Enter, not from the first's.
    tmux.keys(&["Escape"]);
    tmux.wait_for("the process table again", |s| {
        s.contains(" syscost top ") && !s.contains("from syscost top")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the drill-down view again", |s| {
        s.contains("from syscost top") && s.contains(&format!("pid {pid}"))
    });
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "done");
    tmux.wait_for("the calls since the second Enter", |s| {
        row_calls(s, "getppid").is_some_and(|n| n >= 3000)
    });
    std::thread::sleep(Duration::from_millis(1500));
    let again = tmux.capture();
    assert_eq!(row_calls(&again, "getppid"), Some(3000), "{again}");
    tmux.keys(&["q"]);
    tmux.wait_for("the totals", |s| s.contains("EXIT=0"));
    drop(work);
}

#[test]
fn slow_calls_show_in_the_live_view_with_their_stack() {
    let Some(_t) = root_test!() else {
        return;
    };
    let (mut work, _out) = waiting(&["slow-mix"]);
    let pid = work.id();
    let Some(tmux) = session("slow", 130, 40, &format!("attach -p {pid} --slow 1ms")) else {
        return;
    };
    tmux.wait_for("the live view", |s| s.contains(&format!("pid {pid}")));
    {
        use std::io::Write as _;
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    }
    tmux.keys(&["l"]);
    let screen = tmux.wait_for("slow calls with their function and stack", |s| {
        // Newest first: the pipe reads, blocked about 20 ms each, then the stack of the
        // selected one.
        s.contains(" slow calls: ")
            && s.contains("pipe:[")
            && s.contains("syscost_test_slow_read")
            && s.contains(", user stack")
    });
    assert!(screen.contains("l slow calls"), "{screen}");
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    assert!(done.contains("slow calls (--slow 1.00ms)"), "{done}");
}

/// Names a traced process chose show escaped in the live view (ratatui would drop the
/// control bytes silently), and the pane's title stays as it was: the process that
/// named itself with an OSC sequence did not set it.
#[test]
fn hostile_names_show_escaped_in_the_live_view() {
    let Some(t) = root_test!() else {
        return;
    };
    use std::os::unix::ffi::OsStrExt as _;
    let exe = t
        .dir
        .join(std::ffi::OsStr::from_bytes(b"\x1b]0;PWNED\x07x"));
    std::fs::copy(workload_path(), &exe).unwrap();
    let (mut work, _out) = ready(
        Command::new(&exe)
            .args(["--wait-stdin", "--hold", "hostile"])
            .arg(&t.dir),
    );
    let pid = work.id();
    let Some(tmux) = session("hostile", 130, 40, &format!("attach -p {pid} --slow 1ms")) else {
        return;
    };
    let title = || tmux.pane("#{pane_title}");
    let before = title();
    tmux.wait_for("the escaped name in the header", |s| {
        s.contains(&format!("pid {pid} (\\33]0;PWNED\\7x)"))
    });
    {
        use std::io::Write as _;
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    }
    tmux.keys(&["l"]);
    tmux.wait_for(
        "the FIFO's and the comm's escaped names among the slow calls",
        |s| {
            s.contains(" slow calls: ")
                // The fd column keeps the path's end, cut between two escapes.
                && s.contains("…Z\\xf4\\x8f\\xbe\\x9b")
                && s.contains("(\\33[31mEVIL\\7)")
        },
    );
    assert_eq!(title(), before, "the pane's title changed");
    assert_ne!(title(), "PWNED");
    {
        use std::io::Write as _;
        writeln!(work.stdin.as_mut().unwrap()).unwrap();
    }
    tmux.keys(&["q"]);
    tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    assert_eq!(title(), before, "the pane's title changed");
}
