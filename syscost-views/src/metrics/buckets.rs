//! The kernel's log-linear latency buckets merged into classic `le` buckets at powers of
//! two, where the log-linear edges fall exactly, so every count lands in the right
//! bucket.

use syscost_report::latency::Bucket;

/// Classic bucket bounds are `2^k - 1` ns for these `k`: 127 ns to 17.2 s. A value in
/// integer nanoseconds is at most `2^k - 1` exactly when it is below `2^k`, and every
/// power of two is an edge of the kernel's buckets.
pub const BOUND_POWERS: std::ops::RangeInclusive<u32> = 7..=34;

/// The classic bucket bounds, in nanoseconds.
pub fn bucket_bounds_ns() -> impl Iterator<Item = u64> {
    BOUND_POWERS.map(|k| (1u64 << k) - 1)
}

/// Merges non-empty log-linear buckets into classic ones: `(le in seconds, count in this
/// bucket alone)`, ending with `+Inf`, as the exposition encoder takes them (it sums
/// them up into the cumulative `_bucket` series).
pub fn classic_buckets(hist: &[Bucket]) -> Vec<(f64, u64)> {
    let bounds: Vec<u64> = bucket_bounds_ns().collect();
    let mut counts = vec![0u64; bounds.len() + 1];
    for b in hist {
        // The first bound at or above the bucket's top; the bucket's bottom is above the
        // bound before it, since bounds fall on bucket edges.
        counts[bounds.partition_point(|&le| le < b.hi_ns)] += b.count;
    }
    bounds
        .iter()
        .map(|&ns| ns as f64 / 1e9)
        .chain([f64::INFINITY])
        .zip(counts)
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use syscost_common::{
        HISTOGRAM_BUCKETS,
        latency_bucket::{bucket_lower, bucket_upper},
    };

    use super::*;
    use syscost_report::latency;

    #[test]
    fn every_bound_falls_on_a_bucket_edge() {
        for le in bucket_bounds_ns() {
            for i in 0..HISTOGRAM_BUCKETS {
                let (lo, hi) = (bucket_lower(i), bucket_upper(i));
                assert!(hi <= le || lo > le, "bucket {lo}..={hi} straddles le={le}");
            }
        }
    }

    #[test]
    fn merging_puts_each_bucket_under_its_bound() {
        let hist = vec![
            Bucket {
                lo_ns: 120,
                hi_ns: 127,
                count: 3,
            },
            Bucket {
                lo_ns: 128,
                hi_ns: 143,
                count: 5,
            },
            Bucket {
                lo_ns: 240,
                hi_ns: 255,
                count: 7,
            },
            Bucket {
                lo_ns: 1 << 40,
                hi_ns: u64::MAX,
                count: 1,
            },
        ];
        let merged = classic_buckets(&hist);
        assert_eq!(merged.len(), BOUND_POWERS.count() + 1);
        assert_eq!(merged[0], (127e-9, 3));
        assert_eq!(merged[1], (255e-9, 12));
        assert!(merged[2..merged.len() - 1].iter().all(|&(_, c)| c == 0));
        assert_eq!(merged.last(), Some(&(f64::INFINITY, 1)));
    }

    proptest! {
        /// Any kernel histogram: the merged buckets hold every call, and the cumulative
        /// count at each bound is exactly the number of calls at or below it.
        #[test]
        fn merging_keeps_counts_exact(values in proptest::collection::vec(0u64..(1 << 36), 0..200)) {
            let mut dense = vec![0u64; HISTOGRAM_BUCKETS];
            for &v in &values {
                dense[syscost_common::bucket_index(v)] += 1;
            }
            let merged = classic_buckets(&latency::to_sparse(&dense));
            prop_assert_eq!(merged.iter().map(|&(_, c)| c).sum::<u64>(), values.len() as u64);
            let mut cumulative = 0;
            for ((le, c), bound) in merged.iter().zip(bucket_bounds_ns()) {
                cumulative += c;
                prop_assert_eq!(*le, bound as f64 / 1e9);
                let at_or_below = values.iter().filter(|&&v| v <= bound).count() as u64;
                prop_assert_eq!(cumulative, at_or_below, "le={}", bound);
            }
        }
    }
}
