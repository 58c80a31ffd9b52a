//! What a traced process controls never reaches the terminal raw. The workload's
//! `hostile` mode runs from a file named with an OSC sequence (its first comm), sets its
//! comm to an ANSI sequence with BEL, and makes slow reads of a FIFO whose name holds
//! control bytes and a byte that is not UTF-8, inside a cgroup with an OSC sequence in
//! its name. Every text output holds no control byte but newline and tab and shows the
//! names escaped; the JSON keeps them exactly; the SVG is well-formed XML. Needs root.

mod common;

use std::{
    io::Write as _,
    os::unix::ffi::OsStrExt as _,
    path::PathBuf,
    process::{Command, Stdio},
};

use common::*;
use syscost_user::untrusted::{encode, shown};

/// The name the workload is exec'd by (and so its first comm).
const EXE: &[u8] = b"\x1b]0;PWNED\x07x";
/// The comm and FIFO name the workload's `hostile` mode uses (its source has the same).
const COMM: &str = "\x1b[31mEVIL\x07";
const FIFO: &[u8] = b"f\x1b[2J\xff\x7f\xc2\x9b\xe2\x80\xaeZ\xf4\x8f\xbe\x9b";
/// How the FIFO's name shows.
const FIFO_SHOWN: &str = "f\\33[2J\\xff\\177\\u{9b}\\u{202e}Z\\xf4\\x8f\\xbe\\x9b";
/// The cgroup's name: an OSC sequence and the code point that stands for byte 0x9b.
const CGROUP: &str = "\x1b]0;CG\x07\u{10ff9b}";
const CGROUP_SHOWN: &str = "\\33]0;CG\\7\\xf4\\x8f\\xbe\\x9b";

/// No control byte but newline and tab, and no C1 control (UTF-8 0xc2 0x80..0x9f).
fn assert_clean(what: &str, bytes: &[u8]) {
    let bad = bytes
        .iter()
        .position(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f);
    let c1 = bytes
        .windows(2)
        .position(|w| w[0] == 0xc2 && (0x80..0xa0).contains(&w[1]));
    if let Some(at) = bad.or(c1) {
        // The line that holds it, its bytes escaped.
        let start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let end = bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| at + i);
        panic!(
            "{what} holds a control byte at {at}, in the line {:?}",
            String::from_utf8_lossy(&bytes[start..end])
        );
    }
}

/// The lines of `text` that hold `needle` (at most 5), or its last 10 lines when none
/// does: what a failure shows of a long output.
fn around(text: &str, needle: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let hits: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains(needle))
        .take(5)
        .collect();
    if hits.is_empty() {
        let last = &lines[lines.len().saturating_sub(10)..];
        format!(
            "no line holds {needle:?}; the last {} of {} lines:\n{}",
            last.len(),
            lines.len(),
            last.join("\n")
        )
    } else {
        hits.join("\n")
    }
}

