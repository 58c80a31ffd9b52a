//! The statistics `syscost diff` judges a change with. Pure.
//!
//! - Several runs per side: the interval of the difference of the two sides' means
//!   from the spread between runs (Welch's t interval: the sides' variances need not be
//!   equal, nor their numbers of runs), and its p-value.
//! - One run per side, for latency: each call a sample, the two histograms compared as
//!   distributions with a rank test (Mann-Whitney U from the bucket counts, calls in one
//!   bucket tied), with the median shift as the effect size.
//!
//! - Many syscalls compared at once: Bonferroni's adjustment of their p-values and
//!   intervals, so that noise in one of twenty is not marked as a change.
//!
//! The distributions (Student's t, the normal) come from `statrs`.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use syscost_common::latency_bucket::{bucket_lower, bucket_upper};

/// Confidence of the intervals, and 1 - the rank test's significance level.
pub const CONFIDENCE: f64 = 0.95;

/// Fewest calls on each side for a rank test (the normal approximation of U).
pub const MIN_RANK_CALLS: u64 = 20;

/// An interval of a change (after - before).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// Whether the interval leaves "no change" possible.
    pub fn holds_zero(&self) -> bool {
        self.lo <= 0.0 && self.hi >= 0.0
    }
}

pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n - 1 in the denominator); 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Welch's test of two sets of runs: the difference of their means, its standard error
/// and degrees of freedom, and the p-value of "no difference".
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Welch {
    pub diff: f64,
    pub se: f64,
    pub df: f64,
    pub p_value: f64,
}

impl Welch {
    /// The `confidence` interval of the difference (of width zero without spread).
    pub fn interval(&self, confidence: f64) -> Interval {
        if self.se == 0.0 {
            return Interval {
                lo: self.diff,
                hi: self.diff,
            };
        }
        let half = quantile(self.df, 0.5 + confidence / 2.0) * self.se;
        Interval {
            lo: self.diff - half,
            hi: self.diff + half,
        }
    }
}

/// Student's t with `df` degrees of freedom (the normal where `df` is not a number a t
/// distribution takes, which real runs do not give).
fn t_dist(df: f64) -> Box<dyn ContinuousCDF<f64, f64>> {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) if df.is_finite() => Box::new(t),
        _ => Box::new(Normal::standard()),
    }
}

fn quantile(df: f64, p: f64) -> f64 {
    t_dist(df).inverse_cdf(p)
}

/// Welch's test of mean(after) - mean(before); `None` when a side has fewer than two
/// runs (no spread to estimate). Each side's variance is taken as at least its floor
/// (`variance_floor_*`, per run: a count's Poisson spread, say; 0 for none). Two sides
/// without any spread give the difference itself, a standard error of zero (p 0, or 1
/// when they are equal).
pub fn welch(
    before: &[f64],
    after: &[f64],
    variance_floor_before: f64,
    variance_floor_after: f64,
) -> Option<Welch> {
    if before.len() < 2 || after.len() < 2 {
        return None;
    }
    let d = mean(after) - mean(before);
    let vb = variance(before).max(variance_floor_before) / before.len() as f64;
    let va = variance(after).max(variance_floor_after) / after.len() as f64;
    let se2 = vb + va;
    if se2 <= 0.0 {
        return Some(Welch {
            diff: d,
            se: 0.0,
            df: f64::INFINITY,
            p_value: if d == 0.0 { 1.0 } else { 0.0 },
        });
    }
    // Welch-Satterthwaite degrees of freedom.
    let df = se2 * se2 / (vb * vb / (before.len() - 1) as f64 + va * va / (after.len() - 1) as f64);
    let se = se2.sqrt();
    Some(Welch {
        diff: d,
        se,
        df,
        p_value: (2.0 * t_dist(df).sf(d.abs() / se)).min(1.0),
    })
}

