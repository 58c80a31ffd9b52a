use super::*;
use proptest::prelude::*;
use syscost_common::{ERRNO_PAIRS, bucket_index};

/// A CPU's entry holding these calls (latency, errno).
fn entry(id: SyscallId, calls: &[(u64, Option<u16>)]) -> StatsEntry {
    let mut e = StatsEntry {
        key: id.key,
        nr: id.nr,
        ..StatsEntry::ZERO
    };
    for &(ns, errno) in calls {
        e.min_ns = if e.calls == 0 { ns } else { e.min_ns.min(ns) };
        e.max_ns = e.max_ns.max(ns);
        e.calls += 1;
        e.total_ns += ns;
        e.hist[bucket_index(ns)] += 1;
        if let Some(errno) = errno {
            e.errors += 1;
            match e.errnos.iter().position(|&x| x == errno || x == 0) {
                Some(i) => {
                    e.errnos[i] = errno;
                    e.errno_counts[i] += 1;
                }
                None => e.errno_other += 1,
            }
        }
    }
    e
}

/// An off-CPU figure above the total (a bug the kernel side cannot make) is shown as
/// all of the time off the CPU, and said (on stderr), not passed on as a negative.
#[test]
fn an_offcpu_figure_above_the_total_is_bounded() {
    let mut e = entry(SyscallId::native(0), &[(100, None)]);
    e.offcpu_ns = 150;
    let mut snap = Snapshot::empty();
    snap.add_entry(&e);
    let p = snap.to_profile(Target::default(), 1, true).unwrap();
    let s = p.syscall("read").unwrap();
    assert_eq!((s.total_ns, s.offcpu_ns, s.oncpu_ns), (100, 100, 0));
}

#[test]
fn sums_cpus_ignoring_idle_ones() {
    let close = SyscallId::native(3);
    let mut snap = Snapshot::empty();
    snap.add_entry(&entry(close, &[(300, None), (500, Some(9))]));
    snap.add_entry(&entry(close, &[]));
    snap.add_entry(&entry(close, &[(200, Some(9)), (900, Some(2))]));
    let c = &snap.syscalls[&close];
    assert_eq!((c.calls, c.errors, c.total_ns), (4, 3, 1900));
    assert_eq!((c.min_ns, c.max_ns), (200, 900));
    assert_eq!(c.hist.iter().sum::<u64>(), 4);
    assert_eq!(c.errnos, BTreeMap::from([(2, 1), (9, 2)]));
}

#[test]
fn profile_names_and_errnos() {
    let mut snap = Snapshot::empty();
    for ns in [100, 200, 300] {
        snap.record(SyscallId::native(3), ns, (ns < 300).then_some(9));
    }
    snap.record(SyscallId::native(110), 50, None);
    snap.counters[counter::UNPAIRED as usize] = 1;
    snap.counters[counter::DROPPED_SYSCALL as usize] = 4;
    let p = snap.to_profile(Target::default(), 1_000, true).unwrap();
    assert_eq!((p.unpaired, p.dropped), (1, 4));
    let close = &p.syscalls[0];
    assert_eq!((close.nr, close.calls, close.errors), (3, 3, 2));
    assert_eq!(close.errnos.get("EBADF"), Some(&2));
    assert_eq!((close.avg_ns, close.min_ns, close.max_ns), (200, 100, 300));
    assert_eq!(close.histogram.iter().map(|b| b.count).sum::<u64>(), 3);
    assert_eq!(p.totals(), (4, 2, 650));
}

#[test]
fn errnos_beyond_the_pairs_are_other() {
    let id = SyscallId::native(2);
    let calls: Vec<_> = (1..=ERRNO_PAIRS as u16 + 2)
        .map(|e| (100, Some(e)))
        .collect();
    let mut snap = Snapshot::empty();
    snap.add_entry(&entry(id, &calls));
    let p = snap.to_profile(Target::default(), 1, true).unwrap();
    assert_eq!(p.syscalls[0].errnos.get("EOTHER"), Some(&2));
    assert_eq!(
        p.syscalls[0].errnos.values().sum::<u64>(),
        p.syscalls[0].errors
    );
}

#[test]
fn interval_is_the_difference() {
    let close = SyscallId::native(3);
    let mut before = Snapshot::empty();
    before.add_entry(&entry(close, &[(100, None), (200, Some(9))]));
    let mut after = Snapshot::empty();
    after.add_entry(&entry(
        close,
        &[
            (100, None),
            (200, Some(9)),
            (5_000, Some(9)),
            (7_000, Some(9)),
        ],
    ));
    after.record(SyscallId::native(110), 50, None);
    let d = after.since(&before);
    assert!(!d.exact_extremes);
    let c = &d.syscalls[&close];
    assert_eq!((c.calls, c.errors, c.total_ns), (2, 2, 12_000));
    assert_eq!(c.hist.iter().sum::<u64>(), 2);
    assert!(c.min_ns <= 5_000 && c.min_ns as f64 >= 5_000.0 / 1.125);
    assert_eq!(c.max_ns, 7_000);
    assert_eq!(d.syscalls[&SyscallId::native(110)].calls, 1);
    assert_eq!(c.errnos[&9], 2);
    // Nothing new: nothing listed.
    assert!(after.since(&after).syscalls.is_empty());
}

