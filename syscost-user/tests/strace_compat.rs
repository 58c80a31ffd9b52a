//! strace's summary flags as syscost takes them: `-u USER`, `-z` and `-Z`, `-U`, `-S`,
//! `-e trace=` with strace's classes (compared with strace itself on this machine), and
//! strace's other flags refused in one line each. The tests that run commands need root.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;

/// The rows of a table whose time columns show `-` (`-z`, `-Z`): name -> (calls,
/// errors).
fn counted_rows(table: &str) -> BTreeMap<String, (u64, u64)> {
    table
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            if c.len() < 5 || c[..3] != ["-", "-", "-"] {
                return None;
            }
            let calls = c[3].parse().ok()?;
            let (errors, name) = match c.len() {
                5 => (0, c[4]),
                _ => (c[4].parse().ok()?, c[5]),
            };
            (name != "total").then(|| (name.to_string(), (calls, errors)))
        })
        .collect()
}

/// 5,000 failing close and 20,000 getppid: `-Z` counts the failed calls and `-z` the
/// successful ones, exactly the kernel's errno split of the same profile.
#[test]
fn z_and_capital_z_count_the_successful_and_the_failed_calls_exactly() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("mixed.json");
    let script = format!(
        "{w} close-ebadf 5000 && {w} getppid 20000",
        w = workload_path()
    );
    let o = output(
        syscost()
            .args(["run", "-Z", "-e", "trace=close,getppid", "--json"])
            .arg(&json)
            .args(["--", "sh", "-c", &script]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    let close = p.syscall("close").unwrap();
    let getppid = p.syscall("getppid").unwrap();
    // The workload's exactly; sh adds no failing close, and at most its own getppid.
    assert_eq!(close.errnos["EBADF"], 5000, "{:?}", close.errnos);
    assert!(
        (20_000..=20_001).contains(&getppid.calls),
        "{} getppid",
        getppid.calls
    );
    assert_eq!(getppid.errors, 0);
    let failed = counted_rows(&stderr(&o));
    // getppid, named in -e, keeps its row of zeros: it never failed.
    assert_eq!(
        failed,
        BTreeMap::from([
            ("close".to_string(), (close.errors, close.errors)),
            ("getppid".to_string(), (0, 0)),
        ]),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("syscost: -Z: the failed calls only"));
    let o = output(
        syscost()
            .args(["report", "-z", "-e", "trace=close,getppid"])
            .arg(&json),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        counted_rows(&stdout(&o)),
        BTreeMap::from([
            ("close".to_string(), (close.calls - close.errors, 0)),
            ("getppid".to_string(), (getppid.calls, 0)),
        ]),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("syscost: -z: the successful calls only"));
    let o = output(syscost().args(["report", "-z", "-Z"]).arg(&json));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `-u nobody`: a file the command creates belongs to nobody, and the profile is the
/// one the command makes as root; under sudo without -u, one line says it runs as root.
#[test]
fn u_runs_the_command_as_the_user() {
    let Some(t) = root_test!() else {
        return;
    };
    let dir = t.path("owned");
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    // nobody may reach the test's directory, and write in this one.
    std::fs::set_permissions(t.path(""), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = |user: Option<&str>, sudo: bool, command: &[&str]| {
        let json = t.path("run.json");
        let mut cmd = syscost();
        // The test runner's library path holds directories only root may read: the
        // loader's search of them would differ by user, not by syscost.
        cmd.env_remove("LD_LIBRARY_PATH");
        cmd.arg("run").arg("--json").arg(&json);
        if let Some(u) = user {
            cmd.args(["-u", u]);
        }
        if sudo {
            cmd.env("SUDO_USER", "alice");
        } else {
            cmd.env_remove("SUDO_USER");
        }
        let o = output(cmd.arg("--").args(command));
        assert!(o.status.success(), "{}", stderr(&o));
        (read_profile(&json), stderr(&o))
    };
    let file = |name: &str| dir.join(name).display().to_string();
    let (_, said) = run(Some("nobody"), true, &["touch", &file("by-nobody")]);
    let nobody = std::process::Command::new("id")
        .args(["-u", "nobody"])
        .output()
        .unwrap();
    let uid: u32 = String::from_utf8_lossy(&nobody.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(std::fs::metadata(file("by-nobody")).unwrap().uid(), uid);
    assert!(!said.contains("runs as root"), "{said}");
    let (_, said) = run(None, true, &["touch", &file("by-root")]);
    assert_eq!(std::fs::metadata(file("by-root")).unwrap().uid(), 0);
    assert!(
        said.contains("syscost: the command runs as root (syscost runs under sudo); -u alice runs it as alice\n"),
        "{said}"
    );
    let (_, said) = run(None, false, &["true"]);
    assert!(!said.contains("runs as root"), "{said}");
    // The workload's calls, as root and as nobody: the same profile.
    let counts = |p: &syscost_user::profile::Profile| -> BTreeMap<String, (u64, u64)> {
        p.syscalls
            .iter()
            .map(|s| (s.name.clone(), (s.calls, s.errors)))
            .collect()
    };
    let (as_nobody, _) = run(Some("nobody"), false, &[workload_path(), "getppid", "1000"]);
    let (as_root, _) = run(None, false, &[workload_path(), "getppid", "1000"]);
    assert_eq!(counts(&as_nobody), counts(&as_root));
    assert_eq!(calls(&as_nobody, "getppid"), 1000);
    let o = output(syscost().args(["run", "-u", "no-such-user-here", "--", "true"]));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "syscost: -u no-such-user-here: no such user\n");
    assert!(t.wait_for_unload().is_empty());
}

/// For every class of strace's `-e trace=%CLASS`, syscost shows the rows strace shows
/// of the same program (tests/c/classes.c: one call of each of a list of syscalls that
/// covers every class), strace 6.1 being the one installed. Needs root and strace.
/// The program makes x86_64 syscalls (tests/c/classes.c, built on x86_64 only).
#[cfg(target_arch = "x86_64")]
#[test]
fn classes_show_the_rows_strace_shows() {
    let Some(t) = root_test!() else {
        return;
    };
    if which::which("strace").is_err() {
        if under_ci() {
            panic!("strace is not installed (cargo xtask setup installs it)");
        }
        skip(
            "classes_show_the_rows_strace_shows",
            "strace is not installed",
        );
        return;
    }
    let version = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout).to_string();
    // The classes are strace 6.1's: another strace may class a syscall otherwise.
    if !version.starts_with("strace -- version 6.1\n") {
        let why = format!(
            "strace is not 6.1: {}",
            version.lines().next().unwrap_or("")
        );
        if under_ci() {
            panic!("{why}");
        }
        skip("classes_show_the_rows_strace_shows", &why);
        return;
    }
    let program = c_programs().join("classes");
    let json = t.path("classes.json");
    let o = output(
        syscost()
            .arg("run")
            .arg("--json")
            .arg(&json)
            .arg("--")
            .arg(&program),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = |table: &str| -> BTreeSet<String> {
        // The rows between the two lines of dashes, named in the last column.
        let mut dashes = 0;
        let mut out = BTreeSet::new();
        for l in table.lines() {
            if l.starts_with("------") {
                dashes += 1;
                continue;
            }
            if dashes == 1
                && let Some(name) = l.split_whitespace().last()
            {
                out.insert(name.to_string());
            }
        }
        out
    };
    let mut compared = 0;
    for class in [
        "%desc", "%file", "%memory", "%process", "%creds", "%signal", "%ipc", "%net", "%stat",
        "%lstat", "%fstat", "%%stat", "%statfs", "%fstatfs", "%%statfs", "%pure", "%clock",
    ] {
        let out = t.path("strace.txt");
        let s = output(
            std::process::Command::new("strace")
                .args(["-f", "-c", "-o"])
                .arg(&out)
                .arg("-e")
                .arg(format!("trace={class}"))
                .arg(&program),
        );
        assert!(s.status.success(), "strace {class}: {}", stderr(&s));
        let theirs = rows(&std::fs::read_to_string(&out).unwrap());
        let o = output(
            syscost()
                .args(["report", "-e"])
                .arg(format!("trace={class}"))
                .arg(&json),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let ours = rows(&stdout(&o));
        assert_eq!(
            ours,
            theirs,
            "{class} (strace: {})",
            version.lines().next().unwrap_or("")
        );
        assert!(!ours.is_empty(), "{class}: no row to compare");
        compared += ours.len();
    }
    assert!(compared >= 30, "{compared} rows compared");
}

/// `-U` prints strace's columns in the order asked, as wide as strace makes them; `-S`
/// takes strace's column names. Of a saved profile: no root needed.
#[test]
fn columns_and_sort_keys_are_strace_s() {
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/diff/et-plain-1.json");
    let p = read_profile(std::path::Path::new(profile));
    let o = output(syscost().args([
        "report",
        "-U",
        "name,calls,max-time",
        "-S",
        "max-time",
        profile,
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["syscall", "calls", "longest"]
    );
    // The name column is as wide as the longest name and one, the others right-aligned.
    let widest = p
        .syscalls
        .iter()
        .map(|s| s.name.len() + 1)
        .max()
        .unwrap()
        .max(16);
    assert_eq!(lines[0].find("calls"), Some(widest + 1 + 9 - 5), "{text}");
    let first: Vec<&str> = lines[2].split_whitespace().collect();
    let longest = p.syscalls.iter().max_by_key(|s| s.max_ns).unwrap();
    assert_eq!(first[0], longest.name);
    assert_eq!(first[1], longest.calls.to_string());
    assert_eq!(first[2], format!("{:.6}", longest.max_ns as f64 / 1e9));
    let total: Vec<&str> = lines.last().unwrap().split_whitespace().collect();
    assert_eq!(total[0], "total");
    assert_eq!(total[1], p.totals().0.to_string());
    // strace's other spellings of the columns, and of -S.
    let o = output(syscost().args([
        "report",
        "-U",
        "syscall,count,longest",
        "-S",
        "count",
        profile,
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = output(syscost().args(["report", "-U", "name,bogus", profile]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown column 'bogus' (strace's: time-percent,"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["report", "-U", "calls,calls", profile]));
    assert!(
        stderr(&o).contains("column 'calls' is given more than once"),
        "{}",
        stderr(&o)
    );
    // As strace, the name column is added when it is not asked for.
    let o = output(syscost().args(["report", "-U", "errors,calls", profile]));
    assert!(o.status.success(), "{}", stderr(&o));
    let head: Vec<String> = stdout(&o)
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(head, ["errors", "calls", "syscall"]);
    let o = output(syscost().args(["report", "-U", "name", "-L", profile]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// strace's flags that syscost does not take: one line naming the flag and syscost's
/// way; those it takes with strace's meaning are accepted.
#[test]
fn strace_flags_are_taken_or_refused_in_one_line() {
    let o = output(syscost().args(["run", "-T", "--", "true"]));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "syscost: strace's -T prints each call's time; syscost's table has each syscall's total and average, -L its p50, p99 and max, --slow each slow call\n"
    );
    let o = output(syscost().args(["attach", "-p", "1", "-k"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("syscost: strace's -k prints a stack"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["run", "-ff", "--", "true"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("syscost: strace's -ff writes a file per process"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["run", "-ttt", "--", "true"]));
    assert!(
        stderr(&o).starts_with("syscost: strace's -t timestamps each printed call"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["attach", "-p", "1", "-o", "x"]));
    assert!(
        stderr(&o).starts_with("syscost: strace's -o writes the output to a file"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["report", "-O", "soon", "x.json"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'soon' is not a time"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["run", "--bogus", "--", "true"]));
    assert!(
        stderr(&o).starts_with("syscost: unexpected argument '--bogus'"),
        "{}",
        stderr(&o)
    );
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/diff/et-plain-1.json");
    for accepted in [
        &["-c"][..],
        &["-w"],
        &["-O", "1us"],
        &["-O", "0.000001"],
        &["-S", "total-time"],
        &["-e", "trace=%net"],
        &["--failing-only"],
        &["-e", "status=successful,failed"],
    ] {
        let o = output(syscost().arg("report").args(accepted).arg(profile));
        assert!(o.status.success(), "{accepted:?}: {}", stderr(&o));
    }
    let o = output(syscost().args(["report", "-O", "1us", profile]));
    assert!(
        stderr(&o).starts_with("syscost: -O: nothing is subtracted"),
        "{}",
        stderr(&o)
    );
    let o = output(syscost().args(["report", "-e", "trace=%net", profile]));
    let text = stdout(&o);
    let shown: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    for net in [
        "accept4",
        "bind",
        "listen",
        "setsockopt",
        "socket",
        "getsockname",
    ] {
        assert!(shown.contains(net), "{net}: {text}");
    }
    assert!(
        !shown.contains("read") && !shown.contains("close"),
        "{text}"
    );
}

/// `attach -C` (strace's -C): each second's table as text while attached, and the
/// summary at the end, even on a terminal's behalf (stdout is a pipe here).
#[test]
fn capital_c_prints_each_second_and_the_summary() {
    let Some(_t) = root_test!() else {
        return;
    };
    let mut sleeper = std::process::Command::new(workload_path())
        .args(["--die-with-parent", "sleep", "600000"])
        .spawn_reaped();
    let o = output(syscost().args(["attach", "-C", "-d", "2.5", "-p", &sleeper.id().to_string()]));
    sleeper.kill().unwrap();
    sleeper.wait_exit();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // A table each second (two; one where syscost was kept from running past a tick: a
    // missed tick is not made up, the first is printed before the end), the last part,
    // and the summary.
    assert_interval_tables(&out);
    // Ended on a second's end: no empty table of the moment after it.
    let mut sleeper = std::process::Command::new(workload_path())
        .args(["--die-with-parent", "sleep", "600000"])
        .spawn_reaped();
    let o = output(syscost().args(["attach", "-C", "-d", "2", "-p", &sleeper.id().to_string()]));
    sleeper.kill().unwrap();
    sleeper.wait_exit();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("(0.00 s) ---"), "{out}");
    assert_eq!(out.matches("--- the whole run (").count(), 1, "{out}");
    let o = output(syscost().args(["attach", "-C", "-c", "-p", "1"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `-e none` (strace's `-e trace=none`): no table at all, as strace prints none.
#[test]
fn trace_none_prints_no_table() {
    let Some(_t) = root_test!() else {
        return;
    };
    for e in ["none", "trace=none", "trace=!all"] {
        let o = output(syscost().args(["run", "-e", e, "--", workload_path(), "getppid", "10"]));
        assert!(o.status.success(), "{}", stderr(&o));
        // The table goes to stderr, as strace's -c.
        let err = stderr(&o);
        assert!(!err.contains("% time"), "-e {e} printed a table:\n{err}");
    }
}
