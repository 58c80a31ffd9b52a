//! The comparison of variants against cases worked by hand and seeded repetitions.

use super::{super::shared::*, compute::*, model::*, render::*};
use crate::fixtures::{profile_of, syscall};
use crate::profile::Profile;

/// A run of the echo-server shape: `reads` reads (`eagain` of them failing) at
/// `read_ns`, 1,000 accept4, epoll_wait mostly blocked for `wait_ns` each.
fn run(reads: u64, eagain: u64, read_ns: u64, wait_ns: u64) -> Profile {
    profile_of(vec![
        syscall("read", 0, reads, eagain, read_ns),
        syscall("accept4", 288, 1_000, 0, 3_000),
        syscall("epoll_wait", 232, 1_000, 0, wait_ns),
    ])
}

fn variant(label: &str, runs: Vec<Profile>) -> Variant {
    Variant {
        label: label.into(),
        files: (1..=runs.len())
            .map(|i| format!("{label}-{i}.json"))
            .collect(),
        runs,
    }
}

fn cell<'a>(c: &'a Comparison, name: &str, k: usize) -> &'a CellChange {
    c.rows.iter().find(|r| r.name == name).unwrap().profiles[k]
        .change
        .as_ref()
        .unwrap()
}

/// Three runs a side: reads that vary by a few calls between runs are within the
/// noise, a third fewer reads and no EAGAIN are not; a latency 10% higher with
/// runs 30% apart is within the noise, one 50% higher with runs 5% apart is not.
fn three_variants() -> Comparison {
    let base = variant(
        "plain",
        vec![
            run(3_000, 1_000, 1_000, 20_000),
            run(3_010, 1_010, 1_050, 21_000),
            run(2_990, 990, 950, 19_000),
        ],
    );
    let short = variant(
        "short",
        vec![
            run(2_000, 0, 1_500, 40_000),
            run(2_000, 0, 1_510, 41_000),
            run(2_000, 0, 1_490, 39_000),
        ],
    );
    let noise = variant(
        "noise",
        vec![
            run(2_998, 1_004, 1_300, 20_000),
            run(2_995, 995, 1_000, 20_500),
            run(3_001, 1_001, 1_000, 19_500),
        ],
    );
    compare(&[base, short, noise], None, DiffSort::Change).unwrap()
}

#[test]
fn changes_are_judged_against_the_spread_between_runs() {
    let c = three_variants();
    let read = cell(&c, "read", 1);
    assert_eq!(read.calls.verdict, Verdict::Significant);
    assert_eq!(read.calls.change, -1_000.0);
    assert_eq!(read.errors.verdict, Verdict::Significant);
    assert_eq!(read.avg_ns.verdict, Verdict::Significant);
    let i = read.calls.interval.unwrap();
    assert!(i.lo < -1_000.0 && i.hi > -1_000.0 && i.hi < 0.0, "{i:?}");
    let read = cell(&c, "read", 2);
    assert_eq!(read.calls.verdict, Verdict::WithinNoise);
    assert!(read.calls.interval.unwrap().holds_zero());
    // 1,100 ns against 1,000 ns, runs 1,000-1,300 apart.
    assert_eq!(read.avg_ns.verdict, Verdict::WithinNoise);
    assert!((read.avg_ns.change_pct.unwrap() - 10.0).abs() < 0.1);
    // accept4 is the same in every run: exactly no change, within the noise.
    let accept = cell(&c, "accept4", 1);
    assert_eq!(accept.calls.change, 0.0);
    assert_eq!(accept.calls.verdict, Verdict::WithinNoise);
    // Bonferroni: the adjusted p is at least the raw one.
    for r in &c.rows {
        let ch = r.profiles[1].change.as_ref().unwrap();
        assert!(ch.avg_ns.p_adjusted.unwrap() >= ch.avg_ns.p_value.unwrap());
    }
    assert_eq!(c.blocking, ["epoll_wait"]);
    assert_eq!(
        c.rows.iter().map(|r| r.blocking).collect::<Vec<_>>(),
        [Some(false), Some(false), Some(true)]
    );
}

/// A count the same in every run is judged by its Poisson spread: 0 calls against 1
/// in each of three runs is within the noise, 10,000 against 5,000 is not; the same
/// counts in every run of both sides are no change.
#[test]
fn a_count_the_same_in_every_run_is_judged_by_its_poisson_spread() {
    let with = |accepts: u64, rare: u64| {
        let mut p = run(3_000, 0, 1_000, 20_000);
        p.syscalls.retain(|s| s.name != "accept4");
        p.syscalls.push(syscall("accept4", 288, accepts, 0, 3_000));
        if rare > 0 {
            p.syscalls.push(syscall("brk", 12, rare, 0, 500));
        }
        p
    };
    let c = compare(
        &[
            variant("a", vec![with(10_000, 0), with(10_000, 0), with(10_000, 0)]),
            variant("b", vec![with(5_000, 1), with(5_000, 1), with(5_000, 1)]),
        ],
        None,
        DiffSort::Change,
    )
    .unwrap();
    assert_eq!(cell(&c, "accept4", 1).calls.verdict, Verdict::Significant);
    let brk = &cell(&c, "brk", 1).calls;
    assert_eq!(brk.verdict, Verdict::WithinNoise, "{brk:?}");
    assert!(brk.p_value.unwrap() > 0.2, "{brk:?}");
    let read = &cell(&c, "read", 1).calls;
    assert_eq!((read.change, read.p_value), (0.0, Some(1.0)));
    assert_eq!(read.verdict, Verdict::WithinNoise);
}

