//! `--stacks`: the calls by user stack as folded stacks, one line per stack
//! (`comm;outermost;...;innermost;syscall VALUE`), what `inferno-flamegraph`,
//! `flamegraph.pl` and `syscost flame` draw; and the line that says what the file holds.

use std::collections::BTreeMap;

use crate::{
    profile::{CallStack, CallStacks, FramesFrom},
    units::thousands,
    untrusted::shown,
};

/// What a folded line's VALUE counts (`--stacks-value`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Weight {
    /// The calls.
    #[default]
    Calls,
    /// The time in the calls, ns.
    Time,
}

/// How the stacks file is written (`--stacks-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Folded stacks, one line per stack (`comm;outermost;...;innermost;syscall VALUE`).
    Folded,
    /// A gzipped pprof profile (`perftools.profiles.Profile`): both the calls and the
    /// time, by frame, with mappings and labels.
    Pprof,
}

impl Format {
    /// pprof for a name that ends in `.pb.gz`, `.pb` or `.pprof`; folded otherwise.
    pub fn of(path: &std::path::Path) -> Self {
        let name = path.to_string_lossy();
        if [".pb.gz", ".pb", ".pprof"]
            .iter()
            .any(|e| name.ends_with(e))
        {
            Format::Pprof
        } else {
            Format::Folded
        }
    }
}

/// The folded stacks of `stacks`, weighted by `weight`; identical paths (the same
/// name, frames and syscall in two processes) are one line. Names are printed as text
/// outputs print them, `;` (the separator) as `:`.
pub fn folded(stacks: &CallStacks, weight: Weight) -> String {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for s in &stacks.stacks {
        let mut path = vec![shown(&s.comm).replace(';', ":")];
        if s.frames.is_empty() {
            path.push("[no user stack]".to_string());
        }
        path.extend(
            s.frames
                .iter()
                .rev()
                .map(|f| f.folded_label().replace(';', ":")),
        );
        // A stacks file read back names its syscall as it chose: printed as any name.
        path.push(shown(&s.syscall).replace(';', ":"));
        let e = lines.entry(path.join(";")).or_default();
        *e = e.saturating_add(match weight {
            Weight::Calls => s.calls,
            Weight::Time => s.total_ns,
        });
    }
    lines
        .into_iter()
        .filter(|&(_, v)| v > 0)
        .map(|(k, v)| format!("{k} {v}\n"))
        .collect()
}

/// The innermost `n` frames of a stack, named, innermost first (`a < b < c`), `…` where
/// more follow.
pub fn frames_line(s: &CallStack, n: usize) -> String {
    if s.frames.is_empty() {
        return "[no user stack]".to_string();
    }
    let mut names: Vec<String> = s.frames.iter().take(n).map(|f| f.folded_label()).collect();
    if s.frames.len() > n {
        names.push("…".to_string());
    }
    names.join(" < ")
}

/// The stacks shown by `report` of a stacks file.
pub const REPORT_STACKS: usize = 20;