/// Bonferroni's adjustment of one of `m` p-values compared at once (the syscalls of one
/// figure of one profile): a change is beyond the noise when its adjusted p is below the
/// level, so that the chance that any of the `m` is marked by chance stays below it; the
/// intervals of the same family are taken at [`family_confidence`], and leave out zero
/// exactly when the adjusted p is below the level.
pub fn bonferroni(p: f64, m: usize) -> f64 {
    (p * m.max(1) as f64).min(1.0)
}

/// The confidence of each of `m` intervals for all of them to hold at [`CONFIDENCE`].
pub fn family_confidence(m: usize) -> f64 {
    1.0 - (1.0 - CONFIDENCE) / m.max(1) as f64
}

/// Two latency histograms (dense bucket counts of one layout) compared as samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankTest {
    pub calls_before: u64,
    pub calls_after: u64,
    /// The medians, interpolated within their buckets.
    pub median_before_ns: f64,
    pub median_after_ns: f64,
    /// The chance that a call after took longer than a call before (a tie counts
    /// half): 0.5 when the two are one distribution.
    pub prob_longer: f64,
    /// Two-sided p-value of the rank test (normal approximation, tie-corrected).
    pub p_value: f64,
}

impl RankTest {
    pub fn median_shift_ns(&self) -> f64 {
        self.median_after_ns - self.median_before_ns
    }

    /// Whether the two histograms differ beyond the spread of the calls themselves.
    pub fn significant(&self) -> bool {
        self.p_value < 1.0 - CONFIDENCE
    }
}

