//! Log-linear latency buckets, the layout of the `histogram` crate (H2 encoding) with
//! grouping power 3 and max value power 40: values below 16 ns get a bucket each, every
//! further power of two is cut into 8 equal buckets (each at most 12.5% wide), and the
//! last bucket ends at 2^40 - 1 ns (about 18 minutes). Larger values land in the last
//! bucket. The kernel computes the index; userspace hands the buckets to
//! `histogram::Histogram::from_buckets(GROUPING_POWER, MAX_VALUE_POWER, ..)`.

/// 2^GROUPING_POWER buckets per power of two.
pub const GROUPING_POWER: u8 = 3;
/// Largest value with a bucket of its own: 2^MAX_VALUE_POWER - 1 ns.
pub const MAX_VALUE_POWER: u8 = 40;
/// Number of buckets: 16 exact ones, then 8 per power of two from 2^4 to 2^39.
pub const HISTOGRAM_BUCKETS: usize =
    (1 << (GROUPING_POWER + 1)) + (MAX_VALUE_POWER as usize - GROUPING_POWER as usize - 1) * 8;

/// Floor of log2(v) for v > 0, by binary search: BPF has no count-leading-zeros
/// instruction, and this form is a handful of branches the verifier follows easily.
#[inline(always)]
const fn log2_floor(mut v: u64) -> u32 {
    let mut r = 0;
    if v >= 1 << 32 {
        v >>= 32;
        r += 32;
    }
    if v >= 1 << 16 {
        v >>= 16;
        r += 16;
    }
    if v >= 1 << 8 {
        v >>= 8;
        r += 8;
    }
    if v >= 1 << 4 {
        v >>= 4;
        r += 4;
    }
    if v >= 1 << 2 {
        v >>= 2;
        r += 2;
    }
    if v >= 1 << 1 {
        r += 1;
    }
    r
}

/// The bucket of a latency of `ns` nanoseconds, always `< HISTOGRAM_BUCKETS`.
#[inline(always)]
pub const fn bucket_index(ns: u64) -> usize {
    if ns < (1 << (GROUPING_POWER + 1)) {
        return ns as usize;
    }
    // s = number of low bits a bucket ignores; (s << g) + (ns >> s) walks 8 buckets per
    // power of two (the top bit of ns >> s is always set, which supplies the offset).
    let s = log2_floor(ns) - GROUPING_POWER as u32;
    let idx = ((s as u64) << GROUPING_POWER) + (ns >> s);
    if idx >= HISTOGRAM_BUCKETS as u64 {
        HISTOGRAM_BUCKETS - 1
    } else {
        idx as usize
    }
}

/// Smallest value that falls in bucket `index`.
pub const fn bucket_lower(index: usize) -> u64 {
    let g = (index >> GROUPING_POWER) as u64;
    let h = index as u64 - (g << GROUPING_POWER);
    if g < 1 {
        h
    } else {
        (1 << (GROUPING_POWER as u64 + g - 1)) + (1 << (g - 1)) * h
    }
}

/// Largest value that falls in bucket `index` (the last bucket ends at 2^40 - 1, the
/// values beyond it are clamped into it).
pub const fn bucket_upper(index: usize) -> u64 {
    if index + 1 >= HISTOGRAM_BUCKETS {
        (1 << MAX_VALUE_POWER) - 1
    } else {
        bucket_lower(index + 1) - 1
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn bucket_count_matches_histogram_crate() {
        let config = histogram::Config::new(GROUPING_POWER, MAX_VALUE_POWER).unwrap();
        assert_eq!(config.total_buckets(), HISTOGRAM_BUCKETS);
        assert_eq!(HISTOGRAM_BUCKETS, 304);
    }

    #[test]
    fn edges() {
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(1), 1);
        assert_eq!(bucket_index(15), 15);
        assert_eq!(bucket_index(16), 16);
        assert_eq!(bucket_index(17), 16);
        assert_eq!(bucket_index(18), 17);
        assert_eq!(bucket_index(31), 23);
        assert_eq!(bucket_index(32), 24);
        assert_eq!(bucket_index((1 << 40) - 1), HISTOGRAM_BUCKETS - 1);
        assert_eq!(bucket_index(1 << 40), HISTOGRAM_BUCKETS - 1);
        assert_eq!(bucket_index(u64::MAX), HISTOGRAM_BUCKETS - 1);
        for p in 4..40 {
            let v = 1u64 << p;
            assert_eq!(bucket_lower(bucket_index(v)), v, "2^{p} starts a bucket");
            assert_eq!(bucket_upper(bucket_index(v - 1)), v - 1, "2^{p}-1 ends one");
        }
    }

    #[test]
    fn agrees_with_histogram_crate() {
        // The crate is the reference for the layout: a value recorded there and its index
        // computed here must land in the same bucket.
        let mut values: std::vec::Vec<u64> = (0..5000).collect();
        for p in 4..40 {
            let b = 1u64 << p;
            values.extend_from_slice(&[b - 1, b, b + 1, b + b / 3, b + b / 2, 2 * b - 1]);
        }
        for v in values {
            let mut h = histogram::Histogram::new(GROUPING_POWER, MAX_VALUE_POWER).unwrap();
            h.increment(v).unwrap();
            let theirs = h.as_slice().iter().position(|&c| c == 1).unwrap();
            assert_eq!(bucket_index(v), theirs, "value {v}");
        }
    }

    #[test]
    fn buckets_are_at_most_12_5_percent_wide() {
        for i in 16..HISTOGRAM_BUCKETS {
            let (lo, hi) = (bucket_lower(i), bucket_upper(i));
            assert!(lo <= hi);
            assert!(
                ((hi - lo + 1) as f64) / (lo as f64) <= 0.125 + 1e-12,
                "bucket {i}"
            );
            assert_eq!(bucket_index(lo), i);
            assert_eq!(bucket_index(hi), i);
        }
        // 60 s has a bucket of its own, not the overflow one.
        assert!(bucket_index(60_000_000_000) < HISTOGRAM_BUCKETS - 1);
    }
}