/// `syscost report` of a stacks file (a pprof profile): the calls and time by syscall,
/// then the [`REPORT_STACKS`] stacks with the most time, innermost frames first.
pub fn render(stacks: &CallStacks, name: &str) -> String {
    use std::fmt::Write as _;
    // Saturating: a file read back may hold any figures.
    let calls = stacks
        .stacks
        .iter()
        .fold(0u64, |n, s| n.saturating_add(s.calls));
    let mut by_syscall: BTreeMap<&str, (u64, u64, usize)> = BTreeMap::new();
    for s in &stacks.stacks {
        let e = by_syscall.entry(&s.syscall).or_default();
        e.0 = e.0.saturating_add(s.calls);
        e.1 = e.1.saturating_add(s.total_ns);
        e.2 += 1;
    }
    let mut rows: Vec<_> = by_syscall.into_iter().collect();
    rows.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(b.0)));
    let mut out = format!(
        "calls by user stack of {}: {}\n\n",
        shown(name),
        calls_from_stacks(calls, stacks.stacks.len())
    );
    let _ = writeln!(
        out,
        "{:<16} {:>12} {:>10} {:>7}",
        "syscall", "calls", "time", "stacks"
    );
    for (syscall, (calls, ns, n)) in &rows {
        let _ = writeln!(
            out,
            "{:<16} {:>12} {:>10} {:>7}",
            shown(syscall),
            thousands(*calls),
            crate::units::human_ns(*ns),
            n
        );
    }
    let mut by_time: Vec<&CallStack> = stacks.stacks.iter().collect();
    by_time.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then(b.calls.cmp(&a.calls))
            .then(a.pid.cmp(&b.pid))
    });
    let _ = writeln!(
        out,
        "\nthe {} {} with the most time, innermost frames first{}:",
        by_time.len().min(REPORT_STACKS),
        if by_time.len().min(REPORT_STACKS) == 1 {
            "stack"
        } else {
            "stacks"
        },
        if stacks.stacks.iter().any(|s| s.estimated) {
            " (~: split from a walk shared by several callers, an estimate)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "{:>10} {:>12} {:>8} {:<15} {:<16} frames",
        "time", "calls", "pid", "comm", "syscall"
    );
    for s in by_time.iter().take(REPORT_STACKS) {
        let _ = writeln!(
            out,
            "{:>10} {:>12}{}{:>7} {:<15} {:<16} {}",
            crate::units::human_ns(s.total_ns),
            thousands(s.calls),
            if s.estimated { "~" } else { " " },
            s.pid,
            shown(&s.comm),
            shown(&s.syscall),
            frames_line(s, 6)
        );
    }
    if by_time.len() > REPORT_STACKS {
        let _ = writeln!(out, "... {} more", by_time.len() - REPORT_STACKS);
    }
    out
}

/// `6,029 calls from 26 stacks`.
fn calls_from_stacks(calls: u64, stacks: usize) -> String {
    format!(
        "{} {} from {} {}",
        thousands(calls),
        if calls == 1 { "call" } else { "calls" },
        thousands(stacks as u64),
        if stacks == 1 { "stack" } else { "stacks" },
    )
}

