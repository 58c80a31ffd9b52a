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
mod tests;

/// The collector's profiles through the report's JSON file: written, read back the same,
/// older versions upgraded, damaged files refused with what is wrong.
#[cfg(test)]
mod json_round_trip;
