//! Slow-call stacks of programs built the usual way (`-O2`, no frame pointers: glibc and
//! every distribution's C): unwound through `.eh_frame` to the caller and `main`, through
//! a shared library and in a static binary; named after their process exited; and a
//! slow call's descriptor never named after a file that took its number since. And
//! `--stacks`: every call counted by its user stack, exactly, each caller named.
//! Needs root. The C programs are built by `tests/c/build.sh` (on a kernel of the
//! matrix, where there is no compiler, `cargo xtask vm-test` ships them built).

mod common;

use std::{io::Write as _, path::PathBuf};

use common::*;
use syscost_user::profile::{Profile, SlowCall};

/// The built C programs' directory.
fn programs() -> &'static PathBuf {
    c_programs()
}

/// The argument that makes a C program wait on its stdin after its calls
/// (tests/c/stdin_wait.h) until the test, having seen syscost report them, closes it: a
/// program's mappings and descriptors are read as its calls arrive, so it must not exit
/// before, however slow the machine.
const STDIN: &str = "stdin";

/// The C programs' names: their failures on stderr start with one and a colon.
const PROGRAMS: &[&str] = &[
    "sites",
    "sites-fp",
    "depths",
    "chain",
    "chain-fp",
    "chain-lib",
    "chain-static",
    "short",
    "fdreuse",
    "flockwait",
];

/// What a C program calls last before it waits on its stdin (tests/c/stdin_wait.h's
/// mark: a 2 ms poll, ppoll where there is no poll). Calls are reported in the order they
/// ended: once its report is seen, every call made before it has been received.
const MARK: &[&str] = &["poll", "ppoll"];

/// Whether `line` of syscost's stderr begins the report of a slow call of one of
/// `syscalls` made by a thread of `comm` (`slow: NAME(...) ... tid N COMM`).
fn reports(line: &str, syscalls: &[&str], comm: &str) -> bool {
    line.strip_prefix("slow: ").is_some_and(|r| {
        syscalls
            .iter()
            .any(|s| r.strip_prefix(s).is_some_and(|a| a.starts_with('(')))
    }) && line.ends_with(&format!(" {comm}"))
}

/// The thread id in a report's first line.
fn report_tid(line: &str) -> Option<u32> {
    line.rsplit_once(" tid ")?.1.split(' ').next()?.parse().ok()
}

/// A step for [`held`] that has seen what it awaited at the `n`th report of a slow call
/// of `syscalls` by `comm`.
fn nth_report<'a>(
    n: usize,
    syscalls: &'a [&'a str],
    comm: &'a str,
) -> impl FnMut(&str, &mut std::process::ChildStdin) -> bool + 'a {
    let mut seen = 0;
    move |l, _| {
        if reports(l, syscalls, comm) {
            seen += 1;
        }
        seen == n
    }
}

/// The last 5 lines of `lines` that syscost or a C program said of itself (not slow
/// calls, nor the table).
fn messages(lines: &[String]) -> Vec<&str> {
    let said: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| {
            l.starts_with("syscost:")
                || PROGRAMS
                    .iter()
                    .any(|p| l.strip_prefix(p).is_some_and(|r| r.starts_with(':')))
        })
        .collect();
    said[said.len().saturating_sub(5)..].to_vec()
}

/// Runs `cmd`, a `syscost run` of a C program that waits on its stdin, with that stdin
/// piped: gives each line of syscost's stderr to `step` (with the program's stdin, to
/// write to) until it has seen what it awaited (`awaited`, in a failure at the end of
/// the output or after [`PATIENCE`]), then closes the program's stdin and waits (with
/// the same deadline) for syscost to end, successfully. Every line of its stderr.
fn held(
    cmd: &mut std::process::Command,
    awaited: &str,
    mut step: impl FnMut(&str, &mut std::process::ChildStdin) -> bool,
) -> Vec<String> {
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn_reaped();
    let mut stdin = child.stdin.take().expect("piped");
    let mut err = Lines::of(child.stderr.take().expect("piped"), "syscost's stderr");
    let mut lines = Vec::new();
    err.until(awaited, |l| {
        lines.push(l.to_string());
        step(l, &mut stdin)
    });
    drop(stdin);
    lines.extend(err.rest());
    let status = child.wait_exit();
    assert!(
        status.success(),
        "syscost run: {status}; its last messages: {:?}",
        messages(&lines)
    );
    lines
}

/// `syscost run --slow 1ms --json FILE EXTRA -- PROGRAM CALLS US stdin`: a chain program,
/// held until syscost has reported its `calls` slow clock_nanosleeps; the profile.
fn run_chain(t: &RootTest, extra: &[&str], program: &str, calls: usize, us: &str) -> Profile {
    read_profile(&run_chain_json(t, extra, program, calls, us))
}

/// The same, and where the profile is.
fn run_chain_json(t: &RootTest, extra: &[&str], program: &str, calls: usize, us: &str) -> PathBuf {
    let json = t.path(&format!("{program}.json"));
    held(
        syscost()
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .args(extra)
            .arg("--")
            .arg(programs().join(program))
            .args([&calls.to_string(), us, STDIN]),
        &format!("the report of {program}'s slow clock_nanosleep {calls}"),
        nth_report(calls, &["clock_nanosleep"], program),
    );
    json
}

/// A call in a few words: its syscall, thread, innermost function and latency.
fn brief(c: &SlowCall) -> String {
    let inner = c
        .stack
        .iter()
        .find_map(|f| f.function.as_deref())
        .or_else(|| c.stack.first().and_then(|f| f.unknown.as_deref()))
        .unwrap_or("no frame");
    format!(
        "{} of {} tid {} in {inner}, {} us",
        c.syscall,
        c.comm,
        c.tid,
        c.latency_ns / 1000
    )
}

/// How many slow calls of each (comm, syscall) a profile has, the 8 most common.
fn tally(p: &Profile) -> String {
    let mut n = std::collections::BTreeMap::<(&str, &str), usize>::new();
    for c in &p.slow_calls {
        *n.entry((c.comm.as_str(), c.syscall.as_str())).or_default() += 1;
    }
    let mut n: Vec<_> = n.into_iter().collect();
    n.sort_by_key(|e| std::cmp::Reverse(e.1));
    let shown: Vec<String> = n
        .iter()
        .take(8)
        .map(|((comm, syscall), k)| format!("{comm} {syscall} x{k}"))
        .collect();
    format!("{} slow calls: {}", p.slow_calls.len(), shown.join(", "))
}

