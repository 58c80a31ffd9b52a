//! Turns the kernel's statistics entries into snapshots and profiles: merges the CPUs'
//! entries of a syscall, subtracts an earlier snapshot for interval views, computes
//! percentiles and names. Pure: the sampler hands it consistent copies of the entries,
//! so everything here is tested without root.

use std::collections::BTreeMap;

use anyhow::Result;
use syscost_common::{HISTOGRAM_BUCKETS, StatsEntry, counter};

use syscost_report::{
    errno_name::errno_name,
    latency,
    profile::{Profile, SCHEMA_VERSION, SyscallProfile, Target},
    syscall_names::SyscallId,
};

/// One syscall's numbers, summed over CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub offcpu_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// errno -> count.
    pub errnos: BTreeMap<u16, u64>,
    /// Errors beyond the distinct errnos an entry names (`ERRNO_PAIRS`).
    pub errno_other: u64,
    /// Latency histogram, `bucket_index` layout.
    pub hist: Vec<u64>,
}

impl Default for Counts {
    fn default() -> Self {
        Self {
            calls: 0,
            errors: 0,
            total_ns: 0,
            min_ns: 0,
            max_ns: 0,
            offcpu_ns: 0,
            voluntary: 0,
            involuntary: 0,
            errnos: BTreeMap::new(),
            errno_other: 0,
            hist: vec![0; HISTOGRAM_BUCKETS],
        }
    }
}

impl Counts {
    /// Adds one CPU's consistent copy of an entry.
    pub fn add_entry(&mut self, e: &StatsEntry) {
        if e.calls == 0 {
            return;
        }
        self.min_ns = if self.calls == 0 {
            e.min_ns
        } else {
            self.min_ns.min(e.min_ns)
        };
        self.max_ns = self.max_ns.max(e.max_ns);
        self.calls += e.calls;
        self.errors += e.errors;
        self.total_ns += e.total_ns;
        self.offcpu_ns += e.offcpu_ns;
        self.voluntary += e.voluntary;
        self.involuntary += e.involuntary;
        for (&errno, &n) in e.errnos.iter().zip(&e.errno_counts) {
            if errno != 0 && n > 0 {
                *self.errnos.entry(errno).or_default() += n;
            }
        }
        self.errno_other += e.errno_other;
        for (a, b) in self.hist.iter_mut().zip(e.hist.iter()) {
            *a += b;
        }
    }

    /// Records one call (for tests and fixtures): its latency and its errno, if any.
    pub fn record(&mut self, ns: u64, errno: Option<u16>) {
        self.min_ns = if self.calls == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.calls += 1;
        self.total_ns += ns;
        self.hist[syscost_common::bucket_index(ns)] += 1;
        if let Some(e) = errno {
            self.errors += 1;
            *self.errnos.entry(e).or_default() += 1;
        }
    }

    /// What happened between `earlier` and `self` (both cumulative), `None` when no
    /// call completed in between. Every counter only grows, so nothing goes below zero;
    /// the extremes of an interval are the bounds of its non-empty buckets.
    pub fn since(&self, earlier: &Counts) -> Option<Counts> {
        let calls = self.calls.saturating_sub(earlier.calls);
        if calls == 0 {
            return None;
        }
        let mut d = Counts {
            calls,
            errors: self.errors.saturating_sub(earlier.errors),
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            offcpu_ns: self.offcpu_ns.saturating_sub(earlier.offcpu_ns),
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
            errno_other: self.errno_other.saturating_sub(earlier.errno_other),
            ..Counts::default()
        };
        for (&e, &n) in &self.errnos {
            let n = n.saturating_sub(earlier.errnos.get(&e).copied().unwrap_or(0));
            if n > 0 {
                d.errnos.insert(e, n);
            }
        }
        for ((h, a), b) in d.hist.iter_mut().zip(&self.hist).zip(&earlier.hist) {
            *h = a.saturating_sub(*b);
        }
        let (lo, hi) = latency::bounds(&d.hist);
        d.max_ns = hi.min(self.max_ns);
        // (Calls beyond the last bucket's end make `lo` exceed the exact maximum.)
        d.min_ns = lo.max(self.min_ns).min(d.max_ns);
        Some(d)
    }
}

