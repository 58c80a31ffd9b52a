//! `--stacks`: the kernel's count and time of every call by (process, user stack,
//! syscall), joined with the stacks its samples unwound to.
//!
//! The kernel side knows a stack by the hash of its frame-pointer walk and counts each
//! call under it exactly. A sample of each stack's calls carries a copy of the stack,
//! unwound here with the call frame information as slow calls are: it names the frames
//! and reaches the callers the walk skips (a libc wrapper's caller, code built without
//! frame pointers). Where every sample of a walk unwound to one stack, that stack has the
//! walk's exact figures; where they unwound to several (the walk could not tell those
//! callers apart), the walk's figures are split between them in the samples'
//! proportions, and said to be estimates.

use std::collections::HashMap;

use syscost_common::{StackKey, StackValue, stack_counter};
use syscost_report::{
    profile::{CallStack, CallStacks, Frame, FramesFrom, SlowCall},
    syscall_names::SyscallId,
};

/// 1 in this many of a stack's calls (per CPU) is sampled unless `--stacks-sample` says
/// otherwise.
pub const SAMPLE_EVERY: u32 = 256;

/// The kernel's tables as read at the end.
#[derive(Clone, Debug, Default)]
pub struct Raw {
    /// Calls and time of each (process, stack hash, syscall key), summed over CPUs.
    pub calls: Vec<(StackKey, StackValue)>,
    /// Each stack's frame-pointer walk, innermost first, by its hash.
    pub frames: HashMap<u64, Vec<u64>>,
    /// `stack_counter::*`.
    pub counts: [u64; stack_counter::COUNT as usize],
    /// 1 in this many of a stack's calls per CPU was sampled.
    pub sample_every: u32,
}

impl Raw {
    /// What was counted after `earlier` (an earlier read of the same tables): each
    /// entry's calls and time less what `earlier` had of it, the entries with no call
    /// since left out; the counters likewise. Exact while every entry is kept one by
    /// one; once they are full, an entry's figures may move under the per-syscall sums
    /// beyond the bound (see [`Drained`]) between the reads, its whole history with it:
    /// [`Raw::moved_past_the_bound`] tells.
    pub fn since(&self, earlier: &Raw) -> Raw {
        let before: HashMap<StackKey, StackValue> = earlier.calls.iter().copied().collect();
        let calls: Vec<(StackKey, StackValue)> = self
            .calls
            .iter()
            .filter_map(|&(k, v)| {
                let b = before.get(&k).copied().unwrap_or_default();
                let d = StackValue {
                    calls: v.calls.saturating_sub(b.calls),
                    total_ns: v.total_ns.saturating_sub(b.total_ns),
                };
                (d.calls > 0).then_some((k, d))
            })
            .collect();
        let frames = calls
            .iter()
            .filter_map(|(k, _)| Some((k.stack, self.frames.get(&k.stack)?.clone())))
            .collect();
        let mut counts = self.counts;
        for (c, e) in counts.iter_mut().zip(earlier.counts) {
            *c = c.saturating_sub(e);
        }
        Raw {
            calls,
            frames,
            counts,
            sample_every: self.sample_every,
        }
    }
}

impl Raw {
    /// Whether the sums beyond the bound of entries kept one by one (see [`Drained`])
    /// changed since `earlier`: then [`Raw::since`] of them may hold calls from before
    /// `earlier` (entries moved there with their history).
    pub fn moved_past_the_bound(&self, earlier: &Raw) -> bool {
        let beyond = |r: &Raw| -> Vec<(StackKey, StackValue)> {
            let mut v: Vec<_> = r
                .calls
                .iter()
                .copied()
                .filter(|(k, _)| k.tgid == 0)
                .collect();
            v.sort_by_key(|(k, _)| (k.key, k.stack));
            v
        };
        beyond(self) != beyond(earlier)
    }
}

/// The entries of the windows closed, drained from the kernel's tables (see
/// `Tracer::drain_stack_window`), kept for the end: at most [`DRAINED_KEYS`] entries,
/// and what comes beyond them summed per syscall under no stack and no process (every
/// call still counted, its stack not told).
#[derive(Debug, Default)]
pub struct Drained {
    calls: HashMap<StackKey, StackValue>,
    frames: HashMap<u64, Vec<u64>>,
}

/// Entries kept one by one.
pub const DRAINED_KEYS: usize = 65_536;

