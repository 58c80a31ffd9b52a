//! Turns raw map contents into profiles: sums the per-CPU values, subtracts an earlier
//! snapshot for interval views, computes percentiles and names. Pure: the tracer hands it
//! the values it read, so everything here is tested without root.

use std::collections::BTreeMap;

use anyhow::Result;
use syscost_common::{ERRNO_SLOTS, ErrnoCounts, SyscallStats, counter};

use crate::{
    errno_name::slot_name,
    latency,
    profile::{Profile, SCHEMA_VERSION, SyscallProfile, Target},
    syscall_names,
};

/// The kernel's counters at one moment, summed over CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Syscall number -> statistics, for syscalls with at least one call.
    pub stats: BTreeMap<u32, SyscallStats>,
    /// Syscall number -> errno counts, for syscalls with at least one error.
    pub errnos: BTreeMap<u32, ErrnoCounts>,
    /// `syscost_common::counter` values.
    pub counters: [u64; counter::COUNT as usize],
    /// Whether `min_ns`/`max_ns` are exact (false for a difference of two snapshots,
    /// where they are the bounds of the non-empty histogram buckets).
    pub exact_extremes: bool,
}

/// Sums one syscall's per-CPU statistics.
pub fn sum_cpus(per_cpu: &[SyscallStats]) -> SyscallStats {
    let mut sum = SyscallStats::ZERO;
    for s in per_cpu.iter().filter(|s| s.calls > 0) {
        sum.min_ns = if sum.calls == 0 {
            s.min_ns
        } else {
            sum.min_ns.min(s.min_ns)
        };
        sum.calls += s.calls;
        sum.errors += s.errors;
        sum.total_ns += s.total_ns;
        sum.offcpu_ns += s.offcpu_ns;
        sum.voluntary += s.voluntary;
        sum.involuntary += s.involuntary;
        sum.max_ns = sum.max_ns.max(s.max_ns);
        for (a, b) in sum.hist.iter_mut().zip(s.hist.iter()) {
            *a += b;
        }
    }
    sum
}

/// Sums one syscall's per-CPU errno counts.
pub fn sum_errnos(per_cpu: &[ErrnoCounts]) -> ErrnoCounts {
    let mut sum = ErrnoCounts::ZERO;
    for e in per_cpu {
        for (a, b) in sum.counts.iter_mut().zip(e.counts.iter()) {
            *a += b;
        }
    }
    sum
}

impl Snapshot {
    /// Events that could not be recorded.
    pub fn dropped(&self) -> u64 {
        self.counters[counter::DROPPED_TID as usize]
            + self.counters[counter::DROPPED_NR as usize]
            + self.counters[counter::DROPPED_CHILD as usize]
    }

    /// Exits without a seen enter.
    pub fn unpaired(&self) -> u64 {
        self.counters[counter::UNPAIRED as usize]
    }

