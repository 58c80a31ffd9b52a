//! `export --otlp-endpoint URL`: the metrics `/metrics` serves, pushed every sample over
//! OTLP/HTTP (protobuf, `POST /v1/metrics`) to an OpenTelemetry Collector or any OTLP
//! receiver.
//!
//! The same families under the same names as the exposition (`syscost_syscalls`, unit
//! `{call}`, a monotonic cumulative sum, becomes `syscost_syscalls_total` in a Prometheus
//! behind a collector), one resource per traced process (`host.name`, `process.pid`,
//! `process.executable.name`, the pod's `k8s.*`) or cgroup (`host.name`,
//! `syscost.cgroup`); `--top`'s bounded series and the machine's counters under the
//! host's resource, with the exposition's labels. The latency
//! histograms are exponential histograms of scale 3 (8 buckets per power of two, as the
//! kernel's and the native histograms'): each kernel bucket counted whole in the bucket
//! holding its middle, the count and the sum exact.
//!
//! Every push carries the figures since the start (cumulative), so the newest supersedes
//! every older one: while the receiver is away, one request waits (the newest; the one
//! it replaces is counted as dropped), retried with a backoff doubling from 1 s to 32 s.
//! A refusal that retrying cannot mend (a 4xx but 429) drops the request and says why.
//!
//! By file: the endpoint, the pusher and its retries here; a sample as a request
//! (`request`).

use super::Metrics;
use anyhow::{Context as _, Result, anyhow, bail};
use prost::Message as _;
use std::{
    sync::{Arc, atomic::Ordering},
    thread::JoinHandle,
    time::{Duration, Instant, SystemTime},
};

pub mod proto;
mod request;
#[cfg(test)]
mod tests;

pub use self::request::*;

/// The longest wait between two tries while the receiver is away.
pub const MAX_BACKOFF: Duration = Duration::from_secs(32);

/// How long one push may take (connecting, sending, the answer).
pub const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

pub use super::pushes::Counters;

/// Where to push: `http://HOST[:PORT][/PATH]` (port 4318 and path `/v1/metrics` unless
/// given, as OTLP/HTTP's defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl Endpoint {
    /// `HOST:PORT`, an IPv6 address in brackets (the Host header's form).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

/// Parses `--otlp-endpoint`.
pub fn parse_endpoint(s: &str) -> Result<Endpoint> {
    let uri: hyper::Uri = s
        .parse()
        .map_err(|e| anyhow!("'{s}' is not a URL ({e}): give http://HOST:PORT"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => bail!(
            "'{s}': syscost pushes OTLP over plain HTTP only: run a collector on the node (http://127.0.0.1:4318) and let it speak TLS onwards"
        ),
        _ => bail!("'{s}' has no http:// scheme: give http://HOST:PORT"),
    }
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow!("'{s}' names no host: give http://HOST:PORT"))?;
    let mut path = match uri.path() {
        "" | "/" => "/v1/metrics".to_string(),
        p => p.to_string(),
    };
    if let Some(q) = uri.query() {
        path = format!("{path}?{q}");
    }
    Ok(Endpoint {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port: uri.port_u16().unwrap_or(4318),
        path,
    })
}

/// This host's name (`host.name`), as uname gives it.
fn host_name() -> String {
    // SAFETY: uname fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let name: Vec<u8> = u
        .nodename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&name).into_owned()
}