/// A call and its stack in one line, innermost first, at most 8 frames.
fn stack_line(c: &SlowCall) -> String {
    let f: Vec<String> = c
        .stack
        .iter()
        .take(8)
        .map(|f| match (&f.function, &f.module, &f.unknown) {
            (Some(n), Some(m), _) => format!("{n} ({m})"),
            (Some(n), None, _) => n.clone(),
            (None, _, Some(why)) => format!("{:#x} [{why}]", f.addr),
            (None, Some(m), None) => format!("{:#x} ({m})", f.addr),
            (None, None, None) => format!("{:#x}", f.addr),
        })
        .collect();
    format!("{}; {} frames: {}", brief(c), c.stack.len(), f.join(" <- "))
}

/// How many calls, and the first 3 with their stacks in one line each.
fn some_stacks(calls: &[&SlowCall]) -> String {
    let first: Vec<String> = calls.iter().take(3).map(|c| stack_line(c)).collect();
    format!("{} calls, the first: [{}]", calls.len(), first.join(" | "))
}

/// A call and what it says of its descriptor.
fn fd_brief(c: &SlowCall) -> String {
    format!("{}, fd {:?} ({:?})", brief(c), c.fd, c.fd_unknown)
}

/// How many lines a text has, and its first 3 (each cut at 160 characters).
fn first_lines(text: &str) -> String {
    let first: Vec<String> = text
        .lines()
        .take(3)
        .map(|l| l.chars().take(160).collect())
        .collect();
    format!("{} lines, the first: {first:?}", text.lines().count())
}

/// The calls of `syscall` made by `comm`.
fn slow_of<'a>(p: &'a Profile, comm: &str, syscall: &str) -> Vec<&'a SlowCall> {
    p.slow_calls
        .iter()
        .filter(|c| c.comm == comm && c.syscall == syscall)
        .collect()
}