/// A process slot's statistics at one moment: cumulative since tracing began.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Syscalls with at least one call.
    pub syscalls: BTreeMap<SyscallId, Counts>,
    /// `syscost_common::counter` values.
    pub counters: [u64; counter::COUNT as usize],
    /// Whether `min_ns`/`max_ns` are exact (false for a difference of two snapshots,
    /// where they are the bounds of the non-empty histogram buckets).
    pub exact_extremes: bool,
}

impl Snapshot {
    /// An empty cumulative snapshot.
    pub fn empty() -> Self {
        Self {
            exact_extremes: true,
            ..Default::default()
        }
    }

    /// Adds one CPU's consistent copy of an entry (of this snapshot's slot).
    pub fn add_entry(&mut self, e: &StatsEntry) {
        if e.calls > 0 {
            self.syscalls
                .entry(SyscallId::of(e.key, e.nr))
                .or_default()
                .add_entry(e);
        }
    }

    /// Records one call of `id` (for tests and fixtures).
    pub fn record(&mut self, id: SyscallId, ns: u64, errno: Option<u16>) {
        self.syscalls.entry(id).or_default().record(ns, errno);
    }

    /// Events that could not be recorded.
    pub fn dropped(&self) -> u64 {
        self.counters[counter::DROPPED_THREAD as usize]
            + self.counters[counter::DROPPED_SYSCALL as usize]
            + self.counters[counter::DROPPED_CHILD as usize]
            + self.counters[counter::DROPPED_PROCESS as usize]
            + self.counters[counter::DROPPED_TOP as usize]
    }

    /// Exits without a seen enter.
    pub fn unpaired(&self) -> u64 {
        self.counters[counter::UNPAIRED as usize]
    }

    /// Calls whose return to a CPU was not seen (their off-CPU time an upper bound).
    pub fn switch_ins_unseen(&self) -> u64 {
        self.counters[counter::SWITCH_IN_UNSEEN as usize]
    }

    /// What happened between `earlier` and `self` (both cumulative, same tracer).
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let zero = Counts::default();
        let syscalls = self
            .syscalls
            .iter()
            .filter_map(|(id, now)| {
                now.since(earlier.syscalls.get(id).unwrap_or(&zero))
                    .map(|d| (*id, d))
            })
            .collect();
        let mut counters = self.counters;
        for (c, b) in counters.iter_mut().zip(earlier.counters) {
            *c = c.saturating_sub(b);
        }
        Snapshot {
            syscalls,
            counters,
            exact_extremes: false,
        }
    }

    /// The profile of this snapshot. `offcpu_tracked` says whether the off-CPU split was
    /// measured (the sched_switch program was attached).
    pub fn to_profile(
        &self,
        target: Target,
        duration_ns: u64,
        offcpu_tracked: bool,
    ) -> Result<Profile> {
        let mut syscalls = Vec::with_capacity(self.syscalls.len());
        for (id, s) in &self.syscalls {
            let p = latency::percentiles(&s.hist, s.min_ns, s.max_ns)?;
            let mut errnos: BTreeMap<String, u64> = s
                .errnos
                .iter()
                .map(|(&e, &n)| (errno_name(u32::from(e)), n))
                .collect();
            if s.errno_other > 0 {
                *errnos.entry("EOTHER".to_string()).or_default() += s.errno_other;
            }
            // A call's switched-out time is the sum of intervals inside it: each begins at
            // a switch-out after the enter read the clock and ends at the switch-in before
            // the exit read it, all from one clock, so it cannot exceed the call's time
            // (the kernel side adds it unclamped), and consistent copies keep the sums in
            // step. Should it ever be above, that is a bug, said once, not hidden.
            if offcpu_tracked && s.offcpu_ns > s.total_ns {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    eprintln!(
                        "syscost: {}: {} ns switched out of {} ns in all (a bug: please report it); on-CPU shown as 0",
                        id.name(),
                        s.offcpu_ns,
                        s.total_ns
                    )
                });
            }
            let offcpu_ns = if offcpu_tracked {
                s.offcpu_ns.min(s.total_ns)
            } else {
                0
            };
            syscalls.push(SyscallProfile {
                name: id.name(),
                nr: id.nr,
                calls: s.calls,
                errors: s.errors,
                errnos,
                total_ns: s.total_ns,
                oncpu_ns: s.total_ns - offcpu_ns,
                offcpu_ns,
                voluntary_switches: s.voluntary,
                involuntary_switches: s.involuntary,
                avg_ns: s.total_ns / s.calls.max(1),
                min_ns: s.min_ns,
                max_ns: s.max_ns,
                p50_ns: p.p50_ns,
                p90_ns: p.p90_ns,
                p99_ns: p.p99_ns,
                histogram: latency::to_sparse(&s.hist),
            });
        }
        Ok(Profile {
            version: SCHEMA_VERSION,
            arch: std::env::consts::ARCH.to_string(),
            target,
            duration_ns,
            offcpu_tracked,
            unpaired: self.unpaired(),
            switch_ins_unseen: self.switch_ins_unseen(),
            dropped: self.dropped(),
            syscalls,
            processes: Vec::new(),
            slow_threshold: None,
            slow_calls: Vec::new(),
            stacks: None,
            slow_dropped: self.counters[counter::DROPPED_SLOW as usize],
            features: Vec::new(),
            unavailable: Vec::new(),
            totals_only: false,
        })
    }
}

