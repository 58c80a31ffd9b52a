//! Counter series of the busiest processes (or cgroups) and one `other`, bounded in
//! number, for `export --top`.

use std::collections::BTreeMap;

use syscost_common::TopValue;

use syscost_engine::process_table::{ProcessRow, add};
use syscost_report::syscall_names::SyscallId;

/// How long an exited process keeps its series, so that a scrape sees its last counts;
/// it holds its place among the N meanwhile.
pub const LINGER: std::time::Duration = std::time::Duration::from_secs(30);
/// How long a series without calls keeps its place (a cgroup emptied, a process asleep).
pub const IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// Counter series of at most `n` processes (or cgroups) plus one `other`, for the
/// metrics endpoint. Every series only grows: a process gets a series of its own when
/// it is among the busiest of an interval (by time in syscalls) while fewer than `n`
/// have one, and counts from that moment; it keeps it while it makes calls, for
/// [`LINGER`] after it exits, and for [`IDLE`] without calls. Whatever has no series of
/// its own is added to `other`. A series whose labels change starts again as a new
/// series when its pid is another process's (the first exited) or, once, when the
/// process changed its name or cgroup (an exec seen after its first interval); a process
/// that renames itself again keeps the labels its series has, so that no process makes
/// more than two series (a name set with `prctl` at every step would otherwise make one
/// each step). `K` names a row's series: a pid, a cgroup's path.
#[derive(Debug)]
pub struct BoundedSeries<K> {
    n: usize,
    own: BTreeMap<K, OwnSeries>,
    other: BTreeMap<SyscallId, TopValue>,
}

/// One series set with its own labels.
#[derive(Clone, Debug)]
pub struct OwnSeries {
    pub labels: Vec<(&'static str, String)>,
    pub syscalls: BTreeMap<SyscallId, TopValue>,
    gone_at: Option<std::time::Instant>,
    active_at: std::time::Instant,
    /// Its process changed its labels once already.
    relabelled: bool,
}

impl<K: Ord + Clone + std::hash::Hash> BoundedSeries<K> {
    pub fn new(n: usize) -> Self {
        Self {
            n,
            own: BTreeMap::new(),
            other: BTreeMap::new(),
        }
    }

    /// Adds one interval's rows; `id` names a row (its series key) and `labels` labels
    /// it; `ended`: keys that will not come back (processes that exited).
    pub fn add(
        &mut self,
        rows: &[ProcessRow],
        id: impl Fn(&ProcessRow) -> K,
        labels: impl Fn(&ProcessRow) -> Vec<(&'static str, String)>,
        ended: &[K],
        now: std::time::Instant,
    ) {
        for key in ended {
            if let Some(s) = self.own.get_mut(key) {
                s.gone_at.get_or_insert(now);
            }
        }
        self.own.retain(|_, s| {
            s.gone_at.is_none_or(|t| now.duration_since(t) < LINGER)
                && now.duration_since(s.active_at) < IDLE
        });
        // Each row's figure summed once; `ended` looked up in a set (an interval of a
        // churning machine has thousands of rows and of exits).
        let mut ranked: Vec<(u64, &ProcessRow)> = rows.iter().map(|r| (r.total_ns(), r)).collect();
        ranked.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(a.1.pid.cmp(&b.1.pid))
                .then_with(|| a.1.cgroup.cmp(&b.1.cgroup))
        });
        let ended: std::collections::HashSet<&K> = ended.iter().collect();
        for (_, r) in ranked {
            let key = id(r);
            let gone = ended.contains(&key);
            // Labels only for a row that has a series or may get one: the rest go to
            // `other` as they are.
            let has = self.own.contains_key(&key);
            if !has && (gone || self.own.len() >= self.n) {
                for (sid, v) in &r.syscalls {
                    let e = self.other.entry(*sid).or_default();
                    *e = add(*e, v);
                }
                continue;
            }
            let l = labels(r);
            // At its exit a process's name may come from what the kernel kept: its
            // series keeps the labels it had.
            if let Some(s) = self.own.get_mut(&key)
                && s.labels != l
                && !gone
            {
                // Another process under this pid (the first exited), or this one's first
                // change of name or cgroup: a new series; its later changes keep it.
                let reused = s.gone_at.is_some();
                if reused || !s.relabelled {
                    *s = OwnSeries {
                        labels: l.clone(),
                        syscalls: BTreeMap::new(),
                        gone_at: None,
                        active_at: now,
                        relabelled: !reused,
                    };
                }
            }
            if !has {
                self.own.insert(
                    key.clone(),
                    OwnSeries {
                        labels: l,
                        syscalls: BTreeMap::new(),
                        gone_at: None,
                        active_at: now,
                        relabelled: false,
                    },
                );
            }
            let target = match self.own.get_mut(&key) {
                Some(s) => {
                    s.active_at = now;
                    if gone {
                        s.gone_at.get_or_insert(now);
                    }
                    &mut s.syscalls
                }
                None => &mut self.other,
            };
            for (sid, v) in &r.syscalls {
                let e = target.entry(*sid).or_default();
                *e = add(*e, v);
            }
        }
    }

