//! Bad input gets one line that says what is wrong, exit status 1, no panic. These need
//! no privileges: syscost checks its input before it loads anything.

mod common;

use common::*;

fn fails_with(args: &[&str], expected: &str) {
    let o = output(syscost().args(args));
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    assert_eq!(stderr(&o), format!("syscost: {expected}\n"), "{args:?}");
}

/// Bad arguments (out of range, unknown, missing, in conflict): one line on stderr,
/// the argument parser's message and its tip without the usage block, status 2, no
/// panic.
fn bad_argument(args: &[&str], expected: &str) {
    let o = output(syscost().args(args));
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("syscost: {expected} (see --help)\n"),
        "{args:?}"
    );
}

#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _syscost"),
        ("zsh", "#compdef syscost"),
        ("fish", "complete -c syscost"),
    ] {
        let o = output(syscost().args(["completions", shell]));
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains(marker), "{shell}: {text}");
        // The subcommands are offered.
        for sub in ["attach", "run", "doctor"] {
            assert!(text.contains(sub), "{shell} lacks {sub}");
        }
    }
    let o = output(syscost().args(["completions", "tcsh"]));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn values_out_of_range_are_refused() {
    bad_argument(
        &["attach", "-p", "1", "-d", "0"],
        "invalid value '0' for '--duration <SECS>': must be a positive number of seconds, not 0",
    );
    bad_argument(
        &["export", "-p", "1", "-d", "0"],
        "invalid value '0' for '--duration <SECS>': must be a positive number of seconds, not 0",
    );
    bad_argument(
        &["attach", "-p", "1", "-d", "1e20"],
        "invalid value '1e20' for '--duration <SECS>': 1e20 seconds is more than ten years",
    );
    bad_argument(
        &["lab", "echo-load", "--rate", "0"],
        "invalid value '0' for '--rate <PER_SEC>': must be a rate of at least 0.001 per second, not 0",
    );
    bad_argument(
        &["lab", "echo-load", "--rate=-5"],
        "invalid value '-5' for '--rate <PER_SEC>': must be a rate of at least 0.001 per second, not -5",
    );
    bad_argument(
        &["lab", "echo-load", "--duration", "1e300"],
        "invalid value '1e300' for '--duration <SECS>': 1e300 seconds is more than ten years",
    );
    let cpus = std::thread::available_parallelism().unwrap().get();
    let possible = syscost_user::tracer::possible_cpus().map_or(cpus, |n| n as usize);
    bad_argument(
        &["bench", "--cpu", "1024"],
        &format!(
            "invalid value '1024' for '--cpu <N>': no CPU 1024 on this machine (CPUs 0 to {})",
            possible.max(cpus) - 1
        ),
    );
    // Unknown, missing and misspelt arguments: one line too, with clap's suggestion.
    bad_argument(
        &["attach", "--bogus"],
        "unexpected argument '--bogus' found",
    );
    bad_argument(
        &["diff"],
        "the following required arguments were not provided: <BASE>, <PROFILE>...",
    );
    bad_argument(
        &["atach"],
        "unrecognized subcommand 'atach'; some similar subcommands exist: 'trace', 'attach'",
    );
}

#[test]
fn unknown_syscall_suggests_the_closest() {
    fails_with(
        &["run", "-e", "getppid,clsoe", "--", "true"],
        "unknown syscall 'clsoe' (did you mean 'close'?)",
    );
    fails_with(
        &["report", "-e", "epoll_wiat", "x.json"],
        "unknown syscall 'epoll_wiat' (did you mean 'epoll_wait'?)",
    );
}

#[test]
fn missing_and_bad_processes() {
    fails_with(
        &["attach", "-p", "0"],
        "PID 0 is the kernel's idle task, not a process syscost can profile",
    );
    fails_with(&["attach", "-p", "2147483647"], "no process 2147483647");
    // A thread's id: the process it belongs to, offered.
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        // SAFETY: gettid has no arguments.
        tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    let me = std::process::id();
    let comm = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
    fails_with(
        &["attach", "-p", &tid.to_string()],
        &format!(
            "{tid} is a thread of process {me} ({}): give -p {me}, which traces all its threads",
            comm.trim_end()
        ),
    );
    stop_tx.send(()).unwrap();
    t.join().unwrap();
}