/// The stack's (function, module) pairs, innermost first.
fn frames(c: &SlowCall) -> Vec<(String, String)> {
    c.stack
        .iter()
        .map(|f| {
            (
                f.function.clone().unwrap_or_default(),
                f.module.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Whether `chain` appears in the stack in this order (innermost first), each
/// function in its module, nothing between them but the chain.
fn names_in_order(c: &SlowCall, chain: &[(&str, &str)]) -> bool {
    let f = frames(c);
    let Some(start) = f.iter().position(|(n, _)| n == chain[0].0) else {
        return false;
    };
    chain.iter().enumerate().all(|(i, (name, module))| {
        f.get(start + i)
            .is_some_and(|(n, m)| n == name && m == module)
    })
}

#[test]
fn stacks_reach_main_through_code_without_frame_pointers() {
    let Some(t) = root_test!() else {
        return;
    };
    let chain = [
        ("chain_inner", "chain"),
        ("chain_outer", "chain"),
        ("main", "chain"),
    ];
    // Each program waits on its stdin after its calls until syscost has reported them
    // all: what these tests check is the unwind, not the race with a process's exit
    // (that is `processes_that_exit_right_after_their_slow_calls_keep_their_names`).
    // A dynamic binary: glibc's nanosleep -> clock_nanosleep wrapper (no frame pointer
    // in either), then the program's own functions.
    let json = run_chain_json(&t, &[], "chain", 20, "2000");
    let p = read_profile(&json);
    let calls = slow_of(&p, "chain", "clock_nanosleep");
    assert_eq!(calls.len(), 20, "{}", tally(&p));
    for c in &calls {
        assert!(names_in_order(c, &chain), "{}", stack_line(c));
        assert_eq!(
            c.stack[0].module.as_deref(),
            Some("libc.so.6"),
            "{}",
            stack_line(c)
        );
    }
    // The flame graph's folded stacks and the trace carry the whole chain.
    let folded = output(syscost().arg("flame").arg(&json));
    assert!(folded.status.success(), "{}", stderr(&folded));
    assert!(
        stdout(&folded).lines().any(
            |l| l.contains(";main;chain_outer;chain_inner;") && l.contains(";clock_nanosleep ")
        ),
        "no folded stack has main;chain_outer;chain_inner;...;clock_nanosleep: {}",
        first_lines(&stdout(&folded))
    );
    let trace = output(syscost().arg("trace").arg(&json));
    assert!(trace.status.success(), "{}", stderr(&trace));
    assert!(
        stdout(&trace).contains("chain_outer"),
        "no chain_outer in the trace's {} bytes",
        stdout(&trace).len()
    );
    // The same walked by frame pointers only (--stack-size 0): the program's functions
    // are out of its reach (the frame-pointer walk alone).
    let p = run_chain(&t, &["--stack-size", "0"], "chain", 5, "2000");
    let calls = slow_of(&p, "chain", "clock_nanosleep");
    assert_eq!(calls.len(), 5, "{}", tally(&p));
    let reached: Vec<_> = calls
        .iter()
        .copied()
        .filter(|c| frames(c).iter().any(|(n, _)| n == "main"))
        .collect();
    assert!(
        reached.is_empty(),
        "main reached without the stack copy: {}",
        some_stacks(&reached)
    );

    // Built for debugging (-O0 -g, frame pointers), five calls of 3 ms: named, in its
    // module, with file and line from its DWARF.
    let p = run_chain(&t, &[], "chain-fp", 5, "3000");
    let calls = slow_of(&p, "chain-fp", "clock_nanosleep");
    assert_eq!(calls.len(), 5, "{}", tally(&p));
    let chain = [
        ("chain_inner", "chain-fp"),
        ("chain_outer", "chain-fp"),
        ("main", "chain-fp"),
    ];
    for c in &calls {
        assert!(names_in_order(c, &chain), "{}", stack_line(c));
        let inner = c
            .stack
            .iter()
            .find(|f| f.function.as_deref() == Some("chain_inner"));
        assert!(
            inner
                .and_then(|f| f.location.as_deref())
                .is_some_and(|l| l.starts_with("chain.c:")),
            "chain_inner's location: {:?}; {}",
            inner.map(|f| &f.location),
            stack_line(c)
        );
    }

    // A shared library of the tests' own between the program and glibc.
    let p = run_chain(&t, &[], "chain-lib", 20, "2000");
    let calls = slow_of(&p, "chain-lib", "clock_nanosleep");
    assert_eq!(calls.len(), 20, "{}", tally(&p));
    let chain = [
        ("lib_inner", "libchainlib.so"),
        ("lib_middle", "libchainlib.so"),
        ("app_outer", "chain-lib"),
        ("main", "chain-lib"),
    ];
    for c in &calls {
        assert!(names_in_order(c, &chain), "{}", stack_line(c));
    }

    // A static binary: one object, glibc's functions in it.
    let p = run_chain(&t, &[], "chain-static", 20, "2000");
    let calls = slow_of(&p, "chain-static", "clock_nanosleep");
    assert_eq!(calls.len(), 20, "{}", tally(&p));
    let chain = [
        ("chain_inner", "chain-static"),
        ("chain_outer", "chain-static"),
        ("main", "chain-static"),
    ];
    for c in &calls {
        assert!(names_in_order(c, &chain), "{}", stack_line(c));
    }
}

#[test]
fn processes_that_exit_right_after_their_slow_calls_keep_their_names() {
    let Some(t) = root_test!() else {
        return;
    };
    // 200 processes, each exiting 1 ms after its last slow call: each call's stack is
    // unwound and named from what was read at its process's first call (its mappings,
    // its objects kept open), whether the process is still there or not. How soon after
    // its first call a process may exit is a race with syscost's reader that a slow or
    // busy machine loses (docs/usage.md states that limit); what this test proves is
    // the naming, so each process waits between its two calls for a byte on its stdin,
    // written once syscost has reported the first: its mappings read, it makes its last
    // call and exits 1 ms after, and every call must be named.
    let short = programs().join("short");
    let script = format!(
        "i=0; while [ $i -lt 200 ]; do {} {STDIN}; i=$((i+1)); done",
        short.display()
    );
    let json = t.path("short.json");
    let mut last = None;
    let mut let_go = 0;
    held(
        syscost()
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .args(["--", "sh", "-c", &script]),
        "the first slow call of each of 200 short processes",
        |l, stdin| {
            use std::io::Write as _;
            // Each process's two sleeps come one after the other, the processes one after
            // another: a thread other than the last's is a new process's first call.
            if reports(l, &["clock_nanosleep"], "short") && report_tid(l) != last {
                last = report_tid(l);
                stdin
                    .write_all(b"x")
                    .and_then(|()| stdin.flush())
                    .expect("writing to short's stdin");
                let_go += 1;
            }
            let_go == 200
        },
    );
    let p = read_profile(&json);
    assert_eq!(p.slow_dropped, 0, "{}", tally(&p));
    let calls = slow_of(&p, "short", "clock_nanosleep");
    assert_eq!(
        calls.len(),
        400,
        "two slow calls in each of 200 processes: {}",
        tally(&p)
    );
    let unnamed: Vec<_> = calls
        .iter()
        .copied()
        .filter(|c| !names_in_order(c, &[("short_work", "short"), ("main", "short")]))
        .collect();
    assert!(
        unnamed.is_empty(),
        "of 400 calls, not named: {}",
        some_stacks(&unnamed)
    );
    let pids: std::collections::BTreeSet<u32> = calls.iter().map(|c| c.pid).collect();
    assert_eq!(pids.len(), 200);
}

#[test]
fn a_descriptor_is_named_only_while_it_names_the_file_of_its_call() {
    let Some(t) = root_test!() else {
        return;
    };
    // Each slow read's descriptor is closed and given to /dev/null (one dup2) microseconds
    // after the read returns, and syscost reads /proc/PID/fd only once the descriptor no
    // longer holds the call's inode (a test fault, so that the reuse comes first on any
    // machine; it waits for that, not for a time): the kernel side's inode and mount of
    // the pipe tell the two apart. The program lives until syscost has reported its last
    // call, so that every read is read while it does.
    let json = t.path("fdreuse.json");
    let lines = held(
        syscost()
            .env("SYSCOST_TEST_FAULT", "late-fd")
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .arg("--")
            .arg(programs().join("fdreuse"))
            .args(["20", STDIN]),
        "the report of fdreuse's last call (its mark)",
        nth_report(1, MARK, "fdreuse"),
    );
    let ran_out: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("SYSCOST_TEST_FAULT=late-fd"))
        .take(3)
        .collect();
    assert!(ran_out.is_empty(), "the fault's wait ran out: {ran_out:?}");
    let p = read_profile(&json);
    // The main thread's one-byte reads of its pipes: a loaded machine may make any call
    // slow, the loader's reads of the libraries (832 bytes) among them, and the other
    // thread's reads of /proc.
    let reads: Vec<_> = slow_of(&p, "fdreuse", "read")
        .into_iter()
        .filter(|c| c.tid == c.pid && c.args[2] == 1)
        .collect();
    assert_eq!(reads.len(), 20, "{}", tally(&p));
    // By the time each is read its number holds /dev/null, a later round's pipe, nothing,
    // or the process is gone: never its own pipe, so no read may be named.
    for c in &reads {
        assert!(
            c.fd.is_none()
                && matches!(
                    c.fd_unknown.as_deref(),
                    Some(
                        "closed and reused for another file before it was read"
                            | "closed before it was read"
                            | "the process exited before it was read"
                    )
                ),
            "{}",
            fd_brief(c)
        );
    }
    let mut why = std::collections::BTreeMap::<Option<&str>, usize>::new();
    for c in &reads {
        *why.entry(c.fd_unknown.as_deref()).or_default() += 1;
    }
    assert!(
        why.contains_key(&Some(
            "closed and reused for another file before it was read"
        )),
        "no read was told from its descriptor's reuse: {why:?}"
    );

    // A regular file's descriptor, still open when its slow call is read: named (its
    // inode and mount id are the kernel's). The program keeps it open, waiting on its
    // stdin, until syscost has reported its last call.
    let file = t.path("lockfile");
    let json = t.path("flockwait.json");
    held(
        syscost()
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .arg("--")
            .arg(programs().join("flockwait"))
            .arg(&file)
            .args(["10", STDIN]),
        "the report of flockwait's last call (its mark)",
        nth_report(1, MARK, "flockwait"),
    );
    let p = read_profile(&json);
    // The ten waits (LOCK_EX), and any unlock a loaded machine made slow too.
    let locks: Vec<_> = slow_of(&p, "flockwait", "flock")
        .into_iter()
        .filter(|c| c.tid == c.pid)
        .collect();
    let waits = locks
        .iter()
        .filter(|c| c.args[1] == libc::LOCK_EX as u64)
        .count();
    assert_eq!(waits, 10, "{}", tally(&p));
    for c in &locks {
        assert_eq!(c.fd.as_deref(), file.to_str(), "{}", fd_brief(c));
    }
}

/// `syscost run --stacks FILE --stacks-sample 32 --stack-size 8K --slow 1ms --json FILE EXTRA -- PROGRAM
/// stdin`: a sites program, held until syscost has reported its mark (every sample
/// before it has then been received); the folded stacks and the profile.
fn run_sites(t: &RootTest, program: &str, extra: &[&str]) -> (String, Profile) {
    let profile = run_sites_to(t, program, &format!("{program}.folded"), extra);
    let text =
        std::fs::read_to_string(t.path(&format!("{program}.folded"))).expect("the stacks file");
    (text, profile)
}

/// [`run_sites`] with the stacks written to `file` (in the test's directory); the
/// profile.
fn run_sites_to(t: &RootTest, program: &str, file: &str, extra: &[&str]) -> Profile {
    let folded = t.path(file);
    let json = t.path(&format!("{program}.json"));
    held(
        syscost()
            // The getppid calls' samples (188 of 9K at most) and the first of every other
            // stack's on each CPU: a 64 MiB ring, half of it for samples (3,600 of them),
            // holds them all however late the reader drains it.
            .env("SYSCOST_TABLE_SIZES", "slow_ring=67108864")
            .args(["run", "--stacks"])
            .arg(&folded)
            .args([
                "--stacks-sample",
                "32",
                "--stack-size",
                "8K",
                "--slow",
                "1ms",
                "--json",
            ])
            .arg(&json)
            .args(extra)
            .arg("--")
            .arg(programs().join(program))
            .arg(STDIN),
        &format!("the report of {program}'s mark"),
        nth_report(1, MARK, program),
    );
    read_profile(&json)
}

/// The folded lines of `text` that end in `syscall VALUE`: (path, value).
fn folded_of<'a>(text: &'a str, syscall: &str) -> Vec<(&'a str, u64)> {
    text.lines()
        .filter_map(|l| {
            let (path, value) = l.rsplit_once(' ')?;
            let (_, last) = path.rsplit_once(';')?;
            (last == syscall).then(|| (path, value.parse().expect("a folded value")))
        })
        .collect()
}

/// The lines of `lines` whose path has `function` as a frame.
fn through<'a>(lines: &[(&'a str, u64)], function: &str) -> Vec<(&'a str, u64)> {
    lines
        .iter()
        .filter(|(p, _)| p.split(';').any(|f| f == function))
        .copied()
        .collect()
}