impl Drained {
    /// Keeps what was drained: an entry already kept gets its figures added.
    /// A walk is kept when an entry kept one by one uses it (so every such entry keeps
    /// its walk: at most [`DRAINED_KEYS`] of them), and others while fewer than
    /// [`DRAINED_KEYS`] are kept (an entry whose drain comes later may use it).
    pub fn keep(&mut self, raw: Raw) {
        let mut used = std::collections::HashSet::new();
        for (mut key, v) in raw.calls {
            if !self.calls.contains_key(&key) && self.calls.len() >= DRAINED_KEYS {
                key = past_the_bound(key);
            } else {
                used.insert(key.stack);
            }
            let e = self.calls.entry(key).or_default();
            e.calls += v.calls;
            e.total_ns += v.total_ns;
        }
        for (hash, frames) in raw.frames {
            if used.contains(&hash) || self.frames.len() < DRAINED_KEYS {
                self.frames.entry(hash).or_insert(frames);
            }
        }
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// `raw` (the kernel's tables as they are) with what was drained: an entry's
    /// figures summed, the walks joined. Once the bound is reached, an entry of `raw`
    /// not kept one by one goes where its earlier windows went (summed per syscall under
    /// no stack), so that no line shows only the last window of a stack.
    pub fn joined(&self, raw: Raw) -> Raw {
        if self.calls.is_empty() {
            return raw;
        }
        let full = self.calls.len() >= DRAINED_KEYS;
        let Raw {
            calls,
            mut frames,
            counts,
            sample_every,
        } = raw;
        let mut merged: Vec<(StackKey, StackValue)> =
            self.calls.iter().map(|(k, v)| (*k, *v)).collect();
        let mut at: HashMap<StackKey, usize> = merged
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i))
            .collect();
        for (mut k, v) in calls {
            if full && !self.calls.contains_key(&k) {
                k = past_the_bound(k);
            }
            match at.get(&k) {
                Some(&i) => {
                    merged[i].1.calls += v.calls;
                    merged[i].1.total_ns += v.total_ns;
                }
                None => {
                    at.insert(k, merged.len());
                    merged.push((k, v));
                }
            }
        }
        for (hash, walk) in &self.frames {
            frames.entry(*hash).or_insert_with(|| walk.clone());
        }
        Raw {
            calls: merged,
            frames,
            counts,
            sample_every,
        }
    }
}

/// Where an entry past [`DRAINED_KEYS`] is counted: its syscall's, under no stack and
/// no process.
fn past_the_bound(k: StackKey) -> StackKey {
    StackKey {
        stack: 0,
        tgid: 0,
        key: k.key,
    }
}

/// What the samples of one (process, stack hash, syscall) unwound to.
#[derive(Clone, Debug, Default)]
struct Sampled {
    comm: String,
    syscall: String,
    /// Each distinct stack (innermost first) and how many samples unwound to it.
    unwound: Vec<(Vec<Frame>, u64)>,
}

/// The samples received, unwound and named.
#[derive(Debug, Default)]
pub struct Samples {
    by_key: HashMap<StackKey, Sampled>,
    received: u64,
}

impl Samples {
    /// One sample of the calls of `key`, its stack unwound and named in `call`.
    pub fn add(&mut self, key: StackKey, call: &SlowCall) {
        self.received += 1;
        let s = self.by_key.entry(key).or_insert_with(|| Sampled {
            comm: call.comm.clone(),
            syscall: call.syscall.clone(),
            unwound: Vec::new(),
        });
        let addrs = |f: &[Frame]| f.iter().map(|f| f.addr).collect::<Vec<_>>();
        let these = addrs(&call.stack);
        match s.unwound.iter_mut().find(|(f, _)| addrs(f) == these) {
            Some((_, n)) => *n += 1,
            None => s.unwound.push((call.stack.clone(), 1)),
        }
    }
}

/// `total` split in proportion to `weights` (largest remainders): the parts add up to
/// `total` exactly.
fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u64 = weights.iter().sum();
    if sum == 0 {
        return weights.iter().map(|_| 0).collect();
    }
    let exact: Vec<(u64, u128)> = weights
        .iter()
        .map(|&w| {
            let p = u128::from(total) * u128::from(w);
            ((p / u128::from(sum)) as u64, p % u128::from(sum))
        })
        .collect();
    let mut parts: Vec<u64> = exact.iter().map(|&(q, _)| q).collect();
    let mut left = total - parts.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

