//! Property tests: profiles the reader accepts, with figures at the edges (counts and
//! times near u64::MAX over the number of rows, zeros, one row, many rows, empty
//! histograms), through the reader and every view: none panics, a percentage of time
//! stays within 0..=100, a total is the sum of its rows, nothing prints NaN or inf.

use std::collections::BTreeMap;

use proptest::prelude::*;
use syscost_common::HISTOGRAM_BUCKETS;

use crate::{
    latency,
    profile::{
        CallStack, CallStacks, Frame, FramesFrom, ProcessSyscall, ProcessTotals, Profile, SlowCall,
        SortKey, SyscallProfile, TOP_SCHEMA, TopDocument, TopSort,
    },
    report::{
        call_stacks,
        diff::{self, DiffSort, Variant},
        json, slow,
        strace_table::{self, Column, Columns, TableOptions},
        top,
    },
    strace_filter::{self, Status},
};

/// A figure of at most `budget`: the edges and anything between.
fn figure(budget: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(budget.min(1)),
        Just(budget),
        Just(budget.saturating_sub(1)),
        0..=budget,
    ]
}

/// `n` in `0..=total`, `total - n` its rest.
fn part_of(total: u64) -> impl Strategy<Value = u64> {
    prop_oneof![Just(0), Just(total), 0..=total]
}

/// Three values in order.
fn ordered() -> impl Strategy<Value = [u64; 3]> {
    prop::array::uniform3(prop_oneof![Just(0), Just(u64::MAX), any::<u64>()]).prop_map(|mut v| {
        v.sort();
        v
    })
}

/// A consistent row of syscall number `nr`, its calls and time within the budgets.
fn row(nr: u64, calls_budget: u64, time_budget: u64) -> impl Strategy<Value = SyscallProfile> {
    (figure(calls_budget), figure(time_budget)).prop_flat_map(move |(calls, total)| {
        (
            part_of(calls),
            part_of(total),
            part_of(calls),
            0..HISTOGRAM_BUCKETS,
            0..HISTOGRAM_BUCKETS,
            ordered(),
            ordered(),
            part_of(calls),
        )
            .prop_map(
                move |(errors, offcpu, first, i, j, [min, _, max], [p50, p90, p99], eagain)| {
                    let mut dense = vec![0u64; HISTOGRAM_BUCKETS];
                    dense[i] += first;
                    dense[j] += calls - first;
                    let mut errnos = BTreeMap::new();
                    let eagain = eagain.min(errors);
                    for (name, n) in [("EAGAIN", eagain), ("ENOENT", errors - eagain)] {
                        if n > 0 {
                            errnos.insert(name.to_string(), n);
                        }
                    }
                    SyscallProfile {
                        name: crate::syscall_names::name(false, nr),
                        nr,
                        calls,
                        errors,
                        errnos,
                        total_ns: total,
                        oncpu_ns: total - offcpu,
                        offcpu_ns: offcpu,
                        voluntary_switches: calls,
                        involuntary_switches: u64::MAX,
                        avg_ns: total.checked_div(calls).unwrap_or(0),
                        min_ns: min,
                        max_ns: max,
                        p50_ns: p50,
                        p90_ns: p90,
                        p99_ns: p99,
                        histogram: latency::to_sparse(&dense),
                    }
                },
            )
    })
}

/// Rows of distinct syscalls: none, one, a few or many.
fn rows() -> impl Strategy<Value = Vec<SyscallProfile>> {
    prop_oneof![Just(0usize), Just(1usize), 2..=8usize, Just(60usize)].prop_flat_map(|n| {
        let calls = u64::MAX / n.max(1) as u64;
        let time = u64::MAX / n.max(1) as u64;
        (0..n as u64)
            .map(|nr| row(nr, calls, time))
            .collect::<Vec<_>>()
    })
}

fn frame(name: &str) -> Frame {
    Frame {
        addr: 0x1000,
        function: Some(name.to_string()),
        ..Frame::default()
    }
}

/// Stacks of few names, so that identical paths meet in one folded line.
fn call_stacks() -> impl Strategy<Value = Option<CallStacks>> {
    prop_oneof![Just(0usize), 1..=6usize].prop_flat_map(|n| {
        let budget = u64::MAX / n.max(1) as u64;
        let one = (figure(budget), figure(budget), 0..3usize, any::<bool>()).prop_map(
            |(calls, total_ns, f, estimated)| CallStack {
                pid: 7,
                comm: "app".into(),
                syscall: "read".into(),
                calls,
                total_ns,
                frames: ["main", "a", "b"][..f].iter().map(|n| frame(n)).collect(),
                frames_from: if estimated {
                    FramesFrom::Sample
                } else {
                    FramesFrom::Walk
                },
                estimated,
                samples: calls,
                cgroup: None,
            },
        );
        (prop::collection::vec(one, n), any::<u64>(), any::<bool>()).prop_map(
            move |(stacks, dropped, none)| {
                (!(none && n == 0)).then_some(CallStacks {
                    sample_every: 64,
                    stacks,
                    calls_dropped: dropped,
                    frames_dropped: dropped,
                    samples: dropped,
                    samples_dropped: dropped,
                })
            },
        )
    })
}

