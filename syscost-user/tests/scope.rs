//! Beyond one process: a cgroup v2 (`attach --cgroup`, `top --cgroup`) made by the test
//! under the host's v2 mount, the whole machine (`top`), and the bounded series of
//! `export --top`. Exact counts from workloads with known syscalls. Needs root.

mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write as _,
    process::{Command, Stdio},
    time::Duration,
};

use common::*;

fn run_ok(c: &mut Command) {
    let o = output(c);
    assert!(o.status.success(), "{:?}: {}", c, stderr(&o));
}

/// The lines of `text` that hold `needle` (at most 10), or its last 10 lines when none
/// does: what a failure shows of a long output.
fn lines_with(text: &str, needle: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let hits: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains(needle))
        .take(10)
        .collect();
    if hits.is_empty() {
        let last = &lines[lines.len().saturating_sub(10)..];
        format!(
            "no line of {} holds {needle:?}; the last ones:\n{}",
            lines.len(),
            last.join("\n")
        )
    } else {
        hits.join("\n")
    }
}

/// The last lines of a child's stderr, up to its end (the child has exited).
fn last_lines(err: &mut StderrLines) -> String {
    let rest = err.rest();
    rest[rest.len().saturating_sub(10)..].join("\n")
}

/// A workload started outside the cgroup, waiting on stdin; moved in, then released.
fn moved_in(cg: &TestCgroup, args: &[&str]) -> u32 {
    let (mut w, _out) = waiting(args);
    let pid = w.id();
    cg.enter(pid);
    writeln!(w.stdin.as_mut().unwrap()).unwrap();
    assert!(w.wait_exit().success());
    pid
}

fn sigint(pid: u32) {
    // SAFETY: signals a child of this test.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
}