const SITES: [(&str, u64); 3] = [("site_a", 1000), ("site_b", 2000), ("site_c", 3000)];

#[test]
fn calls_by_stack_count_each_call_site_exactly_with_frame_pointers() {
    let Some(t) = root_test!() else {
        return;
    };
    let (text, profile) = run_sites(&t, "sites-fp", &[]);
    let getppid = folded_of(&text, "getppid");
    for (site, calls) in SITES {
        let lines = through(&getppid, site);
        assert_eq!(
            lines.iter().map(|&(_, v)| v).collect::<Vec<_>>(),
            [calls],
            "{site}'s getppid: one line of {calls} calls, its path through main; getppid's lines: {getppid:?}"
        );
        assert!(
            lines[0].0.starts_with("sites-fp;") && lines[0].0.contains(&format!(";main;{site};")),
            "{site}: {lines:?}"
        );
    }
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    let exact: Vec<_> = stacks
        .stacks
        .iter()
        .filter(|s| s.syscall == "getppid")
        .map(|s| (s.calls, s.estimated))
        .collect();
    assert_eq!(exact.len(), 3, "{exact:?}");
    assert!(exact.iter().all(|&(_, estimated)| !estimated), "{exact:?}");
    // Every call of the table is under a stack, and the time adds up to the table's.
    let table = profile.syscall("getppid").expect("getppid's row");
    let by_stack: (u64, u64) = stacks
        .stacks
        .iter()
        .filter(|s| s.syscall == "getppid")
        .fold((0, 0), |(c, t), s| (c + s.calls, t + s.total_ns));
    assert_eq!(by_stack, (table.calls, table.total_ns));
    assert_eq!(table.calls, 6000);
    assert_eq!(
        stacks.stacks.iter().map(|s| s.calls).sum::<u64>(),
        profile.totals().0,
        "every call of the profile is under a stack"
    );
    assert_eq!((stacks.calls_dropped, stacks.frames_dropped), (0, 0));
    // `flame` draws the stacks file as it is, and the profile's calls by stack.
    let folded = t.path("sites-fp.folded");
    let json = t.path("sites-fp.json");
    for (input, by, out) in [
        (folded, None, "file.svg"),
        (json, Some("--stacks"), "json.svg"),
    ] {
        let svg = t.path(out);
        let o = syscost()
            .arg("flame")
            .args(by)
            .arg(&input)
            .arg("-o")
            .arg(&svg)
            .output()
            .expect("flame");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let drawn = std::fs::read_to_string(&svg).expect("the svg");
        assert!(
            SITES.iter().all(|(site, _)| drawn.contains(site)),
            "{out} draws the three sites"
        );
    }
}

/// A sample as a pprof reader printed it: calls, nanoseconds, and its frames' functions
/// outermost first.
type Read = (u64, u64, Vec<String>);

/// `go tool pprof -raw FILE`'s samples (its "Samples:" and "Locations" sections).
fn read_by_go_pprof(t: &RootTest, file: &std::path::Path) -> Vec<Read> {
    let o = std::process::Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(file)
        // pprof keeps nothing for -raw; its home is the test's directory all the same.
        .env("HOME", t.path(""))
        .output()
        .expect("go tool pprof (golang-go: cargo xtask setup installs it)");
    let out = stdout(&o);
    assert!(o.status.success(), "go tool pprof: {}", stderr(&o));
    let (samples, locations) = out
        .split_once("\nLocations\n")
        .unwrap_or_else(|| panic!("no Locations in go tool pprof -raw:\n{out}"));
    // Each location's first function's name (the first word: C names have no space).
    let locations = locations.split("\nMappings\n").next().unwrap();
    let names: std::collections::HashMap<&str, &str> = locations
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.trim_start().split_once(": ")?;
            id.parse::<u64>().ok()?;
            let mut words = rest.split_whitespace().skip(1);
            let name = match words.next()? {
                m if m.starts_with("M=") => words.next()?,
                name => name,
            };
            Some((id, name))
        })
        .collect();
    let samples = samples
        .split_once("syscalls/count syscall_time/nanoseconds[dflt]\n")
        .unwrap_or_else(|| panic!("no sample types in go tool pprof -raw:\n{out}"))
        .1;
    samples
        .lines()
        .filter_map(|l| {
            let (values, ids) = l.split_once(": ")?;
            let mut v = values.split_whitespace().map(|n| n.parse::<u64>().ok());
            let (calls, ns) = (v.next()??, v.next()??);
            let mut frames: Vec<String> = ids
                .split_whitespace()
                // A location -raw lists without a function: its id, marked.
                .map(|id| names.get(id).map_or(format!("?{id}"), |n| n.to_string()))
                .collect();
            frames.reverse();
            Some((calls, ns, frames))
        })
        .collect()
}