#[test]
fn the_conclusion_names_what_changed_and_leaves_the_noise_out() {
    let c = three_variants();
    assert_eq!(
        c.conclusion,
        [
            "short: syscalls -20.0% (5000 -> 4000), read -33.3%; errors gone (1000 -> 0): read EAGAIN 1000 -> 0; latency read +50.0% (1.00us -> 1.50us)",
            "  time in blocking calls (epoll_wait) +100.0% (20.0ms -> 40.0ms): the process waited longer, it did not work longer",
            "noise: syscalls within the noise (5000 -> 4998)",
        ]
    );
    let text = render(&c, false);
    assert!(
        text.contains("\nconclusion, against plain:\n  short: syscalls -20.0%"),
        "{text}"
    );
    assert!(!text.contains("one run on a side: its counts"), "{text}");
    // The table: the baseline's row bare, the others with a change and a mark.
    assert!(
        text.contains(
            "read             plain          3000                 1000               3.00ms              1.00us\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "                 short          2000   -33.3% *         0  -100.0% *    3.00ms    -0.0% ~   1.50us   +50.0% *\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nread EAGAIN      plain          1000\n"),
        "{text}"
    );
    assert!(
        text.contains("\n                 short             0     gone *\n"),
        "{text}"
    );
}

/// One run a side: counts get no verdict (no mark), latency is judged from the
/// two histograms, and the note says so.
#[test]
fn one_run_a_side_judges_latency_by_the_histograms() {
    let c = compare(
        &[
            variant("a", vec![run(3_000, 1_000, 1_000, 20_000)]),
            variant("b", vec![run(2_000, 0, 2_000, 20_000)]),
            variant("c", vec![run(3_000, 1_000, 1_000, 20_000)]),
        ],
        None,
        DiffSort::Name,
    )
    .unwrap();
    let read = cell(&c, "read", 1);
    assert_eq!(read.calls.verdict, Verdict::NotJudged);
    assert!(read.calls.interval.is_none());
    assert_eq!(read.avg_ns.verdict, Verdict::Significant);
    let t = read.avg_ns.rank_test.unwrap();
    assert!(t.prob_longer > 0.9, "{t:?}");
    // The same histogram: within the spread of the calls.
    assert_eq!(cell(&c, "read", 2).avg_ns.verdict, Verdict::WithinNoise);
    let text = render(&c, false);
    assert!(
        text.contains("  (one run on a side: its counts are shown without a verdict"),
        "{text}"
    );
    assert!(text.contains("\nlatency, one run on a side:"), "{text}");
    assert!(
        text.contains(
            "c: within the spread of the calls (adjusted p >= 0.05): accept4, epoll_wait, read\n"
        ),
        "{text}"
    );
    // Counts without a verdict still make the conclusion.
    assert!(
        c.conclusion[0].starts_with("b: syscalls -20.0% (5000 -> 4000), read -33.3%"),
        "{:?}",
        c.conclusion
    );
}

#[test]
fn per_unit_divides_each_run_by_its_own_units() {
    let base = variant(
        "a",
        vec![
            run(3_000, 1_000, 1_000, 20_000),
            run(6_000, 2_000, 1_000, 20_000),
        ],
    );
    let mut doubled = run(6_000, 2_000, 1_000, 20_000);
    for s in &mut doubled.syscalls {
        if s.name == "accept4" {
            s.calls = 2_000;
        }
    }
    // Twice the reads of the first run, for twice the connections.
    let other = variant("b", vec![run(3_000, 1_000, 1_000, 20_000), doubled]);
    let c = compare(&[base, other], Some("accept4"), DiffSort::Name).unwrap();
    let read = &c.rows.iter().find(|r| r.name == "read").unwrap().profiles;
    assert_eq!(read[0].calls.runs, [3.0, 6.0]);
    assert_eq!(read[1].calls.runs, [3.0, 3.0]);
    assert_eq!(
        c.profiles[1].units.as_ref().unwrap().runs,
        [1_000.0, 2_000.0]
    );
    let e = compare(
        &[
            variant("a", vec![run(1, 0, 1, 1)]),
            variant("b", vec![profile_of(vec![])]),
        ],
        Some("accept4"),
        DiffSort::Name,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "b-1.json has no successful accept4 calls to normalise by"
    );
}

#[test]
fn small_rows_are_folded_unless_all() {
    let mut with_brk = run(3_000, 1_000, 1_000, 20_000);
    with_brk.syscalls.push(syscall("brk", 12, 2, 0, 500));
    let c = compare(
        &[
            variant("a", vec![with_brk.clone()]),
            variant("b", vec![with_brk]),
        ],
        None,
        DiffSort::Change,
    )
    .unwrap();
    let text = render(&c, false);
    assert!(
        text.contains("(1 more, each under 0.1% of the calls and of the time, no change marked: brk; --all shows them)\n"),
        "{text}"
    );
    assert!(!text.contains("\nbrk "), "{text}");
    assert!(render(&c, true).contains("\nbrk "));
    // A small row whose calls change is shown.
    let mut more = run(3_000, 1_000, 1_000, 20_000);
    more.syscalls.push(syscall("brk", 12, 3, 0, 500));
    let mut less = run(3_000, 1_000, 1_000, 20_000);
    less.syscalls.push(syscall("brk", 12, 2, 0, 500));
    let c = compare(
        &[variant("a", vec![less]), variant("b", vec![more])],
        None,
        DiffSort::Change,
    )
    .unwrap();
    assert!(render(&c, false).contains("\nbrk "));
}

#[test]
fn without_the_on_cpu_split_blocking_calls_are_not_told_apart() {
    let mut old = run(3_000, 1_000, 1_000, 20_000);
    old.offcpu_tracked = false;
    let c = compare(
        &[
            variant("a", vec![old]),
            variant("b", vec![run(3_000, 1_000, 1_000, 40_000)]),
        ],
        None,
        DiffSort::Change,
    )
    .unwrap();
    // Blocking calls are known from the profile with the split; the time split and
    // its changes need both.
    assert_eq!(c.blocking, ["epoll_wait"]);
    assert!(c.time[0].is_none() && c.time[1].is_some());
    assert!(c.time[1].as_ref().unwrap().oncpu_ns.change.is_none());
    assert!(!c.oncpu_tracked && !c.profiles[0].oncpu_tracked && c.profiles[1].oncpu_tracked);
    assert!(
        c.conclusion[0]
            == "b: syscalls unchanged (5000); time +76.9% (26.0ms -> 46.0ms), not split into blocking and other calls (a profile without the on-CPU split)",
        "{:?}",
        c.conclusion
    );
    let text = render(&c, false);
    assert!(
        text.contains("\non-CPU split not tracked in a (a profile without it): its time is not split, nor compared by it\n"),
        "{text}"
    );
    assert!(text.contains("\non-CPU           b "), "{text}");
}

#[test]
fn architectures_and_errnos_are_checked() {
    let mut arm = run(1, 0, 1, 1);
    arm.arch = "aarch64".into();
    let e = compare(
        &[
            variant("a", vec![run(1, 0, 1, 1)]),
            variant("b", vec![run(1, 0, 1, 1), arm]),
        ],
        None,
        DiffSort::Change,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(
            "the profiles come from different architectures (x86_64 and aarch64, b-2.json)"
        ),
        "{e}"
    );
    let mut top = run(3_000, 1_000, 1_000, 20_000);
    top.totals_only = true;
    let c = compare(
        &[
            variant("a", vec![run(3_000, 1_000, 1_000, 20_000)]),
            variant("b", vec![top]),
        ],
        None,
        DiffSort::Change,
    )
    .unwrap();
    assert!(!c.errnos_tracked && c.errnos.is_empty());
    // No histograms on a side: no rank test.
    assert!(cell(&c, "read", 1).avg_ns.rank_test.is_none());
    assert!(render(&c, false).contains("\nerrno changes not known"));
}

#[test]
fn json_of_the_variants() {
    let c = three_variants();
    let v: serde_json::Value = serde_json::from_str(&to_json(&c)).unwrap();
    assert_eq!(v["confidence"], 0.95);
    assert_eq!(v["profiles"][1]["label"], "short");
    assert_eq!(v["profiles"][1]["files"][2], "short-3.json");
    let read = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "read")
        .unwrap();
    assert_eq!(read["blocking"], false);
    assert_eq!(read["profiles"][0]["calls"]["runs"][1], 3010.0);
    assert!(read["profiles"][0].get("change").is_none());
    assert_eq!(
        read["profiles"][1]["change"]["calls"]["verdict"],
        "significant"
    );
    assert_eq!(
        read["profiles"][2]["change"]["calls"]["verdict"],
        "within_noise"
    );
    assert!(read["profiles"][1]["change"]["calls"]["interval"]["lo"].is_number());
    assert!(read["profiles"][1]["change"]["avg_ns"]["p_adjusted"].is_number());
    assert_eq!(v["errnos"][0]["errno"], "EAGAIN");
    assert_eq!(v["blocking"][0], "epoll_wait");
    assert!(v["time"][1]["blocking_calls_ns"]["change"]["change_pct"].is_number());
    assert_eq!(v["conclusion"].as_array().unwrap().len(), 3);
}