#[test]
fn a_cgroup_is_counted_exactly_with_processes_started_and_moved_in() {
    let Some(t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("exact");
    let child = cg.child("child");
    let json = t.path("cg.json");
    let (tracer, first, err) = started(
        syscost()
            .args(["attach", "--no-tui", "--per-process", "--cgroup", &cg.path])
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(first.starts_with("syscost: tracing cgroup"), "{first}");

    // Started inside: a process and its 3 forked children, 1,000 getppid each.
    run_ok(&mut cg.run_inside("fork 3 1000"));
    // In a descendant cgroup: counted too.
    run_ok(&mut child.run_inside("getppid 700"));
    // Moved out while waiting: its later calls are not counted.
    let mut leaving = cg
        .run_inside("--wait-stdin getppid 3000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(leaving.stdout.take().unwrap(), "stdout");
    assert_eq!(out.next().unwrap().unwrap(), "ready");
    let root = syscost_user::cgroup::v2_mount().unwrap();
    std::fs::write(root.join("cgroup.procs"), leaving.id().to_string()).unwrap();
    writeln!(leaving.stdin.as_mut().unwrap()).unwrap();
    assert!(leaving.wait_exit().success());
    // Outside: not counted.
    run_ok(Command::new(workload_path()).args(["getppid", "5000"]));
    // Moved in while waiting: counted from then on.
    let moved = moved_in(&cg, &["getppid", "2000"]);

    sigint(tracer.id());
    let o = tracer.into_inner().output_within();
    let rest: Vec<String> = err.map_while(Result::ok).collect();
    assert!(
        o.status.success(),
        "{:?}",
        &rest[rest.len().saturating_sub(10)..]
    );
    let p = read_profile(&json);
    assert_eq!(
        calls(&p, "getppid"),
        3 * 1000 + 700 + 2000,
        "{}",
        lines_with(&stdout(&o), "getppid")
    );
    assert_eq!(p.target.cgroup.as_deref(), Some(cg.path.as_str()));
    assert_eq!(p.dropped, 0);
    // Per process: each child 1,000, the moved one 2,000, nothing from outside.
    let getppid = |pt: &syscost_user::profile::ProcessTotals| {
        pt.syscalls
            .iter()
            .find(|s| s.name == "getppid")
            .map_or(0, |s| s.calls)
    };
    let mut per: Vec<u64> = p.processes.iter().map(getppid).filter(|&n| n > 0).collect();
    per.sort();
    assert_eq!(
        per,
        vec![700, 1000, 1000, 1000, 2000],
        "getppid of each of the {} processes (pid, calls): {:?}",
        p.processes.len(),
        p.processes
            .iter()
            .map(|pt| (pt.pid, getppid(pt)))
            .take(10)
            .collect::<Vec<_>>()
    );
    let m = p
        .processes
        .iter()
        .find(|pt| pt.pid == moved)
        .expect("moved process");
    assert_eq!(getppid(m), 2000);
    assert!(
        stdout(&o).contains("by process: "),
        "per-process table printed"
    );
    // `report` and `diff` of one process of the file: its calls, not the cgroup's.
    let r = output(
        syscost()
            .args(["report", "-e", "getppid", "--process", &moved.to_string()])
            .arg(&json),
    );
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(
        table_calls(&stdout(&r), "getppid"),
        Some(2000),
        "{}",
        lines_with(&stdout(&r), "getppid")
    );
    let d = output(
        syscost()
            .args(["diff", "--json", "--process", &moved.to_string()])
            .arg(&json)
            .arg(&json),
    );
    assert!(d.status.success(), "{}", stderr(&d));
    let d: serde_json::Value = serde_json::from_str(&stdout(&d)).unwrap();
    assert_eq!(
        d["total"]["calls"]["before"].as_f64(),
        Some(m.calls as f64),
        "the diff's total: {}",
        d["total"]
    );
    assert_eq!(d["errnos_tracked"], false);
}

/// `syscost top --no-tui --json` rows, by pid.
#[test]
fn top_counts_every_process_exactly_but_itself() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("top.json");
    // Every row in each table (-n 0): the workloads' rows show among the machine's.
    let (mut top, first, mut err) = started(
        syscost()
            .args(["top", "--no-tui", "-i", "0.5", "-n", "0", "--json"])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(
        first.starts_with("syscost: watching the machine"),
        "{first}"
    );
    let mut out = Lines::of(top.stdout.take().unwrap(), "top's stdout");
    let mut pids = Vec::new();
    for n in [3000u64, 7000] {
        let mut c = Command::new(workload_path())
            .args(["getppid", &n.to_string()])
            .stdout(Stdio::null())
            .spawn_reaped();
        pids.push((c.id(), n));
        assert!(c.wait_exit().success());
    }
    // The tables are read until an interval has read each workload's calls (its row in
    // a table, as it ran or from its exit record) and two tables were printed.
    let is_table = |l: &str| l.starts_with("--- ") && l.contains(" with syscalls in the last");
    let (mut tables, mut in_a_table) = (0, BTreeSet::new());
    while tables < 2 || in_a_table.len() < pids.len() {
        let l = out.line().unwrap_or_else(|| {
            panic!(
                "top ended after {tables} tables, the rows of {in_a_table:?} of {pids:?} \
                 read; its stderr: {}",
                last_lines(&mut err)
            )
        });
        tables += usize::from(is_table(&l));
        let pid = l
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid.filter(|p| pids.iter().any(|&(q, _)| q == *p)) {
            in_a_table.insert(pid);
        }
    }
    let own = top.id();
    sigint(own);
    let printed = out.rest();
    let status = top.wait_exit();
    assert!(status.success(), "top: {status}: {}", last_lines(&mut err));
    tables += printed.iter().filter(|l| is_table(l)).count();
    let rows = top_json(&json);
    for &(pid, n) in &pids {
        let row = rows
            .get(&pid)
            .unwrap_or_else(|| panic!("no row for {pid} among {} rows in top's JSON", rows.len()));
        assert_eq!(
            syscall_calls(row, "getppid"),
            n,
            "pid {pid}: {} calls in all",
            row["calls"]
        );
        assert_eq!(row["exited"], true);
        assert_eq!(row["comm"], "syscost-workloa");
    }
    assert!(!rows.contains_key(&own), "syscost counted itself");
    // `report` reads the file: one process by pid, exactly.
    for (pid, n) in &pids {
        let r = output(
            syscost()
                .args(["report", "-e", "getppid", "--process", &pid.to_string()])
                .arg(&json),
        );
        assert!(r.status.success(), "{}", stderr(&r));
        let text = stdout(&r);
        assert_eq!(
            table_calls(&text, "getppid"),
            Some(*n),
            "{}",
            lines_with(&text, "getppid")
        );
        assert!(
            text.contains("by process: 1 process made"),
            "{}",
            lines_with(&text, "by process")
        );
    }
    // The text tables were printed each interval.
    assert!(tables >= 2, "{tables} tables");
}

#[test]
fn top_of_a_cgroup_leaves_the_rest_out() {
    let Some(t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("top");
    let json = t.path("top.json");
    let (top, first, _err) = started(
        syscost()
            .args(["top", "--no-tui", "--cgroup", &cg.path, "--json"])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(first.contains(&cg.path), "{first}");
    let mut outside = Command::new(workload_path())
        .args(["getppid", "4000"])
        .stdout(Stdio::null())
        .spawn_reaped();
    let outside_pid = outside.id();
    assert!(outside.wait_exit().success());
    let inside = moved_in(&cg, &["getppid", "1500"]);
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "top: {}", o.status);
    let rows = top_json(&json);
    assert!(
        !rows.contains_key(&outside_pid),
        "the outside process {outside_pid} has a row: {}",
        rows[&outside_pid]["cgroup"]
    );
    let row = rows
        .get(&inside)
        .unwrap_or_else(|| panic!("no row for {inside}; pids {:?}", rows.keys()));
    assert_eq!(syscall_calls(row, "getppid"), 1500);
    let strays: Vec<String> = rows
        .values()
        .filter(|r| r["cgroup"] != cg.path.as_str())
        .take(5)
        .map(|r| format!("{} {} {}", r["pid"], r["comm"], r["cgroup"]))
        .collect();
    assert!(
        strays.is_empty(),
        "only the cgroup's processes; also: {strays:?}"
    );
    // The file names its cgroup, and `report` of it sums the cgroup's processes.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["cgroup"], cg.path.as_str());
    let r = output(syscost().arg("report").arg(&json));
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(
        table_calls(&stdout(&r), "getppid"),
        Some(1500),
        "{}",
        lines_with(&stdout(&r), "getppid")
    );
}

/// The unlabelled sample of a family (`export --top`'s machine-wide counters).
fn unlabelled(text: &str, family: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(family)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Samples of one metric family: labels (as text) -> value.
fn samples(text: &str, family: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(family)?.strip_prefix('{')?;
            let (labels, value) = rest.rsplit_once("} ")?;
            Some((labels.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// Calls of raw syscall number `nr` in the samples of `family`, over all its series.
fn raw_calls(text: &str, family: &str, nr: u32) -> f64 {
    let name = format!("syscall_{nr:#x}");
    samples(text, family)
        .iter()
        .filter(|(l, _)| label(l, "syscall") == name)
        .map(|(_, v)| v)
        .sum()
}

/// The raw syscall the marker process makes (ENOSYS; nothing else on the machine makes
/// it, nor the 600 of the tests' own workloads).
const MARKER: u32 = 601;

/// A scrape of `export --top`'s series fed after this call (they are fed from the
/// samples, once a second): a process makes 2 calls of raw syscall [`MARKER`], and the
/// first scrape whose series count them is the one returned. `marked`: the marker's
/// calls so far.
fn next_feed(addr: &str, marked: &mut f64) -> String {
    run_ok(
        Command::new(workload_path())
            .args(["numbers", "2", &MARKER.to_string()])
            .stdout(Stdio::null()),
    );
    *marked += 2.0;
    let want = *marked;
    wait_until(
        "a feed of the series after the marker's calls",
        PATIENCE,
        Duration::from_millis(100),
        || {
            let text = scrape_text(addr);
            let n = raw_calls(&text, "syscost_process_syscalls_total", MARKER);
            if n >= want {
                Ok(text)
            } else {
                Err(format!(": {n} of the marker's {want} calls so far"))
            }
        },
    )
}

fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    labels
        .split("\",")
        .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
        .map(|v| v.trim_end_matches('"'))
        .unwrap_or("")
}

/// `export --top --top-n 5` while 200 short-lived processes run in 8 cgroups of the
/// test's: at most 5 process and 5 cgroup series of their own (and `other`) in every
/// scrape, no counter going back, and every call in exactly one series of each family.
/// The processes make raw syscall 600 (ENOSYS), which nothing else on the machine makes,
/// so the sums are exact.
#[test]
fn export_top_keeps_its_series_bounded_and_growing() {
    let Some(_t) = root_test!() else {
        return;
    };
    let cgroups: Vec<TestCgroup> = (0..8)
        .map(|i| TestCgroup::new(&format!("bound-{i}")))
        .collect();
    let (mut export, first, _err) = started(
        syscost()
            .args([
                "export",
                "--top",
                "--top-n",
                "5",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::null()),
    );
    let addr = endpoint_in(&first);
    let scrape = || scrape_text(&addr);
    let family = "syscost_process_syscalls_total";
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    for round in 0..10 {
        for i in 0..20 {
            run_ok(
                cgroups[(round + i) % cgroups.len()]
                    .run_inside("numbers 100 600")
                    .stdout(Stdio::null()),
            );
        }
        let text = scrape();
        let now = samples(&text, family);
        let pids: BTreeSet<&str> = now.keys().map(|l| label(l, "pid")).collect();
        assert!(
            pids.len() <= 6,
            "round {round}: {} process series: {pids:?}",
            pids.len()
        );
        let by_cgroup = samples(&text, "syscost_cgroup_syscalls_total");
        let names: BTreeSet<String> = by_cgroup
            .keys()
            .map(|l| label(l, "cgroup").to_string())
            .collect();
        assert!(names.len() <= 6, "round {round}: {names:?}");
        for (k, v) in now.iter().chain(&by_cgroup) {
            if let Some(before) = last.get(k) {
                assert!(v >= before, "{k} went from {before} to {v}");
            }
        }
        last = now.into_iter().chain(by_cgroup).collect();
    }
    // The series are fed once a second.
    let made = |text: &str, fam: &str| raw_calls(text, fam, 600);
    let text = wait_until(
        "every call of the 200 processes on the endpoint",
        PATIENCE,
        Duration::from_millis(200),
        || {
            let text = scrape();
            let n = made(&text, family);
            if n >= 200.0 * 100.0 {
                Ok(text)
            } else {
                Err(format!(": {n} so far"))
            }
        },
    );
    // A later feed: nothing more comes (nothing counted twice).
    let later = next_feed(&addr, &mut 0.0);
    assert_eq!(made(&later, family), made(&text, family), "a later feed");
    let text = later;
    assert_eq!(
        made(&text, family),
        200.0 * 100.0,
        "{}",
        lines_with(&text, "syscall_0x258")
    );
    assert_eq!(
        made(&text, "syscost_cgroup_syscalls_total"),
        200.0 * 100.0,
        "{}",
        lines_with(&text, "syscall_0x258")
    );
    assert!(
        text.contains("pid=\"other\""),
        "the short-lived ones went to other"
    );
    assert!(
        text.contains("cgroup=\"other\""),
        "8 busy cgroups for 5 series: some went to other"
    );
    sigint(export.id());
    assert!(export.wait_exit().success());
}

/// A process that renames itself after its first call (`prctl(PR_SET_NAME)`, or its
/// /proc/PID/comm written, as here) and is gone before `top` reads a table with it (one
/// interval longer than the test): its row, made from the kernel's record of it, has
/// the name it ended with, as /proc showed it last.
#[test]
fn top_names_a_gone_process_by_the_name_it_ended_with() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("top.json");
    let (top, _first, _err) = started(
        syscost()
            .args(["top", "--no-tui", "-i", "86400", "--json"])
            .arg(&json)
            .stdout(Stdio::null()),
    );
    let mut sh = Command::new("sh");
    sh.args(["-c", "printf syscost-renamed > /proc/$$/comm && exit 0"]);
    let mut child = sh.spawn().unwrap();
    let pid = child.id();
    assert!(child.wait_exit().success());
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = top_json(&json);
    let row = rows
        .get(&pid)
        .unwrap_or_else(|| panic!("no row of pid {pid} in top's JSON ({} rows)", rows.len()));
    assert_eq!(row["comm"], "syscost-renamed", "{row}");
    assert!(syscall_calls(row, "execve") >= 1, "{row}");
}

/// Two processes whose pids share the low 13 bits (`NAME_SLOTS`, 8,192: the kernel
/// side's table of names in place) live at once: the first holds the name slot, the
/// second's name goes to the overflow map. Each renames itself and is gone before `top`
/// reads a table with it: each row has its own name and its calls, from its exit record.
#[test]
fn top_names_two_live_processes_whose_name_slots_collide() {
    let Some(t) = root_test!() else {
        return;
    };
    const SLOTS: u32 = 8192;
    let json = t.path("top.json");
    let (top, _first, _err) = started(
        syscost()
            .args(["top", "--no-tui", "-i", "86400", "--json"])
            .arg(&json)
            .stdout(Stdio::null()),
    );
    let at = |pid: u32, script: &str| {
        let mut c = Command::new(workload_path());
        c.args(["exec-at", &pid.to_string(), "/bin/sh", "-c", script]);
        c
    };
    // Should another process take either pid first (exec-at exits 3), the round is made
    // again at others.
    let mut pids = None;
    // No live process may hold the pids' slot: one whose pid shares their low 13 bits.
    let free = |p: u32| !std::path::Path::new(&format!("/proc/{p}")).exists();
    for attempt in 0..5 {
        let held: BTreeSet<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .map(|q| q % SLOTS)
            .collect();
        let from = free_pid(attempt, &[0, SLOTS]);
        let p = (0..from.saturating_sub(301))
            .map(|k| from - k)
            .find(|&p| !held.contains(&(p % SLOTS)) && free(p) && free(p + SLOTS))
            .expect("two free pids 8,192 apart in a free slot");
        let mut first = at(
            p,
            "printf syscost-first > /proc/$$/comm && echo named && read x && exit 0",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_reaped();
        let mut out = Lines::of(first.stdout.take().unwrap(), "the first process's stdout");
        // exec-at says child=PID, then the process says it renamed itself; nothing
        // when the pid was taken.
        if !std::iter::from_fn(|| out.line()).any(|l| l == "named") {
            let status = first.wait_exit();
            assert!(
                status.code() == Some(3) && attempt < 4,
                "the first process never said it renamed itself: {status}"
            );
            continue;
        }
        let second = output(&mut at(
            p + SLOTS,
            "printf syscost-second > /proc/$$/comm && exit 0",
        ));
        writeln!(first.stdin.as_mut().unwrap(), "end").unwrap();
        assert!(first.wait_exit().success());
        if second.status.code() == Some(3) && attempt < 4 {
            continue;
        }
        assert!(second.status.success(), "{}", stderr(&second));
        pids = Some(p);
        break;
    }
    let p = pids.expect("two free pids 8,192 apart");
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = top_json(&json);
    for (pid, comm) in [(p, "syscost-first"), (p + SLOTS, "syscost-second")] {
        let row = rows
            .get(&pid)
            .unwrap_or_else(|| panic!("no row of pid {pid} in top's JSON ({} rows)", rows.len()));
        assert_eq!(row["comm"], comm, "{row}");
        assert_eq!(row["exited"], true, "{row}");
        assert!(syscall_calls(row, "execve") >= 1, "{row}");
    }
}

/// With an exit ring of one page (about 100 records; the reader lets 50 ms pass after
/// the first of a burst, in which some 300 processes start here), most of 1,000 short
/// processes' exit records find no room: each is kept in the overflow map instead, and
/// named from it once the process is found gone. Every one is listed with its name and
/// its calls.
#[test]
fn top_names_processes_whose_exit_records_find_no_room() {
    let Some(t) = root_test!() else {
        return;
    };
    let (v, _) = top_over_spawned(&t, 1000, &["-i", "86400"], Some("exit_ring=4096"));
    let hundred: Vec<&serde_json::Value> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| syscall_calls(p, "getppid") == 100)
        .collect();
    let named = hundred
        .iter()
        .filter(|p| p["comm"] == "syscost-getppid" && p["exited"] == true)
        .count();
    let others: Vec<String> = hundred
        .iter()
        .filter(|p| p["comm"] != "syscost-getppid")
        .map(|p| format!("{} {} {}", p["pid"], p["comm"], p["cgroup"]))
        .collect();
    assert_eq!(
        named,
        1000,
        "{} under other names, the first: {:?}",
        others.len(),
        &others[..others.len().min(10)]
    );
    assert_eq!(v["dropped"], 0);
}

/// `top --no-tui --json` with `args` (and `sizes` as `SYSCOST_TABLE_SIZES`) over `n`
/// processes started one after the other by the workload's `spawn` (each a static
/// program making 100 getppid and 109 calls in all), ended by SIGINT: its JSON and what
/// it printed.
fn top_over_spawned(
    t: &RootTest,
    n: u32,
    args: &[&str],
    sizes: Option<&str>,
) -> (serde_json::Value, String) {
    let json = t.path("top.json");
    let mut cmd = syscost();
    cmd.args(["top", "--no-tui", "--json"])
        .arg(&json)
        .args(args)
        .stdout(Stdio::piped());
    if let Some(sizes) = sizes {
        cmd.env("SYSCOST_TABLE_SIZES", sizes);
    }
    let (top, first, _err) = started(&mut cmd);
    assert!(
        first.starts_with("syscost: watching the machine"),
        "{first}"
    );
    run_ok(
        Command::new(workload_path())
            .args(["spawn", &n.to_string(), "100"])
            .stdout(Stdio::null()),
    );
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, stdout(&o))
}

/// The churn of a build or a CI runner: 3,000 processes one after the other (about as
/// fast as this machine starts them), each exec'ing a static program that makes exactly
/// 100 getppid and ten distinct syscalls in all (30,000 process-syscall pairs, more
/// than the per-process table holds at once). `top` lists every one of them with its
/// calls, and drops nothing.
#[test]
fn top_keeps_every_call_of_3000_short_lived_processes() {
    let Some(t) = root_test!() else {
        return;
    };
    let (v, printed) = top_over_spawned(&t, 3000, &[], None);
    let rows: Vec<&serde_json::Value> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["comm"] == "syscost-getppid")
        .collect();
    let calls: u64 = rows.iter().map(|r| syscall_calls(r, "getppid")).sum();
    // Any other process with 100 getppid: one of them under another name.
    let others: Vec<String> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["comm"] != "syscost-getppid" && syscall_calls(p, "getppid") == 100)
        .map(|p| format!("{} {} {}", p["pid"], p["comm"], p["cgroup"]))
        .collect();
    assert_eq!(
        (rows.len(), calls),
        (3000, 300_000),
        "dropped {}; under other names: {others:?}",
        v["dropped"]
    );
    for r in &rows {
        assert_eq!(syscall_calls(r, "getppid"), 100, "{r}");
        for once in ["execve", "getpid", "gettid", "getsid"] {
            assert_eq!(syscall_calls(r, once), 1, "{once}: {r}");
        }
        assert_eq!(r["calls"], 109, "{r}");
        assert_eq!(r["exited"], true, "{r}");
    }
    assert_eq!(v["dropped"], 0);
    // The machine's calls in flight when top began are unpaired (a few dozen); none of
    // the 3,000 children's returns from their fork is one.
    let unpaired: u64 = printed
        .lines()
        .find_map(|l| l.strip_prefix("unpaired ")?.split(':').next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        unpaired < 1000,
        "{unpaired} unpaired: {}",
        lines_with(&printed, "unpaired")
    );
}

/// The same churn under `export --top`, inside a cgroup of the test's: the cgroup's
/// series gains exactly its 300,000 getppid, the per-process series (the five busiest
/// and `other`) add up to the per-cgroup ones, and `syscost_events_dropped_total` is on
/// every scrape, 0.
#[test]
fn export_top_keeps_every_call_of_3000_short_lived_processes() {
    let Some(_t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("churn");
    let (mut export, first, _err) = started(
        syscost()
            .args([
                "export",
                "--top",
                "--top-n",
                "5",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::null()),
    );
    let addr = endpoint_in(&first);
    let getppid = |text: &str, family: &str, cgroup: Option<&str>| -> f64 {
        samples(text, family)
            .iter()
            .filter(|(l, _)| label(l, "syscall") == "getppid")
            .filter(|(l, _)| cgroup.is_none_or(|c| label(l, "cgroup") == c))
            .map(|(_, v)| v)
            .sum()
    };
    let dropped = |text: &str| {
        unlabelled(text, "syscost_events_dropped_total").unwrap_or_else(|| {
            panic!(
                "no unlabelled syscost_events_dropped_total sample:\n{}",
                lines_with(text, "syscost_events_dropped")
            )
        })
    };
    let before = scrape_text(&addr);
    assert_eq!(dropped(&before), 0.0);
    let (mut work, _out) = waiting(&["spawn", "3000", "100"]);
    cg.enter(work.id());
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    // Nothing dropped on any scrape while it runs.
    wait_until(
        "the workload's 3,000 processes to end",
        PATIENCE,
        Duration::from_millis(300),
        || {
            assert_eq!(dropped(&scrape_text(&addr)), 0.0, "while the processes ran");
            match work.try_wait().unwrap() {
                Some(_) => Ok(()),
                None => Err(String::new()),
            }
        },
    );
    assert!(work.wait_exit().success());
    let (processes, cgroups) = (
        "syscost_process_syscalls_total",
        "syscost_cgroup_syscalls_total",
    );
    let gained =
        |now: &str, family, cgroup| getppid(now, family, cgroup) - getppid(&before, family, cgroup);
    // The series are fed once a second: the count reached, then a later feed, which
    // adds nothing (nothing counted twice).
    let reached = wait_until(
        "the cgroup's 300,000 getppid on the endpoint",
        PATIENCE,
        Duration::from_millis(200),
        || {
            let now = scrape_text(&addr);
            match gained(&now, cgroups, Some(&cg.path)) {
                n if n >= 300_000.0 => Ok(n),
                n => Err(format!(": {n} so far")),
            }
        },
    );
    let after = next_feed(&addr, &mut 0.0);
    assert_eq!(
        (reached, gained(&after, cgroups, Some(&cg.path))),
        (300_000.0, 300_000.0),
        "the cgroup's getppid when reached, and at a later feed"
    );
    assert_eq!(
        gained(&after, processes, None),
        gained(&after, cgroups, None)
    );
    assert_eq!(dropped(&after), 0.0);
    sigint(export.id());
    assert!(export.wait_exit().success());
}

/// With a per-process table too small on purpose (8 pairs), the calls it has no room
/// for are counted: the per-process figures plus `dropped` are exactly the cgroup's
/// calls, which its statistics (kept apart, with histograms) count in full.
#[test]
fn a_shrunken_per_process_table_counts_every_call_it_loses() {
    let Some(t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("shrunken");
    let json = t.path("cg.json");
    let (attach, first, _err) = started(
        syscost()
            .args([
                "attach",
                "--no-tui",
                "--cgroup",
                &cg.path,
                "--per-process",
                "--json",
            ])
            .arg(&json)
            .env("SYSCOST_TABLE_SIZES", "top_entries=8")
            .stdout(Stdio::null()),
    );
    assert!(first.starts_with("syscost: tracing cgroup"), "{first}");
    moved_in(&cg, &["spawn", "50", "100"]);
    sigint(attach.id());
    let o = attach.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    let total: u64 = p.syscalls.iter().map(|s| s.calls).sum();
    let per_process: u64 = p.processes.iter().map(|r| r.calls).sum();
    assert!(
        p.dropped > 0,
        "the table did not overflow: {per_process} of {total}"
    );
    assert_eq!(
        per_process + p.dropped,
        total,
        "{per_process} + {} dropped",
        p.dropped
    );
    assert_eq!(calls(&p, "getppid"), 50 * 100);
}

/// `export --cgroup --per-process` with a per-process table of 128 pairs, which idle
/// processes of the test's cgroup fill (their start-up's pairs, each then waiting on
/// stdin): the pairs idle longest are handed over while it is more than half full
/// (`syscost_top_pairs_reclaimed_total`) down to half full, so that a process started
/// then has room (the test waits until it is half full, `syscost_top_pairs`): its 20,000
/// getppid are counted exactly in its series. A cgroup of its own, as the machine's
/// other processes (the other tests' thousands among them) would compete for the pairs.
#[test]
fn idle_pairs_make_room_for_the_busy() {
    let Some(_t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("idle-pairs");
    let (mut export, first, _err) = started(
        syscost()
            .env("SYSCOST_TABLE_SIZES", "top_entries=128")
            .args([
                "export",
                "--cgroup",
                &cg.path,
                "--per-process",
                "--top-n",
                "1000",
                "-i",
                "0.1",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::null()),
    );
    let addr = endpoint_in(&first);
    // Idle processes, started inside: their start-up's pairs (a shell's, then the
    // workload's) fill the table.
    let idle: Vec<_> = (0..8)
        .map(|_| ready(&mut cg.run_inside("--wait-stdin getppid 1")))
        .collect();
    wait_until(
        "idle pairs handed over, the table half full",
        PATIENCE,
        Duration::from_millis(100),
        || {
            let text = scrape_text(&addr);
            let reclaimed = unlabelled(&text, "syscost_top_pairs_reclaimed_total");
            let pairs = unlabelled(&text, "syscost_top_pairs");
            match (reclaimed, pairs) {
                (Some(r), Some(p)) if r > 0.0 && p <= 64.0 => Ok(()),
                _ => Err(format!(": reclaimed {reclaimed:?}, pairs in use {pairs:?}")),
            }
        },
    );
    const CALLS: u64 = 20_000;
    let (mut work, mut out) =
        ready(&mut cg.run_inside(&format!("--wait-stdin --hold getppid {CALLS}")));
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    assert_eq!(out.next().unwrap().unwrap(), "done");
    let pid = work.id().to_string();
    wait_until(
        &format!("{CALLS} getppid of process {pid}"),
        PATIENCE,
        Duration::from_millis(100),
        || {
            let text = scrape_text(&addr);
            let got: f64 = samples(&text, "syscost_process_syscalls_total")
                .into_iter()
                .filter(|(l, _)| label(l, "pid") == pid && label(l, "syscall") == "getppid")
                .map(|(_, v)| v)
                .sum();
            if got == CALLS as f64 {
                Ok(())
            } else {
                Err(format!(
                    ": {got}; dropped {:?}",
                    text.lines()
                        .find(|l| l.starts_with("syscost_events_dropped_total "))
                ))
            }
        },
    );
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert!(work.wait_exit().success());
    for (mut w, _) in idle {
        writeln!(w.stdin.as_mut().unwrap(), "go").unwrap();
        assert!(w.wait_exit().success());
    }
    sigint(export.id());
    assert!(export.wait_exit().success());
}

/// A shell loop starting /bin/true 3,000 times (each with the dynamic loader's syscalls),
/// inside a cgroup of the test's: `top --cgroup` counts the shell and its children
/// exactly what `syscost run` counts of the same loop (whose count is the same on every
/// run), and drops nothing.
#[test]
fn top_counts_a_shell_loop_as_run_does() {
    let Some(t) = root_test!() else {
        return;
    };
    let script = "i=0; while [ $i -lt 3000 ]; do /bin/true; i=$((i+1)); done";
    let json = t.path("run.json");
    let o = output(
        syscost()
            .args(["run", "-o", "/dev/null", "--json"])
            .arg(&json)
            .args(["--", "/bin/sh", "-c", script]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let run = read_profile(&json);
    assert_eq!(run.dropped, 0);
    let by_run: u64 = run.syscalls.iter().map(|s| s.calls).sum();

    let cg = TestCgroup::new("loop");
    let top_json = t.path("top.json");
    let (top, first, _err) = started(
        syscost()
            .args(["top", "--no-tui", "--cgroup", &cg.path, "--json"])
            .arg(&top_json)
            .stdout(Stdio::piped()),
    );
    assert!(first.contains(&cg.path), "{first}");
    // Started as `run` starts its command (nothing between the fork and the exec), by a
    // launcher moved into the cgroup first.
    let (mut launcher, mut out) = waiting(&["exec", "/bin/sh", "-c", script]);
    cg.enter(launcher.id());
    writeln!(launcher.stdin.as_mut().unwrap()).unwrap();
    let shell: u64 = out
        .next()
        .unwrap()
        .unwrap()
        .strip_prefix("child=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(launcher.wait_exit().success());
    let launcher = launcher.id();
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&top_json).unwrap()).unwrap();
    let rows: Vec<&serde_json::Value> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pid"] != launcher)
        .collect();
    assert_eq!(rows.len(), 3001, "the shell and its 3,000 children");
    assert!(rows.iter().any(|r| r["pid"] == shell));
    let by_top: u64 = rows.iter().map(|r| r["calls"].as_u64().unwrap()).sum();
    // Where they differ, per syscall (run's count, top's) and the rows that hold it.
    let mut per_top: BTreeMap<String, u64> = BTreeMap::new();
    for r in &rows {
        for s in r["syscalls"].as_array().unwrap() {
            *per_top
                .entry(s["name"].as_str().unwrap().to_string())
                .or_default() += s["calls"].as_u64().unwrap();
        }
    }
    let per_run: BTreeMap<String, u64> = run
        .syscalls
        .iter()
        .map(|s| (s.name.clone(), s.calls))
        .collect();
    let differ: Vec<(String, u64, u64)> = per_run
        .keys()
        .chain(per_top.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|n| {
            let (a, b) = (per_run.get(n).copied(), per_top.get(n).copied());
            (n.clone(), a.unwrap_or(0), b.unwrap_or(0))
        })
        .filter(|(_, a, b)| a != b)
        .collect();
    let odd_rows: Vec<String> = differ
        .iter()
        .flat_map(|(n, _, _)| {
            let counts: Vec<u64> = rows.iter().map(|r| syscall_calls(r, n)).collect();
            let usual = counts
                .iter()
                .copied()
                .max_by_key(|c| counts.iter().filter(|&&x| x == *c).count());
            rows.iter()
                .zip(counts.clone())
                .filter(move |(_, c)| Some(*c) != usual)
                .map(|(r, c)| format!("pid {} {}: {n} {c}", r["pid"], r["comm"]))
                .take(5)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        by_top, by_run,
        "dropped {}; (syscall, by run, by top) where they differ: {differ:?}; rows apart from the rest: {odd_rows:?}",
        v["dropped"]
    );
    assert_eq!(v["dropped"], 0);
    // No child's return from its fork is taken for a call in flight: at most the
    // launcher's read, blocked (or not yet) when it was moved in.
    let printed = stdout(&o);
    let unpaired: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("syscost: unpaired "))
        .collect();
    assert!(
        unpaired.is_empty()
            || unpaired == ["syscost: unpaired 1: calls in flight when tracing began, in no row"],
        "{unpaired:?}"
    );
}

/// In the automatic modes a process is traced from its first syscall after syscost
/// loaded: a call in flight then (its first seen is the exit) is unpaired, in any of
/// its threads, as for a process given by pid. A process whose
/// three threads are all blocked when `attach --cgroup` starts: the main thread's read
/// returns first (the process is met there: unpaired), then each worker's read
/// (unpaired, 2 more), then their 100 getppid each (counted).
#[test]
fn threads_already_inside_a_call_count_as_unpaired() {
    let Some(t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new("unpaired");
    let (mut w, _out) = ready(Command::new(workload_path()).args(["threads-waiting", "2", "100"]));
    cg.enter(w.id());
    let json = t.path("cg.json");
    let (mut attach, first, _err) = started(
        syscost()
            .args(["attach", "--no-tui", "--cgroup", &cg.path, "--json"])
            .arg(&json)
            .stdout(Stdio::null()),
    );
    assert!(first.starts_with("syscost: tracing cgroup"), "{first}");
    writeln!(w.stdin.as_mut().unwrap(), "go").unwrap();
    assert!(w.wait_exit().success());
    sigint(attach.id());
    assert!(attach.wait_exit().success());
    let p = read_profile(&json);
    assert_eq!(calls(&p, "getppid"), 200);
    assert_eq!((p.unpaired, p.dropped), (3, 0));

    // The same under `top`: its rows count the 200 calls, its last line the three.
    let (mut w, _out) = ready(Command::new(workload_path()).args(["threads-waiting", "2", "100"]));
    cg.enter(w.id());
    let json = t.path("top.json");
    let (top, first, _err) = started(
        syscost()
            .args(["top", "--no-tui", "--cgroup", &cg.path, "--json"])
            .arg(&json)
            .stdout(Stdio::piped()),
    );
    assert!(first.contains(&cg.path), "{first}");
    writeln!(w.stdin.as_mut().unwrap(), "go").unwrap();
    let pid = w.id();
    assert!(w.wait_exit().success());
    sigint(top.id());
    let o = top.into_inner().output_within();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(syscall_calls(&top_json(&json)[&pid], "getppid"), 200);
    assert!(
        stdout(&o).contains("syscost: unpaired 3: calls in flight when tracing began, in no row"),
        "{}",
        lines_with(&stdout(&o), "unpaired")
    );
}

/// A container runtime's file of a container, written for a test and removed (with the
/// folders made for it) when dropped.
struct RuntimeFile {
    made: Vec<std::path::PathBuf>,
}

impl RuntimeFile {
    fn write(file: std::path::PathBuf, json: &str) -> Self {
        let mut made = Vec::new();
        let mut dir = file.parent().unwrap().to_path_buf();
        while !dir.exists() {
            made.push(dir.clone());
            dir = dir.parent().unwrap().to_path_buf();
        }
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, json).unwrap();
        made.insert(0, file);
        Self { made }
    }
}

impl Drop for RuntimeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.made[0]);
        for dir in &self.made[1..] {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// `export --top` names the pod and container of a process's cgroup: hierarchies as the
/// kubelet and containerd (systemd driver), CRI-O and Docker (cgroupfs driver) make them,
/// made here at the hierarchy's root where the kubelet puts them (pods of the test's own
/// uids, removed with the parents the test made), with a process in each, and each
/// runtime's file of its container where the runtime keeps it, under a host root of the
/// test's. syscost runs in a cgroup namespace of its own rooted at a cgroup of the
/// test's, as in a pod: /proc/PID/cgroup reads `/../..` there, and it names each cgroup
/// by its id from the host's hierarchy. Each process's series and its cgroup's carry the
/// host's path, `pod_uid`, `container_id`, `namespace`, `pod` and `container`, with its
/// exact count.
#[test]
fn export_top_names_the_kubernetes_pod_and_container() {
    let Some(t) = root_test!() else {
        return;
    };
    let me = std::process::id();
    // Ids of this test's own: a 64-hex container id and a pod uid, from the test's pid.
    let id = |n: u32| format!("{:08x}{n:08x}{}", me, "c0ffee".repeat(8))[..64].to_string();
    let uid = |n: u32| format!("{me:08x}-0000-4000-8000-{n:012x}");
    let root = TestCgroup::new("kube");
    sweep_pods_of_gone_tests();
    // The runtimes' files where they keep them, under a host root of the test's
    // (SYSCOST_HOST_ROOT, as a container that mounted the host's / elsewhere says).
    let host = t.path("host");
    // (driver's path segments, runtime file, its JSON, names)
    let cases = [
        (
            vec![
                "kubepods.slice".to_string(),
                "kubepods-burstable.slice".to_string(),
                format!("kubepods-burstable-pod{}.slice", uid(1).replace('-', "_")),
                format!("cri-containerd-{}.scope", id(1)),
            ],
            host.join(format!(
                "run/containerd/io.containerd.runtime.v2.task/k8s.io/{}/config.json",
                id(1)
            )),
            r#"{"annotations":{"io.kubernetes.cri.sandbox-namespace":"shop","io.kubernetes.cri.sandbox-name":"cart-1","io.kubernetes.cri.container-name":"app","io.kubernetes.cri.container-type":"container"}}"#,
            ["shop", "cart-1", "app"],
            1u32,
        ),
        (
            vec![
                "kubepods".to_string(),
                "besteffort".to_string(),
                format!("pod{}", uid(2)),
                format!("crio-{}", id(2)),
            ],
            host.join(format!(
                "run/containers/storage/overlay-containers/{}/userdata/config.json",
                id(2)
            )),
            r#"{"annotations":{"io.kubernetes.pod.namespace":"db","io.kubernetes.pod.name":"pg-0","io.kubernetes.container.name":"postgres"}}"#,
            ["db", "pg-0", "postgres"],
            2,
        ),
        (
            vec!["kubepods".to_string(), format!("pod{}", uid(3)), id(3)],
            host.join(format!(
                "var/lib/docker/containers/{}/config.v2.json",
                id(3)
            )),
            r#"{"Config":{"Labels":{"io.kubernetes.pod.namespace":"kube-system","io.kubernetes.pod.name":"dns","io.kubernetes.container.name":"coredns"}}}"#,
            ["kube-system", "dns", "coredns"],
            3,
        ),
    ];
    let mut cmd = syscost();
    cmd.args([
        "export",
        "--top",
        "--top-n",
        "1000",
        "--metrics-addr",
        "127.0.0.1:0",
    ])
    .env("SYSCOST_HOST_ROOT", &host)
    .stdout(Stdio::null());
    in_cgroup_namespace(&mut cmd, &root);
    let (mut export, first, _err) = started(&mut cmd);
    let addr = endpoint_in(&first);
    // Cgroups and files live until the end; the cgroups removed deepest first.
    let mut cgroups = Tree(BTreeMap::new());
    let mut files = Vec::new();
    let mut expected = Vec::new();
    let mut workers = Vec::new();
    for (segments, file, json, names, n) in &cases {
        files.push(RuntimeFile::write(file.clone(), json));
        let (leaf_dir, leaf_path) = cgroups.make_at_root(segments);
        let calls = 1_000 * u64::from(*n) + 17;
        // Held after its calls: a process that comes and goes within one of the
        // series' intervals is counted under `other`, without a series of its own.
        let (mut work, mut out) = waiting(&["--hold", "getppid", &calls.to_string()]);
        std::fs::write(leaf_dir.join("cgroup.procs"), work.id().to_string()).unwrap();
        writeln!(work.stdin.as_mut().unwrap()).unwrap();
        assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
        assert_eq!(out.next().unwrap().unwrap(), "done");
        // The host's path, though syscost's namespace is rooted elsewhere.
        let seen = leaf_path;
        expected.push((work.id(), seen, calls, *n, *names));
        workers.push(work);
    }
    for (pid, path, calls, n, names) in &expected {
        let want = [
            ("cgroup", path.clone()),
            ("pod_uid", uid(*n)),
            ("container_id", id(*n)),
            ("namespace", names[0].to_string()),
            ("pod", names[1].to_string()),
            ("container", names[2].to_string()),
        ];
        for (family, key, value) in [
            ("syscost_process_syscalls_total", "pid", pid.to_string()),
            ("syscost_cgroup_syscalls_total", "cgroup", path.clone()),
        ] {
            let found = wait_until(
                &format!("{family} of {key}={value} with {calls} getppid"),
                PATIENCE,
                Duration::from_millis(200),
                || {
                    let text = scrape_text(&addr);
                    samples(&text, family)
                        .into_iter()
                        .find(|(l, v)| {
                            label(l, key) == value
                                && label(l, "syscall") == "getppid"
                                && *v == *calls as f64
                        })
                        .map(|(l, _)| l)
                        .ok_or_else(|| {
                            format!(":\n{}", lines_with(&text, &format!("{key}=\"{value}\"")))
                        })
                },
            );
            for (k, v) in &want {
                assert_eq!(label(&found, k), v, "{k} of {family}{{{found}}}");
            }
        }
    }
    // A process of syscost's own namespace, below its root: /proc/PID/cgroup reads
    // `/plain`, named from where that root sits in the host's hierarchy (found by the
    // cgroup that holds syscost), with no pod.
    let plain = root.child("plain");
    let (mut work, mut out) = waiting(&["--hold", "getppid", "4321"]);
    plain.enter(work.id());
    writeln!(work.stdin.as_mut().unwrap()).unwrap();
    assert!(out.next().unwrap().unwrap().starts_with("ns_per_call="));
    assert_eq!(out.next().unwrap().unwrap(), "done");
    let pid = work.id().to_string();
    let found = wait_until(
        &format!("pid={pid} with 4321 getppid"),
        PATIENCE,
        Duration::from_millis(200),
        || {
            let text = scrape_text(&addr);
            samples(&text, "syscost_process_syscalls_total")
                .into_iter()
                .find(|(l, v)| {
                    label(l, "pid") == pid && label(l, "syscall") == "getppid" && *v == 4321.0
                })
                .map(|(l, _)| l)
                .ok_or_else(|| format!(":\n{}", lines_with(&text, &format!("pid=\"{pid}\""))))
        },
    );
    assert_eq!(label(&found, "cgroup"), plain.path, "{found}");
    assert_eq!(label(&found, "pod_uid"), "", "{found}");
    workers.push(work);
    for mut w in workers {
        writeln!(w.stdin.as_mut().unwrap()).unwrap();
        assert!(w.wait_exit().success());
    }
    sigint(export.id());
    assert!(export.wait_exit().success());
    drop(files);
    drop(cgroups);
    drop(plain);
}

/// `cmd` started in cgroup `root` and in a cgroup namespace of its own rooted there (the
/// paths it reads in /proc/PID/cgroup begin at `root`).
fn in_cgroup_namespace(cmd: &mut Command, root: &TestCgroup) {
    use std::os::unix::{ffi::OsStrExt as _, process::CommandExt as _};
    let procs =
        std::ffi::CString::new(root.dir.join("cgroup.procs").as_os_str().as_bytes()).unwrap();
    // SAFETY: open, write, close and unshare are async-signal-safe; the path was made
    // before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // "0": the writing process itself.
            let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if wrote != 1 || libc::unshare(libc::CLONE_NEWCGROUP) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Cgroups by path under a test's cgroup, removed deepest first (a parent cannot go
/// before its children), on a failure too.
struct Tree(BTreeMap<String, TestCgroup>);

impl Tree {
    /// The cgroup at `segments` below the hierarchy's root, made with whichever of its
    /// parents are missing; only those made here are removed with the tree.
    fn make_at_root(&mut self, segments: &[String]) -> (std::path::PathBuf, String) {
        let mount = syscost_user::cgroup::v2_mount().unwrap();
        let mut at = String::new();
        for s in segments {
            at = format!("{at}/{s}");
            let dir = mount.join(at.trim_start_matches('/'));
            if !self.0.contains_key(&at) && !dir.exists() {
                std::fs::create_dir(&dir)
                    .unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
                self.0.insert(
                    at.clone(),
                    TestCgroup {
                        dir,
                        path: at.clone(),
                    },
                );
            }
        }
        (mount.join(at.trim_start_matches('/')), at)
    }
}

/// The pods a killed run of this test left at the hierarchy's root (their uids begin
/// with its pid in hex and go on `-0000-4000-8000-`), their containers first; then the
/// kubelet's parents, where empty and no kubelet runs here.
fn sweep_pods_of_gone_tests() {
    let mount = syscost_user::cgroup::v2_mount().unwrap();
    let parents = [
        "kubepods.slice/kubepods-burstable.slice",
        "kubepods",
        "kubepods/besteffort",
    ];
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(mount.join(parent)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().replace('_', "-");
            let Some((_, uid)) = name.rsplit_once("pod") else {
                continue;
            };
            let ours = uid.get(8..24) == Some("-0000-4000-8000-");
            let pid = uid.get(..8).and_then(|h| u32::from_str_radix(h, 16).ok());
            if ours && pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()) {
                for c in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                    let _ = std::fs::remove_dir(c.path());
                }
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
    if !std::path::Path::new("/var/lib/kubelet").exists() {
        for dir in [
            "kubepods.slice/kubepods-burstable.slice",
            "kubepods.slice",
            "kubepods/besteffort",
            "kubepods",
        ] {
            // Only an empty one goes.
            let _ = std::fs::remove_dir(mount.join(dir));
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // A path sorts after its parent's.
        while let Some((_, cg)) = self.0.pop_last() {
            drop(cg);
        }
    }
}