/// The pusher: a thread of its own, fed by the session's samples; dropping it stops it.
pub struct Pusher {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Pusher {
    /// Pushes what `metrics` serves to `endpoint` at every sample of its session.
    pub fn start(
        endpoint: Endpoint,
        metrics: Arc<Metrics>,
        counters: Arc<Counters>,
    ) -> Result<Self> {
        let (tick, ticks) = tokio::sync::watch::channel(0u64);
        metrics.session().on_sample(move |s| {
            tick.send_replace(s.seq);
            !tick.is_closed()
        });
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the OTLP event loop")?;
        let thread = std::thread::Builder::new()
            .name("otlp".into())
            .spawn(move || runtime.block_on(push_loop(endpoint, metrics, counters, ticks, stopped)))
            .context("cannot start the OTLP thread")?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn push_loop(
    endpoint: Endpoint,
    metrics: Arc<Metrics>,
    counters: Arc<Counters>,
    mut ticks: tokio::sync::watch::Receiver<u64>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let host = host_name();
    let mut pending: Option<Vec<u8>> = None;
    let mut starts = Starts::new();
    // Each process's or cgroup's pod labels, found at its first push (a process's cgroup
    // read from /proc then, the runtime's files read as /metrics reads them).
    let mut kube = Kube::new();
    let mut cgroups: std::collections::HashMap<String, Option<String>> = Default::default();
    // Said once: a receiver that takes the pushes but rejects some of their points.
    let mut partial_said = false;
    let mut backoff = Duration::from_secs(1);
    let mut retry_at = Instant::now();
    // Whether the receiver was away (said once, and again when it is back).
    let mut away = false;
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            changed = ticks.changed() => if changed.is_err() { return },
        }
        let sample = metrics.session().latest();
        let scrape = match metrics.scrape_of(&sample) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("OTLP: cannot read the figures: {e:#}");
                continue;
            }
        };
        // The sample's time on the wall clock.
        let now = SystemTime::now()
            .checked_sub(sample.taken.elapsed())
            .unwrap_or(SystemTime::UNIX_EPOCH)
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Only the processes served now keep their labels (a map that stays bounded).
        cgroups.retain(|k, _| scrape.processes.iter().any(|p| key_of(p) == *k));
        for p in &scrape.processes {
            let cgroup = cgroups
                .entry(key_of(p))
                .or_insert_with(|| match &p.target.cgroup {
                    Some(cg) => Some(cg.clone()),
                    None => metrics.session().cgroup_of(p.target.pid),
                });
            // Asked again while a container's names are missing: the runtime may not
            // have written them yet (the directory paces its own retries).
            let known = kube.get(&key_of(p));
            if known.is_none_or(|l| {
                l.iter().any(|(k, _)| *k == "container_id") && !l.iter().any(|(k, _)| *k == "pod")
            }) {
                let labels = cgroup
                    .as_deref()
                    .map(|cg| metrics.session().pod_labels(cg))
                    .unwrap_or_default();
                kube.insert(key_of(p), labels);
            }
        }
        kube.retain(|k, _| cgroups.contains_key(k));
        if pending
            .replace(request(&scrape, now, &host, &mut starts, &kube).encode_to_vec())
            .is_some()
        {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
        if Instant::now() < retry_at {
            continue;
        }
        let body = pending.take().expect("just set");
        // The stop is heard during a push too: a receiver that never answers holds the
        // end no longer than the others.
        let pushed = tokio::select! {
            _ = &mut stopped => return,
            pushed = tokio::time::timeout(PUSH_TIMEOUT, post(&endpoint, body.clone())) => pushed,
        };
        match pushed {
            Ok(Ok(rejected)) => {
                if let Some(why) = rejected.filter(|_| !partial_said) {
                    eprintln!(
                        "syscost: OTLP: {endpoint} took the metrics but rejected some: {why}"
                    );
                    partial_said = true;
                }
                counters.sent.fetch_add(1, Ordering::Relaxed);
                backoff = Duration::from_secs(1);
                if away {
                    eprintln!("syscost: OTLP: {endpoint} accepts the metrics again");
                    away = false;
                }
            }
            Ok(Err(Push::Refused(why))) => {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
                eprintln!("syscost: OTLP: {endpoint} refused the metrics (dropped): {why}");
            }
            failed => {
                counters.failures.fetch_add(1, Ordering::Relaxed);
                let why = match failed {
                    Ok(Err(Push::Retry(why))) => why,
                    _ => format!("no answer within {} s", PUSH_TIMEOUT.as_secs()),
                };
                if !away {
                    eprintln!(
                        "syscost: OTLP: cannot push to {endpoint}: {why}; retrying (the newest figures kept, older ones counted in syscost_otlp_exports_dropped_total)"
                    );
                    away = true;
                }
                pending = Some(body);
                retry_at = Instant::now() + backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

enum Push {
    /// Worth trying again (no connection, 429, 5xx).
    Retry(String),
    /// Not worth it (another 4xx).
    Refused(String),
}

/// One `POST` of `body` (an `ExportMetricsServiceRequest`) on a new connection; taken,
/// with what the receiver rejected of it, if anything (its partial success).
async fn post(endpoint: &Endpoint, body: Vec<u8>) -> Result<Option<String>, Push> {
    use http_body_util::{BodyExt as _, Full};
    let stream = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| Push::Retry(format!("cannot connect: {e}")))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| Push::Retry(format!("HTTP: {e}")))?;
    tokio::spawn(connection);
    let req = hyper::Request::post(&endpoint.path)
        .header(hyper::header::HOST, endpoint.authority())
        .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|e| Push::Refused(format!("cannot make the request: {e}")))?;
    let answer = sender
        .send_request(req)
        .await
        .map_err(|e| Push::Retry(format!("HTTP: {e}")))?;
    let status = answer.status();
    // The answer's body (an ExportMetricsServiceResponse, or why), 4 KiB of it at most.
    let bytes = http_body_util::Limited::new(answer.into_body(), 4096)
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    match status.as_u16() {
        200..=299 => Ok(
            proto::collector::ExportMetricsServiceResponse::decode(&bytes[..])
                .ok()
                .and_then(|r| r.partial_success)
                .filter(|p| p.rejected_data_points > 0 || !p.error_message.is_empty())
                .map(|p| {
                    format!(
                        "{} points rejected: {}",
                        p.rejected_data_points,
                        syscost_report::untrusted::shown(
                            &p.error_message.chars().take(200).collect::<String>()
                        )
                    )
                }),
        ),
        429 | 500..=599 => Err(Push::Retry(format!("{status}"))),
        _ => Err(Push::Refused(format!(
            "{status} {}",
            syscost_report::untrusted::shown(text.chars().take(200).collect::<String>().trim())
        ))),
    }
}
