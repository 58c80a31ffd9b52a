//! Slow-call stacks of programs built the usual way (`-O2`, no frame pointers: glibc and
//! every distribution's C): unwound through `.eh_frame` to the caller and `main`, through
//! a shared library and in a static binary; named after their process exited; and a
//! slow call's descriptor never named after a file that took its number since.
//! Needs root. The C programs are built by `tests/c/build.sh` (on a kernel of the
//! matrix, where there is no compiler, `cargo xtask vm-test` ships them built).

mod common;

use std::path::PathBuf;

use common::*;
use syscost_user::profile::{Profile, SlowCall};

/// The built C programs' directory.
fn programs() -> &'static PathBuf {
    c_programs()
}

/// The chain programs wait this long (ms) after their calls: what these tests check is
/// the unwind, not the race with a process's exit (that one is
/// `processes_that_exit_right_after_their_slow_calls_keep_their_names`, on the host).
const HOLD: &str = "200";

fn run_slow(t: &RootTest, extra: &[&str], program: &str, args: &[&str]) -> Profile {
    read_profile(&run_slow_json(t, extra, program, args))
}

/// The same, and where the profile is.
fn run_slow_json(t: &RootTest, extra: &[&str], program: &str, args: &[&str]) -> PathBuf {
    let json = t.path(&format!("{program}.json"));
    let o = output(
        syscost()
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .args(extra)
            .arg("--")
            .arg(programs().join(program))
            .args(args),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    json
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
    // A dynamic binary: glibc's nanosleep -> clock_nanosleep wrapper (no frame pointer
    // in either), then the program's own functions.
    let json = run_slow_json(&t, &[], "chain", &["20", "2000", HOLD]);
    let p = read_profile(&json);
    let calls = slow_of(&p, "chain", "clock_nanosleep");
    assert_eq!(calls.len(), 20, "{:#?}", p.slow_calls);
    for c in &calls {
        assert!(names_in_order(c, &chain), "{:#?}", c.stack);
        assert_eq!(
            c.stack[0].module.as_deref(),
            Some("libc.so.6"),
            "{:#?}",
            c.stack
        );
    }
    // The flame graph's folded stacks and the trace carry the whole chain.
    let folded = output(syscost().arg("flame").arg(&json));
    assert!(folded.status.success(), "{}", stderr(&folded));
    assert!(
        stdout(&folded).lines().any(
            |l| l.contains(";main;chain_outer;chain_inner;") && l.contains(";clock_nanosleep ")
        ),
        "{}",
        stdout(&folded)
    );
    let trace = output(syscost().arg("trace").arg(&json));
    assert!(trace.status.success(), "{}", stderr(&trace));
    assert!(stdout(&trace).contains("chain_outer"), "{}", stdout(&trace));
    // The same walked by frame pointers only (--stack-size 0): the program's functions
    // are out of its reach (the frame-pointer walk alone).
    let p = run_slow(&t, &["--stack-size", "0"], "chain", &["5", "2000", HOLD]);
    let calls = slow_of(&p, "chain", "clock_nanosleep");
    assert_eq!(calls.len(), 5);
    assert!(
        calls
            .iter()
            .all(|c| !frames(c).iter().any(|(n, _)| n == "main")),
        "{:#?}",
        calls[0].stack
    );

    // Built for debugging (-O0 -g, frame pointers), five calls of 3 ms: named, in its
    // module, with file and line from its DWARF.
    let p = run_slow(&t, &[], "chain-fp", &["5", "3000", HOLD]);
    let calls = slow_of(&p, "chain-fp", "clock_nanosleep");
    assert_eq!(calls.len(), 5, "{:#?}", p.slow_calls);
    let chain = [
        ("chain_inner", "chain-fp"),
        ("chain_outer", "chain-fp"),
        ("main", "chain-fp"),
    ];
    for c in &calls {
        assert!(names_in_order(c, &chain), "{:#?}", c.stack);
        let inner = c
            .stack
            .iter()
            .find(|f| f.function.as_deref() == Some("chain_inner"));
        assert!(
            inner
                .and_then(|f| f.location.as_deref())
                .is_some_and(|l| l.starts_with("chain.c:")),
            "{:#?}",
            c.stack
        );
    }

    // A shared library of the tests' own between the program and glibc.
    let p = run_slow(&t, &[], "chain-lib", &["20", "2000", HOLD]);
    let calls = slow_of(&p, "chain-lib", "clock_nanosleep");
    assert_eq!(calls.len(), 20, "{:#?}", p.slow_calls);
    let chain = [
        ("lib_inner", "libchainlib.so"),
        ("lib_middle", "libchainlib.so"),
        ("app_outer", "chain-lib"),
        ("main", "chain-lib"),
    ];
    for c in &calls {
        assert!(names_in_order(c, &chain), "{:#?}", c.stack);
    }

    // A static binary: one object, glibc's functions in it.
    let p = run_slow(&t, &[], "chain-static", &["20", "2000", HOLD]);
    let calls = slow_of(&p, "chain-static", "clock_nanosleep");
    assert_eq!(calls.len(), 20, "{:#?}", p.slow_calls);
    let chain = [
        ("chain_inner", "chain-static"),
        ("chain_outer", "chain-static"),
        ("main", "chain-static"),
    ];
    for c in &calls {
        assert!(names_in_order(c, &chain), "{:#?}", c.stack);
    }
}

#[test]
fn processes_that_exit_right_after_their_slow_calls_keep_their_names() {
    let Some(t) = root_test!() else {
        return;
    };
    // 200 processes, each exiting 1 ms after its last slow call: each call's stack is
    // unwound and named after its process is gone (its mappings were read at its first
    // call, its objects kept open).
    let short = programs().join("short");
    let script = format!(
        "i=0; while [ $i -lt 200 ]; do {}; i=$((i+1)); done",
        short.display()
    );
    let json = t.path("short.json");
    let o = output(
        syscost()
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .args(["--", "sh", "-c", &script]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    assert_eq!(p.slow_dropped, 0);
    let calls = slow_of(&p, "short", "clock_nanosleep");
    assert_eq!(calls.len(), 400, "two slow calls in each of 200 processes");
    let unnamed: Vec<_> = calls
        .iter()
        .filter(|c| !names_in_order(c, &[("short_work", "short"), ("main", "short")]))
        .collect();
    // The receiving thread has 3 ms from a process's first slow call to its exit to read
    // its mappings; a busy machine can delay it longer (the limit docs/usage.md states).
    // Such a call says so; any other unnamed call, or more than 1% of them, fails.
    let raced = |c: &&&syscost_user::profile::SlowCall| {
        c.stack.len() == 1
            && c.stack[0].unknown.as_deref() == Some("process exited before its mappings were read")
    };
    assert!(
        unnamed.len() <= 4 && unnamed.iter().all(raced),
        "{} of 400 not named: {:#?}",
        unnamed.len(),
        unnamed.iter().find(|c| !raced(c)).or(unnamed.first())
    );
    let pids: std::collections::BTreeSet<u32> = calls.iter().map(|c| c.pid).collect();
    assert_eq!(pids.len(), 200);
}

#[test]
fn a_descriptor_is_named_only_while_it_names_the_file_of_its_call() {
    let Some(t) = root_test!() else {
        return;
    };
    // Each slow read's descriptor is closed and reopened on /dev/null microseconds after
    // the read returns, and syscost reads /proc/PID/fd 20 ms after the call arrives (a
    // test fault, so that the reuse comes first on any machine): the kernel side's inode
    // and mount of the pipe tell the two apart.
    let json = t.path("fdreuse.json");
    let o = output(
        syscost()
            .env("SYSCOST_TEST_FAULT", "late-fd")
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .arg("--")
            .arg(programs().join("fdreuse"))
            .arg("20"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    // The main thread's reads (the other thread's reads of /proc may be slow too).
    let reads: Vec<_> = slow_of(&p, "fdreuse", "read")
        .into_iter()
        .filter(|c| c.tid == c.pid)
        .collect();
    assert_eq!(reads.len(), 20, "{:#?}", p.slow_calls);
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
            "{c:#?}"
        );
    }
    assert!(
        reads.iter().any(|c| c.fd_unknown.as_deref()
            == Some("closed and reused for another file before it was read")),
        "no read was told from its descriptor's reuse: {reads:#?}"
    );

    // A regular file's descriptor, still open when its slow call is read: named (its
    // inode and mount id are the kernel's).
    let file = t.path("lockfile");
    let p = run_slow(&t, &[], "flockwait", &[file.to_str().unwrap(), "10"]);
    // The ten waits, and any unlock a loaded machine made slow too.
    let locks: Vec<_> = slow_of(&p, "flockwait", "flock")
        .into_iter()
        .filter(|c| c.tid == c.pid)
        .collect();
    assert!(locks.len() >= 10, "{:#?}", p.slow_calls);
    for c in &locks {
        assert_eq!(c.fd.as_deref(), file.to_str(), "{c:#?}");
    }
}
