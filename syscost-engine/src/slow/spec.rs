//! `--slow`'s thresholds: as the user writes them ([`SlowSpec`]), and resolved to the
//! kernel side's syscall keys ([`SlowThresholds`], what the tracer takes).

use std::time::Duration;

use anyhow::{Result, bail};
use syscost_common::KEYS_PER_SLOT;

use syscost_report::syscall_names;

/// The thresholds the kernel side compares each call with, ns (`u64::MAX`: never
/// reported).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowThresholds {
    /// By syscall key (`KEYS_PER_SLOT` of them).
    pub per_key: Vec<u64>,
    /// For numbers without a key of their own.
    pub default: u64,
}

/// `--slow`: a default threshold and thresholds per syscall.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlowSpec {
    /// For every syscall not named.
    pub default: Option<Duration>,
    /// (name, threshold) of the syscalls named.
    pub per_syscall: Vec<(String, Duration)>,
}

/// A duration with its unit: `250ns`, `50us`, `1.5ms`, `2s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .ok_or_else(|| format!("'{s}' has no unit (ns, us, ms or s)"))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration like 50us or 1ms"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => return Err(format!("unknown unit '{other}' in '{s}' (ns, us, ms or s)")),
    };
    let ns = v * scale;
    if !ns.is_finite() || ns < 0.0 {
        return Err(format!("'{s}' is not a duration"));
    }
    if ns > 3600e9 {
        return Err(format!(
            "{s} is more than an hour: no call would be reported"
        ));
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// `--stack-size`: `0`, `4K`, `8K`, `16K` or `32K` (bytes or KiB), as pages of the
/// stack copy (clap value parser).
pub fn parse_stack_size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix(['K', 'k']).or_else(|| t.strip_suffix("KiB")) {
        Some(n) => (n, 1024u64),
        None => (t, 1),
    };
    let bytes = num
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("'{s}' is not a size like 16K"))?;
    let page = syscost_common::USER_STACK_PAGE as u64;
    syscost_common::USER_STACK_PAGE_CHOICES
        .into_iter()
        .find(|&p| u64::from(p) * page == bytes)
        .ok_or_else(|| format!("--stack-size {s}: 0, 4K, 8K, 16K or 32K"))
}

/// `1ms`, `close=50us,read=1ms` or `1ms,close=50us` (clap value parser).
pub fn parse_spec(s: &str) -> Result<SlowSpec, String> {
    let mut spec = SlowSpec::default();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some((name, d)) => {
                let id = syscall_names::number(name).map_err(|e| format!("{e:#}"))?;
                if id.key >= KEYS_PER_SLOT {
                    return Err(format!(
                        "{name}: a threshold of its own only goes to syscall numbers below 1024 (512 for 32-bit ones); the default threshold covers the others"
                    ));
                }
                spec.per_syscall
                    .push((name.to_string(), parse_duration(d)?));
            }
            None => {
                if spec.default.is_some() {
                    return Err(format!("two default thresholds in '{s}'"));
                }
                spec.default = Some(parse_duration(part)?);
            }
        }
    }
    if spec.default.is_none() && spec.per_syscall.is_empty() {
        return Err("--slow needs a threshold, e.g. 1ms or close=50us".to_string());
    }
    Ok(spec)
}

impl SlowSpec {
    /// The threshold of every syscall key, and the one of numbers without a key.
    pub fn thresholds(&self) -> Result<SlowThresholds> {
        let default = self.default.map_or(u64::MAX, |d| d.as_nanos() as u64);
        let mut keys = vec![default; KEYS_PER_SLOT as usize];
        for (name, d) in &self.per_syscall {
            let id = syscall_names::number(name)?;
            let mut ids = vec![id];
            // A 64-bit name also names the 32-bit syscall of the same name (a real name:
            // `syscall_0x10` is a number, not a name).
            if !id.is_compat()
                && !name.starts_with("syscall_")
                && let Ok(compat) =
                    syscall_names::number(&format!("{}{name}", syscall_names::COMPAT_PREFIX))
                && compat.key < KEYS_PER_SLOT
            {
                ids.push(compat);
            }
            for id in ids {
                match keys.get_mut(id.key as usize) {
                    Some(k) => *k = d.as_nanos() as u64,
                    None => bail!(
                        "--slow {name}=...: a threshold of its own only goes to syscall numbers below 1024 (512 for 32-bit ones); the default threshold covers the others"
                    ),
                }
            }
        }
        Ok(SlowThresholds {
            per_key: keys,
            default,
        })
    }

    /// As the user wrote it, for headers.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .default
            .iter()
            .map(|d| syscost_report::units::human_ns(d.as_nanos() as u64))
            .collect();
        parts.extend(self.per_syscall.iter().map(|(n, d)| {
            format!(
                "{n}={}",
                syscost_report::units::human_ns(d.as_nanos() as u64)
            )
        }));
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_sizes_are_whole_pages_of_the_choices() {
        assert_eq!(parse_stack_size("16K"), Ok(4));
        assert_eq!(parse_stack_size("16KiB"), Ok(4));
        assert_eq!(parse_stack_size("32k"), Ok(8));
        assert_eq!(parse_stack_size("4096"), Ok(1));
        assert_eq!(parse_stack_size("0"), Ok(0));
        for bad in ["12K", "64K", "1M", "-4K", "", "K"] {
            assert!(parse_stack_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_and_specs() {
        assert_eq!(parse_duration("50us"), Ok(Duration::from_micros(50)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0ns"), Ok(Duration::ZERO));
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(parse_duration("5h").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("2s").is_ok());
        assert!(parse_duration("7200s").is_err());
        let s = parse_spec("1ms,close=50us").unwrap();
        assert_eq!(s.default, Some(Duration::from_millis(1)));
        assert_eq!(
            s.per_syscall,
            vec![("close".to_string(), Duration::from_micros(50))]
        );
        let SlowThresholds {
            per_key: keys,
            default: big,
        } = s.thresholds().unwrap();
        assert_eq!(keys[3], 50_000, "close is 3");
        assert_eq!(keys[0], 1_000_000);
        assert_eq!(big, 1_000_000);
        let only = parse_spec("read=1ms").unwrap();
        let SlowThresholds {
            per_key: keys,
            default: big,
        } = only.thresholds().unwrap();
        assert_eq!((keys[0], keys[1], big), (1_000_000, u64::MAX, u64::MAX));
        assert!(parse_spec("clsoe=1ms").unwrap_err().contains("close"));
        assert!(parse_spec("1ms,2ms").is_err());
        assert!(
            parse_spec("syscall_0x1388=1ms")
                .unwrap_err()
                .contains("below 1024")
        );
        assert_eq!(parse_duration("5µs"), Ok(Duration::from_micros(5)));
        // A 64-bit name covers the 32-bit syscall of the same name too.
        let keys = parse_spec("read=1ms")
            .unwrap()
            .thresholds()
            .unwrap()
            .per_key;
        let compat_read = syscall_names::number("i386:read").unwrap().key as usize;
        assert_eq!(keys[compat_read], 1_000_000);
        // A number is not a name: `syscall_0x10` is 64-bit 16 only, not i386 16.
        let keys = parse_spec("syscall_0x10=1ms")
            .unwrap()
            .thresholds()
            .unwrap()
            .per_key;
        let i386_16 = syscall_names::number("i386:lchown").unwrap();
        assert_eq!(
            (keys[16], keys[i386_16.key as usize]),
            (1_000_000, u64::MAX)
        );
        assert!(parse_spec(",").is_err());
        assert_eq!(s.describe(), "1.00ms,close=50.0us");
    }
}