#[cfg(test)]
mod tests {
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
}

/// The collector's profiles through the report's JSON file: written, read back the same,
/// older versions upgraded, damaged files refused with what is wrong.
#[cfg(test)]
mod json_round_trip {
    use serde_json::Value;
    use syscost_report::{
        profile::{Profile, SCHEMA_VERSION, Target},
        report::json::*,
        syscall_names::SyscallId,
    };

    use super::Snapshot;

    fn sample() -> Profile {
        let mut snap = Snapshot::empty();
        for (ns, errno) in [(120u64, Some(9)), (150, Some(9)), (90_000, None)] {
            snap.record(SyscallId::native(3), ns, errno);
        }
        let target = Target {
            pid: 42,
            comm: "sh".into(),
            command: Some(vec!["sh".into(), "-c".into(), "true".into()]),
            cgroup: None,
        };
        snap.to_profile(target, 5_000_000, true)
            .unwrap()
            .with_features(&syscost_report::profile::Features {
                on: vec!["offcpu", "slow"],
                unavailable: Vec::new(),
            })
    }

    #[test]
    fn round_trip() {
        let p = sample();
        let text = to_string(&p);
        assert_eq!(parse(text.as_bytes()).unwrap(), p);
        let version = format!("\"version\": {SCHEMA_VERSION}");
        for key in [
            version.as_str(),
            "\"errnos\": {",
            "\"EBADF\": 2",
            "\"lo_ns\": 120",
            "\"p99_ns\"",
            "\"command\"",
            "\"features\": [",
        ] {
            assert!(text.contains(key), "{key} in {text}");
        }
    }

    #[test]
    fn reads_version_1_profiles() {
        let mut v: Value = serde_json::from_str(&to_string(&sample())).unwrap();
        let o = v.as_object_mut().unwrap();
        o.insert("version".into(), Value::from(1));
        o.remove("offcpu_tracked");
        for s in o["syscalls"].as_array_mut().unwrap() {
            let s = s.as_object_mut().unwrap();
            for k in [
                "oncpu_ns",
                "offcpu_ns",
                "voluntary_switches",
                "involuntary_switches",
            ] {
                s.remove(k);
            }
        }
        let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
        assert_eq!(p.version, SCHEMA_VERSION);
        assert!(!p.offcpu_tracked);
        let close = &p.syscalls[0];
        assert_eq!((close.oncpu_ns, close.offcpu_ns), (close.total_ns, 0));
    }