fn slow_calls() -> impl Strategy<Value = Vec<SlowCall>> {
    prop_oneof![Just(0usize), 1..=5usize].prop_flat_map(|n| {
        let budget = u64::MAX / n.max(1) as u64;
        let one = (figure(budget), any::<u64>(), 0..3usize, any::<i64>()).prop_map(
            |(latency_ns, start_ns, f, ret)| SlowCall {
                start_ns,
                end_ns: start_ns.saturating_add(latency_ns),
                pid: 7,
                tid: 8,
                comm: "app".into(),
                syscall: "read".into(),
                latency_ns,
                offcpu_ns: latency_ns / 2,
                ret,
                args: [u64::MAX; 6],
                stack: ["main", "a", "b"][..f].iter().map(|n| frame(n)).collect(),
                ..SlowCall::default()
            },
        );
        prop::collection::vec(one, n)
    })
}

/// Processes whose syscalls (of few names, so that they are summed) sum to theirs.
fn processes() -> impl Strategy<Value = Vec<ProcessTotals>> {
    prop_oneof![Just(0usize), 1..=4usize].prop_flat_map(|n| {
        let budget = u64::MAX / (n.max(1) as u64 * 3);
        let syscall =
            (0..3usize, figure(budget), figure(budget)).prop_flat_map(|(k, calls, total_ns)| {
                (part_of(calls), part_of(total_ns)).prop_map(move |(errors, offcpu_ns)| {
                    ProcessSyscall {
                        name: ["read", "write", "futex"][k].into(),
                        calls,
                        errors,
                        total_ns,
                        offcpu_ns,
                    }
                })
            });
        let process = (
            prop::collection::vec(syscall, 1..=3),
            any::<u32>(),
            any::<bool>(),
        )
            .prop_map(|(syscalls, threads, exited)| {
                let sum = |f: fn(&ProcessSyscall) -> u64| syscalls.iter().map(f).sum::<u64>();
                ProcessTotals {
                    pid: 0,
                    comm: "app".into(),
                    cgroup: "/a".into(),
                    exited,
                    threads,
                    summed: 0,
                    calls: sum(|s| s.calls),
                    errors: sum(|s| s.errors),
                    total_ns: sum(|s| s.total_ns),
                    oncpu_ns: sum(|s| s.total_ns) - sum(|s| s.offcpu_ns),
                    syscalls,
                }
            });
        prop::collection::vec(process, n).prop_map(|mut ps| {
            for (i, p) in ps.iter_mut().enumerate() {
                p.pid = i as u32 + 1;
            }
            ps
        })
    })
}

/// A profile the reader accepts, with figures at the edges.
fn profile() -> impl Strategy<Value = Profile> {
    (
        rows(),
        call_stacks(),
        slow_calls(),
        processes(),
        any::<bool>(),
        any::<[u64; 4]>(),
    )
        .prop_map(
            |(rows, stacks, slow, processes, offcpu, [duration, unpaired, dropped, unseen])| {
                let has_slow = !slow.is_empty();
                Profile {
                    duration_ns: duration,
                    offcpu_tracked: offcpu,
                    unpaired,
                    dropped,
                    switch_ins_unseen: unseen,
                    stacks,
                    slow_threshold: has_slow.then(|| "1ms".into()),
                    slow_calls: slow,
                    slow_dropped: dropped,
                    processes,
                    ..crate::fixtures::profile_of(rows)
                }
            },
        )
}

/// Text a view printed must not show a number that is not one.
fn no_nonsense(text: &str) {
    for word in ["NaN", "inf"] {
        assert!(!text.contains(word), "{word} in:\n{text}");
    }
}

/// A line of a table in the usual layout: its `% time` (`None` where times are not
/// shown) and its calls.
type Line = (Option<f64>, u64);

/// The rows and the total line of a table in the usual layout.
fn usual_rows(text: &str) -> (Vec<Line>, Line) {
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("% time"), "{text}");
    assert!(lines.next().unwrap().starts_with("------"), "{text}");
    let cols = |l: &str| {
        let w: Vec<&str> = l.split_whitespace().collect();
        let pct = (w[0] != "-").then(|| w[0].parse::<f64>().unwrap());
        (pct, w[3].parse::<u64>().unwrap())
    };
    let mut rows = Vec::new();
    for l in lines.by_ref() {
        if l.starts_with("------") {
            break;
        }
        rows.push(cols(l));
    }
    (rows, cols(lines.next().unwrap()))
}