    /// Every series: the own ones, then `other` (labelled `other_labels`) if it counted
    /// anything.
    pub fn series(&self, other_labels: Vec<(&'static str, String)>) -> Vec<OwnSeries> {
        let mut v: Vec<OwnSeries> = self.own.values().cloned().collect();
        if !self.other.is_empty() {
            v.push(OwnSeries {
                labels: other_labels,
                syscalls: self.other.clone(),
                gone_at: None,
                active_at: std::time::Instant::now(),
                relabelled: false,
            });
        }
        v
    }
}

/// Two processes (pids 42 and 43, comm `app`, 5 getppid each, 1 failed, 2 s of which
/// 0.5 switched out) in series of at most one of its own: 42's, and 43's in `other`.
#[cfg(test)]
pub(crate) fn two_processes_one_kept() -> Vec<OwnSeries> {
    let mut b = BoundedSeries::new(1);
    let mut row = syscost_engine::process_table::ProcessRow {
        pid: 42,
        comm: "app".into(),
        cgroup: "/x".into(),
        ..Default::default()
    };
    row.syscalls.insert(
        syscost_report::syscall_names::SyscallId::native(110),
        syscost_common::TopValue {
            calls: 5,
            errors: 1,
            total_ns: 2_000_000_000,
            offcpu_ns: 500_000_000,
        },
    );
    let other = syscost_engine::process_table::ProcessRow {
        pid: 43,
        ..row.clone()
    };
    b.add(
        &[row, other],
        |r| r.pid,
        |r| vec![("pid", r.pid.to_string()), ("comm", r.comm.to_string())],
        &[],
        std::time::Instant::now(),
    );
    b.series(vec![("pid", "other".into()), ("comm", String::new())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use syscost_engine::process_table::top_id;

    use syscost_report::fixtures::{top_key as k, top_value as v};

    /// A series without calls keeps its place for IDLE, and then gives it to the next
    /// busiest; a series whose labels change under the same key (an exec, a pid taken
    /// by another program) starts again as a new series of its own, and the old
    /// program's counts are not carried into it.
    #[test]
    fn bounded_series_end_when_idle_and_start_again_on_a_new_name() {
        let t0 = std::time::Instant::now();
        let at = |s: u64| t0 + std::time::Duration::from_secs(s);
        let row = |pid: u32, comm: &str, calls: u64| {
            let mut r = ProcessRow {
                pid,
                comm: comm.into(),
                ..Default::default()
            };
            if calls > 0 {
                r.add(top_id(&k(pid, 39)), &v(calls, 0, calls * 100, 0));
            }
            r
        };
        let id = |r: &ProcessRow| r.pid.to_string();
        let labels =
            |r: &ProcessRow| vec![("pid", r.pid.to_string()), ("comm", r.comm.to_string())];
        let series = |b: &BoundedSeries<String>| -> Vec<(String, String, u64)> {
            b.series(vec![("pid", "other".into()), ("comm", String::new())])
                .iter()
                .map(|s| {
                    (
                        s.labels[0].1.clone(),
                        s.labels[1].1.clone(),
                        s.syscalls.values().map(|v| v.calls).sum(),
                    )
                })
                .collect()
        };
        let mut b = BoundedSeries::new(1);
        b.add(&[row(1, "app", 10)], id, labels, &[], at(0));
        // Without calls (no row in the interval) for less than IDLE: kept, and the busy
        // newcomer goes to other.
        b.add(&[row(2, "job", 7)], id, labels, &[], at(299));
        assert_eq!(
            series(&b),
            vec![
                ("1".into(), "app".into(), 10),
                ("other".into(), String::new(), 7)
            ]
        );
        // IDLE without calls: the place goes to the busiest of the interval.
        b.add(&[row(2, "job", 3)], id, labels, &[], at(300));
        assert_eq!(
            series(&b),
            vec![
                ("2".into(), "job".into(), 3),
                ("other".into(), String::new(), 7)
            ]
        );
        // pid 2 execs another program: a new series under the new name, from zero.
        b.add(&[row(2, "worker", 4)], id, labels, &[], at(301));
        assert_eq!(
            series(&b),
            vec![
                ("2".into(), "worker".into(), 4),
                ("other".into(), String::new(), 7)
            ]
        );
        // Renamed again (and again): the series keeps its labels and counts on.
        for (i, name) in ["w-1", "w-2", "w-3"].iter().enumerate() {
            b.add(&[row(2, name, 1)], id, labels, &[], at(302 + i as u64));
        }
        assert_eq!(series(&b)[0], ("2".into(), "worker".into(), 7));
        // Calls keep it: the idle clock starts again at each.
        b.add(&[row(2, "worker", 1)], id, labels, &[], at(600));
        b.add(&[row(3, "x", 9)], id, labels, &[], at(899));
        assert_eq!(series(&b)[0], ("2".into(), "worker".into(), 8));
        // Its pid taken by another process once it exited: a new series.
        b.add(&[row(2, "worker", 1)], id, labels, &["2".into()], at(900));
        b.add(&[row(2, "next", 2)], id, labels, &[], at(901));
        assert_eq!(series(&b)[0], ("2".into(), "next".into(), 2));
    }

    /// A process that renames itself at every interval makes at most two series over its
    /// life, whatever the number of names.
    #[test]
    fn a_process_renaming_itself_makes_at_most_two_series() {
        let t0 = std::time::Instant::now();
        let mut b = BoundedSeries::new(4);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..1000u64 {
            let mut r = ProcessRow {
                pid: 7,
                comm: format!("name-{i}").into(),
                ..Default::default()
            };
            r.add(top_id(&k(7, 39)), &v(1, 0, 100, 0));
            b.add(
                &[r],
                |r| r.pid.to_string(),
                |r| vec![("pid", r.pid.to_string()), ("comm", r.comm.to_string())],
                &[],
                t0 + std::time::Duration::from_secs(i),
            );
            for s in b.series(vec![("pid", "other".into()), ("comm", String::new())]) {
                seen.insert(s.labels);
            }
        }
        assert_eq!(seen.len(), 2, "label sets: {seen:?}");
        let calls: u64 = b
            .series(vec![("pid", "other".into()), ("comm", String::new())])
            .iter()
            .flat_map(|s| s.syscalls.values())
            .map(|v| v.calls)
            .sum();
        assert_eq!(
            calls, 999,
            "every call after the first rename in one series"
        );
    }

    #[test]
    fn bounded_series_keep_their_counters_growing() {
        let t0 = std::time::Instant::now();
        let row = |pid: u32, calls: u64, exited: bool| {
            let mut r = ProcessRow {
                pid,
                comm: format!("p{pid}").into(),
                exited,
                ..Default::default()
            };
            r.add(top_id(&k(pid, 39)), &v(calls, 0, calls * 100, 0));
            r
        };
        let mut b = BoundedSeries::new(2);
        let id = |r: &ProcessRow| r.pid.to_string();
        let labels = |r: &ProcessRow| vec![("pid", r.pid.to_string())];
        let ended = |rows: &[ProcessRow]| -> Vec<String> {
            rows.iter()
                .filter(|r| r.exited)
                .map(|r| r.pid.to_string())
                .collect()
        };
        let total = |b: &BoundedSeries<String>| -> u64 {
            b.series(vec![("pid", "other".into())])
                .iter()
                .flat_map(|s| s.syscalls.values())
                .map(|v| v.calls)
                .sum()
        };
        // 200 short-lived processes and two busy ones: at most 2 + 1 series, and every
        // call counted once.
        let mut expected = 0;
        let mut previous: HashMap<String, u64> = HashMap::new();
        for i in 0..200u32 {
            let rows = [row(1, 50, false), row(2, 40, false), row(1000 + i, 1, true)];
            expected += 91;
            b.add(
                &rows,
                id,
                labels,
                &ended(&rows),
                t0 + std::time::Duration::from_secs(u64::from(i)),
            );
            let series = b.series(vec![("pid", "other".into())]);
            assert!(series.len() <= 3, "{} series", series.len());
            assert_eq!(total(&b), expected);
            for s in series {
                let n: u64 = s.syscalls.values().map(|v| v.calls).sum();
                let key = s.labels[0].1.clone();
                assert!(
                    n >= previous.get(&key).copied().unwrap_or(0),
                    "{key} went back"
                );
                previous.insert(key, n);
            }
        }
        let names: Vec<String> = b
            .series(vec![("pid", "other".into())])
            .iter()
            .map(|s| s.labels[0].1.clone())
            .collect();
        assert_eq!(names, vec!["1", "2", "other"]);
        // When one exits, its series lingers, then its place goes to the next busiest.
        let now = t0 + std::time::Duration::from_secs(300);
        let rows = [row(2, 1, true), row(3, 5, false)];
        b.add(&rows, id, labels, &ended(&rows), now);
        assert_eq!(
            b.series(vec![("pid", "other".into())]).len(),
            3,
            "2 lingers, 3 goes to other"
        );
        b.add(&[row(3, 5, false)], id, labels, &[], now + LINGER);
        let names: Vec<String> = b
            .series(vec![("pid", "other".into())])
            .iter()
            .map(|s| s.labels[0].1.clone())
            .collect();
        assert_eq!(names, vec!["1", "3", "other"]);
    }
}