/// One line on what a stacks file holds: its stacks and calls, which frames come from
/// samples, what was estimated or dropped.
pub fn summary(stacks: &CallStacks, path: &str) -> String {
    let calls = stacks
        .stacks
        .iter()
        .fold(0u64, |n, s| n.saturating_add(s.calls));
    let sampled = stacks
        .stacks
        .iter()
        .filter(|s| s.frames_from == FramesFrom::Sample)
        .count();
    let estimated = stacks.stacks.iter().filter(|s| s.estimated).count();
    let mut line = format!(
        "syscost: --stacks: {} written to {path}; {sampled} named from samples of their calls (1 in {}, unwound with .eh_frame), the rest by each call's frame-pointer walk",
        calls_from_stacks(calls, stacks.stacks.len()),
        stacks.sample_every,
    );
    if estimated > 0 {
        line.push_str(&format!(
            "; {estimated} split from a walk shared by several callers, in their samples' proportions (estimates)"
        ));
    }
    let dropped = [
        (stacks.calls_dropped, "calls under no stack (table full)"),
        (stacks.frames_dropped, "stacks whose walk found no room"),
        (stacks.samples_dropped, "samples without room in the ring"),
    ];
    for (n, what) in dropped {
        if n > 0 {
            line.push_str(&format!("; {} {what}", thousands(n)));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{CallStack, Frame};

    fn frame(f: &str) -> Frame {
        Frame {
            addr: 0x1000,
            function: Some(f.to_string()),
            ..Frame::default()
        }
    }

    fn stack(comm: &str, frames: &[&str], syscall: &str, calls: u64, ns: u64) -> CallStack {
        CallStack {
            pid: 7,
            comm: comm.to_string(),
            syscall: syscall.to_string(),
            calls,
            total_ns: ns,
            frames: frames.iter().map(|f| frame(f)).collect(),
            ..CallStack::default()
        }
    }

    /// A frame in no file is named as the JSON names it, not by its address.
    #[test]
    fn a_frame_in_no_file_says_why() {
        let mut s = stack("app", &["getppid", "main"], "clone3", 5, 50);
        s.frames.push(Frame {
            addr: 0x7f00_dead_beef,
            unknown: Some("in no mapping of the process".into()),
            ..Frame::default()
        });
        let stacks = CallStacks {
            stacks: vec![s],
            ..CallStacks::default()
        };
        assert_eq!(
            folded(&stacks, Weight::Calls),
            "app;0x7f00deadbeef [unknown: in no mapping of the process];main;getppid;clone3 5\n"
        );
    }

    /// A syscall named by a file read back (a pprof profile) is printed as any name: no
    /// `;` that would make a frame, no newline that would make a line; huge figures
    /// saturate.
    #[test]
    fn a_syscall_name_read_back_cannot_forge_lines() {
        let stacks = CallStacks {
            stacks: vec![
                stack("app", &["main"], "read;x\nevil 99", u64::MAX, 1),
                stack("app", &["main"], "read;x\nevil 99", 5, 1),
            ],
            ..CallStacks::default()
        };
        let text = folded(&stacks, Weight::Calls);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.ends_with(&format!(" {}\n", u64::MAX)), "{text}");
        assert!(!text.contains("read;x"), "{text}");
        assert!(render(&stacks, "f").contains(&thousands(u64::MAX)));
    }

    #[test]
    fn lines_go_outermost_first_and_merge_identical_paths() {
        let stacks = CallStacks {
            sample_every: 64,
            stacks: vec![
                stack("app", &["getppid", "site_a", "main"], "getppid", 1000, 5000),
                stack("app", &["getppid", "site_b", "main"], "getppid", 2000, 9000),
                stack("app", &["getppid", "site_a", "main"], "getppid", 3, 7),
                stack("a;b", &[], "read", 1, 10),
            ],
            ..CallStacks::default()
        };
        assert_eq!(
            folded(&stacks, Weight::Calls),
            "a:b;[no user stack];read 1\n\
             app;main;site_a;getppid;getppid 1003\n\
             app;main;site_b;getppid;getppid 2000\n"
        );
        assert_eq!(
            folded(&stacks, Weight::Time),
            "a:b;[no user stack];read 10\n\
             app;main;site_a;getppid;getppid 5007\n\
             app;main;site_b;getppid;getppid 9000\n"
        );
    }

    /// `report` of a stacks file: the syscalls by time, then the stacks by time with
    /// their innermost frames, an estimate marked.
    #[test]
    fn a_stacks_report_lists_syscalls_then_stacks_by_time() {
        let mut split = stack("app", &["getppid", "site_b", "main"], "getppid", 2000, 9000);
        split.estimated = true;
        let stacks = CallStacks {
            stacks: vec![
                stack("app", &["getppid", "site_a", "main"], "getppid", 1000, 5000),
                split,
                stack("b", &[], "read", 1, 20_000),
            ],
            ..CallStacks::default()
        };
        let text = render(&stacks, "x.pb.gz");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "calls by user stack of x.pb.gz: 3,001 calls from 3 stacks"
        );
        let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(lines[3]), ["read", "1", "20.0us", "1"]);
        assert_eq!(words(lines[4]), ["getppid", "3,000", "14.0us", "2"]);
        assert!(lines[6].contains("(~: split from a walk"), "{text}");
        assert_eq!(
            words(lines[8]),
            ["20.0us", "1", "7", "b", "read", "[no", "user", "stack]"]
        );
        assert_eq!(
            words(lines[9]),
            [
                "9.00us", "2,000~", "7", "app", "getppid", "getppid", "<", "site_b", "<", "main"
            ]
        );
        assert_eq!(lines.len(), 11, "{text}");
    }

    #[test]
    fn the_summary_names_what_is_sampled_estimated_and_dropped() {
        let mut s = stack("app", &["f"], "read", 10, 1);
        s.frames_from = FramesFrom::Sample;
        s.estimated = true;
        let stacks = CallStacks {
            sample_every: 64,
            stacks: vec![s, stack("app", &["g"], "read", 5, 1)],
            calls_dropped: 3,
            ..CallStacks::default()
        };
        let line = summary(&stacks, "out.folded");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert!(
            line.contains("15 calls from 2 stacks written to out.folded"),
            "{line}"
        );
        assert!(line.contains("1 named from samples"), "{line}");
        assert!(line.contains("1 split from a walk"), "{line}");
        assert!(line.contains("3 calls under no stack"), "{line}");
        assert!(!line.contains("ring"), "{line}");
    }
}
