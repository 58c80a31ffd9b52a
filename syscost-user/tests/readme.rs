//! README.md and docs/ against the program: the command list (docs/usage.md) names
//! every option of every command and nothing else, the `run`, JSON, top-file and `diff`
//! examples print what they show (the README's `run` example is the tested one, its
//! `top` and `doctor` examples have the shape those print), docs/usage.md's `top`,
//! `attach --cgroup`, `--slow` and `--stacks` examples are what those print and write
//! (the README's slow call is one of them), the README's `compare` table has the rows
//! `compare` prints, the bench tables they show are in the files they name, and every
//! test the docs name exists.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use clap::CommandFactory as _;
use common::*;

/// A file of the repository, by its path from the top (`README.md`, `docs/usage.md`).
fn doc(path: &str) -> String {
    let full = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The project's docs by their paths from the top: README.md, CONTRIBUTING.md and
/// docs/*.md.
fn doc_files() -> Vec<String> {
    let docs = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.ends_with(".md").then(|| format!("docs/{name}"))
        });
    ["README.md".to_string(), "CONTRIBUTING.md".to_string()]
        .into_iter()
        .chain(docs)
        .collect()
}

/// The lines of the fenced block that follows `heading`'s line.
fn block_after<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let from = text
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?}"));
    let rest = &text[from..];
    let start = rest.find("```text\n").expect("a text block") + "```text\n".len();
    let end = rest[start..].find("```").expect("the block ends");
    rest[start..start + end].lines().collect()
}

/// Options (`-x`, `--long`) written in `line`, outside `[...]` values like `CMD ARGS`.
fn options_in(line: &str) -> BTreeSet<String> {
    line.split(|c: char| c.is_whitespace() || "[]|,=".contains(c))
        .filter(|w| {
            let w = w.trim_end_matches("...");
            (w.starts_with("--")
                && w.len() > 2
                && w[2..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'))
                || (w.len() == 2 && w.starts_with('-') && w.as_bytes()[1].is_ascii_alphabetic())
        })
        .map(|w| w.trim_end_matches("...").to_string())
        .collect()
}

/// An option's short and long spellings (`-p`, `--pid`).
type Spellings = (Option<String>, Option<String>);

/// Every visible command (`lab echo-server` for nested ones) with its options.
fn cli_options() -> BTreeMap<String, Vec<Spellings>> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut BTreeMap<String, Vec<Spellings>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            let name = format!("{prefix}{}", sub.get_name());
            if sub.has_subcommands() {
                walk(sub, &format!("{name} "), out);
                continue;
            }
            let opts = sub
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_positional())
                .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
                .map(|a| {
                    (
                        a.get_short().map(|c| format!("-{c}")),
                        a.get_long().map(|l| format!("--{l}")),
                    )
                })
                .collect();
            out.insert(name, opts);
        }
    }
    let mut out = BTreeMap::new();
    walk(&syscost_user::cli::Cli::command(), "", &mut out);
    out
}

#[test]
fn the_command_list_names_every_option_and_no_other() {
    let text = doc("docs/usage.md");
    let lines = block_after(&text, "## Commands");
    let cli = cli_options();
    // README lines by command: `syscost lab echo-server ...` is `lab echo-server`.
    let mut listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in &lines {
        let rest = line
            .strip_prefix("syscost ")
            .unwrap_or_else(|| panic!("not a command line: {line}"));
        let mut words = rest.split_whitespace();
        let first = words.next().unwrap();
        let name = if first == "lab" {
            format!("lab {}", words.next().unwrap())
        } else {
            first.to_string()
        };
        listed.entry(name).or_default().extend(options_in(rest));
    }
    let mut wrong = Vec::new();
    for (name, opts) in &cli {
        let Some(readme_opts) = listed.get(name) else {
            wrong.push(format!("`syscost {name}` is not in the command list"));
            continue;
        };
        for (short, long) in opts {
            let named = |o: &Option<String>| o.as_ref().is_some_and(|o| readme_opts.contains(o));
            if !named(short) && !named(long) {
                wrong.push(format!(
                    "`syscost {name}`: {} is not in the command list",
                    long.as_ref().or(short.as_ref()).unwrap()
                ));
            }
        }
        for o in readme_opts {
            if !opts
                .iter()
                .any(|(s, l)| s.as_ref() == Some(o) || l.as_ref() == Some(o))
            {
                wrong.push(format!(
                    "`syscost {name}`: the command list names {o}, which it does not take"
                ));
            }
        }
    }
    for name in listed.keys().filter(|n| !cli.contains_key(*n)) {
        wrong.push(format!(
            "the command list names `syscost {name}`, which does not exist"
        ));
    }
    assert!(
        wrong.is_empty(),
        "README.md's command list:\n{}",
        wrong.join("\n")
    );
}

/// The profiles of the diff examples: docs/diff/.
fn diff_dir() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/diff").to_string()
}

/// `syscost diff` run as the example's `$ syscost diff ...` line says, in docs/diff/.
fn run_diff_line(line: &str, extra: &[&str]) -> std::process::Output {
    let args: Vec<&str> = line
        .strip_prefix("$ syscost diff ")
        .expect("a diff command")
        .split(' ')
        .collect();
    let o = output(
        syscost()
            .current_dir(diff_dir())
            .arg("diff")
            .args(extra)
            .args(&args),
    );
    assert!(o.status.success(), "{line}: {}", stderr(&o));
    o
}

/// Every line an example shows after its command (but `...`) is a line `diff` prints,
/// in the order printed.
fn shows_what_diff_prints(shown: &[&str], printed: &str) {
    let mut printed_lines = printed.lines();
    let shown: Vec<&str> = shown
        .iter()
        .copied()
        .take_while(|l| !l.starts_with("```"))
        .filter(|l| !l.is_empty() && *l != "...")
        .collect();
    assert!(shown.len() >= 12, "{shown:?}");
    for l in shown {
        assert!(
            printed_lines.any(|p| p == l),
            "the docs show a line diff does not print (or not there):\n{l}\nprinted:\n{printed}"
        );
    }
}

