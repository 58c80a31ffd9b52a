//! The value parsers of the arguments, and their bounds.

use anyhow::Result;
use std::net::SocketAddr;

/// `--otlp-endpoint`: an http:// URL.
pub(super) fn parse_otlp_endpoint(
    s: &str,
) -> Result<syscost_views::metrics::otlp::Endpoint, String> {
    syscost_views::metrics::otlp::parse_endpoint(s).map_err(|e| format!("{e:#}"))
}

/// A power of two from 1 to 2^20 (`--stacks-sample`).
pub fn parse_sample_every(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n.is_power_of_two() && n <= 1 << 20 => Ok(n),
        _ => Err(format!("'{s}' is not a power of two from 1 to 1048576")),
    }
}

/// The longest duration a command takes: ten years.
pub const MAX_SECONDS: f64 = 10.0 * 365.25 * 86_400.0;
/// The rates the load generator takes, per second.
pub const MIN_RATE: f64 = 1e-3;
pub const MAX_RATE: f64 = 1e9;

/// A number of seconds from 1 ms to [`MAX_SECONDS`] (clap value parser).
/// strace's `-O`: a time, in seconds or with a unit (`0.000001`, `1us`), checked as
/// strace checks it, then kept as given.
pub(super) fn parse_overhead(s: &str) -> Result<String, String> {
    let ok = match s.trim().parse::<f64>() {
        Ok(v) => v.is_finite() && v >= 0.0,
        Err(_) => syscost_engine::slow::spec::parse_duration(s).is_ok(),
    };
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("'{s}' is not a time (0.000001, 1us)"))
    }
}

/// A metrics endpoint's address in the forms the Prometheus exporters take: `IP:PORT`,
/// `[IPv6]:PORT`, `:PORT` (every interface, IPv6 and IPv4) and `localhost:PORT` (loopback). Other host
/// names are refused rather than looked up.
pub fn parse_metrics_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port number (0-65535)"))
    };
    // Every interface, IPv6 and IPv4 (the endpoint listens on both where the host has
    // IPv6, as the exporters' `:PORT` does).
    if let Some(p) = s.strip_prefix(':') {
        return Ok(SocketAddr::from((
            std::net::Ipv6Addr::UNSPECIFIED,
            port(p)?,
        )));
    }
    if let Some(p) = s.strip_prefix("localhost:") {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port(p)?)));
    }
    Err(
        "not an address: give IP:PORT (127.0.0.1:9464), :PORT for every interface, or localhost:PORT"
            .to_string(),
    )
}

pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("must be a positive number of seconds, not {s}"));
    }
    if v < 1e-3 {
        return Err(format!("{s} seconds is less than a millisecond"));
    }
    if v > MAX_SECONDS {
        return Err(format!("{s} seconds is more than ten years"));
    }
    Ok(v)
}

/// A refresh interval: at least the session's shortest interval (a table or a screen more often
/// than that is unreadable), at most [`MAX_SECONDS`] (clap value parser).
pub fn parse_interval(s: &str) -> Result<f64, String> {
    let v = parse_seconds(s)?;
    let floor = syscost_engine::session::SHORTEST_INTERVAL.as_secs_f64();
    if v < floor {
        return Err(format!(
            "{s} seconds is shorter than the {floor} s an interval takes"
        ));
    }
    Ok(v)
}

/// A positive rate per second, at most [`MAX_RATE`] (clap value parser).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number per second"))?;
    if !v.is_finite() || v < MIN_RATE {
        return Err(format!(
            "must be a rate of at least {MIN_RATE} per second, not {s}"
        ));
    }
    if v > MAX_RATE {
        return Err(format!("{s} per second is more than {MAX_RATE:e}"));
    }
    Ok(v)
}

/// A CPU of this machine (clap value parser).
pub fn parse_cpu(s: &str) -> Result<usize, String> {
    let cpu: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a CPU number"))?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let possible = syscost_engine::tracer::possible_cpus().map_or(cpus, |n| n as usize);
    if cpu >= possible.max(cpus) || cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!(
            "no CPU {cpu} on this machine (CPUs 0 to {})",
            possible.max(cpus) - 1
        ));
    }
    Ok(cpu)
}

/// A duration given in seconds (checked by [`parse_seconds`]).
pub fn seconds(value: Option<f64>) -> Option<std::time::Duration> {
    value.and_then(|v| std::time::Duration::try_from_secs_f64(v).ok())
}
