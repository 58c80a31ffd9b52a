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
        let o = output(self.cmd().args(["capture-pane", "-p", "-t", "t"]));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The screen once `pred` accepts it, polled until [`PATIENCE`]; the test fails
    /// then saying `what`, with the last screen seen.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        wait_until(what, PATIENCE, Duration::from_millis(100), || {
            let screen = self.capture();
            if pred(&screen) {
                Ok(screen)
            } else {
                Err(format!("; the screen:\n{}", compact(&screen)))
            }
        })
    }

    /// Runs a tmux command to its end (within [`PATIENCE`]); fails the test if it fails.
    fn run(&self, args: &[&str]) {
        let o = output(self.cmd().args(args));
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
}

/// A screen as a failure shows it: its lines with something on them.
fn compact(screen: &str) -> String {
    screen
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of `screen` that hold `needle` (the screen's other lines left out), for a
/// failure's message; the whole screen when none does.
fn lines_with(screen: &str, needle: &str) -> String {
    let hits: Vec<&str> = screen.lines().filter(|l| l.contains(needle)).collect();
    if hits.is_empty() {
        format!("no line holds {needle:?}; the screen:\n{}", compact(screen))
    } else {
        hits.join("\n")
    }
}

/// The live view's clock ("attached HH:MM:SS"), in seconds: it is the time of the
/// sample shown, so a greater one is a later sample.
fn attached_clock(screen: &str) -> Option<u64> {
    let hms = screen.split("attached ").nth(1)?.get(..8)?;
    let mut parts = hms.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(h * 3600 + m * 60 + s)
}

impl Tmux {
    /// A pane variable (`#{...}`) as tmux sees it now.
    fn pane(&self, format: &str) -> String {
        let o = output(
            self.cmd()
                .args(["display-message", "-p", "-t", "t", format]),
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Types `keys` into the pane (tmux key names: "q", "Enter", "Escape").
    fn keys(&self, keys: &[&str]) {
        let o = output(self.cmd().args(["send-keys", "-t", "t"]).args(keys));
        assert!(
            o.status.success(),
            "send-keys {keys:?}: {}",
            stderr(&o).trim()
        );
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
        let _ = output(self.cmd().arg("kill-server"));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A count as the view shows it: 950, 123k, 19.1M.
fn parse_count(s: &str) -> Option<u64> {
    // Thousands separated by commas (top's rates: 10,101).
    let s = s.replace(',', "");
    let s = s.as_str();
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
        .args(["--die-with-parent", "getppid", "100000000000"])
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
        // The pane then stays (for the test to read) until the server is killed, or
        // for PATIENCE should the test be gone.
        "stty -g > '{dir}/tty-before'; {env} {} {args}; rc=$?; stty -g > '{dir}/tty-after'; \
         [ $rc = 137 ] && stty sane; printf '\\nEXIT=%s\\n' $rc; sleep {}",
        env!("CARGO_BIN_EXE_syscost"),
        PATIENCE.as_secs(),
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        &w.to_string(),
        "-y",
        &h.to_string(),
        &cmd,
    ]);
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
        "{}",
        lines_with(&first, " syscost ")
    );
    // A busy loop shows a rate (how high depends on the CPU).
    let rate = row_rate(&first, "getppid");
    assert!(
        rate.is_some_and(|r| r > 0),
        "calls/s {rate:?}: {}",
        lines_with(&first, "getppid")
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
    tmux.run(&["resize-window", "-t", "t", "-x", "80", "-y", "24"]);
    // tmux clips what a program draws to the pane, so the widths are read off the frame
    // the view chose: the table's box closes at exactly the last column, and the key line
    // is the last line.
    assert_eq!(box_width(&first), Some(120), "{}", compact(&first));
    let small = tmux.wait_for("the 80x24 layout", |s| {
        box_width(s) == Some(80)
            && s.lines().nth(23).is_some_and(|l| l.contains("q quit"))
            && row_calls(s, "getppid").is_some()
    });
    assert!(
        small.lines().any(|l| l.starts_with("┌ getppid:")),
        "detail pane: {}",
        lines_with(&small, "┌")
    );

    tmux.keys(&["q"]);
    let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    assert!(
        done.contains("% time     seconds  usecs/call"),
        "{}",
        compact(&done)
    );
    assert!(
        done.lines().any(|l| l.trim_end().ends_with(" getppid")),
        "{}",
        compact(&done)
    );
    assert!(
        !done.contains("own cost"),
        "the live view is gone: {}",
        lines_with(&done, "own cost")
    );
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
                "signal {sig}: {}",
                compact(&done)
            );
            assert!(
                !done.contains("own cost"),
                "signal {sig}: alternate screen left: {}",
                lines_with(&done, "own cost")
            );
            tmux.assert_restored(name);
        }
        busy.kill().unwrap();
        busy.wait_exit();
    }
}

/// An error and a panic after a view opened (`SYSCOST_TEST_FAULT`, 1 s after its first
/// figures), in attach's view and in top's (one loop runs both): the terminal is
/// restored before the message is printed, and the status says what happened.
#[test]
fn an_error_or_a_panic_in_the_view_restores_the_terminal() {
    let Some(_t) = root_test!() else {
        return;
    };
    for view in ["attach", "top"] {
        for (fault, status, message) in [
            ("error", "EXIT=1", "syscost: SYSCOST_TEST_FAULT=error"),
            ("panic", "EXIT=101", "SYSCOST_TEST_FAULT=panic"),
        ] {
            let busy = Command::new(workload_path())
                .args(["--die-with-parent", "getppid", "100000000000"])
                .stdout(Stdio::null())
                .spawn_reaped();
            let pid = busy.id();
            let args = match view {
                "attach" => format!("attach -p {pid}"),
                _ => "top".to_string(),
            };
            let name = format!("{view}-{fault}");
            let Some(tmux) = session_with(
                &name,
                100,
                30,
                &format!("SYSCOST_TEST_FAULT={fault}"),
                &args,
            ) else {
                return;
            };
            // The view, or already its end: the fault is armed by the view's first
            // figures and fires a second later, which a loaded machine's polls of the
            // screen (or a first table without the workload's row yet) can miss.
            tmux.wait_for(&format!("{view}'s live view or its end"), |s| {
                s.contains(status)
                    || match view {
                        "attach" => row_calls(s, "getppid").is_some(),
                        _ => top_rate(s, pid).is_some(),
                    }
            });
            let done = tmux.wait_for("syscost to fail", |s| s.contains(status));
            assert!(done.contains(message), "{name}: {}", compact(&done));
            assert!(
                !done.contains("own cost"),
                "{name}: the view is still shown: {}",
                lines_with(&done, "own cost")
            );
            tmux.assert_restored(&name);
        }
    }
}

/// A view that hangs at a signal (`SYSCOST_TEST_FAULT=deaf`, debug builds; it says so on
/// the screen): a second signal ends syscost at once, the terminal restored, the status a death by
/// that signal's, a line saying so, nothing left loaded.
#[test]
fn a_second_signal_ends_a_hung_view_at_once() {
    let Some(t) = root_test!() else {
        return;
    };
    let mut busy = Command::new(workload_path())
        .args(["--die-with-parent", "getppid", "100000000000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let Some(tmux) = session_with(
        "deaf",
        100,
        30,
        "SYSCOST_TEST_FAULT=deaf",
        &format!("attach -p {}", busy.id()),
    ) else {
        return;
    };
    tmux.wait_for("the live view", |s| row_calls(s, "getppid").is_some());
    let pid = tmux.syscost_pid();
    // SAFETY: signals the syscost process the test started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    tmux.wait_for("the view to hang", |s| {
        s.contains("syscost: test fault: the view hangs")
    });
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let done = tmux.wait_for("syscost to end by the second", |s| s.contains("EXIT=143"));
    assert!(
        done.contains("syscost: ended at once by a second signal"),
        "{}",
        compact(&done)
    );
    tmux.assert_restored("deaf");
    assert_eq!(t.wait_for_unload(), Vec::<String>::new());
    busy.kill().unwrap();
    busy.wait_exit();
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
    tmux.run(&["kill-pane", "-t", "t"]);
    wait_until(
        "syscost to end",
        PATIENCE,
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
/// The live view's first frame means every call from then on is counted: a workload
/// released at that frame has all its calls in the view and in the profile.
#[test]
fn every_call_after_the_live_views_first_frame_is_counted() {
    let Some(t) = root_test!() else {
        return;
    };
    use std::io::Write as _;
    const N: u64 = 20_001;
    let (mut work, _out) = waiting(&["getppid", &N.to_string()]);
    let pid = work.id();
    let json = t.path("first.json");
    let Some(tmux) = session(
        "first",
        120,
        32,
        &format!("attach -p {pid} --json {}", json.display()),
    ) else {
        return;
    };
    tmux.wait_for("the live view's first frame", |s| {
        s.contains(&format!("pid {pid}"))
    });
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert!(work.wait_exit().success());
    let frozen = tmux.wait_for("the exited banner", |s| s.contains(" exited: view frozen"));
    assert_eq!(
        row_calls(&frozen, "getppid").map(|c| c.abs_diff(N) <= N / 1000),
        Some(true),
        "the view's getppid row (shown to 3 digits): {}",
        lines_with(&frozen, "getppid")
    );
    tmux.keys(&["q"]);
    tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    assert_eq!(calls(&read_profile(&json), "getppid"), N);
}

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
        .unwrap_or_else(|| panic!("no dropped figure: {}", lines_with(&frozen, "dropped")));
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    let p = read_profile(&json);
    assert!(p.dropped > 0, "nothing dropped");
    assert_eq!(
        header,
        p.dropped,
        "the header against the JSON: {}",
        lines_with(&frozen, "dropped")
    );
    assert!(
        done.contains(&format!(" {} events dropped", p.dropped)),
        "the table against the JSON ({} dropped): {}",
        p.dropped,
        lines_with(&done, "dropped")
    );
}

#[test]
fn a_call_blocked_now_shows_as_stuck() {
    let Some(_t) = root_test!() else {
        return;
    };
    // One thread sleeping in clock_nanosleep, started once the view is up; the sleep
    // outlasts the test (an hour: killed at the end), so it is shown while blocked however
    // late the view comes to it.
    let (work, _out) = waiting(&["sleep", "3600000"]);
    let pid = work.id();
    let Some((tmux, mut work)) = live_view_of("stuck", 100, 30, work) else {
        return;
    };
    tmux.wait_for("the live view", |s| s.contains(&format!("pid {pid}")));
    let started = std::time::Instant::now();
    {
        use std::io::Write as _;
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    }
    let screen = tmux.wait_for("the stuck clock_nanosleep", |s| {
        s.lines().any(|l| {
            l.contains(" stuck: tid ")
                && l.contains(" in clock_nanosleep for ")
                && l.contains("(switched out)")
        })
    });
    // The time before the capture's end: no call begun after "go" has run longer.
    let since_go = started.elapsed();
    let line = screen
        .lines()
        .find(|l| l.contains(" stuck: tid "))
        .unwrap()
        .trim();
    // The thread shown is the workload's only one, and the time shown is the call's: at
    // least the 1 s after which a call is stuck, at most the time since it was started
    // (to the 0.01 s of the figure's rounding).
    let tid: u32 = line
        .split("stuck: tid ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no tid: {line}"));
    assert_eq!(tid, pid, "{line}");
    let stuck_for = line
        .split(" in clock_nanosleep for ")
        .nth(1)
        .and_then(|r| {
            r.split_whitespace()
                .next()?
                .strip_suffix('s')?
                .parse::<f64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no duration in seconds: {line}"));
    assert!(
        // Shown to 0.01 s below 10 s, to 0.1 s below 100 s, to 1 s from there: rounded
        // up by half that at most.
        stuck_for >= 1.0
            && stuck_for
                <= since_go.as_secs_f64()
                    + match stuck_for {
                        v if v < 10.0 => 0.005,
                        v if v < 100.0 => 0.05,
                        _ => 0.5,
                    },
        "stuck for {stuck_for} s, started {since_go:?} ago: {line}"
    );
    assert!(
        row_calls(&screen, "clock_nanosleep").is_none(),
        "the sleep has not returned: {}",
        lines_with(&screen, "clock_nanosleep")
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
    // 10,000 getppid and 100 clock_nanosleep a second, paced by the clock, for longer
    // than the test takes (killed at its end).
    let work = Command::new(workload_path())
        .args(["paced", "10000", "3600"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let pid = work.id();
    let Some(tmux) = session("top", 150, 40, "top") else {
        return;
    };
    tmux.wait_for("the workload's row", |s| top_rate(s, pid).is_some());
    // A refresh of a whole interval in which the workload kept its pace shows the rate
    // it makes: 10,100 calls a second (to 5%: a burst more or less in the interval, and
    // the figure's rounding); the first, partial interval, or one after the workload was
    // held up and caught up, shows another. By time, the pacing sleep is its top
    // syscall, and one thread sleeps no more than the interval (plus the one tick that
    // began before it): at most 1.1 s/s at any speed.
    let pid_s = pid.to_string();
    let sleep_of = |row: &str| -> Option<f64> {
        row.split_once("clock_nanosleep ")
            .and_then(|(_, v)| v.split_whitespace().next()?.parse().ok())
    };
    let row_of = |s: &str| -> Option<String> {
        s.lines()
            .find(|l| l.split_whitespace().next() == Some(pid_s.as_str()))
            .map(str::to_string)
    };
    // A view that never shows it (a wrong rate, another top syscall, more sleep than
    // time) fails when the wait does.
    tmux.wait_for(
        "a refresh showing 10,100 calls/s (5%) with clock_nanosleep the top syscall at \
         0 to 1.1 s/s",
        |s| {
            top_rate(s, pid).is_some_and(|r| (r as f64 - 10_100.0).abs() <= 0.05 * 10_100.0)
                && row_of(s)
                    .and_then(|r| sleep_of(&r))
                    .is_some_and(|v| v > 0.0 && v <= 1.1)
        },
    );
    // Drill down: filter by its pid, Enter.
    tmux.keys(&["/"]);
    tmux.keys(&[&pid.to_string()]);
    tmux.keys(&["Enter"]);
    tmux.keys(&["Enter"]);
    let drilled = tmux.wait_for("the drill-down table", |s| {
        s.contains("from syscost top") && row_calls(s, "getppid").is_some_and(|n| n > 0)
    });
    assert!(
        drilled.contains(&format!("pid {pid}")),
        "{}",
        lines_with(&drilled, " syscost ")
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the process table again", |s| {
        s.contains(" syscost top ") && top_rate(s, pid).is_some()
    });
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the totals", |s| s.contains("EXIT=0"));
    assert!(done.contains("syscost top: "), "{}", compact(&done));
    drop(work);
}

/// The first screen whose getppid row shows `n` calls or more, and the screen of a later
/// refresh (its clock past the first's).
fn shown_twice(tmux: &Tmux, what: &str, n: u64) -> (String, String) {
    let first = tmux.wait_for(what, |s| {
        row_calls(s, "getppid").is_some_and(|c| c >= n) && attached_clock(s).is_some()
    });
    let at = attached_clock(&first).unwrap();
    let next = tmux.wait_for("the next refresh (a later clock)", |s| {
        attached_clock(s).is_some_and(|c| c > at)
    });
    (first, next)
}

/// top's drill-down counts from the moment of the Enter: a process that made 3,000
/// getppid before it and 3,000 after shows exactly 3,000, not 6,000.
/// In `syscost top`: the process `pid` found by the filter and drilled into (Enter
/// keeps the filter, Enter again drills), once its drill-down view shows.
/// A `per-line 3000` workload that made its first 3,000 calls under `syscost ARGS`
/// (`top`, in tmux session `name`), drilled into: the session, the workload (a line on
/// its stdin makes 3,000 more) and its stdout.
fn drilled_top(name: &str, args: &str) -> Option<(Tmux, Reaped, StdoutLines)> {
    use std::io::Write as _;
    let mut work = Command::new(workload_path())
        .args(["per-line", "3000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(work.stdout.take().unwrap(), "stdout");
    let pid = work.id();
    let tmux = session(name, 150, 40, args)?;
    tmux.wait_for("top's table", |s| s.contains(" syscost top "));
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "done");
    tmux.wait_for("the workload's row", |s| top_rate(s, pid).is_some());
    drill_into(&tmux, pid);
    Some((tmux, work, out))
}

fn drill_into(tmux: &Tmux, pid: u32) {
    tmux.keys(&["/"]);
    tmux.keys(&[&pid.to_string()]);
    tmux.keys(&["Enter"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the drill-down view", |s| {
        s.contains("from syscost top") && s.contains(&format!("pid {pid}"))
    });
}

#[test]
fn tops_drill_down_counts_from_the_enter() {
    let Some(_t) = root_test!() else {
        return;
    };
    use std::io::Write as _;
    // Seen by top: its first 3,000 calls.
    let Some((tmux, mut work, mut out)) = drilled_top("drill", "top") else {
        return;
    };
    let pid = work.id();
    // After the Enter: 3,000 more.
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "done");
    // Every call was counted before `done`: a screen showing 3,000 or more, and the
    // next refresh (a later clock), show the final count.
    let (screen, settled) = shown_twice(&tmux, "the calls made since the Enter", 3000);
    assert_eq!(
        (
            row_calls(&screen, "getppid"),
            row_calls(&settled, "getppid")
        ),
        (Some(3000), Some(3000)),
        "getppid rows, then and at the next refresh:\n{}\n{}",
        lines_with(&screen, "getppid"),
        lines_with(&settled, "getppid")
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
    let (screen, again) = shown_twice(&tmux, "the calls since the second Enter", 3000);
    assert_eq!(
        (row_calls(&screen, "getppid"), row_calls(&again, "getppid")),
        (Some(3000), Some(3000)),
        "getppid rows, then and at the next refresh:\n{}\n{}",
        lines_with(&screen, "getppid"),
        lines_with(&again, "getppid")
    );
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
    assert!(
        screen.contains("l slow calls"),
        "{}",
        lines_with(&screen, " quit")
    );
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the final table", |s| s.contains("EXIT=0"));
    assert!(
        done.contains("slow calls (--slow 1.00ms)"),
        "{}",
        lines_with(&done, "slow")
    );
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

/// `attach --stacks`: `w` shows the selected syscall's callers (the busy getppid's) in
/// the live view, and the stacks file is written at the end.
#[test]
fn the_callers_pane_shows_the_selected_syscalls_stacks() {
    let Some(_t) = root_test!() else {
        return;
    };
    let busy = Command::new(workload_path())
        .args(["--die-with-parent", "getppid", "100000000000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let folded =
        std::env::temp_dir().join(format!("syscost-callers-{}.folded", std::process::id()));
    let Some(tmux) = session(
        "callers",
        140,
        36,
        &format!("attach --stacks {} -p {}", folded.display(), busy.id()),
    ) else {
        return;
    };
    tmux.wait_for("a getppid row", |s| {
        row_calls(s, "getppid").is_some_and(|c| c > 0)
    });
    // The busiest syscall by time is the first row, selected.
    tmux.keys(&["w"]);
    let pane = tmux.wait_for("getppid's callers", |s| {
        s.contains("callers of getppid since the start: ")
            && s.lines().any(|l| l.contains("by calls") && l.contains("by time"))
            // The libc wrapper, innermost, then the workload's function that calls it.
            && s.contains("syscall < syscost_workload::calls::getppid_n")
    });
    assert!(
        !pane.contains(": 0 stacks"),
        "{}",
        lines_with(&pane, "callers")
    );
    tmux.keys(&["q"]);
    let done = tmux.wait_for("the end", |s| s.contains("EXIT=0"));
    assert!(done.contains("syscost: --stacks: "), "{}", compact(&done));
    let text = std::fs::read_to_string(&folded).expect("the stacks file");
    let _ = std::fs::remove_file(&folded);
    assert!(
        text.lines()
            .any(|l| l.contains(";syscost_workload::calls::getppid_n;syscall;getppid ")),
        "{text}"
    );
    drop(busy);
}

/// `top --stacks`: the drill-down's callers pane (`w`) shows the drilled process's
/// stacks.
#[test]
fn tops_drill_down_has_the_callers_pane_with_stacks() {
    let Some(_t) = root_test!() else {
        return;
    };
    use std::io::Write as _;
    let Some((tmux, mut work, mut out)) = drilled_top("topstacks", "top --stacks") else {
        return;
    };
    assert!(
        tmux.capture().contains("w callers"),
        "the key of the callers pane"
    );
    // Calls made while drilled into are counted by stack.
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert_eq!(out.next().unwrap().unwrap(), "done");
    tmux.wait_for("the getppid row", |s| row_calls(s, "getppid").is_some());
    // Its polls take the time and the first row: getppid is selected by a filter.
    tmux.keys(&["/"]);
    tmux.keys(&["getppid"]);
    tmux.keys(&["Enter"]);
    tmux.keys(&["w"]);
    tmux.wait_for("the drilled process's getppid callers", |s| {
        s.contains("callers of getppid since the start: ")
            && !s.contains(": 0 stacks")
            && s.contains("syscost_workload::")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the totals", |s| s.contains("EXIT=0"));
    drop(work);
}
