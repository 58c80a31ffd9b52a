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
mod tests;