/// The rank test of `after` against `before`; `None` when a side has fewer than
/// [`MIN_RANK_CALLS`] calls, or more than a u64 counts (runs pooled from files).
pub fn rank_test(before: &[u64], after: &[u64]) -> Option<RankTest> {
    let calls = |h: &[u64]| h.iter().try_fold(0u64, |n, &c| n.checked_add(c));
    let n1 = calls(before)?;
    let n2 = calls(after)?;
    if n1 < MIN_RANK_CALLS || n2 < MIN_RANK_CALLS {
        return None;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let n = f1 + f2;
    // U of `after`: pairs where the call after took longer, ties half.
    let mut u = 0.0;
    let mut below = 0.0;
    let mut ties = 0.0;
    let len = before.len().max(after.len());
    for i in 0..len {
        let a = before.get(i).copied().unwrap_or(0) as f64;
        let b = after.get(i).copied().unwrap_or(0) as f64;
        u += b * (below + a / 2.0);
        below += a;
        let t = a + b;
        ties += t * t * t - t;
    }
    let mean_u = f1 * f2 / 2.0;
    let var_u = f1 * f2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    let p_value = if var_u <= 0.0 {
        // Every call in one bucket, on both sides: nothing tells them apart.
        1.0
    } else {
        // Continuity correction: U moves in steps of one half.
        let z = ((u - mean_u).abs() - 0.5).max(0.0) / var_u.sqrt();
        let normal = Normal::standard();
        (2.0 * normal.sf(z)).min(1.0)
    };
    Some(RankTest {
        calls_before: n1,
        calls_after: n2,
        median_before_ns: median(before),
        median_after_ns: median(after),
        prob_longer: u / (f1 * f2),
        p_value,
    })
}

/// The median of dense bucket counts, interpolated linearly within its bucket (the
/// calls of a bucket taken as spread evenly over it); 0 for an empty histogram.
pub fn median(dense: &[u64]) -> f64 {
    let n: u128 = dense.iter().map(|&c| u128::from(c)).sum();
    if n == 0 {
        return 0.0;
    }
    let half = n as f64 / 2.0;
    let mut below = 0.0;
    for (i, &c) in dense.iter().enumerate() {
        let c = c as f64;
        if c > 0.0 && below + c >= half {
            let lo = bucket_lower(i) as f64;
            let width = (bucket_upper(i) - bucket_lower(i) + 1) as f64;
            return lo + width * (half - below) / c;
        }
        below += c;
    }
    unreachable!("the counts add up to n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};
    use syscost_common::{HISTOGRAM_BUCKETS, bucket_index};

    /// A normal draw (inverse CDF of a uniform one).
    fn normal(rng: &mut StdRng, mean: f64, sd: f64) -> f64 {
        let u: f64 = rng.random_range(1e-12..1.0 - 1e-12);
        Normal::new(mean, sd).unwrap().inverse_cdf(u)
    }

    /// `n` latencies of a log-normal distribution (median `median_ns`, a factor e^0.5
    /// either side for one sigma: a syscall's usual spread), scaled by `scale`, binned.
    fn histogram(rng: &mut StdRng, n: usize, median_ns: f64, scale: f64) -> Vec<u64> {
        let mut d = vec![0u64; HISTOGRAM_BUCKETS];
        for _ in 0..n {
            let v = (median_ns * normal(rng, 0.0, 0.5).exp() * scale).round() as u64;
            d[bucket_index(v.max(1))] += 1;
        }
        d
    }

    #[test]
    fn mean_and_variance() {
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
        assert_eq!(variance(&[1.0, 2.0, 6.0]), 7.0);
        assert_eq!(variance(&[4.0]), 0.0);
    }

    /// A textbook case: 3 and 4 runs, checked against the formula by hand
    /// (d = 2.5, se = sqrt(1/3 + (5/3)/4) = 0.866, df = 4.96, t(0.975, 4.96) = 2.575).
    #[test]
    fn welch_interval_of_a_known_case() {
        let w = welch(&[10.0, 11.0, 12.0], &[12.0, 13.0, 14.0, 15.0], 0.0, 0.0).unwrap();
        let i = w.interval(0.95);
        assert_eq!(w.diff, 2.5);
        assert!((w.se - 0.866).abs() < 1e-3, "{w:?}");
        assert!((w.df - 4.96).abs() < 0.01, "{w:?}");
        let half = (i.hi - i.lo) / 2.0;
        assert!(((i.lo + i.hi) / 2.0 - 2.5).abs() < 1e-9);
        assert!((half / w.se - 2.575).abs() < 0.005, "t = {}", half / w.se);
        assert!(!i.holds_zero());
        // t = 2.5 / 0.866 = 2.887 with 4.96 degrees of freedom: p = 0.035.
        assert!((w.p_value - 0.035).abs() < 0.002, "{w:?}");
        // One run on a side: no spread, no interval.
        assert_eq!(welch(&[1.0], &[1.0, 2.0], 0.0, 0.0), None);
        // Counts that do not vary between runs: the difference exactly, without a floor.
        let w = welch(&[5000.0; 3], &[4000.0; 3], 0.0, 0.0).unwrap();
        assert_eq!(
            w.interval(0.95),
            Interval {
                lo: -1000.0,
                hi: -1000.0
            }
        );
        assert_eq!(w.p_value, 0.0);
        let same = welch(&[5000.0; 3], &[5000.0; 3], 0.0, 0.0).unwrap();
        assert!(same.interval(0.95).holds_zero());
        assert_eq!(same.p_value, 1.0);
        // With a count's Poisson floor (variance at least the mean), 5,000 against 4,000
        // stays certain, 0 against 1 in three runs is not.
        assert!(
            welch(&[5000.0; 3], &[4000.0; 3], 5000.0, 4000.0)
                .unwrap()
                .p_value
                < 1e-4
        );
        let small = welch(&[0.0; 3], &[1.0; 3], 0.0, 1.0).unwrap();
        assert!(small.p_value > 0.2, "{small:?}");
    }

    /// Runs with a known spread: the 95% interval covers the true difference in about
    /// 95% of seeded repetitions, with 3 runs a side and with 5 and 3 of unequal spread.
    #[test]
    fn welch_intervals_cover_the_truth_95_percent_of_the_time() {
        for (nb, na, sd_b, sd_a, expected) in
            [(3, 3, 100.0, 100.0, 0.967), (5, 3, 50.0, 150.0, 0.932)]
        {
            let mut rng = StdRng::seed_from_u64(7);
            let reps = 4000;
            let mut covered = 0;
            for _ in 0..reps {
                let b: Vec<f64> = (0..nb).map(|_| normal(&mut rng, 1000.0, sd_b)).collect();
                let a: Vec<f64> = (0..na).map(|_| normal(&mut rng, 1100.0, sd_a)).collect();
                let w = welch(&b, &a, 0.0, 0.0).unwrap();
                let i = w.interval(0.95);
                // The p-value and the interval agree.
                assert_eq!(w.p_value < 0.05, !i.holds_zero(), "{w:?}");
                if i.lo <= 100.0 && 100.0 <= i.hi {
                    covered += 1;
                }
            }
            let rate = covered as f64 / reps as f64;
            // Welch's interval is close to exact for normal runs (the figures docs/usage.md
            // quotes, with these seeds); the normal quantile in place of Student's t
            // covers 88% and 84%.
            assert!((rate - expected).abs() < 0.0015, "{nb}/{na} runs: {rate}");
        }
    }

    #[test]
    fn bonferroni_adjusts_a_family() {
        assert_eq!(bonferroni(0.01, 4), 0.04);
        assert_eq!(bonferroni(0.03, 1), 0.03);
        assert_eq!(bonferroni(0.5, 3), 1.0);
        assert_eq!(bonferroni(0.5, 0), 0.5);
        assert!((family_confidence(10) - 0.995).abs() < 1e-12);
        // The family's interval leaves out zero exactly when the adjusted p is below
        // the level.
        let w = welch(&[10.0, 11.0, 12.0], &[12.0, 13.0, 14.0, 15.0], 0.0, 0.0).unwrap();
        for m in 1..5 {
            assert_eq!(
                bonferroni(w.p_value, m) < 0.05,
                !w.interval(family_confidence(m)).holds_zero(),
                "m = {m}"
            );
        }
    }

    /// Twenty syscalls of one distribution on both sides, 3 runs each: unadjusted, a
    /// comparison marks at least one of them about half the time; adjusted, rarely.
    #[test]
    fn bonferroni_keeps_a_family_of_noise_unmarked() {
        let mut rng = StdRng::seed_from_u64(17);
        let reps = 500;
        let (mut raw, mut adjusted) = (0, 0);
        for _ in 0..reps {
            let p: Vec<f64> = (0..20)
                .map(|_| {
                    let b: Vec<f64> = (0..3).map(|_| normal(&mut rng, 1000.0, 100.0)).collect();
                    let a: Vec<f64> = (0..3).map(|_| normal(&mut rng, 1000.0, 100.0)).collect();
                    welch(&b, &a, 0.0, 0.0).unwrap().p_value
                })
                .collect();
            raw += p.iter().any(|&p| p < 0.05) as u32;
            adjusted += p.iter().any(|&p| bonferroni(p, 20) < 0.05) as u32;
        }
        // The figures docs/usage.md quotes.
        assert_eq!((raw, adjusted), (RAW_MARKED, ADJUSTED_MARKED));
    }
    /// Of 500 comparisons: 49.8% and 1.6%.
    const RAW_MARKED: u32 = 249;
    const ADJUSTED_MARKED: u32 = 8;

    /// The rank test of a small case against the exact figures: before 1,2,3 (one call
    /// in each of three buckets) and after 2,3,4: the call after is longer in 6 of the
    /// 9 pairs and ties in 2, U = 7 of 9.
    #[test]
    fn rank_test_of_a_known_case() {
        let at = |values: &[u64]| {
            let mut d = vec![0u64; HISTOGRAM_BUCKETS];
            for &v in values {
                d[bucket_index(v)] += MIN_RANK_CALLS;
            }
            d
        };
        // Each value MIN_RANK_CALLS times: U scales by its square.
        let r = rank_test(&at(&[1, 2, 3]), &at(&[2, 3, 4])).unwrap();
        assert!((r.prob_longer - 7.0 / 9.0).abs() < 1e-12, "{r:?}");
        // By hand: U = 2800 of 3600 pairs, mean 1800; ties of 20, 40, 40 and 20 calls:
        // var = 3600/12 * (121 - 143880 / (120 * 119)) = 33277.3; z = (1000 - 0.5) /
        // sqrt(var) = 5.479, p = 4.28e-8 (without the tie correction 1.6e-7, without
        // the continuity correction 4.21e-8).
        let z: f64 = 999.5 / 33_277.31f64.sqrt();
        assert!((z - 5.479).abs() < 1e-3);
        assert!((r.p_value / 4.275e-8 - 1.0).abs() < 0.005, "{r:?}");
        assert!(r.significant(), "{r:?}");
        assert_eq!(r.calls_before, 3 * MIN_RANK_CALLS);
        // The same histogram on both sides: U at its mean, p = 1.
        let same = rank_test(&at(&[1, 2, 3]), &at(&[1, 2, 3])).unwrap();
        assert_eq!(same.prob_longer, 0.5);
        assert_eq!(same.p_value, 1.0);
        assert_eq!(same.median_shift_ns(), 0.0);
        // Every call in one bucket: nothing to tell apart.
        assert_eq!(rank_test(&at(&[5]), &at(&[5])).unwrap().p_value, 1.0);
        // Too few calls for the approximation.
        let mut few = vec![0u64; HISTOGRAM_BUCKETS];
        few[bucket_index(100)] = MIN_RANK_CALLS - 1;
        assert_eq!(rank_test(&few, &at(&[1])), None);
    }

    /// Two histograms of 10,000 calls drawn from one distribution: not significant in
    /// about 95% of seeded repetitions (the test's level holds with the buckets' ties).
    #[test]
    fn one_distribution_is_judged_the_same_95_percent_of_the_time() {
        let mut rng = StdRng::seed_from_u64(11);
        let reps = 400;
        let mut same = 0;
        for _ in 0..reps {
            let b = histogram(&mut rng, 10_000, 1_500.0, 1.0);
            let a = histogram(&mut rng, 10_000, 1_500.0, 1.0);
            if !rank_test(&b, &a).unwrap().significant() {
                same += 1;
            }
        }
        let rate = same as f64 / reps as f64;
        // 400 repetitions: a standard error of 1.1 points around 95%.
        assert!((0.92..=0.98).contains(&rate), "{rate}");
    }

    /// A 10% shift of 10,000 calls is found every time, a 1% one in about a quarter of
    /// the repetitions: the median shift is measured within a bucket's width (6-12%).
    #[test]
    fn a_ten_percent_shift_is_significant() {
        let mut rng = StdRng::seed_from_u64(13);
        for _ in 0..50 {
            let b = histogram(&mut rng, 10_000, 1_500.0, 1.0);
            let a = histogram(&mut rng, 10_000, 1_500.0, 1.1);
            let r = rank_test(&b, &a).unwrap();
            assert!(r.significant(), "{r:?}");
            assert!(r.prob_longer > 0.5, "{r:?}");
            let shift = r.median_shift_ns() / r.median_before_ns;
            assert!((0.05..=0.15).contains(&shift), "median shift {shift}");
        }
        let mut found = 0;
        for _ in 0..50 {
            let b = histogram(&mut rng, 10_000, 1_500.0, 1.0);
            let a = histogram(&mut rng, 10_000, 1_500.0, 1.01);
            found += rank_test(&b, &a).unwrap().significant() as u32;
        }
        // The figure docs/usage.md quotes.
        assert_eq!(found, 13, "a 1% shift found in {found} of 50");
    }

    #[test]
    fn median_interpolates_within_the_bucket() {
        let mut d = vec![0u64; HISTOGRAM_BUCKETS];
        let i = bucket_index(1_000_000);
        d[i] = 10;
        let (lo, hi) = (bucket_lower(i) as f64, bucket_upper(i) as f64 + 1.0);
        assert_eq!(median(&d), (lo + hi) / 2.0);
        assert_eq!(median(&vec![0; HISTOGRAM_BUCKETS]), 0.0);
        // Three calls low, one high: the median is in the low bucket.
        let j = bucket_index(100);
        d[i] = 1;
        d[j] = 3;
        let m = median(&d);
        assert!(m >= bucket_lower(j) as f64 && m <= bucket_upper(j) as f64 + 1.0);
    }
}