/// The same samples read by Python's protobuf (tests/pprof/read.py over pprof's
/// profile.proto, compiled by protoc).
fn read_by_python_protobuf(t: &RootTest, file: &std::path::Path) -> Vec<Read> {
    let generated = t.path("pb2");
    std::fs::create_dir_all(&generated).unwrap();
    let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../syscost-report/proto");
    let o = output(
        std::process::Command::new("protoc")
            .arg("-I")
            .arg(&proto)
            .arg(format!("--python_out={}", generated.display()))
            .arg("profile.proto"),
    );
    assert!(o.status.success(), "protoc: {}", stderr(&o));
    // Debian's python3, whose python3-protobuf the set-up installs.
    let o = output(
        std::process::Command::new("/usr/bin/python3")
            .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pprof/read.py"))
            .arg(&generated)
            .arg(file),
    );
    assert!(o.status.success(), "read.py: {}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("types syscalls/count syscall_time/nanoseconds"),
        "{out}"
    );
    lines
        .map(|l| {
            let w: Vec<&str> = l.split('\t').collect();
            assert_eq!(w.len(), 5, "calls, ns, pid, comm, frames: {l}");
            (
                w[0].parse().unwrap(),
                w[1].parse().unwrap(),
                w[4].split(';').map(str::to_string).collect(),
            )
        })
        .collect()
}

/// `--stacks FILE.pb.gz`: a pprof profile that pprof's own reader (`go tool pprof`) and
/// an independent one (Python's protobuf over profile.proto) read alike: each site's
/// getppid calls exact, innermost the syscall, the calls and time those of the JSON of
/// the same run; and `flame` draws it as it draws the JSON's stacks.
#[test]
fn calls_by_stack_as_pprof_are_read_by_pprofs_readers() {
    let Some(t) = root_test!() else {
        return;
    };
    let profile = run_sites_to(&t, "sites-fp", "sites-fp.pb.gz", &[]);
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    let file = t.path("sites-fp.pb.gz");
    let json_sums = stacks
        .stacks
        .iter()
        .fold((0, 0), |(c, n), s| (c + s.calls, n + s.total_ns));
    for (reader, read) in [
        ("go tool pprof", read_by_go_pprof(&t, &file)),
        ("python protobuf", read_by_python_protobuf(&t, &file)),
    ] {
        assert_eq!(
            read.len(),
            stacks.stacks.len(),
            "{reader}: a sample a stack"
        );
        for (site, calls) in SITES {
            let through: Vec<&Read> = read
                .iter()
                .filter(|(_, _, f)| f.iter().any(|f| f == site))
                .collect();
            assert_eq!(
                through
                    .iter()
                    .map(|r| (r.0, r.2.last().unwrap().as_str()))
                    .collect::<Vec<_>>(),
                [(calls, "getppid")],
                "{reader}: {site}'s samples: {through:?}"
            );
            let f = &through[0].2;
            let main = f.iter().position(|f| f == "main").expect("main");
            assert_eq!(f[main + 1], site, "{reader}: {f:?}");
        }
        let sums = read.iter().fold((0, 0), |(c, n), r| (c + r.0, n + r.1));
        assert_eq!(
            sums, json_sums,
            "{reader}: calls and ns of the JSON's stacks"
        );
    }
    // flame reads it back to the folded stacks of the same run's JSON.
    let flame = |args: &[&std::ffi::OsStr]| {
        let o = output(syscost().arg("flame").args(args));
        assert!(o.status.success(), "flame: {}", stderr(&o));
        stdout(&o)
    };
    let json = t.path("sites-fp.json");
    assert_eq!(
        flame(&[file.as_os_str()]),
        flame(&["--stacks".as_ref(), json.as_os_str()])
    );
    // report lists its syscalls and stacks by time, each site's calls exact.
    let o = output(syscost().arg("report").arg(&file));
    assert!(o.status.success(), "{}", stderr(&o));
    let listed = stdout(&o);
    for (site, calls) in SITES {
        let line = listed
            .lines()
            .find(|l| l.contains(&format!("< {site} <")))
            .unwrap_or_else(|| panic!("no stack through {site}:\n{listed}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            (words[1], words[4], words[5]),
            (thousands(calls).as_str(), "getppid", "__GI_getppid"),
            "{line}"
        );
    }
    // -e picks syscalls; --process and -z do not apply to it, and say so.
    let o = output(syscost().args(["report", "-e", "getppid"]).arg(&file));
    let only = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        only.starts_with("calls by user stack of ") && only.contains(": 6,000 calls from 3 stacks"),
        "{only}"
    );
    for extra in [&["--process", "1"][..], &["-z"]] {
        let o = output(syscost().arg("report").args(extra).arg(&file));
        assert!(
            !o.status.success() && stderr(&o).contains("is a pprof profile of calls by stack"),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
    // A reader of JSON profiles says what the file is.
    let o = output(syscost().arg("diff").arg(&file).arg(&file));
    assert!(
        !o.status.success() && stderr(&o).contains("pprof profile of calls by stack"),
        "{}",
        stderr(&o)
    );
}

/// `n` as the tables print it (`3,000`).
fn thousands(n: u64) -> String {
    syscost_user::units::thousands(n)
}

/// `GET PATH` of the endpoint at `addr`: the status and the body.
fn get_bytes(addr: &str, path: &str) -> (u16, Vec<u8>) {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).expect("the endpoint");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)
        .expect("an answer within PATIENCE");
    let at = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..at]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("a status in {head:?}"));
    (status, answer[at + 4..].to_vec())
}

/// The calls to `syscall` a pprof reader read (the samples whose innermost frame it is).
fn calls_to(read: &[Read], syscall: &str) -> u64 {
    read.iter()
        .filter(|r| r.2.last().is_some_and(|f| f == syscall))
        .map(|r| r.0)
        .sum()
}