    /// What happened between `earlier` and `self` (both cumulative, same tracer).
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let mut stats = BTreeMap::new();
        for (&nr, now) in &self.stats {
            let before = earlier
                .stats
                .get(&nr)
                .copied()
                .unwrap_or(SyscallStats::ZERO);
            let calls = now.calls.saturating_sub(before.calls);
            if calls == 0 {
                continue;
            }
            let mut d = SyscallStats {
                calls,
                errors: now.errors.saturating_sub(before.errors),
                total_ns: now.total_ns.saturating_sub(before.total_ns),
                offcpu_ns: now.offcpu_ns.saturating_sub(before.offcpu_ns),
                voluntary: now.voluntary.saturating_sub(before.voluntary),
                involuntary: now.involuntary.saturating_sub(before.involuntary),
                ..SyscallStats::ZERO
            };
            for ((h, a), b) in d.hist.iter_mut().zip(&now.hist).zip(&before.hist) {
                *h = a.saturating_sub(*b);
            }
            let (lo, hi) = latency::bounds(&d.hist);
            d.min_ns = lo.max(now.min_ns);
            d.max_ns = hi.min(now.max_ns);
            stats.insert(nr, d);
        }
        let mut errnos = BTreeMap::new();
        for (&nr, now) in &self.errnos {
            let before = earlier
                .errnos
                .get(&nr)
                .copied()
                .unwrap_or(ErrnoCounts::ZERO);
            let mut d = ErrnoCounts::ZERO;
            for ((x, a), b) in d.counts.iter_mut().zip(&now.counts).zip(&before.counts) {
                *x = a.saturating_sub(*b);
            }
            if d.counts.iter().any(|&c| c > 0) {
                errnos.insert(nr, d);
            }
        }
        let mut counters = self.counters;
        for (c, b) in counters.iter_mut().zip(earlier.counters) {
            *c = c.saturating_sub(b);
        }
        Snapshot {
            stats,
            errnos,
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
        let mut syscalls = Vec::with_capacity(self.stats.len());
        for (&nr, s) in &self.stats {
            let p = latency::percentiles(&s.hist, s.min_ns, s.max_ns)?;
            let mut errnos = BTreeMap::new();
            if let Some(e) = self.errnos.get(&nr) {
                for (slot, &count) in (0..ERRNO_SLOTS).zip(e.counts.iter()) {
                    if count > 0 {
                        errnos.insert(slot_name(slot), count);
                    }
                }
            }
            syscalls.push(SyscallProfile {
                name: syscall_names::name(nr),
                nr,
                calls: s.calls,
                errors: s.errors,
                errnos,
                total_ns: s.total_ns,
                oncpu_ns: s.total_ns - s.offcpu_ns.min(s.total_ns),
                offcpu_ns: s.offcpu_ns.min(s.total_ns),
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
            dropped: self.dropped(),
            syscalls,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscost_common::{bucket_index, errno_slot};

    fn stats(latencies: &[u64]) -> SyscallStats {
        let mut s = SyscallStats::ZERO;
        for &ns in latencies {
            s.calls += 1;
            s.total_ns += ns;
            s.min_ns = if s.calls == 1 { ns } else { s.min_ns.min(ns) };
            s.max_ns = s.max_ns.max(ns);
            s.hist[bucket_index(ns)] += 1;
        }
        s
    }

    #[test]
    fn sums_cpus_ignoring_idle_ones() {
        let idle = SyscallStats::ZERO;
        let sum = sum_cpus(&[stats(&[300, 500]), idle, stats(&[200, 900])]);
        assert_eq!(sum.calls, 4);
        assert_eq!(sum.total_ns, 1900);
        assert_eq!(sum.min_ns, 200);
        assert_eq!(sum.max_ns, 900);
        assert_eq!(sum.hist.iter().sum::<u64>(), 4);
        assert_eq!(sum_cpus(&[idle, idle]), SyscallStats::ZERO);
    }

    fn snapshot(calls: &[(u32, &[u64])], ebadf: u64) -> Snapshot {
        let mut s = Snapshot {
            exact_extremes: true,
            ..Default::default()
        };
        for &(nr, lat) in calls {
            s.stats.insert(nr, stats(lat));
        }
        if ebadf > 0 {
            let mut e = ErrnoCounts::ZERO;
            e.counts[errno_slot(9) as usize] = ebadf;
            s.stats.get_mut(&3).unwrap().errors = ebadf;
            s.errnos.insert(3, e);
        }
        s
    }

    #[test]
    fn profile_names_and_errnos() {
        let mut snap = snapshot(&[(3, &[100, 200, 300]), (110, &[50])], 2);
        snap.counters[counter::UNPAIRED as usize] = 1;
        snap.counters[counter::DROPPED_NR as usize] = 4;
        let p = snap.to_profile(Target::default(), 1_000, true).unwrap();
        assert_eq!(p.unpaired, 1);
        assert_eq!(p.dropped, 4);
        let close = &p.syscalls[0];
        assert_eq!((close.nr, close.calls, close.errors), (3, 3, 2));
        assert_eq!(close.errnos.get("EBADF"), Some(&2));
        assert_eq!((close.avg_ns, close.min_ns, close.max_ns), (200, 100, 300));
        assert_eq!(close.histogram.iter().map(|b| b.count).sum::<u64>(), 3);
        assert_eq!(p.totals(), (4, 2, 650));
    }

    #[test]
    fn interval_is_the_difference() {
        let before = snapshot(&[(3, &[100, 200])], 1);
        let after = snapshot(&[(3, &[100, 200, 5_000, 7_000]), (110, &[50])], 3);
        let d = after.since(&before);
        assert!(!d.exact_extremes);
        let close = d.stats[&3];
        assert_eq!((close.calls, close.errors, close.total_ns), (2, 2, 12_000));
        assert_eq!(close.hist.iter().sum::<u64>(), 2);
        assert!(close.min_ns <= 5_000 && close.min_ns as f64 >= 5_000.0 / 1.125);
        assert_eq!(close.max_ns, 7_000);
        assert_eq!(d.stats[&110].calls, 1);
        assert_eq!(d.errnos[&3].counts[errno_slot(9) as usize], 2);
        // Nothing new: nothing listed.
        assert!(after.since(&after).stats.is_empty());
    }
}