#[test]
fn cgroup_input_is_checked_before_loading() {
    for cmd in ["attach", "top", "export"] {
        let o = output(syscost().args([cmd, "--cgroup", "/no/such/cgroup"]));
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with("syscost: no cgroup /no/such/cgroup (looked for ")
                || err.starts_with("syscost: no cgroup v2 hierarchy is mounted"),
            "{cmd}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    fails_with(
        &["attach", "-p", "1", "--per-process"],
        "--per-process splits a --cgroup profile: give --cgroup PATH",
    );
    fails_with(
        &["export", "--top", "--per-process"],
        "--per-process splits a --cgroup profile: give --cgroup PATH",
    );
    bad_argument(
        &["attach", "-p", "1", "--cgroup", "/"],
        "the argument '--pid <PID>' cannot be used with '--cgroup <PATH>'",
    );
    bad_argument(
        &["export", "--top", "--top-n", "0"],
        "invalid value '0' for '--top-n <N>': 0 is not in 1..=1000",
    );
}

#[test]
fn metrics_endpoint_input_is_checked_before_loading() {
    fails_with(&["export", "-p", "1,2147483647"], "no process 2147483647");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let in_use = format!(
        "cannot listen for metrics scrapes on {addr}: Address already in use (os error 98)"
    );
    fails_with(&["export", "-p", "1", "--metrics-addr", &addr], &in_use);
    fails_with(&["attach", "-p", "1", "--metrics-addr", &addr], &in_use);
    fails_with(&["run", "--metrics-addr", &addr, "--", "true"], &in_use);
}