/// `export --stacks` serves `/debug/pprof/syscalls?seconds=N`: a window's calls by
/// stack, exactly. A first window after 1,000 getppid holds none of them; a second,
/// opened (syscost's debug log says so) before 2,000 more and closed by the target's
/// exit (the programs unloaded: nothing more can come), holds exactly those 2,000, as
/// `go tool pprof` reads it. Bad windows are refused with why.
#[test]
fn export_serves_a_windows_calls_by_stack_as_pprof() {
    let Some(t) = root_test!() else {
        return;
    };
    let (mut work, mut done) = waiting(&["per-line", "1000"]);
    let pid = work.id();
    let (mut export, first, mut err) = started(
        syscost()
            .env(
                "RUST_LOG",
                "warn,syscost_views::metrics::pprof_windows=debug",
            )
            .args([
                "export",
                "-p",
                &pid.to_string(),
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .arg("--stacks")
            .arg(t.path("export.pb.gz")),
    );
    let addr = endpoint_in(&first);
    let mut stdin = work.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let mut round = |stdin: &mut std::process::ChildStdin| {
        writeln!(stdin).unwrap();
        done.until("the workload's `done`", |l| l == "done");
    };
    round(&mut stdin);
    for bad in ["seconds=0", "seconds=3601", "seconds=x"] {
        let (status, body) = get_bytes(&addr, &format!("/debug/pprof/syscalls?{bad}"));
        let body = String::from_utf8_lossy(&body);
        assert!(
            status == 400 && body.contains("1 to 3600"),
            "{bad}: {status} {body}"
        );
    }
    let window = |name: &str, (status, body): (u16, Vec<u8>)| {
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let file = t.path(name);
        std::fs::write(&file, body).unwrap();
        read_by_go_pprof(&t, &file)
    };
    let before = window(
        "a.pb.gz",
        get_bytes(&addr, "/debug/pprof/syscalls?seconds=1"),
    );
    assert_eq!(calls_to(&before, "getppid"), 0, "{before:?}");
    // The second window, from a thread, until the workload's exit ends it.
    let second = {
        let addr = addr.clone();
        std::thread::spawn(move || get_bytes(&addr, "/debug/pprof/syscalls?seconds=3600"))
    };
    err.until("the second window's opening", |l| {
        l.contains("/debug/pprof/syscalls: a window of 3600 s from sample")
    });
    // Three more make four, the most served at once: a fifth is refused at once.
    let more: Vec<_> = (0..3)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || get_bytes(&addr, "/debug/pprof/syscalls?seconds=3600"))
        })
        .collect();
    for i in 0..3 {
        err.until(&format!("window {} of 4 opening", i + 2), |l| {
            l.contains("/debug/pprof/syscalls: a window of 3600 s from sample")
        });
    }
    let (status, body) = get_bytes(&addr, "/debug/pprof/syscalls?seconds=1");
    let body = String::from_utf8_lossy(&body);
    assert!(
        status == 503 && body.contains("4 windows of calls by stack are open"),
        "{status} {body}"
    );
    round(&mut stdin);
    round(&mut stdin);
    drop(stdin);
    assert!(work.wait_exit().success());
    let during = window("b.pb.gz", second.join().unwrap());
    assert_eq!(calls_to(&during, "getppid"), 2000, "{during:?}");
    for (i, w) in more.into_iter().enumerate() {
        let read = window(&format!("more-{i}.pb.gz"), w.join().unwrap());
        assert_eq!(
            calls_to(&read, "getppid"),
            2000,
            "window {}: {read:?}",
            i + 2
        );
    }
    // SAFETY: signals the process this test started.
    unsafe { libc::kill(export.id() as i32, libc::SIGINT) };
    assert!(export.wait_exit().success());
    // The file at the end has every call.
    let all = read_by_go_pprof(&t, &t.path("export.pb.gz"));
    assert_eq!(calls_to(&all, "getppid"), 3000, "{all:?}");
}

