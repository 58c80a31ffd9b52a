//! The kernel's log-linear latency buckets merged into classic `le` buckets at powers of
//! two, where the log-linear edges fall exactly, so every count lands in the right
//! bucket; and offered as a native histogram's sparse buckets, where no edge of the
//! kernel's falls on one of Prometheus's (theirs are powers of 2^(1/8) of a second,
//! ours of two nanoseconds), so each kernel bucket is counted whole in the native bucket
//! holding its middle.

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

/// Schema of the native histograms: 8 buckets per power of two, as the kernel's.
pub const NATIVE_SCHEMA: i32 = 3;

/// How far a call's native bucket may be from its latency, as a factor: its kernel
/// bucket's middle lies in the native bucket, at most 2^(1/8) (9.1%) wide, and the kernel
/// bucket is at most 12.5% wide around its middle (6.25% either side), so every latency
/// under 2^40 ns is within 2^(1/8) x 1.0625 < 1.16 of both ends of the native bucket
/// that counts it.
pub const NATIVE_ERROR_FACTOR: f64 = 1.16;

/// A native histogram's buckets: calls of 0 ns in the zero bucket, the rest by bucket
/// index (bucket `i` holds latencies in (2^((i-1)/8), 2^(i/8)] seconds), as spans of
/// consecutive indexes and each bucket's count as the difference from the one before
/// it, the exposition's encoding.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NativeBuckets {
    pub zero_count: u64,
    /// `(offset, length)`: the first span's offset is its first index, each further
    /// one's the gap after the span before it.
    pub spans: Vec<(i32, u32)>,
    pub deltas: Vec<i64>,
}

/// The native bucket index (schema [`NATIVE_SCHEMA`]) of a latency of `seconds` > 0.
pub fn native_index(seconds: f64) -> i32 {
    (seconds.log2() * f64::from(1 << NATIVE_SCHEMA)).ceil() as i32
}

/// The calls of 0 ns, and the count of each native bucket (by index, schema
/// [`NATIVE_SCHEMA`]) of a kernel histogram, as [`native_buckets`] counts them.
pub fn native_counts(hist: &[Bucket]) -> (u64, std::collections::BTreeMap<i32, u64>) {
    let mut zero_count = 0;
    let mut by_index = std::collections::BTreeMap::<i32, u64>::new();
    for b in hist.iter().filter(|b| b.count > 0) {
        if b.hi_ns == 0 {
            zero_count += b.count;
            continue;
        }
        let middle_ns = (b.lo_ns as f64 + b.hi_ns as f64) / 2.0;
        *by_index.entry(native_index(middle_ns / 1e9)).or_default() += b.count;
    }
    (zero_count, by_index)
}

/// The native buckets of a kernel histogram: each kernel bucket counted whole (so that
/// no bucket's count ever goes down between scrapes) in the native bucket holding its
/// middle. The kernel's last bucket also holds every longer call (2^40 ns, about 18
/// minutes, and more): those are counted at its middle too, the one exception to
/// [`NATIVE_ERROR_FACTOR`].
pub fn native_buckets(hist: &[Bucket]) -> NativeBuckets {
    let (zero_count, by_index) = native_counts(hist);
    let mut out = NativeBuckets {
        zero_count,
        ..NativeBuckets::default()
    };
    let (mut next, mut previous) = (None::<i32>, 0i64);
    for (&i, &n) in &by_index {
        match (next, out.spans.last_mut()) {
            (Some(expected), Some(span)) if expected == i => span.1 += 1,
            (Some(expected), _) => out.spans.push((i - expected, 1)),
            (None, _) => out.spans.push((i, 1)),
        }
        out.deltas.push(n as i64 - previous);
        previous = n as i64;
        next = Some(i + 1);
    }
    out
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

    /// The (index, count) pairs a native histogram's spans and deltas encode.
    fn decode(n: &NativeBuckets) -> Vec<(i32, u64)> {
        let mut out = Vec::new();
        let (mut index, mut count, mut deltas) = (0i32, 0i64, n.deltas.iter());
        for (k, &(offset, length)) in n.spans.iter().enumerate() {
            index = if k == 0 { offset } else { index + offset };
            for _ in 0..length {
                count += deltas.next().expect("a delta per bucket");
                out.push((index, count as u64));
                index += 1;
            }
        }
        assert!(deltas.next().is_none(), "a delta per bucket, no more");
        out
    }

    fn dense_of(values: &[u64]) -> Vec<latency::Bucket> {
        let mut dense = vec![0u64; HISTOGRAM_BUCKETS];
        for &v in values {
            dense[syscost_common::bucket_index(v)] += 1;
        }
        latency::to_sparse(&dense)
    }

    #[test]
    fn native_buckets_of_a_histogram() {
        // 0 ns, 1 ns (exact), twice 1,000 ns, 1,010 ns (the same kernel bucket), 1 ms.
        let n = native_buckets(&dense_of(&[0, 1, 1000, 1000, 1010, 1_000_000]));
        assert_eq!(n.zero_count, 1);
        let decoded = decode(&n);
        assert_eq!(
            decoded.iter().map(|&(_, c)| c).collect::<Vec<_>>(),
            vec![1, 3, 1]
        );
        // 1 ns = 2^-29.9 s: index ceil(-29.9 x 8) = -239.
        assert_eq!(decoded[0].0, -239);
        assert_eq!(decoded[0].0, native_index(1e-9));
        // Separate spans: the buckets are far apart.
        assert_eq!(n.spans.len(), 3);
    }

    proptest! {
        /// Every call is in the native histogram once, in a bucket whose two ends are
        /// within [`NATIVE_ERROR_FACTOR`] of its latency.
        #[test]
        fn native_buckets_hold_every_call_near_its_latency(v in 1u64..(1 << 39)) {
            let n = native_buckets(&dense_of(&[v]));
            let decoded = decode(&n);
            prop_assert_eq!(decoded.len(), 1);
            let (i, c) = decoded[0];
            prop_assert_eq!(c, 1);
            let s = v as f64 / 1e9;
            let lower = 2f64.powf(f64::from(i - 1) / 8.0);
            let upper = 2f64.powf(f64::from(i) / 8.0);
            prop_assert!(s / lower <= NATIVE_ERROR_FACTOR && upper / s <= NATIVE_ERROR_FACTOR,
                "{} ns in ({}, {}]", v, lower, upper);
        }

        /// More calls never lower a native bucket's count (Prometheus would read a reset),
        /// and the counts add up to the calls.
        #[test]
        fn native_buckets_only_grow(
            before in proptest::collection::vec(0u64..(1 << 36), 0..100),
            more in proptest::collection::vec(0u64..(1 << 36), 0..100),
        ) {
            let a = native_buckets(&dense_of(&before));
            let all: Vec<u64> = before.iter().chain(&more).copied().collect();
            let b = native_buckets(&dense_of(&all));
            let (da, db) = (decode(&a), decode(&b));
            prop_assert_eq!(b.zero_count + db.iter().map(|&(_, c)| c).sum::<u64>(), all.len() as u64);
            prop_assert!(b.zero_count >= a.zero_count);
            for (i, c) in da {
                let later = db.iter().find(|&&(j, _)| j == i).map_or(0, |&(_, c)| c);
                prop_assert!(later >= c, "bucket {} went from {} to {}", i, c, later);
            }
        }
    }
}