/// A web configuration file that does not read, or one without an endpoint to
/// protect, is an error before anything is loaded: nothing is served unprotected by
/// mistake.
#[test]
fn web_configuration_is_checked_before_loading() {
    let endpoint = ["--metrics-addr", "127.0.0.1:0", "--web.config.file"];
    fails_with(
        &[
            &["export", "-p", "1"][..],
            &endpoint[..],
            &["/nonexistent/web.yml"],
        ]
        .concat(),
        "cannot read the web configuration /nonexistent/web.yml: No such file or directory (os error 2)",
    );
    fails_with(
        &[
            "run",
            "--web.config.file",
            "/nonexistent/web.yml",
            "--",
            "true",
        ],
        "--web.config.file protects the metrics endpoint: give --metrics-addr too",
    );
    let dir = std::env::temp_dir().join(format!("syscost-web-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("web.yml");
    for (text, expected) in [
        (
            "basic_auth_users:\n  prometheus: plaintext\n",
            "basic_auth_users: prometheus's password: not a bcrypt hash",
        ),
        (
            "tls_server_config:\n  cert_file: tls.crt\n",
            "tls_server_config: cert_file without key_file",
        ),
        (
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n",
            "cannot read the certificate",
        ),
        (
            "basic_auth_user:\n  prometheus: x\n",
            "unknown field `basic_auth_user`",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let path = file.to_str().unwrap();
        let o =
            output(syscost().args([&["export", "-p", "1"][..], &endpoint[..], &[path]].concat()));
        assert_eq!(o.status.code(), Some(1), "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!("syscost: {path}: ")) && err.contains(expected),
            "{text}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unwritable_outputs_fail_before_anything_runs() {
    fails_with(
        &["run", "--json", "/nonexistent-dir/p.json", "--", "true"],
        "cannot write /nonexistent-dir/p.json: No such file or directory (os error 2)",
    );
    fails_with(
        &["run", "--", "no-such-command-xyz"],
        "command not found: no-such-command-xyz (not in PATH)",
    );
}

/// `flame` takes a profile or folded stacks, and says which line of anything else is
/// neither.
#[test]
fn flame_refuses_a_file_that_is_neither_a_profile_nor_folded_stacks() {
    let dir = std::env::temp_dir().join(format!("syscost-flame-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.folded");
    std::fs::write(&bad, "app;main;read 3\nnot a stack\n").unwrap();
    let o = output(syscost().arg("flame").arg(&bad));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "syscost: {} is neither a profile (JSON) nor folded stacks: line 2 is not `frames VALUE`: \"not a stack\"\n",
            bad.display()
        )
    );
}

#[test]
fn report_rejects_bad_files() {
    let dir = std::env::temp_dir().join(format!("syscost-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, body: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    };
    let empty = file("empty.json", b"");
    fails_with(
        &["report", &empty],
        &format!("{empty}: empty file, not a syscost profile"),
    );
    let trunc = file("trunc.json", b"{\"version\": 1, \"arch\": \"x86");
    let o = output(syscost().args(["report", &trunc]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!("syscost: {trunc}: truncated JSON")),
        "{}",
        stderr(&o)
    );
    let future = file("future.json", b"{\"version\": 99}");
    fails_with(
        &["report", &future],
        &format!(
            "{future}: profile schema version 99 is newer than this syscost reads ({}): upgrade syscost",
            syscost_user::profile::SCHEMA_VERSION
        ),
    );
    let missing = dir.join("missing.json").to_string_lossy().into_owned();
    fails_with(
        &["report", &missing],
        &format!("cannot read {missing}: No such file or directory (os error 2)"),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--all` with two profiles is refused before a file is read (the shape of the diff
/// is known from the arguments alone).
#[test]
fn diff_all_of_two_profiles_is_refused_before_reading_them() {
    fails_with(
        &[
            "diff",
            "--all",
            "/nonexistent/a.json",
            "/nonexistent/b.json",
        ],
        "--all is for the table of variants (a third profile, several runs on a side, or --label); two profiles show every syscall",
    );
}

#[test]
fn diff_of_two_saved_profiles() {
    use syscost_user::{
        collector::Snapshot, profile::Target, report::json, syscall_names::SyscallId,
    };
    let profile = |reads: u64, eagain: u64| {
        let mut snap = Snapshot::empty();
        for i in 0..reads {
            snap.record(SyscallId::native(0), 1_000, (i < eagain).then_some(11));
        }
        json::to_string(&snap.to_profile(Target::default(), 1_000_000, true).unwrap())
    };
    let dir = std::env::temp_dir().join(format!("syscost-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (b, a) = (dir.join("before.json"), dir.join("after.json"));
    std::fs::write(&b, profile(48_000, 22_000)).unwrap();
    std::fs::write(&a, profile(28_000, 700)).unwrap();
    let o = output(syscost().arg("diff").arg(&b).arg(&a));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("syscalls -41.7% (48000 -> 28000), errors -96.8% (22000 -> 700)"),
        "{text}"
    );
    assert!(text.contains("  read EAGAIN 22000 -> 700\n"), "{text}");
    let o = output(syscost().arg("diff").arg("--json").arg(&b).arg(&a));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["total"]["calls"]["after"], 28000.0);
    std::fs::write(&a, b"{\"version\": 1, \"arch\"").unwrap();
    let o = output(syscost().arg("diff").arg(&b).arg(&a));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!("syscost: {}: truncated JSON", a.display())),
        "{}",
        stderr(&o)
    );
    // Variants: one --label per profile, no empty file name in a side.
    std::fs::write(&a, profile(28_000, 700)).unwrap();
    let o = output(syscost().arg("diff").args(["--label", "x"]).arg(&b).arg(&a));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "syscost: 1 --label for 2 profiles: give one per profile, in order\n"
    );
    let both = format!("{},,{}", b.display(), a.display());
    let o = output(syscost().arg("diff").arg(&b).arg(&both));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("syscost: an empty file name in"),
        "{}",
        stderr(&o)
    );
    // Labels make the table of variants, even of two profiles.
    let o = output(
        syscost()
            .arg("diff")
            .args(["--label", "old", "--label", "new"])
            .arg(&b)
            .arg(&a),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("profiles (the first is the baseline):\n  old      1 run: "),
        "{text}"
    );
    assert!(text.contains("\n  new: syscalls -41.7% (48000 -> 28000), read -41.7%; errors -96.8% (22000 -> 700): read EAGAIN 22000 -> 700;"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two profiles print what they printed before the table of variants came: the output
/// of the previous release on the same two files (tests/data/, of the profiles in
/// docs/) is where the output starts, its JSON keys keep their values, and what is new
/// follows it.
#[test]
fn two_profiles_print_what_they_printed_before() {
    let here = env!("CARGO_MANIFEST_DIR");
    let docs = format!("{here}/../docs");
    let old = |name: &str| std::fs::read_to_string(format!("{here}/tests/data/{name}")).unwrap();
    let new = |extra: &[&str]| {
        let o = output(
            syscost()
                .arg("diff")
                .args(extra)
                .arg(format!("{docs}/et-plain.json"))
                .arg(format!("{docs}/et-short.json")),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    for (file, extra) in [
        ("diff-two-way.txt", &[][..]),
        (
            "diff-two-way-per.txt",
            &["--per", "accept4", "-S", "name"][..],
        ),
    ] {
        let (was, is) = (old(file), new(extra));
        assert!(is.starts_with(&was), "{file}: was\n{was}\nis\n{is}");
        assert!(
            is[was.len()..].starts_with("\nlatency, one run on a side:"),
            "{file}: {}",
            &is[was.len()..]
        );
    }
    let was: serde_json::Value = serde_json::from_str(&old("diff-two-way.json")).unwrap();
    let is: serde_json::Value = serde_json::from_str(&new(&["--json"])).unwrap();
    let was = was.as_object().unwrap();
    for (key, value) in was {
        assert_eq!(&is[key], value, "{key}");
    }
    let added: Vec<&String> = is
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !was.contains_key(*k))
        .collect();
    assert_eq!(added, ["blocking", "latency"]);
}

/// `diff -e` narrows the rows and totals; `--per` still counts its units over every
/// syscall, the unit's row left out or not.
#[test]
fn diff_narrowed_by_e_keeps_the_units_of_per() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/diff/");
    let (a, b) = (format!("{d}et-plain-1.json"), format!("{d}et-short-1.json"));
    let o = output(syscost().args(["diff", "-e", "trace=%desc", "--per", "accept4", &a, &b]));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("per successful accept4 call (5000 before, 5000 after)\n"),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .skip(4)
        .take_while(|l| !l.starts_with("----"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        rows.contains(&"read") && rows.contains(&"epoll_wait"),
        "{text}"
    );
    assert!(
        !rows.contains(&"accept4") && !rows.contains(&"socket"),
        "{text}"
    );
    // Variants: the same.
    let o = output(syscost().args(["diff", "-e", "trace=%desc", "--per", "accept4", &a, &b, &a]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(", 5000 successful accept4 a run:"),
        "{}",
        stdout(&o)
    );
    let o = output(syscost().args(["diff", "-e", "status=failed", &a, &b]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("syscost: -e status= is for run, attach and report"));
}

/// The mistakes a newcomer makes first: one line saying what was wrong and what to type.
#[test]
fn a_newcomers_mistakes_say_what_to_type_instead() {
    // A command to trace without `--`, as strace takes it.
    let o = output(syscost().args(["run", "ls", "/", "it's"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "syscost: the command to trace goes after `--`: syscost run -- ls / 'it'\\''s'\n"
    );
    let o = output(syscost().args(["run", "-c", "ls"]));
    assert_eq!(
        stderr(&o),
        "syscost: the command to trace goes after `--`: syscost run -c -- ls\n"
    );
    // No target.
    for (cmd, expected) in [
        (
            "attach",
            "attach needs a target: -p PID (a process, its threads; -f its children too) or --cgroup PATH",
        ),
        (
            "export",
            "export needs a target: -p PID[,PID...], --cgroup PATH, or --top (every process of the machine)",
        ),
    ] {
        let o = output(syscost().arg(cmd));
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert_eq!(stderr(&o), format!("syscost: {expected}\n"));
    }
    // A file that is not a program.
    fails_with(
        &["run", "--", "/tmp"],
        "cannot run /tmp: it is a directory, not a program",
    );
    let dir = std::env::temp_dir().join(format!("syscost-newcomer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script");
    std::fs::write(&script, "echo hi\n").unwrap();
    // Whatever the umask.
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let s = script.display().to_string();
    fails_with(
        &["run", "--", &s],
        &format!(
            "cannot run {s}: it is not executable (mode 644): `chmod +x {s}`, or give its interpreter first (sh {s})"
        ),
    );
    fails_with(
        &["run", "--", &format!("{s}-absent")],
        &format!("command not found: no file {s}-absent"),
    );
    fails_with(
        &["run", "--", "/dev/null"],
        "cannot run /dev/null: it is not a regular file",
    );
    // An option's value that is the same word as the command.
    let o = output(syscost().args(["run", "-e", "sleep", "sleep", "1"]));
    assert_eq!(
        stderr(&o),
        "syscost: the command to trace goes after `--`: syscost run -e sleep -- sleep 1\n"
    );
    // Another missing companion is not a missing target.
    let o = output(syscost().args(["attach", "-p", "1", "--kernel-stacks"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--slow") && !stderr(&o).contains("needs a target"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // A regular expression that is not one: one line.
    fails_with(
        &["run", "-e", "trace=/[", "--", "true"],
        "-e trace=/[: not a regular expression (unclosed character class); for a literal name, leave out the /",
    );
}

/// `trace` takes a profile with slow calls, and says what else a file is for.
#[test]
fn trace_says_what_a_folded_file_is_for() {
    let dir = std::env::temp_dir().join(format!("syscost-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let folded = dir.join("stacks.folded");
    std::fs::write(&folded, "main;work;getppid 1000\n").unwrap();
    let f = folded.display().to_string();
    fails_with(
        &["trace", &f],
        &format!(
            "{f} is not a profile: `trace` reads one saved with --slow DURATION --json FILE (stacks files and folded stacks are for `syscost flame`)"
        ),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // Its help describes the trace, not flame's SVG.
    let o = output(syscost().args(["trace", "--help"]));
    let help = stdout(&o);
    assert!(help.contains("trace JSON"), "{help}");
    assert!(!help.contains("SVG"), "{help}");
}