/// The last `n` of `lines`, one a line.
fn last(lines: &[String], n: usize) -> String {
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The workload's binary copied under the hostile name, in the test's directory.
fn hostile_exe(t: &RootTest) -> PathBuf {
    let exe = t.dir.join(std::ffi::OsStr::from_bytes(EXE));
    std::fs::copy(workload_path(), &exe).unwrap();
    exe
}

/// Stderr lines of a syscost run or attach up to its tenth slow read.
fn until_reads_printed(err: &mut StderrLines) -> Vec<String> {
    let mut lines = Vec::new();
    while lines
        .iter()
        .filter(|l: &&String| l.starts_with("slow: read("))
        .count()
        < 10
    {
        match err.next() {
            Some(Ok(l)) => lines.push(l),
            _ => panic!(
                "syscost ended before 10 slow reads; its last lines:\n{}",
                last(&lines, 10)
            ),
        }
    }
    lines
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_report_diff_and_flame_escape_what_the_process_chose() {
    let Some(t) = root_test!() else {
        return;
    };
    let exe = hostile_exe(&t);
    let json = t.path("p.json");
    // The command waits (--hold) until syscost has printed its reads: their fd and
    // frames are read from the living process.
    let mut run = syscost()
        .args(["run", "--slow", "1ms", "--json"])
        .arg(&json)
        .arg("--")
        .arg(&exe)
        .arg("--hold")
        .arg("hostile")
        .arg(&t.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(run.stderr.take().unwrap(), "stderr");
    let mut lines = until_reads_printed(&mut err);
    writeln!(run.stdin.as_mut().unwrap()).unwrap();
    lines.extend(err.map_while(Result::ok));
    let o = run.into_inner().output_within();
    assert!(
        o.status.success(),
        "syscost run failed; its last lines:\n{}",
        last(&lines, 20)
    );
    assert_clean("run's stdout", &o.stdout);
    let err = lines.join("\n");
    assert_clean("run's stderr", err.as_bytes());
    // The slow reads: the comm and the FIFO escaped as strace escapes them.
    assert!(err.contains("tid "), "{}", around(&err, "slow: read("));
    assert!(
        err.contains(&*shown(COMM)),
        "{}",
        around(&err, "slow: read(")
    );
    assert!(
        err.contains(&format!("{FIFO_SHOWN}>")),
        "{}",
        around(&err, "slow: read(")
    );

    // The JSON keeps the exact bytes.
    let p = read_profile(&json);
    assert_eq!(encode(&p.target.comm), EXE);
    let reads: Vec<_> = p
        .slow_calls
        .iter()
        .filter(|c| c.syscall == "read")
        .collect();
    assert_eq!(
        reads.len(),
        10,
        "slow reads ({} slow calls in all); the first 3: {:?}",
        p.slow_calls.len(),
        &reads[..reads.len().min(3)]
    );
    for c in &reads {
        assert_eq!(c.comm, COMM);
        let fd = encode(c.fd.as_deref().unwrap_or_default());
        assert!(fd.ends_with(FIFO), "{:?}", c.fd);
    }

    for args in [
        vec!["report"],
        vec!["report", "-L"],
        vec!["diff"],
        vec!["flame"],
        vec!["trace"],
    ] {
        let mut c = syscost();
        c.args(&args).arg(&json);
        if args[0] == "diff" {
            c.arg(&json);
        }
        let o = output(&mut c);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        assert_clean(&format!("{args:?}"), &o.stdout);
        assert_clean(&format!("{args:?} stderr"), &o.stderr);
        if args[0] == "flame" {
            assert!(
                text(&o.stdout).contains("\\33[31mEVIL\\7;"),
                "{}",
                around(&text(&o.stdout), "EVIL")
            );
        }
    }
    // The SVG: well-formed XML, the names in it escaped.
    let svg = t.path("f.svg");
    let o = output(syscost().arg("flame").arg(&json).arg("-o").arg(&svg));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let svg = std::fs::read(&svg).unwrap();
    assert_clean(
        "the SVG",
        &svg.iter()
            .copied()
            .filter(|&b| b != b'\r')
            .collect::<Vec<_>>(),
    );
    let svg = String::from_utf8(svg).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("the SVG is not well-formed XML: {e}"),
        }
    }
    assert!(svg.contains("\\33[31mEVIL\\7"), "{}", around(&svg, "EVIL"));
}

#[test]
fn attach_and_top_escape_what_the_process_and_its_cgroup_chose() {
    let Some(t) = root_test!() else {
        return;
    };
    let cg = TestCgroup::new(CGROUP);
    let exe = hostile_exe(&t);
    let (mut w, _out) = ready(
        Command::new(&exe)
            .args(["--wait-stdin", "--hold", "hostile"])
            .arg(&t.dir),
    );
    cg.enter(w.id());
    let top_file = t.path("top.json");
    let (mut top, first_top, mut top_err) = started(
        syscost()
            .args([
                "top", "--no-tui", "-i", "0.5", "--cgroup", &cg.path, "--json",
            ])
            .arg(&top_file)
            .stdout(Stdio::piped()),
    );
    let mut top_out = Lines::of(top.stdout.take().unwrap(), "top's stdout");
    assert_clean("top's first line", first_top.as_bytes());
    assert!(first_top.contains(CGROUP_SHOWN), "{first_top}");
    let (attach, first, mut err) = started(
        syscost()
            .args([
                "attach",
                "--no-tui",
                "--slow",
                "1ms",
                "-p",
                &w.id().to_string(),
            ])
            .stdout(Stdio::piped()),
    );
    assert_clean("attach's first line", first.as_bytes());
    assert!(first.contains("(\\33]0;PWNED\\7x)"), "{first}");
    writeln!(w.stdin.as_mut().unwrap()).unwrap();
    let mut lines = until_reads_printed(&mut err);
    writeln!(w.stdin.as_mut().unwrap()).unwrap();
    assert!(w.wait_exit().success());
    let rest = std::thread::spawn(move || err.map_while(Result::ok).collect::<Vec<String>>());
    let o = attach.into_inner().output_within();
    assert!(o.status.success());
    assert_clean("attach's table", &o.stdout);
    lines.extend(rest.join().unwrap());
    let lines = lines.join("\n");
    assert_clean("attach's stderr", lines.as_bytes());
    assert!(
        lines.contains(&format!("{FIFO_SHOWN}>")),
        "{}",
        around(&lines, "slow: read(")
    );
    // top has counted the process once a table shows it under the comm it chose (its
    // calls after the prctl: the reads, and its exit, at the latest).
    let pid = w.id().to_string();
    let mut tables = vec![
        top_out.until("a table row of the workload under its comm", |l| {
            l.split_whitespace().next() == Some(pid.as_str()) && l.contains("\\33[31mEVIL\\7")
        }),
    ];
    // SAFETY: signals our own child.
    unsafe { libc::kill(top.id() as i32, libc::SIGINT) };
    tables.extend(top_out.rest());
    let status = top.wait_exit();
    assert!(
        status.success(),
        "top: {status}; its stderr: {:?}",
        top_err.rest()
    );
    let tables = tables.join("\n");
    assert_clean("top's tables", tables.as_bytes());
    assert!(tables.contains(CGROUP_SHOWN), "{}", around(&tables, &pid));
    // top's JSON: exact.
    let rows = top_json(&top_file);
    let row = rows.get(&w.id()).unwrap_or_else(|| {
        panic!(
            "no row of pid {pid} in top's JSON; {} rows, pids {:?}",
            rows.len(),
            rows.keys().take(10).collect::<Vec<_>>()
        )
    });
    // The bytes of the cgroup's path, exactly (the name's U+10FF9B is four bytes).
    assert_eq!(encode(row["cgroup"].as_str().unwrap()), cg.path.as_bytes());
    assert!(
        row["comm"] == COMM || row["comm"] == text(EXE),
        "comm {}",
        row["comm"]
    );
}