    #[test]
    fn reads_version_2_compat_numbers() {
        let mut snap = Snapshot::empty();
        snap.record(SyscallId::compat(64), 300, None);
        let text = to_string(&snap.to_profile(Target::default(), 1, true).unwrap());
        assert!(text.contains("\"nr\": 64,"), "{text}");
        let v2 = text
            .replace(&format!("\"version\": {SCHEMA_VERSION}"), "\"version\": 2")
            .replace("\"nr\": 64,", "\"nr\": 576,");
        let p = parse(v2.as_bytes()).unwrap();
        assert_eq!((p.version, p.syscalls[0].nr), (SCHEMA_VERSION, 64));
    }

    #[test]
    fn file_round_trip() {
        let dir = std::env::temp_dir().join(format!("syscost-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.json");
        write(&sample(), &path, None).unwrap();
        assert_eq!(read(&path).unwrap(), sample());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn err(bytes: &[u8]) -> String {
        format!("{:#}", parse(bytes).unwrap_err())
    }

    #[test]
    fn reads_version_3_profiles() {
        let text = to_string(&sample())
            .replace(&format!("\"version\": {SCHEMA_VERSION}"), "\"version\": 3");
        assert_eq!(parse(text.as_bytes()).unwrap(), sample());
    }

    /// Version 4 had no list of features: read as none known.
    #[test]
    fn reads_version_4_profiles() {
        let mut v: Value = serde_json::from_str(&to_string(&sample())).unwrap();
        let o = v.as_object_mut().unwrap();
        o.insert("version".into(), Value::from(4));
        o.remove("features");
        let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
        assert_eq!(p.version, SCHEMA_VERSION);
        assert!(p.features.is_empty());
        assert_eq!(p.syscalls, sample().syscalls);
    }

    #[test]
    fn reads_version_5_profiles() {
        let mut sample = sample();
        sample.switch_ins_unseen = 3;
        let mut v: Value = serde_json::from_str(&to_string(&sample)).unwrap();
        let o = v.as_object_mut().unwrap();
        o.insert("version".into(), Value::from(5));
        assert_eq!(o.remove("switch_ins_unseen"), Some(Value::from(3)));
        let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
        assert_eq!((p.version, p.switch_ins_unseen), (SCHEMA_VERSION, 0));
        assert_eq!(p.syscalls, sample.syscalls);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        assert_eq!(err(b""), "empty file, not a syscost profile");
        assert_eq!(err(b"  \n"), "empty file, not a syscost profile");
        let text = to_string(&sample());
        assert!(err(&text.as_bytes()[..text.len() / 2]).starts_with("truncated JSON"));
        assert!(err(b"\x7fELF\x02\x01").starts_with("not a syscost profile: invalid JSON"));
        assert_eq!(
            err(b"{\"a\": 1}"),
            "not a syscost profile: no \"version\" number"
        );
        assert!(
            err(text
                .replace(
                    &format!("\"version\": {SCHEMA_VERSION}"),
                    &format!("\"version\": {}", SCHEMA_VERSION + 1)
                )
                .as_bytes())
            .contains("newer than this syscost")
        );
        assert!(
            err(text.replace("\"calls\": 3", "\"calls\": 4").as_bytes())
                .starts_with("corrupt profile: syscall close")
        );
        assert!(
            err(text.replace("\"EBADF\": 2", "\"EBADF\": 1").as_bytes()).contains("errno counts")
        );
        assert!(
            err(text.replace("\"lo_ns\": 120", "\"lo_ns\": 121").as_bytes())
                .contains("not a syscost bucket")
        );
        assert!(
            err(text.replace("\"calls\"", "\"callz\"").as_bytes())
                .starts_with("not a valid syscost profile")
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// Arbitrary bytes: an error or a profile, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096)) {
            let _ = parse(&bytes);
        }

        /// A real profile with bytes changed or cut: the likelier damage.
        #[test]
        fn damaged_profiles_never_panic(
            edits in proptest::collection::vec((0usize..100_000, proptest::prelude::any::<u8>()), 0..8),
            cut in 0usize..100_000,
        ) {
            let mut bytes = to_string(&sample()).into_bytes();
            for (at, b) in edits {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            if let Ok(p) = parse(&bytes) {
                // Whatever is accepted is written back and read again unchanged.
                proptest::prop_assert_eq!(parse(to_string(&p).as_bytes()).unwrap(), p);
            }
        }
    }
}
