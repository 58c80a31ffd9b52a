//! Human-readable durations: 850ns, 1.23us, 45.6ms, 1.20s.

/// Formats `ns` with three significant digits and a unit that fits.
pub fn human_ns(ns: u64) -> String {
    let ns_f = ns as f64;
    let (v, unit) = if ns < 1_000 {
        return format!("{ns}ns");
    } else if ns < 1_000_000 {
        (ns_f / 1e3, "us")
    } else if ns < 1_000_000_000 {
        (ns_f / 1e6, "ms")
    } else {
        (ns_f / 1e9, "s")
    };
    if v < 10.0 {
        format!("{v:.2}{unit}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// A percentile of the latency histograms, to the two significant digits its bucket
/// holds (a bucket is 6 to 12% wide: a third digit would be made up): `260ns`, `29us`,
/// `1.2ms`.
pub fn human_ns_bucketed(ns: u64) -> String {
    two_digits(round_two_digits(ns, true))
}

/// A percentile beside the maximum `max_ns` it cannot exceed, as
/// [`human_ns_bucketed`] but never shown above the maximum: where rounding up would pass
/// it (p99 26.8us, max 26.8us: not "27us"), rounded down ("26us"). Percentiles of one
/// row shown so stay in order (p50 <= p90 <= p99 <= max).
pub fn percentile_below(ns: u64, max_ns: u64) -> String {
    // A file written by hand may hold a percentile above its maximum.
    let ns = ns.min(max_ns);
    let up = round_two_digits(ns, true);
    two_digits(if up > max_ns {
        round_two_digits(ns, false)
    } else {
        up
    })
}

/// `ns` to two significant digits, rounded half up or down.
fn round_two_digits(ns: u64, half_up: bool) -> u64 {
    let digits = ns.checked_ilog10().unwrap_or(0) + 1;
    if digits > 2 {
        let scale = 10u64.pow(digits - 2);
        let bump = if half_up { scale / 2 } else { 0 };
        ns.saturating_add(bump) / scale * scale
    } else {
        ns
    }
}

/// A value of two significant digits with its unit.
fn two_digits(rounded: u64) -> String {
    let (v, unit) = match rounded {
        0..1_000 => return format!("{rounded}ns"),
        1_000..1_000_000 => (rounded as f64 / 1e3, "us"),
        1_000_000..1_000_000_000 => (rounded as f64 / 1e6, "ms"),
        _ => (rounded as f64 / 1e9, "s"),
    };
    if v < 10.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// `n` with a comma between thousands.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and the noun that goes with it: "1 thread", "2 threads", "1 process".
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {

    #[test]
    fn percentiles_keep_the_digits_their_buckets_hold() {
        for (ns, shown) in [
            (7, "7ns"),
            (87, "87ns"),
            (255, "260ns"),
            (383, "380ns"),
            (999, "1.0us"),
            (1_049, "1.0us"),
            (28_700, "29us"),
            (80_500, "81us"),
            (153_000, "150us"),
            (9_960_000, "10ms"),
            (2_500_000_000, "2.5s"),
        ] {
            assert_eq!(super::human_ns_bucketed(ns), shown, "{ns}");
        }
    }

    #[test]
    fn percentiles_are_never_shown_above_the_maximum() {
        use super::{human_ns, percentile_below};
        assert_eq!(percentile_below(26_800, 26_800), "26us");
        assert_eq!(human_ns(26_800), "26.8us");
        assert_eq!(percentile_below(26_700, 26_800), "26us");
        assert_eq!(percentile_below(255, 383), "260ns");
        assert_eq!(percentile_below(10_450_000, 10_500_000), "10ms");
        // In order, whatever the values.
        for max in [999u64, 1_049, 26_800, 99_500, 1_000_000] {
            let mut last = 0.0;
            for p in [max / 3, max / 2, max * 9 / 10, max] {
                let shown = percentile_below(p, max);
                let v: f64 = shown.trim_end_matches(char::is_alphabetic).parse().unwrap();
                let scale = match shown.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                {
                    "ns" => 1.0,
                    "us" => 1e3,
                    "ms" => 1e6,
                    _ => 1e9,
                };
                assert!(
                    v * scale >= last && v * scale <= max as f64,
                    "{p} of {max}: {shown}"
                );
                last = v * scale;
            }
        }
    }

    #[test]
    fn counted_says_one_and_many() {
        assert_eq!(super::counted(1, "thread", "threads"), "1 thread");
        assert_eq!(super::counted(0, "process", "processes"), "0 processes");
        assert_eq!(super::counted(3, "process", "processes"), "3 processes");
    }

    use super::human_ns;

    #[test]
    fn scales() {
        assert_eq!(human_ns(0), "0ns");
        assert_eq!(human_ns(999), "999ns");
        assert_eq!(human_ns(1_000), "1.00us");
        assert_eq!(human_ns(1_234), "1.23us");
        assert_eq!(human_ns(45_600), "45.6us");
        assert_eq!(human_ns(456_000), "456us");
        assert_eq!(human_ns(1_060_000), "1.06ms");
        assert_eq!(human_ns(2_500_000_000), "2.50s");
        assert_eq!(human_ns(250_000_000_000), "250s");
    }
}
