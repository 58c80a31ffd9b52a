//! Latency histograms: the kernel's dense bucket counts, their percentiles (through the
//! `histogram` crate, whose layout the kernel reproduces), and the sparse form profiles
//! store.

use anyhow::{Context as _, Result, bail};
use histogram::Histogram;
use serde::{Deserialize, Serialize};
use syscost_common::latency_bucket::{bucket_lower, bucket_upper};
use syscost_common::{GROUPING_POWER, HISTOGRAM_BUCKETS, MAX_VALUE_POWER, bucket_index};

/// One non-empty bucket: `count` calls took `lo_ns..=hi_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub lo_ns: u64,
    pub hi_ns: u64,
    pub count: u64,
}

/// p50, p90 and p99 of a histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
}

/// Percentiles of dense bucket counts. Each percentile is reported as the upper bound of
/// the bucket it falls in (at most 12.5% above the true value), clamped to the known
/// `min_ns..=max_ns` so a percentile never exceeds the exact maximum.
pub fn percentiles(dense: &[u64], min_ns: u64, max_ns: u64) -> Result<Percentiles> {
    let hist = Histogram::from_buckets(GROUPING_POWER, MAX_VALUE_POWER, dense.to_vec())
        .context("histogram does not have the kernel's bucket layout")?;
    let Some(q) = hist.quantiles(&[0.5, 0.9, 0.99])? else {
        return Ok(Percentiles::default());
    };
    let mut it = q
        .entries()
        .values()
        .map(|b| b.end().clamp(min_ns, max_ns.max(min_ns)));
    let mut next = || it.next().unwrap_or(0);
    Ok(Percentiles {
        p50_ns: next(),
        p90_ns: next(),
        p99_ns: next(),
    })
}

/// The non-empty buckets of dense counts.
pub fn to_sparse(dense: &[u64]) -> Vec<Bucket> {
    dense
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, &count)| Bucket {
            lo_ns: bucket_lower(i),
            hi_ns: bucket_upper(i),
            count,
        })
        .collect()
}

/// Dense counts from sparse buckets; a bucket whose bounds are not the kernel's is an
/// error (a file from another layout must not be read as this one).
pub fn to_dense(sparse: &[Bucket]) -> Result<Vec<u64>> {
    let mut dense = vec![0u64; HISTOGRAM_BUCKETS];
    for b in sparse {
        let i = bucket_index(b.lo_ns);
        if bucket_lower(i) != b.lo_ns || bucket_upper(i) != b.hi_ns {
            bail!(
                "histogram bucket {}..={} ns is not a syscost bucket",
                b.lo_ns,
                b.hi_ns
            );
        }
        dense[i] = dense[i]
            .checked_add(b.count)
            .context("histogram bucket count overflows")?;
    }
    Ok(dense)
}

/// Smallest and largest value the non-empty buckets allow (for interval views, where the
/// exact min and max cannot be derived from two cumulative snapshots).
pub fn bounds(dense: &[u64]) -> (u64, u64) {
    let first = dense.iter().position(|&c| c > 0);
    let last = dense.iter().rposition(|&c| c > 0);
    match (first, last) {
        (Some(f), Some(l)) => (bucket_lower(f), bucket_upper(l)),
        _ => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense_of(values: &[(u64, u64)]) -> Vec<u64> {
        let mut d = vec![0u64; HISTOGRAM_BUCKETS];
        for &(v, n) in values {
            d[bucket_index(v)] += n;
        }
        d
    }

    #[test]
    fn percentiles_pick_the_right_buckets() {
        // 90 calls of 100 ns, 9 of 10 us, 1 of 1 ms.
        let d = dense_of(&[(100, 90), (10_000, 9), (1_000_000, 1)]);
        let p = percentiles(&d, 100, 1_000_000).unwrap();
        assert_eq!(p.p50_ns, bucket_upper(bucket_index(100)));
        assert_eq!(p.p90_ns, bucket_upper(bucket_index(100)));
        assert_eq!(p.p99_ns, bucket_upper(bucket_index(10_000)));
        // Upper bounds are within 12.5% of the value.
        assert!(p.p50_ns >= 100 && p.p50_ns as f64 <= 100.0 * 1.125);
    }

    #[test]
    fn percentiles_are_clamped_to_min_and_max() {
        let d = dense_of(&[(1_000_000, 10)]);
        let p = percentiles(&d, 1_000_000, 1_000_000).unwrap();
        assert_eq!(
            p,
            Percentiles {
                p50_ns: 1_000_000,
                p90_ns: 1_000_000,
                p99_ns: 1_000_000
            }
        );
    }

    #[test]
    fn empty_histogram_has_zero_percentiles() {
        let d = vec![0u64; HISTOGRAM_BUCKETS];
        assert_eq!(percentiles(&d, 0, 0).unwrap(), Percentiles::default());
        assert_eq!(bounds(&d), (0, 0));
    }

    #[test]
    fn wrong_layout_is_an_error() {
        assert!(percentiles(&[1, 2, 3], 0, 3).is_err());
        let bad = [Bucket {
            lo_ns: 17,
            hi_ns: 18,
            count: 1,
        }];
        assert!(to_dense(&bad).is_err());
    }

    #[test]
    fn sparse_round_trip_and_bounds() {
        let d = dense_of(&[(5, 3), (1_234, 7), (98_765_432, 1)]);
        let s = to_sparse(&d);
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0],
            Bucket {
                lo_ns: 5,
                hi_ns: 5,
                count: 3
            }
        );
        assert!(s[1].lo_ns <= 1_234 && 1_234 <= s[1].hi_ns && s[1].count == 7);
        assert_eq!(to_dense(&s).unwrap(), d);
        let (lo, hi) = bounds(&d);
        assert_eq!(lo, 5);
        assert!(hi >= 98_765_432 && (hi as f64) < 98_765_432.0 * 1.125);
    }
}