/// The calls by stack: each (process, stack, syscall) of `raw` with the frames its
/// samples unwound to (or, with none received, its walk's addresses unnamed); `comm_of`
/// names a process that no sample named, `cgroup_of` gives a process's cgroup (asked
/// once a process). Most calls first.
pub fn assemble(
    raw: &Raw,
    samples: &Samples,
    comm_of: impl Fn(u32) -> Option<String>,
    cgroup_of: impl Fn(u32) -> Option<String>,
) -> CallStacks {
    let mut stacks = Vec::new();
    let mut cgroups: HashMap<u32, Option<String>> = HashMap::new();
    for &(key, value) in &raw.calls {
        let cgroup = match key.tgid {
            0 => None,
            tgid => cgroups
                .entry(tgid)
                .or_insert_with(|| cgroup_of(tgid))
                .clone(),
        };
        let walk = raw.frames.get(&key.stack).map(Vec::as_slice).unwrap_or(&[]);
        let sampled = samples.by_key.get(&key);
        let syscall = sampled.map_or_else(
            || SyscallId::of(key.key, u64::MAX).name(),
            |s| s.syscall.clone(),
        );
        let comm = if key.tgid == 0 {
            // Beyond the entries kept one by one (see `Drained`).
            format!("(past {DRAINED_KEYS} entries)")
        } else {
            sampled
                .map(|s| s.comm.clone())
                .or_else(|| comm_of(key.tgid))
                .unwrap_or_else(|| format!("pid {}", key.tgid))
        };
        let line = |frames: Vec<Frame>, from, calls, total_ns, estimated, samples| CallStack {
            pid: key.tgid,
            comm: comm.clone(),
            syscall: syscall.clone(),
            calls,
            total_ns,
            frames,
            frames_from: from,
            estimated,
            samples,
            cgroup: cgroup.clone(),
        };
        // A sample that could not be unwound (its process gone before its mappings were
        // read, a copy too short) names the walk alone: beside samples that reached
        // further it is the same caller seen less well, not another one.
        let mut unwound: Vec<&(Vec<Frame>, u64)> = sampled
            .map(|s| s.unwound.iter().collect())
            .unwrap_or_default();
        let is_walk = |f: &[Frame]| f.iter().map(|f| f.addr).eq(walk.iter().copied());
        if unwound.iter().any(|(f, _)| !is_walk(f)) {
            unwound.retain(|(f, _)| !is_walk(f));
        }
        match unwound.as_slice() {
            [] => {
                let frames = if key.stack != 0 && walk.is_empty() {
                    vec![Frame {
                        function: Some("[stack not kept]".into()),
                        unknown: Some(
                            "its walk found no room, and no sample of it was received".into(),
                        ),
                        ..Frame::default()
                    }]
                } else {
                    walk.iter()
                        .map(|&addr| Frame {
                            addr,
                            unknown: Some("no sample of this stack was received to name it".into()),
                            ..Frame::default()
                        })
                        .collect()
                };
                stacks.push(line(
                    frames,
                    FramesFrom::Walk,
                    value.calls,
                    value.total_ns,
                    false,
                    0,
                ));
            }
            [(frames, n)] => {
                let from = if is_walk(frames) {
                    FramesFrom::Walk
                } else {
                    FramesFrom::Sample
                };
                stacks.push(line(
                    frames.clone(),
                    from,
                    value.calls,
                    value.total_ns,
                    false,
                    *n,
                ));
            }
            several => {
                let weights: Vec<u64> = several.iter().map(|(_, n)| *n).collect();
                let calls = split(value.calls, &weights);
                let times = split(value.total_ns, &weights);
                for (i, (frames, n)) in several.iter().enumerate() {
                    stacks.push(line(
                        frames.clone(),
                        FramesFrom::Sample,
                        calls[i],
                        times[i],
                        true,
                        *n,
                    ));
                }
            }
        }
    }
    stacks.sort_by(|a, b| {
        b.calls
            .cmp(&a.calls)
            .then(a.pid.cmp(&b.pid))
            .then(a.syscall.cmp(&b.syscall))
    });
    CallStacks {
        sample_every: raw.sample_every,
        stacks,
        calls_dropped: raw.counts[stack_counter::CALLS_DROPPED as usize],
        frames_dropped: raw.counts[stack_counter::FRAMES_DROPPED as usize],
        samples: samples.received,
        samples_dropped: raw.counts[stack_counter::SAMPLES_DROPPED as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window's tables: each entry's calls since the earlier read, those with none left
    /// out with their walks; counters likewise.
    #[test]
    fn a_window_is_the_later_read_less_the_earlier() {
        let key = |stack, tgid| StackKey {
            stack,
            tgid,
            key: 39,
        };
        let v = |calls, total_ns| StackValue { calls, total_ns };
        let mut earlier = Raw {
            calls: vec![(key(1, 7), v(1000, 5000)), (key(2, 7), v(10, 100))],
            sample_every: 64,
            ..Raw::default()
        };
        earlier.frames.insert(1, vec![0x10]);
        earlier.frames.insert(2, vec![0x20]);
        earlier.counts[stack_counter::CALLS_DROPPED as usize] = 3;
        let mut later = Raw {
            calls: vec![
                (key(1, 7), v(3000, 15000)),
                (key(2, 7), v(10, 100)),
                (key(3, 8), v(5, 50)),
            ],
            ..earlier.clone()
        };
        later.frames.insert(3, vec![0x30]);
        later.counts[stack_counter::CALLS_DROPPED as usize] = 4;
        let d = later.since(&earlier);
        assert_eq!(
            d.calls,
            vec![(key(1, 7), v(2000, 10000)), (key(3, 8), v(5, 50))]
        );
        let mut walks: Vec<_> = d.frames.keys().copied().collect();
        walks.sort();
        assert_eq!(walks, [1, 3]);
        assert_eq!(d.counts[stack_counter::CALLS_DROPPED as usize], 1);
        assert_eq!(d.sample_every, 64);
        assert!(earlier.since(&earlier).calls.is_empty());
        assert!(!later.moved_past_the_bound(&earlier));
        let mut beyond = later.clone();
        beyond.calls.push((key(0, 0), v(7, 70)));
        assert!(beyond.moved_past_the_bound(&earlier));
        assert!(!beyond.moved_past_the_bound(&beyond.clone()));
    }

    fn frame(addr: u64, f: &str) -> Frame {
        Frame {
            addr,
            function: Some(f.into()),
            ..Frame::default()
        }
    }

    fn sample(stack: Vec<Frame>) -> SlowCall {
        SlowCall {
            pid: 9,
            comm: "sites".into(),
            syscall: "getppid".into(),
            stack,
            ..SlowCall::default()
        }
    }

    fn key(stack: u64) -> StackKey {
        StackKey {
            stack,
            tgid: 9,
            key: 110,
        }
    }

    #[test]
    fn split_adds_up_exactly_and_follows_the_weights() {
        assert_eq!(split(6000, &[1, 2, 3]), vec![1000, 2000, 3000]);
        assert_eq!(split(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(split(0, &[5, 1]), vec![0, 0]);
        assert_eq!(split(7, &[0, 0]), vec![0, 0]);
        for (total, w) in [
            (1_000_003u64, vec![3u64, 7, 11]),
            (u64::MAX / 2, vec![1, 1]),
        ] {
            assert_eq!(split(total, &w).iter().sum::<u64>(), total);
        }
    }

    #[test]
    fn a_walk_whose_samples_agree_keeps_its_exact_figures() {
        let walk = vec![0x10, 0x30];
        let raw = Raw {
            calls: vec![(
                key(5),
                StackValue {
                    calls: 1000,
                    total_ns: 9000,
                },
            )],
            frames: HashMap::from([(5, walk.clone())]),
            sample_every: 64,
            ..Raw::default()
        };
        let mut samples = Samples::default();
        // The unwinding reaches the caller the walk skipped (0x20).
        let unwound = vec![
            frame(0x10, "getppid"),
            frame(0x20, "site_a"),
            frame(0x30, "main"),
        ];
        for _ in 0..3 {
            samples.add(key(5), &sample(unwound.clone()));
        }
        let s = assemble(&raw, &samples, |_| None, |_| None);
        assert_eq!(s.stacks.len(), 1);
        let line = &s.stacks[0];
        assert_eq!((line.calls, line.total_ns, line.samples), (1000, 9000, 3));
        assert_eq!(line.frames, unwound);
        assert_eq!(line.frames_from, FramesFrom::Sample);
        assert!(!line.estimated);
        assert_eq!(
            (line.comm.as_str(), line.syscall.as_str()),
            ("sites", "getppid")
        );
        assert_eq!(s.samples, 3);
    }

    #[test]
    fn samples_that_unwind_as_the_walk_are_the_walks_frames() {
        let raw = Raw {
            calls: vec![(
                key(5),
                StackValue {
                    calls: 4,
                    total_ns: 8,
                },
            )],
            frames: HashMap::from([(5, vec![0x10, 0x30])]),
            ..Raw::default()
        };
        let mut samples = Samples::default();
        samples.add(
            key(5),
            &sample(vec![frame(0x10, "getppid"), frame(0x30, "main")]),
        );
        let s = assemble(&raw, &samples, |_| None, |_| None);
        assert_eq!(s.stacks[0].frames_from, FramesFrom::Walk);
    }

    #[test]
    fn a_sample_that_could_not_be_unwound_is_not_another_caller() {
        let raw = Raw {
            calls: vec![(
                key(5),
                StackValue {
                    calls: 300,
                    total_ns: 3000,
                },
            )],
            frames: HashMap::from([(5, vec![0x10, 0x30])]),
            ..Raw::default()
        };
        let mut samples = Samples::default();
        let walk = || sample(vec![frame(0x10, "getppid"), frame(0x30, "main")]);
        let unwound = || {
            sample(vec![
                frame(0x10, "getppid"),
                frame(0x20, "site_a"),
                frame(0x30, "main"),
            ])
        };
        for s in [unwound(), walk(), unwound()] {
            samples.add(key(5), &s);
        }
        let s = assemble(&raw, &samples, |_| None, |_| None);
        assert_eq!(s.stacks.len(), 1, "{:?}", s.stacks);
        let line = &s.stacks[0];
        assert_eq!(
            (line.calls, line.total_ns, line.estimated),
            (300, 3000, false)
        );
        assert_eq!(line.frames_from, FramesFrom::Sample);
        assert_eq!(line.frames[1].raw_label(), "site_a");
        // Samples that all failed keep the walk's frames and figures.
        let mut only_walks = Samples::default();
        only_walks.add(key(5), &walk());
        let s = assemble(&raw, &only_walks, |_| None, |_| None);
        assert_eq!(s.stacks[0].frames_from, FramesFrom::Walk);
        assert_eq!(s.stacks[0].calls, 300);
    }

    #[test]
    fn a_walk_shared_by_several_callers_is_split_by_their_samples_and_says_so() {
        let raw = Raw {
            calls: vec![(
                key(5),
                StackValue {
                    calls: 6001,
                    total_ns: 60_010,
                },
            )],
            frames: HashMap::from([(5, vec![0x10])]),
            counts: [2, 1, 6, 4],
            sample_every: 64,
        };
        let mut samples = Samples::default();
        for (site, n) in [("site_a", 1), ("site_b", 2), ("site_c", 3)] {
            for _ in 0..n {
                samples.add(
                    key(5),
                    &sample(vec![frame(0x10, "getppid"), frame(0x20 + n, site)]),
                );
            }
        }
        let s = assemble(&raw, &samples, |_| None, |_| None);
        let got: Vec<(String, u64, bool)> = s
            .stacks
            .iter()
            .map(|l| (l.frames[1].raw_label(), l.calls, l.estimated))
            .collect();
        assert_eq!(
            got,
            [
                ("site_c".to_string(), 3001, true),
                ("site_b".to_string(), 2000, true),
                ("site_a".to_string(), 1000, true)
            ]
        );
        assert_eq!(s.stacks.iter().map(|l| l.total_ns).sum::<u64>(), 60_010);
        assert_eq!(
            (s.calls_dropped, s.frames_dropped, s.samples_dropped),
            (2, 1, 4)
        );
    }

    #[test]
    fn a_walk_without_samples_keeps_its_figures_and_says_why_it_is_unnamed() {
        let raw = Raw {
            calls: vec![(
                key(5),
                StackValue {
                    calls: 2,
                    total_ns: 3,
                },
            )],
            frames: HashMap::from([(5, vec![0x10, 0x30])]),
            ..Raw::default()
        };
        let asked = std::cell::Cell::new(0);
        let s = assemble(
            &raw,
            &Samples::default(),
            |pid| Some(format!("proc{pid}")),
            |pid| {
                asked.set(asked.get() + 1);
                Some(format!("/cg{pid}"))
            },
        );
        assert_eq!(asked.get(), 1, "a cgroup asked once a process");
        // A walk without room and without a sample says so, not "no user stack".
        let lost = Raw {
            calls: vec![(
                key(6),
                StackValue {
                    calls: 1,
                    total_ns: 1,
                },
            )],
            ..Raw::default()
        };
        let l = assemble(&lost, &Samples::default(), |_| None, |_| None);
        assert_eq!(l.stacks[0].frames[0].raw_label(), "[stack not kept]");
        let line = &s.stacks[0];
        let name = SyscallId::of(110, u64::MAX).name();
        assert_eq!((line.calls, line.comm.as_str()), (2, "proc9"));
        assert_eq!(line.cgroup.as_deref(), Some("/cg9"));
        assert_eq!(line.syscall, name);
        assert_eq!(line.frames.len(), 2);
        assert!(line.frames.iter().all(|f| f.unknown.is_some()));
    }

    /// Past the bound of walks, the walk of an entry kept one by one is still kept; a
    /// walk no kept entry uses is not.
    #[test]
    fn a_kept_entry_keeps_its_walk_past_the_bound() {
        let mut r = Drained::default();
        let mut raw = Raw::default();
        for i in 0..DRAINED_KEYS as u64 {
            raw.frames.insert((i << 2) | 1, vec![i]);
        }
        r.keep(raw);
        let (used, unused) = ((u64::MAX << 2) | 1, (u64::MAX << 3) | 1);
        let mut raw = Raw::default();
        raw.calls.push((
            StackKey {
                stack: used,
                tgid: 9,
                key: 110,
            },
            StackValue {
                calls: 1,
                total_ns: 5,
            },
        ));
        raw.frames.insert(used, vec![0x10]);
        raw.frames.insert(unused, vec![0x20]);
        r.keep(raw);
        let j = r.joined(Raw::default());
        assert_eq!(j.frames.get(&used), Some(&vec![0x10]));
        assert!(!j.frames.contains_key(&unused));
    }

    /// Entries drained are joined with the kernel's at the end, summed where one came
    /// back (a later window, or a pid taken again), and beyond the bound summed per
    /// syscall under no stack: every call counted once.
    #[test]
    fn drained_entries_are_joined_and_bounded() {
        let value = |calls| StackValue {
            calls,
            total_ns: calls * 10,
        };
        let mut r = Drained::default();
        let mut raw = Raw::default();
        raw.calls.push((key(5), value(3)));
        raw.frames.insert(5, vec![0x10, 0x20]);
        r.keep(raw);
        let mut now = Raw::default();
        now.calls.push((key(5), value(4)));
        now.calls.push((key(6), value(1)));
        let j = r.joined(now);
        let got: HashMap<u64, u64> = j.calls.iter().map(|(k, v)| (k.stack, v.calls)).collect();
        assert_eq!(got, HashMap::from([(5, 7), (6, 1)]));
        assert_eq!(j.frames.get(&5), Some(&vec![0x10, 0x20]));
        // Beyond the bound: one entry per syscall, no stack, no process.
        let mut r = Drained::default();
        let mut raw = Raw::default();
        for i in 0..(DRAINED_KEYS as u64 + 100) {
            raw.calls.push((
                StackKey {
                    stack: i | 1,
                    tgid: 1 + (i % 7) as u32,
                    key: 110,
                },
                value(2),
            ));
        }
        r.keep(raw);
        assert_eq!(r.len(), DRAINED_KEYS + 1);
        let j = r.joined(Raw::default());
        let total: u64 = j.calls.iter().map(|(_, v)| v.calls).sum();
        assert_eq!(total, 2 * (DRAINED_KEYS as u64 + 100));
        let other = j.calls.iter().find(|(k, _)| k.tgid == 0).unwrap();
        assert_eq!((other.0.stack, other.1.calls), (0, 200));
        // Full: the kernel's entry of a stack past the bound joins its earlier windows
        // there, not a line of its own with only its last window; a kept one is summed.
        let late = StackKey {
            stack: (DRAINED_KEYS as u64 + 50) | 1,
            tgid: 3,
            key: 110,
        };
        let kept = StackKey {
            stack: 1,
            tgid: 1,
            key: 110,
        };
        let mut now = Raw::default();
        now.calls.push((late, value(5)));
        now.calls.push((kept, value(1)));
        let j2 = r.joined(now);
        assert!(j2.calls.iter().all(|(k, _)| *k != late));
        let past = j2.calls.iter().find(|(k, _)| k.tgid == 0).unwrap();
        assert_eq!(past.1.calls, 205);
        let one = j2.calls.iter().find(|(k, _)| *k == kept).unwrap();
        assert_eq!(one.1.calls, 3);
        assert_eq!(
            j2.calls.iter().map(|(_, v)| v.calls).sum::<u64>(),
            2 * (DRAINED_KEYS as u64 + 100) + 6
        );
        let named = assemble(&j, &Samples::default(), |_| None, |_| None);
        assert!(
            named
                .stacks
                .iter()
                .any(|s| s.comm == format!("(past {DRAINED_KEYS} entries)") && s.calls == 200)
        );
    }
}
