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
    let digits = ns.checked_ilog10().unwrap_or(0) + 1;
    let rounded = if digits > 2 {
        let scale = 10u64.pow(digits - 2);
        ns.saturating_add(scale / 2) / scale * scale
    } else {
        ns
    };
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