/// docs/usage.md's two-profile example, of the first run of two variants in docs/diff/.
#[test]
fn the_diff_example_is_what_diff_prints() {
    let text = doc("docs/usage.md");
    let lines = block_after(&text, "The lab's edge-triggered server before and after");
    assert_eq!(lines[0], "$ syscost diff et-plain-1.json et-short-1.json");
    let o = run_diff_line(lines[0], &[]);
    shows_what_diff_prints(&lines[1..], &stdout(&o));
}

/// The README's and docs/usage.md's examples of three variants of three runs each.
#[test]
fn the_variants_examples_are_what_diff_prints() {
    for (file, heading) in [
        ("README.md", "**`syscost diff BASE PROFILE...`**"),
        ("docs/usage.md", "## Variants and noise"),
    ] {
        let text = doc(file);
        let lines = block_after(&text, heading);
        let at = lines
            .iter()
            .position(|l| l.starts_with("$ syscost diff "))
            .unwrap_or_else(|| panic!("{file}: the diff command"));
        let o = run_diff_line(lines[at], &[]);
        shows_what_diff_prints(&lines[at + 1..], &stdout(&o));
    }
}

/// What the examples say of the lab's variants holds in the data: the read count and
/// the EAGAIN collapse are beyond the noise, the reads' latency (+20%) and the time in
/// epoll_wait (+22%) within it; with one run a side the counts have no verdict and the
/// reads' latency is told apart by their histograms.
#[test]
fn the_variants_example_marks_the_real_changes_only() {
    let text = doc("README.md");
    let lines = block_after(&text, "**`syscost diff BASE PROFILE...`**");
    let line = lines
        .iter()
        .find(|l| l.starts_with("$ syscost diff "))
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&run_diff_line(line, &["--json"]).stdout).unwrap();
    let row = |name: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))
            .clone()
    };
    let verdict = |r: &serde_json::Value, k: usize, figure: &str| {
        r["profiles"][k]["change"][figure]["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let read = row("read");
    for k in [1, 2] {
        assert_eq!(verdict(&read, k, "calls"), "significant");
        assert_eq!(verdict(&read, k, "errors"), "significant");
    }
    for k in [1, 2] {
        assert_eq!(verdict(&read, k, "avg_ns"), "within_noise");
        let shift = read["profiles"][k]["change"]["avg_ns"]["change_pct"]
            .as_f64()
            .unwrap();
        assert!(shift > 10.0, "the reads' latency moved by {shift}%");
    }
    assert_eq!(verdict(&row("epoll_wait"), 1, "total_ns"), "within_noise");
    assert_eq!(v["blocking"], serde_json::json!(["epoll_wait"]));
    let eagain: Vec<&serde_json::Value> = v["errnos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["errno"] == "EAGAIN")
        .collect();
    let read_eagain = eagain.iter().find(|e| e["syscall"] == "read").unwrap();
    for k in [1, 2] {
        assert_eq!(read_eagain["profiles"][k]["value"]["mean"], 0.0);
        assert_eq!(
            read_eagain["profiles"][k]["change"]["verdict"],
            "significant"
        );
    }
    // Nothing of the start-up syscalls is marked: they run the same in every variant.
    for r in v["rows"].as_array().unwrap() {
        let calls = r["profiles"][0]["calls"]["mean"].as_f64().unwrap();
        if calls < 20.0 {
            for k in [1, 2] {
                for figure in ["calls", "errors", "total_ns", "avg_ns"] {
                    assert_ne!(
                        verdict(r, k, figure),
                        "significant",
                        "{}: {figure} of {k}",
                        r["name"]
                    );
                }
            }
        }
    }
    // One run a side: counts not judged, the reads' latency judged by the histograms.
    let o = run_diff_line(
        "$ syscost diff et-plain-1.json et-short-1.json lt-1.json",
        &["--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let read = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "read")
        .unwrap();
    assert_eq!(
        read["profiles"][1]["change"]["calls"]["verdict"],
        "not_judged"
    );
    assert_eq!(
        read["profiles"][1]["change"]["avg_ns"]["verdict"],
        "significant"
    );
    assert!(
        read["profiles"][1]["change"]["avg_ns"]["rank_test"]["p_value"]
            .as_f64()
            .unwrap()
            < 0.001
    );
}

/// The first `run` example: the same rows, counts and columns (times differ by machine).
#[test]
fn the_run_example_counts_what_the_readme_shows() {
    let Some(_t) = root_test!() else {
        return;
    };
    let text = doc("docs/usage.md");
    let lines = block_after(&text, "(`syscost-workload`, in the examples,");
    let cmd = lines[0]
        .strip_prefix("$ sudo syscost ")
        .expect("a command first");
    let args: Vec<String> = cmd
        .split_whitespace()
        .map(|w| {
            if w == "syscost-workload" {
                workload_path().to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    let o = output(syscost().args(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stderr(&o);
    let got: Vec<&str> = table
        .lines()
        .filter(|l| !l.starts_with("syscost:"))
        .collect();
    let shown = &lines[1..];
    assert_eq!(got.len(), shown.len(), "rows:\n{table}");
    // Header, dashes and total in place; the syscall rows are sorted by time, which is the
    // machine's (a loaded machine's clone3 can outweigh 80,000 getppid), so each shown row
    // is found by its name, and the printed rows must be in falling order of time.
    let words = |l: &str| -> Vec<String> { l.split_whitespace().map(str::to_string).collect() };
    // The calls, errors (when any) and name: the columns from the fourth to the first that
    // is not a number.
    let key = |w: &[String]| -> Vec<String> {
        let name = 3 + w[3..]
            .iter()
            .position(|c| c.parse::<u64>().is_err())
            .expect("a name");
        w[3..=name].to_vec()
    };
    let is_row = |w: &[String]| !(w[0].starts_with('%') || w[0].starts_with('-'));
    let (got, shown): (Vec<Vec<String>>, Vec<Vec<String>>) = (
        got.iter().map(|l| words(l)).collect(),
        shown.iter().map(|l| words(l)).collect(),
    );
    let mut rows = Vec::new();
    for (g, s) in got.iter().zip(&shown) {
        assert_eq!(g.len(), s.len(), "columns: {g:?} against {s:?}");
        assert_eq!(is_row(g), is_row(s), "{g:?} against {s:?}");
        if !is_row(s) {
            assert_eq!(g, s);
        } else if key(s).last().map(String::as_str) == Some("total") {
            assert_eq!(key(g), key(s), "the total: {g:?} against {s:?}");
        } else {
            rows.push(g);
        }
    }
    let mut printed: Vec<Vec<String>> = rows.iter().map(|g| key(g)).collect();
    let mut wanted: Vec<Vec<String>> = shown
        .iter()
        .filter(|s| is_row(s) && key(s).last().map(String::as_str) != Some("total"))
        .map(|s| key(s))
        .collect();
    let share = |g: &Vec<String>| g[0].parse::<f64>().expect("a % time");
    assert!(
        rows.windows(2).all(|w| share(w[0]) >= share(w[1])),
        "rows in falling order of time:\n{table}"
    );
    printed.sort();
    wanted.sort();
    assert_eq!(printed, wanted, "calls, errors, name:\n{table}");
}

/// The JSON schema's example: the workload it names makes the counts it shows.
#[test]
fn the_json_example_counts_what_the_readme_shows() {
    let Some(t) = root_test!() else {
        return;
    };
    let text = doc("docs/json.md");
    let from = text.find("## JSON schema").expect("the schema section");
    let start = text[from..].find("```json\n").unwrap() + from + "```json\n".len();
    let end = text[start..].find("```").unwrap() + start;
    let shown: serde_json::Value =
        serde_json::from_str(&text[start..end]).expect("the example is JSON");
    let argv: Vec<&str> = shown["target"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(argv[0].ends_with("syscost-workload"), "{argv:?}");
    let (_o, p) = run_workload(&t, &argv[1..]);
    assert_eq!(p.version as u64, shown["version"].as_u64().unwrap());
    assert_eq!(p.arch, shown["arch"].as_str().unwrap());
    assert_eq!(p.target.comm, shown["target"]["comm"].as_str().unwrap());
    assert_eq!(
        serde_json::to_value(&p.features).unwrap(),
        shown["features"],
        "features"
    );
    for s in shown["syscalls"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let got = p.syscall(name).unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(got.nr, s["nr"].as_u64().unwrap(), "{name}");
        assert_eq!(got.calls, s["calls"].as_u64().unwrap(), "{name}");
        assert_eq!(got.errors, s["errors"].as_u64().unwrap(), "{name}");
        assert_eq!(
            serde_json::to_value(&got.errnos).unwrap(),
            s["errnos"],
            "{name}"
        );
    }
}

/// The top file's example reads as a top file: its sums add up.
#[test]
fn the_top_file_example_reads() {
    let text = doc("docs/json.md");
    let from = text.find("### The top file").expect("the top file section");
    let start = text[from..].find("```json\n").unwrap() + from + "```json\n".len();
    let end = text[start..].find("```").unwrap() + start;
    let p = syscost_user::report::json::parse(&text.as_bytes()[start..end])
        .unwrap_or_else(|e| panic!("the README's top file: {e:#}"));
    assert!(p.totals_only);
    assert_eq!(p.totals(), (1512, 12, 21_111_003));
}

/// `line` with every run of digits (and a decimal point between them) as `N`: the
/// shape of a line whose figures differ by machine.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// The README's `top --no-tui` example has the shape `top` prints: the totals' heading
/// line, the columns as printed, and the line of processes not shown.
#[test]
fn the_readme_top_example_is_what_top_prints() {
    let Some(_t) = root_test!() else {
        return;
    };
    let readme = doc("README.md");
    top_example_is_what_top_prints(&block_after(&readme, "**`syscost top`**"));
}

/// docs/usage.md's `top --no-tui` example, the same way, and the line `top` starts with.
#[test]
fn the_usage_top_example_is_what_top_prints() {
    let Some(_t) = root_test!() else {
        return;
    };
    let usage = doc("docs/usage.md");
    let block = block_after(&usage, "which container spends its time in `futex`");
    let end = block
        .iter()
        .position(|l| l.is_empty())
        .unwrap_or(block.len());
    top_example_is_what_top_prints(&block[..end]);
}

/// docs/usage.md's `attach --cgroup -L -e futex` example, run on a cgroup of the test's
/// (its path for the example's): the line it starts with, the table's header and rules
/// as printed, each row's columns and name, and the note on calls in flight when tracing
/// began with the printed one's shape. The workload in the cgroup has threads blocked
/// in reads when tracing begins, then joins them (futex); the trace ends with Ctrl-C
/// once it has exited, where the example's `-d 3` would wait on time.
#[test]
fn the_usage_cgroup_example_is_what_attach_prints() {
    let Some(_t) = root_test!() else {
        return;
    };
    let usage = doc("docs/usage.md");
    let block = block_after(&usage, "which container spends its time in `futex`");
    let from = block
        .iter()
        .position(|l| l.starts_with("$ sudo syscost attach --cgroup"))
        .expect("the attach --cgroup example");
    let shown = &block[from..];
    let words: Vec<&str> = shown[0]
        .strip_prefix("$ sudo syscost ")
        .expect("a command")
        .split_whitespace()
        .collect();
    let path_shown = words[words.iter().position(|w| *w == "--cgroup").unwrap() + 1];
    let d = words
        .iter()
        .position(|w| *w == "-d")
        .expect("-d in the example");
    let cg = TestCgroup::new("usage-example");
    let args: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != d && i != d + 1)
        .map(|(_, w)| {
            if *w == path_shown {
                cg.path.as_str()
            } else {
                w
            }
        })
        .collect();
    let (mut work, _out) = ready(&mut cg.run_inside("threads-waiting 4 1000000"));
    let (tracer, first, _err) = started(syscost().args(&args).stdout(std::process::Stdio::piped()));
    assert_eq!(first, shown[1].replace(path_shown, &cg.path));
    {
        use std::io::Write as _;
        writeln!(work.stdin.as_mut().unwrap(), "go").unwrap();
    }
    assert!(work.wait_exit().success());
    // SAFETY: signals a child of this test.
    unsafe { libc::kill(tracer.id() as i32, libc::SIGINT) };
    let o = tracer.into_inner().output_within();
    assert!(o.status.success(), "{}", stdout(&o));
    // The table and its note on stdout, as shown after the line on stderr.
    let out = stdout(&o);
    let printed: Vec<&str> = out.lines().collect();
    let shown = &shown[2..];
    assert_eq!(printed.len(), shown.len(), "lines:\n{out}");
    for (p, s) in printed.iter().zip(shown) {
        if s.starts_with('%') || s.starts_with('-') {
            assert_eq!(p, s);
        } else if s.starts_with("syscost:") {
            assert_eq!(shape(p), shape(s));
        } else {
            let (p, s): (Vec<&str>, Vec<&str>) = (
                p.split_whitespace().collect(),
                s.split_whitespace().collect(),
            );
            // The name, the same columns after it, and before it the figures (the
            // errors' column is empty in a row without errors).
            let name = |row: &[&str]| {
                row.iter()
                    .position(|c| c.parse::<f64>().is_err())
                    .unwrap_or_else(|| panic!("no name in {row:?}"))
            };
            let (np, ns) = (name(&p), name(&s));
            assert_eq!(p[np], s[ns], "{p:?} against {s:?}");
            assert_eq!(p.len() - np, s.len() - ns, "columns: {p:?} against {s:?}");
            assert!((4..=5).contains(&np), "columns: {p:?} against {s:?}");
        }
    }
}

/// `line` with every hexadecimal address (`0x...`) as `X` and every other number as
/// `N`: the shape of a slow call's line, whose addresses and times differ by run.
fn shape_of_report(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("0x") {
        out.push_str(&shape(&rest[..i]));
        out.push('X');
        rest = rest[i + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(&shape(rest));
    // A time's unit is the machine's too (30.6us here, 1.2ms there).
    for unit in ["Nns", "Nus", "Nms"] {
        out = out.replace(unit, "NU");
    }
    out.replace("Ns ", "NU ").replace("Ns)", "NU)")
}

/// The slow calls reported in `lines`: each `slow:` line with the names of the frames
/// under it (the address and a `(file:line)` left out), and whether it says where the
/// call blocked.
fn slow_reports<'a>(lines: &[&'a str]) -> Vec<(&'a str, Vec<&'a str>, bool)> {
    let mut out: Vec<(&str, Vec<&str>, bool)> = Vec::new();
    for l in lines {
        if l.starts_with("slow: ") {
            out.push((l, Vec::new(), false));
        } else if let (Some(frame), Some(last)) = (l.strip_prefix("    "), out.last_mut()) {
            if frame.starts_with("blocked in: ") {
                last.2 = true;
            } else if let Some((_, name)) = frame.trim_start().split_once(' ') {
                last.1.push(name.split(" (").next().unwrap_or(name));
            }
        }
    }
    out
}

/// The syscall of a `slow:` line.
fn slow_syscall(line: &str) -> &str {
    line["slow: ".len()..].split('(').next().unwrap_or("")
}

/// docs/usage.md's `--slow` example: run as shown (the test workload's build for the
/// release one), each call shown is reported with a line of the same shape, the frames
/// shown in that order among its frames (a test build keeps frames a release build
/// inlines) and a kernel stack where one is shown; the last line's counts are the
/// workload's (its 200 sleeps, its child's 50, its 50 reads of 20 ms), and the execve
/// shown, at 1.04 ms, is held only when this machine's exec was that slow too.
#[test]
fn the_usage_slow_call_example_is_what_run_prints() {
    let Some(_t) = root_test!() else {
        return;
    };
    let usage = doc("docs/usage.md");
    let shown = block_after(&usage, "every other call is only counted as before.");
    let args: Vec<&str> = shown[0]
        .strip_prefix("$ sudo syscost ")
        .expect("a command")
        .split_whitespace()
        .map(|w| {
            if w == "syscost-workload" {
                workload_path()
            } else {
                w
            }
        })
        .collect();
    let o = output(syscost().args(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let printed: Vec<&str> = err.lines().collect();
    let got = slow_reports(&printed);
    for (line, frames, blocked) in slow_reports(&shown) {
        let syscall = slow_syscall(line);
        if syscall == "execve" && !got.iter().any(|g| slow_syscall(g.0) == "execve") {
            continue;
        }
        // Whether an execve blocked is the machine's to say; sleeps and reads block.
        let found = got.iter().any(|(l, f, b)| {
            shape_of_report(l) == shape_of_report(line)
                && (*b == blocked || syscall == "execve")
                && {
                    let mut names = f.iter();
                    frames.iter().all(|want| names.any(|n| n == want))
                }
        });
        assert!(
            found,
            "no report like {line:?} with the frames {frames:?} (blocked: {blocked}):\n{err}"
        );
    }
    let summary = |lines: &[&str]| -> Option<String> {
        lines
            .iter()
            .rev()
            .find(|l| l.starts_with("syscost: ") && l.contains(" slow calls ("))
            .map(|l| l.to_string())
    };
    let shown_summary = summary(&shown).expect("the example's last line");
    let printed_summary =
        summary(&printed).unwrap_or_else(|| panic!("no count of the slow calls:\n{err}"));
    let counts = |l: &str| -> BTreeMap<String, String> {
        l.split_once("): ")
            .map(|(_, list)| list)
            .unwrap_or("")
            .split(", ")
            .filter_map(|p| p.split_once(' '))
            .map(|(n, c)| (n.to_string(), c.to_string()))
            .collect()
    };
    let (want, have) = (counts(&shown_summary), counts(&printed_summary));
    let count = |of: &BTreeMap<String, String>, name: &str| -> u64 {
        of.get(name)
            .unwrap_or_else(|| panic!("no {name} in {of:?}"))
            .parse()
            .expect("a count")
    };
    // Every sleep is slow; the 50 reads blocked 20 ms each are, and a read preempted
    // for a millisecond on a loaded machine would be one more.
    for name in ["nanosleep", "clock_nanosleep"] {
        assert_eq!(count(&want, name), count(&have, name), "{printed_summary}");
    }
    assert!(
        count(&have, "read") >= count(&want, "read"),
        "{printed_summary}"
    );
    let head = |l: &str| shape(l).split_once("): ").map(|(h, _)| h.to_string());
    assert_eq!(head(&shown_summary), head(&printed_summary));
    assert!(head(&shown_summary).is_some(), "{shown_summary}");
}

/// The README's slow call is docs/usage.md's read, its frames among those shown there.
#[test]
fn the_readme_slow_call_is_the_usage_example() {
    let readme = doc("README.md");
    let usage = doc("docs/usage.md");
    let tour = block_after(&readme, "**`--stacks FILE`**");
    let example = block_after(&usage, "every other call is only counted as before.");
    let shown = slow_reports(&tour);
    assert_eq!(shown.len(), 1, "{tour:?}");
    let (line, frames, blocked) = &shown[0];
    let (_, all, b) = slow_reports(&example)
        .into_iter()
        .find(|(l, _, _)| l == line)
        .unwrap_or_else(|| panic!("{line:?} is not in docs/usage.md's example"));
    assert_eq!(*blocked, b);
    let mut names = all.iter();
    assert!(
        frames.iter().all(|f| names.any(|n| n == f)),
        "{frames:?} not among {all:?} in order"
    );
    let kernel = |lines: &[&str]| {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with("blocked in: "))
            .map(|l| l.trim().to_string())
    };
    let in_usage = example
        .iter()
        .skip_while(|l| *l != line)
        .find(|l| l.trim_start().starts_with("blocked in: "))
        .map(|l| l.trim().to_string());
    assert_eq!(kernel(&tour), in_usage);
}

/// docs/usage.md's `--stacks` example, on the C program it names built as it says
/// (-O2, no frame pointers). Run as shown: the line `run` prints has the shown one's
/// shape up to the walk, what follows it is one of the clauses the docs give, and the
/// file's getppid calls sum to the program's 6,000 exactly (whether or not the program
/// exited before syscost read its mappings: the race the docs tell of below the
/// example). Run again with the program held until syscost has received its samples
/// (its `stdin` handshake, its mark a slow poll, a ring with room for every sample),
/// as the docs say the tests do: its getppid stacks are the ones shown, by name.
#[test]
fn the_usage_stacks_example_is_what_run_writes() {
    let Some(t) = root_test!() else {
        return;
    };
    let usage = doc("docs/usage.md");
    let shown = block_after(
        &usage,
        "(or the nanoseconds in them with `--stacks-value time`):",
    );
    let command = shown[0]
        .strip_prefix("$ sudo syscost ")
        .expect("a command")
        .split('#')
        .next()
        .unwrap();
    assert!(shown[0].contains("-O2"), "{}", shown[0]);
    assert_eq!(shown[2], "$ grep getppid sites.folded");
    let folded = t.path("sites.folded");
    let program = c_programs().join("sites");
    let args: Vec<std::ffi::OsString> = command
        .split_whitespace()
        .map(|w| match w {
            "sites.folded" => folded.clone().into_os_string(),
            "./sites" => program.clone().into_os_string(),
            w => w.into(),
        })
        .collect();
    // The getppid lines of the stacks file: their paths and their calls.
    let getppid = |text: &str| -> (BTreeSet<String>, u64) {
        let mut paths = BTreeSet::new();
        let mut calls = 0;
        for l in text.lines().filter(|l| l.contains("getppid")) {
            let (path, n) = l.rsplit_once(' ').expect("a folded line");
            calls += n.parse::<u64>().expect("a count");
            paths.insert(path.to_string());
        }
        (paths, calls)
    };

    let o = output(syscost().args(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o).replace(folded.to_str().unwrap(), "sites.folded");
    let line = err
        .lines()
        .find(|l| l.starts_with("syscost: --stacks:"))
        .unwrap_or_else(|| panic!("no --stacks line:\n{err}"));
    const WALK: &str = "the rest by each call's frame-pointer walk";
    let head = |l: &str| shape(l.split(WALK).next().unwrap());
    assert_eq!(head(line), head(shown[1]), "{line}");
    // The clauses after the walk: those of the example, or what a run that lost the
    // race adds (samples without room in the ring).
    for clause in line
        .split(WALK)
        .nth(1)
        .expect("the walk")
        .split("; ")
        .skip(1)
    {
        assert!(
            shape(shown[1]).contains(&shape(clause))
                || shape(clause) == "N samples without room in the ring",
            "{clause:?} in {line}"
        );
    }
    let text = std::fs::read_to_string(&folded).expect("the stacks file");
    assert_eq!(getppid(&text).1, 6000, "{text}");

    // Held: the names, in a file the first run did not write.
    std::fs::remove_file(&folded).expect("the first run's stacks file");
    let dashes = args
        .iter()
        .position(|a| a == "--")
        .expect("-- before the program");
    let mut held = syscost()
        .env("SYSCOST_TABLE_SIZES", "slow_ring=67108864")
        .args(&args[..dashes])
        .args(["--slow", "1ms", "--"])
        .arg(&program)
        .arg("stdin")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn_reaped();
    let mut lines = Lines::of(held.stderr.take().unwrap(), "syscost's stderr");
    lines.until("the report of the program's mark (a slow poll)", |l| {
        (l.starts_with("slow: poll(") || l.starts_with("slow: ppoll(")) && l.ends_with(" sites")
    });
    drop(held.stdin.take());
    assert!(held.wait_exit().success(), "{:?}", lines.rest());
    let text = std::fs::read_to_string(&folded).expect("the stacks file");
    let want: BTreeSet<String> = shown[3..]
        .iter()
        .map(|l| l.rsplit_once(' ').expect("a folded line").0.to_string())
        .collect();
    assert_eq!(getppid(&text), (want, 6000), "{text}");
}

/// Runs the command of a `top --no-tui` example (its first line, `-d` made 1 s) beside
/// more processes than its `-n` shows: the totals' heading (the shown line starting
/// `syscost top:`) has the printed one's shape, the columns after it are the printed
/// ones, the line of processes not shown has its shape, and a `syscost:` line shown
/// before the heading is one `top` printed.
fn top_example_is_what_top_prints(shown: &[&str]) {
    let args: Vec<String> = shown[0]
        .strip_prefix("$ sudo syscost ")
        .unwrap_or_else(|| panic!("not a command: {:?}", shown[0]))
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(args[..2], ["top", "--no-tui"], "{args:?}");
    let d = args
        .iter()
        .position(|a| a == "-d")
        .expect("-d in the example");
    let args: Vec<&str> = args
        .iter()
        .enumerate()
        .map(|(i, a)| if i == d + 1 { "1" } else { a.as_str() })
        .collect();
    // More processes making syscalls than the example shows, whatever else this
    // machine runs: the line of those not shown is printed.
    let shown_rows: usize = args[args.iter().position(|a| *a == "-n").expect("-n") + 1]
        .parse()
        .expect("-n N");
    let bystanders: Vec<Reaped> = (0..=shown_rows)
        .map(|_| {
            std::process::Command::new(workload_path())
                .args(["--die-with-parent", "mixed-forever", "1"])
                .stdout(std::process::Stdio::null())
                .spawn_reaped()
        })
        .collect();
    let o = output(syscost().args(&args));
    drop(bystanders);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let printed: Vec<&str> = out.lines().collect();
    let heading = shown
        .iter()
        .position(|l| l.starts_with("syscost top:"))
        .expect("the totals' heading in the example");
    for l in shown[1..heading]
        .iter()
        .filter(|l| l.starts_with("syscost:"))
    {
        assert!(
            stderr(&o).lines().any(|p| p == *l),
            "{l:?} not printed:\n{}",
            stderr(&o)
        );
    }
    // The totals come last: their heading is the last "syscost top:" line.
    let at = printed
        .iter()
        .rposition(|l| l.starts_with("syscost top:"))
        .unwrap_or_else(|| panic!("no totals in:\n{out}"));
    assert_eq!(
        shape(shown[heading]),
        shape(printed[at]),
        "the totals' heading"
    );
    assert_eq!(shown[heading + 1], printed[at + 1], "the columns");
    let more = |lines: &[&str]| {
        lines
            .iter()
            .find(|l| l.starts_with("... "))
            .map(|l| shape(l))
    };
    assert_eq!(
        more(shown),
        more(&printed[at..]),
        "the processes not shown (this machine runs more than one)"
    );
}

/// The README's `compare` table: the command its paragraph names (run with fewer
/// repetitions: the table's shape does not depend on them) prints the same heading, the
/// same rows in the same order, each with as many columns.
#[test]
fn the_readme_compare_example_is_what_compare_prints() {
    let Some(_t) = root_test!() else {
        return;
    };
    let readme = doc("README.md");
    let shown = block_after(&readme, "**`syscost compare`**");
    let from = readme.find("**`syscost compare`**").unwrap();
    let command = readme[from..]
        .split("(`syscost compare ")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .expect("the command the figures come from");
    let mut args: Vec<&str> = std::iter::once("compare")
        .chain(command.split_whitespace())
        .collect();
    let reps = args.iter().position(|a| *a == "--reps").expect("--reps") + 1;
    args[reps] = "100";
    let o = output(syscost().args(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let printed: Vec<&str> = out.lines().collect();
    let at = printed
        .iter()
        .position(|l| *l == shown[0])
        .unwrap_or_else(|| panic!("no heading {:?} in:\n{out}\n{}", shown[0], stderr(&o)));
    let label = |l: &str| l.get(..26).unwrap_or(l).trim_end().to_string();
    for (i, s) in shown.iter().enumerate().skip(1) {
        let p = printed
            .get(at + i)
            .unwrap_or_else(|| panic!("no row {s:?} in:\n{out}"));
        assert_eq!(label(p), label(s), "rows in order:\n{out}");
        let columns = |l: &str| l.get(26..).map(|c| c.split_whitespace().count());
        assert!(columns(s).is_some_and(|n| n > 0), "a row of figures: {s:?}");
        assert_eq!(columns(p), columns(s), "{p:?} against {s:?}");
    }
}

/// The README's `doctor` example: each line shown is one `doctor` prints here, with the
/// same verdict, in the same order (what follows the name differs by host).
#[test]
fn the_readme_doctor_example_is_what_doctor_prints() {
    let Some(_t) = root_test!() else {
        return;
    };
    let readme = doc("README.md");
    let shown = block_after(&readme, "**`syscost doctor`**");
    assert_eq!(shown[0], "$ sudo syscost doctor");
    let out = stdout(&output(syscost().arg("doctor")));
    let head = |l: &str| -> Option<(String, String)> {
        let (tag, rest) = l.split_once(' ')?;
        let (name, _) = rest.trim_start().split_once(':')?;
        Some((tag.to_string(), name.to_string()))
    };
    let printed: Vec<(String, String)> = out.lines().filter_map(head).collect();
    let mut from = 0;
    for l in shown[1..].iter().filter(|l| **l != "...") {
        let want = head(l).unwrap_or_else(|| panic!("not a check: {l:?}"));
        let found = printed[from..]
            .iter()
            .position(|p| *p == want)
            .unwrap_or_else(|| panic!("{want:?} not printed (in this order) by doctor:\n{out}"));
        from += found + 1;
    }
}

/// The README's tour shows the same `run` table as docs/usage.md (one example, kept in
/// one state).
#[test]
fn the_readme_tour_shows_the_tested_run_example() {
    let usage = doc("docs/usage.md");
    let tested = block_after(&usage, "(`syscost-workload`, in the examples,");
    let readme = doc("README.md");
    let tour = block_after(&readme, "**`syscost run -- CMD`**");
    assert_eq!(tour, tested);
}

/// Every test the README and docs name (`file::test`, as a guarantee's "Held by") is a
/// test of that file (the binary's tests, or the engine's).
#[test]
fn every_test_the_docs_name_exists() {
    let dirs = [
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests"),
        concat!(env!("CARGO_MANIFEST_DIR"), "/../syscost-engine/tests"),
    ];
    let mut named = 0;
    let mut missing = Vec::new();
    for path in &doc_files() {
        let text = doc(path);
        for span in text.split('`').skip(1).step_by(2) {
            let Some((file, test)) = span.split_once("::") else {
                continue;
            };
            if !test
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            {
                continue;
            }
            let Some(code) = dirs
                .iter()
                .find_map(|dir| std::fs::read_to_string(format!("{dir}/{file}.rs")).ok())
            else {
                // A test's name (a sentence: `file::what_it_holds_when_so`) in a file
                // that is not there: renamed or gone, the docs still name it. A module
                // path (`report::top`) is no test's name.
                if test.matches('_').count() >= 3
                    && !file.is_empty()
                    && file.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                {
                    missing.push(format!("{path}: {file}::{test} (no tests/{file}.rs)"));
                }
                continue;
            };
            named += 1;
            if !code.contains(&format!("#[test]\nfn {test}()")) {
                missing.push(format!("{path}: {file}::{test}"));
            }
        }
    }
    assert!(named >= 20, "the docs name {named} tests");
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` left
/// out, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside fenced blocks); a repeated one
/// gets `-1`, `-2`, as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let Some(title) = line.trim_start_matches('#').strip_prefix(' ') else {
            continue;
        };
        if !line.starts_with('#') {
            continue;
        }
        let a = anchor(title);
        let n = seen.entry(a.clone()).or_insert(0);
        out.insert(if *n == 0 {
            a.clone()
        } else {
            format!("{a}-{n}")
        });
        *n += 1;
    }
    out
}

/// Every link from README.md and docs/*.md to a file of the repository finds it, and
/// its `#anchor` a heading there: a renamed heading or a moved file fails here.
#[test]
fn every_link_between_the_docs_lands() {
    let files = doc_files();
    let mut broken = Vec::new();
    for file in &files {
        let text = doc(file);
        let dir = std::path::Path::new(file).parent().unwrap().to_path_buf();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (path, frag) = target.split_once('#').unwrap_or((target, ""));
            let linked = if path.is_empty() {
                file.clone()
            } else {
                let joined = dir.join(path);
                // Normalise `docs/../bench/x` to `bench/x`.
                let mut parts: Vec<String> = Vec::new();
                for c in joined.components() {
                    match c {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        std::path::Component::Normal(n) => {
                            parts.push(n.to_string_lossy().into_owned())
                        }
                        _ => {}
                    }
                }
                parts.join("/")
            };
            let full = format!("{}/../{linked}", env!("CARGO_MANIFEST_DIR"));
            if !std::path::Path::new(&full).exists() {
                broken.push(format!("{file}: {target}: no {linked}"));
                continue;
            }
            if !frag.is_empty() && linked.ends_with(".md") && !anchors(&doc(&linked)).contains(frag)
            {
                broken.push(format!("{file}: {target}: no heading #{frag} in {linked}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that land nowhere:\n{}",
        broken.join("\n")
    );
}

/// The bench tables the docs show (README, CONTRIBUTING, docs/) are the bench's: each
/// text block whose paragraph names files of `bench/` has every line in one of them (a
/// line may be cut short, as long as what is shown is the file's), and each file named
/// is there.
#[test]
fn every_bench_table_the_docs_show_is_in_its_file() {
    let mut checked = 0;
    for file in &doc_files() {
        let text = doc(file);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("```text\n") {
            let before = rest[..at].trim_end_matches('\n');
            let paragraph = &before[before.rfind("\n\n").map_or(0, |i| i + 2)..];
            let body = &rest[at + "```text\n".len()..];
            let end = body.find("```").expect("the block ends");
            let block = &body[..end];
            rest = &body[end + 3..];
            let named: Vec<&str> = paragraph
                .split(|c: char| c.is_whitespace() || "`(),;:".contains(c))
                .filter(|w| w.starts_with("bench/") && w.len() > "bench/".len())
                .map(|w| w.trim_end_matches('.'))
                .collect();
            if named.is_empty() {
                continue;
            }
            let lines: Vec<String> = named
                .iter()
                .flat_map(|b| {
                    let full = format!("{}/../{b}", env!("CARGO_MANIFEST_DIR"));
                    std::fs::read_to_string(&full)
                        .unwrap_or_else(|e| panic!("{file} names {b}: {e}"))
                        .lines()
                        .map(|l| l.trim().to_string())
                        .collect::<Vec<_>>()
                })
                .collect();
            for l in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
                assert!(
                    lines.iter().any(|b| b.starts_with(l)),
                    "{file}: {l:?} is in none of {named:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked} tables checked");
}

/// The numbers written in `text` (`1,161`, `17.0`, `288`, both ends of `4.1-4.4`), each
/// with its decimals; not those inside a word, a date, a path or a version (`x86_64`,
/// `2026-12-04`, `bench/x`, `5.10.0`).
fn figures(text: &str) -> Vec<(f64, usize)> {
    // Dates out first: a `-` otherwise joins the two ends of a range.
    let mut t = text.as_bytes().to_vec();
    let date: &[u8] = b"dddd-dd-dd";
    for i in 0..t.len().saturating_sub(date.len() - 1) {
        let is_date = date.iter().enumerate().all(|(k, &c)| {
            let b = t[i + k];
            if c == b'd' {
                b.is_ascii_digit()
            } else {
                b == c
            }
        });
        if is_date {
            t[i..i + date.len()].fill(b' ');
        }
    }
    let b = &t[..];
    let joined = |c: u8| c.is_ascii_alphanumeric() || b"._/".contains(&c);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && joined(b[i - 1])) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        // Thousands: a comma and three digits, no fourth.
        while j + 3 < b.len()
            && b[j] == b','
            && b[j + 1..j + 4].iter().all(u8::is_ascii_digit)
            && !b.get(j + 4).is_some_and(u8::is_ascii_digit)
        {
            j += 4;
        }
        let mut decimals = 0;
        if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
                decimals += 1;
            }
        }
        let glued = b
            .get(j)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'/')
            || (b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit));
        if !glued {
            let v: f64 = String::from_utf8_lossy(&b[i..j])
                .replace(',', "")
                .parse()
                .expect("digits");
            out.push((v, decimals));
        }
        i = j.max(i + 1);
    }
    out
}

/// The README's figures are its bench files': in each paragraph that names files of
/// `bench/`, every number of 100 or more, or with decimals, is one of theirs, as written
/// or rounded (ns shown as us or ms): a figure left from an older run fails here.
#[test]
fn the_readme_figures_are_in_the_bench_files_it_names() {
    let readme = doc("README.md");
    let mut checked = 0;
    let mut fenced = false;
    let mut prose = String::new();
    for line in readme.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    for paragraph in prose.split("\n\n") {
        let mut named = Vec::new();
        let mut words = String::new();
        // Code spans out (commands, flags), the files they name kept.
        for (k, part) in paragraph.split('`').enumerate() {
            if k % 2 == 1 {
                if let Some(b) = part.strip_prefix("bench/") {
                    named.push(format!("bench/{b}"));
                }
            } else {
                words.push_str(part);
                words.push(' ');
            }
        }
        if named.is_empty() {
            continue;
        }
        let theirs: Vec<f64> = named
            .iter()
            .flat_map(|b| {
                let full = format!("{}/../{b}", env!("CARGO_MANIFEST_DIR"));
                figures(&std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{b}: {e}")))
            })
            .map(|(v, _)| v)
            .collect();
        for (v, decimals) in figures(&words) {
            if decimals == 0 && v < 100.0 {
                continue;
            }
            let scale = 10f64.powi(decimals as i32);
            let found = theirs.iter().any(|&y| {
                [1.0, 1e3, 1e6]
                    .iter()
                    .any(|unit| ((y / unit) * scale).round() == (v * scale).round())
            });
            assert!(found, "README's {v} is in none of {named:?}: {paragraph}");
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} figures checked");
}

/// Numbers as the figures test reads them: a ratio written `1/344` is none.
#[test]
fn figures_are_read_as_written() {
    assert_eq!(
        figures("adds 1,161 ns, 17.0 ms (x86_64, 2026-12-04, 5.10.0, v2) 1/344 of 0.54, 4.1-4.4"),
        [(1161.0, 0), (17.0, 1), (0.54, 2), (4.1, 1), (4.4, 1)]
    );
}

/// docs/json.md's headings name the schema versions syscost writes.
#[test]
fn the_json_docs_name_the_schema_versions_written() {
    let text = doc("docs/json.md");
    let profile = format!(
        "## JSON schema (version {})",
        syscost_report::profile::SCHEMA_VERSION
    );
    let top = format!(
        "### The top file (schema {})",
        syscost_report::profile::TOP_SCHEMA
    );
    assert!(text.contains(&profile), "docs/json.md lacks {profile:?}");
    assert!(text.contains(&top), "docs/json.md lacks {top:?}");
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(anchor("The top file (schema 4)"), "the-top-file-schema-4");
    assert_eq!(
        anchor("From strace: its summary flags"),
        "from-strace-its-summary-flags"
    );
    assert_eq!(
        anchors("# A\n```\n# not\n```\n## A\n"),
        BTreeSet::from(["a".to_string(), "a-1".to_string()])
    );
}

/// docs/usage.md's picture of the live view is the frame the views' tests keep (the
/// 80x24 snapshot), trailing blanks cut.
#[test]
fn the_live_view_picture_is_the_snapshot() {
    let snap = doc(
        "syscost-views/src/tui/ui/snapshots/syscost_views__tui__ui__tests__main_table_80x24.snap",
    );
    let frame: Vec<String> = snap
        .lines()
        .filter_map(|l| l.strip_prefix('"')?.strip_suffix('"'))
        .map(|l| {
            l.replace("\\\"", "\"")
                .replace("\\\\", "\\")
                .trim_end()
                .to_string()
        })
        .collect();
    assert_eq!(frame.len(), 24, "{snap}");
    let text = doc("docs/usage.md");
    let shown = block_after(&text, "## The live view");
    assert_eq!(
        shown, frame,
        "docs/usage.md's live view is not the snapshot's frame"
    );
}