/// The strace table in each layout: the percentages within 0..=100, the total's calls
/// the sum of the rows'.
fn tables(p: &Profile) {
    let (calls, _, _) = p.totals();
    let unit = p.syscalls.first().map(|s| s.name.clone());
    let mut layouts = vec![
        TableOptions::default(),
        TableOptions {
            latency: true,
            sort: SortKey::P99,
            ..Default::default()
        },
        TableOptions {
            per: unit.clone(),
            sort: SortKey::Avg,
            ..Default::default()
        },
        TableOptions {
            per: Some("accept4".into()),
            latency: true,
            sort: SortKey::Nothing,
            ..Default::default()
        },
    ];
    for key in [SortKey::Calls, SortKey::Errors, SortKey::Max, SortKey::Name] {
        layouts.push(TableOptions {
            sort: key,
            ..Default::default()
        });
    }
    for opts in &layouts {
        let text = strace_table::render(p, opts);
        no_nonsense(&text);
        let (rows, total) = usual_rows(&text);
        assert_eq!(rows.len(), p.syscalls.len(), "{text}");
        for (pct, _) in &rows {
            let pct = pct.unwrap();
            assert!((0.0..=100.0).contains(&pct), "{pct}:\n{text}");
        }
        let sum: u128 = rows.iter().map(|r| u128::from(r.1)).sum();
        assert_eq!(sum, u128::from(total.1), "{text}");
        assert_eq!(total.1, calls, "{text}");
    }
    // -z and -Z: the successful or failed calls alone, no times.
    for status in [Status::Successful, Status::Failed] {
        let counted = strace_filter::counted(p, status);
        let opts = TableOptions {
            note: Some(strace_filter::status_note(status)),
            no_times: true,
            latency: true,
            per: unit.clone(),
            ..Default::default()
        };
        let text = strace_table::render_of(&counted, p, &opts);
        no_nonsense(&text);
        let (rows, total) = usual_rows(&text);
        assert!(rows.iter().all(|r| r.0.is_none()), "{text}");
        let sum: u128 = rows.iter().map(|r| u128::from(r.1)).sum();
        assert_eq!(sum, u128::from(total.1), "{text}");
    }
    // -U: every column, in strace's order and reversed.
    let all = [
        Column::TimePercent,
        Column::TotalTime,
        Column::MinTime,
        Column::MaxTime,
        Column::AvgTime,
        Column::Calls,
        Column::Errors,
        Column::Name,
    ];
    let reversed: Vec<Column> = all.iter().rev().copied().collect();
    for columns in [all.to_vec(), reversed] {
        let opts = TableOptions {
            columns: Some(Columns(columns.clone())),
            ..Default::default()
        };
        let text = strace_table::render(p, &opts);
        no_nonsense(&text);
        let at = |c: Column| columns.iter().position(|&x| x == c).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let end = lines[2..].iter().position(|l| l.starts_with('-')).unwrap() + 2;
        let mut sum = 0u128;
        for l in &lines[2..end] {
            // Errors are blank when 0: the columns after them are counted from the end.
            let w: Vec<&str> = l.split_whitespace().collect();
            let cell = |c: Column| {
                let i = at(c);
                if i < at(Column::Errors) {
                    w[i]
                } else {
                    w[w.len() - (columns.len() - i)]
                }
            };
            let pct: f64 = cell(Column::TimePercent).parse().unwrap();
            assert!((0.0..=100.0).contains(&pct), "{pct}:\n{text}");
            sum += cell(Column::Calls).parse::<u128>().unwrap();
        }
        let nonzero = p.syscalls.iter().filter(|s| s.calls > 0).count();
        assert_eq!(end - 2, nonzero, "{text}");
        assert_eq!(sum, u128::from(calls), "{text}");
        assert!(
            lines[end + 1]
                .split_whitespace()
                .any(|w| w == calls.to_string()),
            "{text}"
        );
    }
}

/// The pair of two profiles: each row the profiles' figures, the total theirs.
fn pair(before: &Profile, after: &Profile) {
    let units = before.syscalls.first().map(|s| s.name.clone());
    for per in [None, units.as_deref()] {
        for sort in [DiffSort::Change, DiffSort::Time, DiffSort::Name] {
            let d = match diff::pair::diff(before, after, per, sort) {
                Ok(d) => d,
                Err(e) if per.is_some() => {
                    assert!(e.to_string().contains("no successful"), "{e}");
                    continue;
                }
                Err(e) => panic!("{e:#}"),
            };
            no_nonsense(&diff::pair::render(&d));
            serde_json::from_str::<serde_json::Value>(&diff::pair::to_json(&d)).unwrap();
            if per.is_none() {
                for r in &d.rows {
                    let calls = |p: &Profile| p.syscall(&r.name).map_or(0, |s| s.calls) as f64;
                    assert_eq!(r.calls.before, calls(before));
                    assert_eq!(r.calls.after, calls(after));
                }
                assert_eq!(d.total.calls.before, before.totals().0 as f64);
                assert_eq!(d.total.calls.after, after.totals().0 as f64);
            }
        }
    }
}