proptest! {
    /// Snapshots made of consistent entries, each later one a superset of the calls
    /// of the one before on every CPU (what the sequence counts guarantee): every
    /// profile and every interval passes the checks `report` applies, and no figure
    /// goes down.
    #[test]
    fn consistent_entries_give_valid_profiles_and_intervals(
        calls in proptest::collection::vec((0usize..2, 0usize..3, 1u64..1_000_000, proptest::option::of(1u16..20)), 0..300),
        cuts in proptest::collection::vec(0usize..300, 1..5),
    ) {
        let ids = [SyscallId::native(0), SyscallId::native(3), SyscallId::native(600)];
        let mut cuts = cuts;
        cuts.push(calls.len());
        cuts.sort();
        let mut previous = Snapshot::empty();
        for cut in cuts {
            let cut = cut.min(calls.len());
            // Each CPU's entry of each syscall, holding the calls up to the cut.
            let mut snap = Snapshot::empty();
            for cpu in 0..2 {
                for (i, id) in ids.iter().enumerate() {
                    let mine: Vec<_> = calls[..cut]
                        .iter()
                        .filter(|c| c.0 == cpu && c.1 == i)
                        .map(|c| (c.2, c.3))
                        .collect();
                    snap.add_entry(&entry(*id, &mine));
                }
            }
            for p in [
                snap.to_profile(Target::default(), 1, true).unwrap(),
                snap.since(&previous).to_profile(Target::default(), 1, true).unwrap(),
            ] {
                let text = syscost_report::report::json::to_string(&p);
                prop_assert!(syscost_report::report::json::parse(text.as_bytes()).is_ok(), "{}", text);
            }
            for (id, now) in &snap.syscalls {
                if let Some(before) = previous.syscalls.get(id) {
                    prop_assert!(now.calls >= before.calls && now.errors >= before.errors);
                    prop_assert!(now.total_ns >= before.total_ns);
                }
            }
            previous = snap;
        }
    }

    /// Snapshots the way the sampler makes them: each CPU's entry of each syscall is
    /// copied at its own moment (so one snapshot holds entries of different ages),
    /// and an entry that changed without pause is its last consistent copy again (an
    /// advance of 0). Every profile and interval is valid, no figure goes down, and
    /// the intervals add up to the last snapshot, figure by figure.
    #[test]
    fn snapshots_of_entries_copied_apart_only_grow_and_add_up(
        calls in proptest::collection::vec((0usize..2, 0usize..3, 1u64..1_000_000, proptest::option::of(1u16..20)), 0..300),
        advances in proptest::collection::vec(proptest::collection::vec(0usize..60, 6), 1..6),
    ) {
        let ids = [SyscallId::native(0), SyscallId::native(3), SyscallId::native(600)];
        let mine = |e: usize| -> Vec<(u64, Option<u16>)> {
            calls
                .iter()
                .filter(|c| c.0 == e / 3 && c.1 == e % 3)
                .map(|c| (c.2, c.3))
                .collect()
        };
        let lists: Vec<_> = (0..6).map(mine).collect();
        let mut cut = [0usize; 6];
        let mut snaps = vec![Snapshot::empty()];
        // The given steps, then one that has copied every entry whole.
        let mut steps = advances.clone();
        steps.push(vec![usize::MAX / 2; 6]);
        for step in steps {
            let mut snap = Snapshot::empty();
            for e in 0..6 {
                cut[e] = (cut[e] + step[e]).min(lists[e].len());
                snap.add_entry(&entry(ids[e % 3], &lists[e][..cut[e]]));
            }
            snaps.push(snap);
        }
        let mut sum: BTreeMap<SyscallId, (u64, u64, u64, u64)> = BTreeMap::new();
        for w in snaps.windows(2) {
            let (before, now) = (&w[0], &w[1]);
            let interval = now.since(before);
            for p in [
                now.to_profile(Target::default(), 1, true).unwrap(),
                interval.to_profile(Target::default(), 1, true).unwrap(),
            ] {
                let text = syscost_report::report::json::to_string(&p);
                prop_assert!(syscost_report::report::json::parse(text.as_bytes()).is_ok(), "{}", text);
            }
            for (id, n) in &now.syscalls {
                if let Some(b) = before.syscalls.get(id) {
                    prop_assert!(n.calls >= b.calls && n.errors >= b.errors);
                    prop_assert!(n.total_ns >= b.total_ns);
                    prop_assert!(n.hist.iter().zip(&b.hist).all(|(x, y)| x >= y));
                }
            }
            for (id, s) in &interval.syscalls {
                let t = sum.entry(*id).or_default();
                t.0 += s.calls;
                t.1 += s.errors;
                t.2 += s.total_ns;
                t.3 += s.hist.iter().sum::<u64>();
            }
        }
        let last = snaps.last().unwrap();
        for (id, s) in &last.syscalls {
            let t = sum.get(id).copied().unwrap_or_default();
            prop_assert_eq!(t, (s.calls, s.errors, s.total_ns, s.calls), "{:?}", id);
        }
        prop_assert_eq!(
            last.syscalls.values().map(|s| s.calls).sum::<u64>(),
            calls.len() as u64
        );
    }
}