#[test]
fn calls_by_stack_name_each_call_site_without_frame_pointers() {
    let Some(t) = root_test!() else {
        return;
    };
    let (text, profile) = run_sites(&t, "sites", &["--stacks-value", "time"]);
    let getppid = folded_of(&text, "getppid");
    for (site, _) in SITES {
        let lines = through(&getppid, site);
        assert!(
            !lines.is_empty()
                && lines
                    .iter()
                    .all(|(p, _)| p.contains(&format!(";main;{site};"))),
            "{site} named, below main: {getppid:?}"
        );
    }
    // Whatever the walk could tell apart, the time of the calls is all there, exactly.
    let table = profile.syscall("getppid").expect("getppid's row");
    assert_eq!(table.calls, 6000);
    assert_eq!(getppid.iter().map(|&(_, v)| v).sum::<u64>(), table.total_ns);
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    let calls: u64 = stacks
        .stacks
        .iter()
        .filter(|s| s.syscall == "getppid")
        .map(|s| s.calls)
        .sum();
    assert_eq!(calls, 6000);
    // Where the walk could not tell the sites apart, their shares follow the samples (1
    // in 32 of the calls on each CPU, and the first there): each site's estimate is
    // within a sampling step per CPU, on either side of each of its ends, of its count.
    // The ring holds every sample (run_sites), so none may be dropped.
    assert_eq!(
        stacks.samples_dropped, 0,
        "samples the ring had no room for"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    for (site, expected) in SITES {
        let lines: Vec<_> = stacks
            .stacks
            .iter()
            .filter(|s| {
                s.syscall == "getppid"
                    && s.frames.iter().any(|f| f.function.as_deref() == Some(site))
            })
            .collect();
        let got: u64 = lines.iter().map(|s| s.calls).sum();
        assert!(
            got.abs_diff(expected) <= 2 * 32 * cpus,
            "{site}: {got} calls against {expected} (sampled 1 in 32 on {cpus} CPUs): {lines:?}"
        );
    }
}

/// `--stacks` alone (no slow call, the default sampling): the program exits as soon as
/// its calls are made, so its frames may go unnamed, but each call site's walk (frame
/// pointers kept) counts its calls exactly.
#[test]
fn calls_by_stack_alone_count_each_walk_exactly() {
    let Some(t) = root_test!() else {
        return;
    };
    let folded = t.path("alone.folded");
    let json = t.path("alone.json");
    let o = syscost()
        .args(["run", "--stacks"])
        .arg(&folded)
        .arg("--json")
        .arg(&json)
        .args(["-o", "/dev/null", "--"])
        .arg(programs().join("sites-fp"))
        .output()
        .expect("syscost run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let profile = read_profile(&json);
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    let mut getppid: Vec<u64> = stacks
        .stacks
        .iter()
        .filter(|s| s.syscall == "getppid")
        .map(|s| s.calls)
        .collect();
    getppid.sort();
    assert_eq!(getppid, [1000, 2000, 3000], "{:?}", stacks.stacks);
    assert_eq!(
        stacks.stacks.iter().map(|s| s.calls).sum::<u64>(),
        profile.totals().0
    );
    // The folded file has a line per path of names: where the program exited before
    // its samples were unwound, the three walks are named by theirs alone (`main` and
    // libc's wrapper, the sites' frames skipped) and fold into one line of 6,000.
    let text = std::fs::read_to_string(&folded).expect("the stacks file");
    let mut expected: std::collections::BTreeMap<String, u64> = Default::default();
    for s in stacks.stacks.iter().filter(|s| s.syscall == "getppid") {
        let path: Vec<String> = s.frames.iter().rev().map(|f| f.folded_label()).collect();
        *expected.entry(path.join(";")).or_default() += s.calls;
    }
    let got: std::collections::BTreeMap<String, u64> = folded_of(&text, "getppid")
        .iter()
        .map(|&(path, v)| {
            let frames = path
                .strip_prefix("sites-fp;")
                .and_then(|p| p.strip_suffix("getppid"))
                .map(|p| p.trim_end_matches(';'))
                .unwrap_or_else(|| panic!("a line of sites-fp's getppid: {path}"));
            (frames.to_string(), v)
        })
        .collect();
    assert_eq!(got, expected, "{text}");
}

#[test]
fn calls_by_stack_past_the_tables_are_counted_as_dropped() {
    let Some(t) = root_test!() else {
        return;
    };
    let folded = t.path("small.folded");
    let json = t.path("small.json");
    let lines = held(
        syscost()
            .env("SYSCOST_TABLE_SIZES", "stack_calls=4,stack_frames=2")
            // One window for the whole run, however slow the machine: the tables' room
            // is what is counted here, not the windows' (each would have 4 more).
            .env("SYSCOST_STACKS_WINDOW_MS", "3600000")
            .args(["run", "--stacks"])
            .arg(&folded)
            .args(["--slow", "1ms", "--json"])
            .arg(&json)
            .arg("--")
            .arg(programs().join("sites-fp"))
            .arg(STDIN),
        "the report of sites-fp's mark",
        nth_report(1, MARK, "sites-fp"),
    );
    let profile = read_profile(&json);
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    let under: u64 = stacks.stacks.iter().map(|s| s.calls).sum();
    // The table holds at most 4 (process, walk, syscall) entries. A walk whose samples
    // unwound to several stacks is split into as many lines, each marked estimated and
    // sharing the walk's process and syscall: such a group is one entry at least.
    let exact = stacks.stacks.iter().filter(|s| !s.estimated).count();
    let split: std::collections::BTreeSet<_> = stacks
        .stacks
        .iter()
        .filter(|s| s.estimated)
        .map(|s| (s.pid, s.syscall.as_str()))
        .collect();
    assert!(
        exact + split.len() <= 4,
        "{} entries: {:#?}",
        exact + split.len(),
        stacks
            .stacks
            .iter()
            .map(|s| (s.pid, &s.comm, &s.syscall, s.calls, s.estimated, s.samples))
            .collect::<Vec<_>>()
    );
    assert!(
        stacks.calls_dropped > 0 && stacks.frames_dropped > 0,
        "{stacks:?}"
    );
    assert_eq!(under + stacks.calls_dropped, profile.totals().0);
    let said = lines
        .iter()
        .find(|l| l.starts_with("syscost: --stacks:"))
        .expect("the stacks line");
    let plain = said.replace(',', "");
    assert!(
        plain.contains(&format!("{} calls under no stack", stacks.calls_dropped))
            && plain.contains(&format!(
                "{} stacks whose walk found no room",
                stacks.frames_dropped
            )),
        "{said}"
    );
}

/// Processes that come and go under `--stacks`, more of them than the tables hold at
/// once: each window's entries are drained from the tables (a debug line says whose), so
/// every call is counted under its stack and none is dropped. Process i+1 is started
/// only once a window with entries of process i was drained (and after i has exited:
/// the shell runs them in turn), so the tables, 512 entries and walks, hold what is
/// left of one process and the next, not twenty.
#[test]
fn calls_by_stack_of_processes_gone_leave_room_for_the_next() {
    let Some(t) = root_test!() else {
        return;
    };
    const N: usize = 20;
    const CALLS: u64 = 1_000;
    let json = t.path("churn.json");
    let script = format!(
        "exec 3<&0; for i in $(seq {N}); do head -c1 <&3 >/dev/null || exit 1; sh -c 'echo $$; exec {} getppid {CALLS} >/dev/null'; done; exit 0",
        workload_path()
    );
    let mut child = syscost()
        .env("SYSCOST_TABLE_SIZES", "stack_calls=512,stack_frames=512")
        .env("RUST_LOG", "syscost_engine::sampler=debug")
        .args(["run", "-f", "-o", "/dev/null", "--stacks"])
        .arg(t.path("churn.folded"))
        .arg("--json")
        .arg(&json)
        .args(["--", "sh", "-c", &script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn_reaped();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = Lines::of(child.stdout.take().unwrap(), "the command's stdout");
    let mut err = Lines::of(child.stderr.take().unwrap(), "syscost's stderr");
    let mut pids = Vec::new();
    for i in 0..N {
        use std::io::Write as _;
        stdin.write_all(b"x").unwrap();
        stdin.flush().unwrap();
        let pid: u32 = out
            .line()
            .unwrap_or_else(|| panic!("no pid from process {i}"))
            .trim()
            .parse()
            .unwrap();
        pids.push(pid);
        // The last one's entries are read at the end.
        if i == N - 1 {
            break;
        }
        err.until(&format!("process {i} ({pid})'s entries drained"), |l| {
            drained_with(l, pid)
        });
    }
    drop(stdin);
    let _ = err.rest();
    assert!(child.wait_exit().success());
    let profile = read_profile(&json);
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    assert_eq!(stacks.calls_dropped, 0, "calls with no room");
    // The workloads' getppid and the shells' own (dash reads its parent at its start).
    let getppid = |of: &dyn Fn(u32) -> bool| -> u64 {
        stacks
            .stacks
            .iter()
            .filter(|s| s.syscall == "getppid" && of(s.pid))
            .map(|s| s.calls)
            .sum()
    };
    assert!(
        getppid(&|p| pids.contains(&p)) >= N as u64 * CALLS,
        "the workloads' getppid under their stacks: {}",
        getppid(&|p| pids.contains(&p))
    );
    assert_eq!(
        getppid(&|_| true),
        profile.syscall("getppid").unwrap().calls,
        "every getppid under its stack"
    );
    let under: u64 = stacks.stacks.iter().map(|s| s.calls).sum();
    assert_eq!(under, profile.totals().0, "every call under a stack");
}

/// Whether `line` of syscost's stderr says a `--stacks` window was drained.
fn drained(line: &str) -> bool {
    line.contains("--stacks: window ") && line.contains(" drained")
}

/// Whether `line` of syscost's stderr says a `--stacks` window was drained with entries
/// of process `pid` (its debug line ends with their pids).
fn drained_with(line: &str, pid: u32) -> bool {
    drained(line)
        && line
            .split_once(": pids ")
            .is_some_and(|(_, pids)| pids.split(' ').any(|p| p == pid.to_string()))
}

/// A process that lives on and makes calls from more stacks than the tables hold, a
/// phase at a time: the tables (64 entries, 64 walks) are drained window by window, so
/// every call of its life is counted under its stack, none dropped. Each phase starts
/// once two windows have been drained since the last one ended (the second closed
/// after its mark was reported, so it holds the phase's last calls). The process's
/// entries outnumber the tables: kept for its life in them, calls would be dropped.
#[test]
fn calls_by_stack_of_a_process_that_lives_on_are_drained_window_by_window() {
    let Some(t) = root_test!() else {
        return;
    };
    const STACKS: u64 = 16;
    const CALLS: u64 = 100;
    const PHASES: u64 = 4;
    let json = t.path("depths.json");
    let mut gate = 0;
    let mut marks = 0;
    let mut drains = 0;
    let lines = held(
        syscost()
            .env("SYSCOST_TABLE_SIZES", "stack_calls=64,stack_frames=64")
            .env("SYSCOST_STACKS_WINDOW_MS", "100")
            .env("RUST_LOG", "syscost_engine::sampler=debug")
            .args(["run", "--stacks"])
            .arg(t.path("depths.folded"))
            .args(["--slow", "1ms", "--json"])
            .arg(&json)
            .arg("--")
            .arg(programs().join("depths"))
            .args([STACKS.to_string(), CALLS.to_string()]),
        "depths's last gate",
        |l, stdin| {
            use std::io::Write as _;
            if reports(l, MARK, "depths") {
                marks += 1;
                drains = 0;
            } else if drained(l) && marks > gate {
                drains += 1;
                if drains == 2 {
                    stdin.write_all(b"x").expect("depths's stdin");
                    stdin.flush().expect("depths's stdin");
                    gate += 1;
                }
            }
            gate > PHASES
        },
    );
    let profile = read_profile(&json);
    let stacks = profile.stacks.as_ref().expect("the profile's stacks");
    assert_eq!(
        (stacks.calls_dropped, stacks.frames_dropped),
        (0, 0),
        "nothing dropped; syscost said: {:?}",
        messages(&lines)
    );
    let mut sites: Vec<(String, usize, u64, bool)> = stacks
        .stacks
        .iter()
        .filter(|s| s.syscall == "getppid" && s.comm == "depths")
        .map(|s| {
            let names: Vec<&str> = s
                .frames
                .iter()
                .filter_map(|f| f.function.as_deref())
                .collect();
            let phase = names
                .iter()
                .find(|n| n.starts_with("phase_"))
                .map_or_else(String::new, |n| n.to_string());
            let depth = names.iter().filter(|&&n| n == "down").count();
            (phase, depth, s.calls, s.estimated)
        })
        .collect();
    sites.sort();
    let expected: Vec<(String, usize, u64, bool)> = (0..PHASES)
        .flat_map(|p| (1..=STACKS as usize).map(move |d| (format!("phase_{p}"), d, CALLS, false)))
        .collect();
    assert_eq!(sites, expected, "each stack's getppid, exactly");
    let table = profile.syscall("getppid").expect("getppid's row");
    assert_eq!(table.calls, PHASES * STACKS * CALLS);
    let under: u64 = stacks.stacks.iter().map(|s| s.calls).sum();
    assert_eq!(under, profile.totals().0, "every call under a stack");
    assert!(
        stacks.stacks.len() > 64,
        "more entries than the tables hold ({}): the windows drained them",
        stacks.stacks.len()
    );
}

/// Two threads calling without pause while the windows swap as often as the session's
/// clock allows (windows of 10 ms, swapped 50 ms apart at the most often, plus the wait for the
/// programs to leave the closed one): calls at every swap, the closed window drained
/// while the other fills, a dozen times or more a second. Every getppid is counted under
/// its stack once: none lost to a drain of the wrong window or between an entry's read
/// and its delete, none counted in two windows (draining the open window loses about
/// 200 of the 800,000). What the wait itself guards against, a program that read the
/// side before the swap and adds after the drain read its entry, needs a program
/// stopped for the drain's first microseconds: no run here can show it.
#[test]
fn calls_by_stack_stay_exact_while_windows_swap_under_load() {
    let Some(t) = root_test!() else {
        return;
    };
    const THREADS: u64 = 2;
    const CALLS: u64 = 400_000;
    let json = t.path("swaps.json");
    let o = output(
        syscost()
            .env("SYSCOST_STACKS_WINDOW_MS", "10")
            .env("RUST_LOG", "syscost_engine::sampler=debug")
            .args(["run", "-o", "/dev/null", "--stacks"])
            .arg(t.path("swaps.folded"))
            .arg("--json")
            .arg(&json)
            .args(["--", workload_path(), "threads"])
            .args([THREADS.to_string(), CALLS.to_string()]),
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // Windows drained while the workload made its calls (its pid among their entries).
    let profile = read_profile(&json);
    let pid = profile
        .stacks
        .as_ref()
        .and_then(|s| s.stacks.iter().find(|s| s.syscall == "getppid"))
        .map(|s| s.pid)
        .expect("a getppid stack");
    let with_it = err.lines().filter(|l| drained_with(l, pid)).count();
    assert!(
        with_it >= 3,
        "windows drained with the workload's entries: {with_it}"
    );
    let stacks = profile.stacks.as_ref().unwrap();
    assert_eq!((stacks.calls_dropped, stacks.frames_dropped), (0, 0));
    let by_stack: u64 = stacks
        .stacks
        .iter()
        .filter(|s| s.syscall == "getppid" && s.pid == pid)
        .map(|s| s.calls)
        .sum();
    assert_eq!(
        by_stack,
        THREADS * CALLS,
        "the workload's getppid under its stacks"
    );
    assert_eq!(
        profile.syscall("getppid").unwrap().calls,
        THREADS * CALLS,
        "the table's getppid"
    );
    let under: u64 = stacks.stacks.iter().map(|s| s.calls).sum();
    assert_eq!(under, profile.totals().0, "every call under a stack");
}