/// The table of variants: several runs a side, three sides; a sum of several files'
/// histograms past u64 is refused in a line, never wrapped.
fn variants(a: &Profile, b: &Profile, c: &Profile) {
    let variant = |label: &str, runs: Vec<Profile>| Variant {
        label: label.into(),
        files: runs.iter().map(|_| format!("{label}.json")).collect(),
        runs,
    };
    let shapes = [
        vec![variant("a", vec![a.clone()]), variant("b", vec![b.clone()])],
        vec![
            variant("a", vec![a.clone(), c.clone()]),
            variant("b", vec![b.clone()]),
            variant("c", vec![c.clone(), b.clone(), a.clone()]),
        ],
    ];
    for v in &shapes {
        for per in [None, a.syscalls.first().map(|s| s.name.as_str())] {
            match diff::compare(v, v, true, per, DiffSort::Change) {
                Ok(compared) => {
                    no_nonsense(&compared.render(true));
                    no_nonsense(&compared.render(false));
                    serde_json::from_str::<serde_json::Value>(&compared.to_json()).unwrap();
                }
                Err(e) => {
                    let e = e.to_string();
                    assert!(e.contains("overflow") || e.contains("no successful"), "{e}");
                }
            }
        }
    }
}

/// Folded stacks (of calls by stack, of slow calls) and their flame graphs, the trace.
fn stacks_and_slow_calls(p: &Profile) {
    if let Some(s) = &p.stacks {
        for weight in [call_stacks::Weight::Calls, call_stacks::Weight::Time] {
            let text = call_stacks::folded(s, weight);
            let sum: u128 = text
                .lines()
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u128>().unwrap())
                .sum();
            let want: u128 = s
                .stacks
                .iter()
                .map(|c| match weight {
                    call_stacks::Weight::Calls => u128::from(c.calls),
                    call_stacks::Weight::Time => u128::from(c.total_ns),
                })
                .sum();
            assert_eq!(sum, want, "{text}");
            if !text.is_empty() {
                slow::flame_svg(&text, "calls").unwrap();
            }
        }
        no_nonsense(&call_stacks::summary(s, "out.folded"));
    }
    let text = slow::folded(&p.slow_calls);
    if !text.is_empty() {
        slow::flame_svg(&text, "slow calls").unwrap();
    }
    for c in &p.slow_calls {
        no_nonsense(&slow::line(c));
    }
    let trace = slow::trace_json(&p.slow_calls).unwrap();
    serde_json::from_str::<serde_json::Value>(&trace).unwrap();
}

/// The processes: their profile (`--process`, a top file) and top's table of them.
fn processes_views(p: &Profile) {
    if p.processes.is_empty() {
        return;
    }
    let summed = p.of_processes(None).unwrap();
    let calls: u128 = p.processes.iter().map(|q| u128::from(q.calls)).sum();
    assert_eq!(u128::from(summed.totals().0), calls);
    tables(&summed);
    let doc = TopDocument {
        schema: TOP_SCHEMA,
        arch: "x86_64".into(),
        cgroup: None,
        duration_secs: 1.5,
        offcpu_tracked: p.offcpu_tracked,
        dropped: p.dropped,
        switch_ins_unseen: 0,
        processes: p.processes.clone(),
    };
    let read = json::parse(serde_json::to_string(&doc).unwrap().as_bytes()).unwrap();
    assert_eq!(read.syscalls, summed.syscalls);
    let rows: Vec<top::ProcessRow> = read.processes.iter().map(Into::into).collect();
    let text = top::render_totals("by process", &rows, 1.5, TopSort::Time, 0, 0, true);
    no_nonsense(&text);
    assert!(
        text.contains(&format!("made {calls} syscalls")),
        "{calls}:\n{text}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Read back exactly, and every view of it holds.
    #[test]
    fn extreme_profiles_read_back_and_render(p in profile()) {
        let read = json::parse(json::to_string(&p).as_bytes()).unwrap();
        prop_assert_eq!(&read, &p);
        tables(&read);
        stacks_and_slow_calls(&read);
        processes_views(&read);
    }

    /// Compared, as a pair and as variants.
    #[test]
    fn extreme_profiles_compare(a in profile(), b in profile(), c in profile()) {
        pair(&a, &b);
        pair(&b, &a);
        pair(&a, &a);
        variants(&a, &b, &c);
    }
}
