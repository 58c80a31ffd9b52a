//! One scrape, written by `prometheus-client` as OpenMetrics text or, for a Prometheus
//! that asks for it (native histograms), as protobuf: this module only says what goes
//! in it.

use anyhow::Result;
use bytes::Bytes;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, NoLabelSet},
    metrics::MetricType,
    registry::Registry,
};

use super::series::OwnSeries;
use syscost_report::profile::{Profile, Target};

mod families;

/// The content type of the text exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the protobuf exposition (length-delimited `MetricFamily`
/// messages), the one format that carries native histograms.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// What one scrape shows.
#[derive(Clone, Debug, Default)]
pub struct Scrape {
    /// A profile per traced process, cumulative since syscost began tracing it.
    pub processes: Vec<Profile>,
    /// Run time of syscost's programs (one set for all the processes) within the
    /// windows BPF run-time statistics were on, and the windows' wall time, ns.
    pub bpf_run: Option<(u64, u64)>,
    /// Per-process series (`syscost_process_*`) of `export --top` and `--per-process`.
    pub processes_top: Vec<OwnSeries>,
    /// Per-cgroup series (`syscost_cgroup_*`) of `export --top`.
    pub cgroups_top: Vec<OwnSeries>,
    /// Whether the time switched out was measured (not with `--no-offcpu`).
    pub offcpu_tracked: bool,
    /// With `--slow`: per traced process (or cgroup), slow calls sent and slow calls the
    /// ring buffer had no room for.
    pub slow: Vec<(Target, u64, u64)>,
    /// `export --top`: the whole machine's counters (served without labels on every
    /// scrape, 0 included).
    pub machine: Option<MachineCounters>,
    /// The per-process table's occupancy, wherever one is in use (`export --top`,
    /// `export --cgroup --per-process`).
    pub table: Option<TableCounters>,
    /// The number of the session's sample the scrape shows (`syscost_samples_total`:
    /// the samples taken so far), when served from one.
    pub samples: Option<u64>,
    /// With `--otlp-endpoint`: requests the receiver accepted, requests dropped, tries
    /// failed (`syscost_otlp_*`).
    pub otlp: Option<(u64, u64, u64)>,
}

/// The counters of a whole machine's tracing (`export --top`), every slot's.
#[derive(Debug, Clone, Copy, Default)]
pub struct MachineCounters {
    /// Events its tables had no room for.
    pub dropped: u64,
    /// Exits without a seen entry.
    pub unpaired: u64,
    /// Calls whose return to a CPU the kernel did not report.
    pub switch_ins_unseen: u64,
}

/// The per-process table's occupancy.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableCounters {
    /// Pairs of live processes handed over from the per-process table to make room.
    pub reclaimed: u64,
    /// The pairs in use at its last refresh.
    pub pairs: u64,
    /// The pairs it holds at most.
    pub capacity: u64,
}

/// The OpenMetrics text of a scrape (ending in `# EOF`).
pub fn exposition(scrape: Scrape) -> Result<String> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry(scrape))
        .map_err(|_| anyhow::anyhow!("cannot encode the metrics"))?;
    Ok(out)
}

/// The protobuf exposition of a scrape: the same families and samples as the text, the
/// latency histograms with their native buckets beside the classic ones.
pub fn exposition_protobuf(scrape: Scrape) -> Result<Vec<u8>> {
    prometheus_client::encoding::prometheus_protobuf::encode_to_vec(&registry(scrape))
        .map_err(|e| anyhow::anyhow!("cannot encode the metrics: {e:?}"))
}

/// A registry holding the one collector, the scrape.
fn registry(scrape: Scrape) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    registry
}

/// The endpoint's own counters: what it refused its clients. They move between samples,
/// so they are written apart and added to a sample's exposition, which is encoded once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointCounters {
    /// Connections closed as they came, the most allowed being open.
    pub connections_refused: u64,
    /// Requests answered 503 because every password check was busy (`None`: the
    /// endpoint asks for no password).
    pub password_checks_refused: Option<u64>,
}

impl Collector for EndpointCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        encoder
            .encode_descriptor(
                "syscost_scrape_connections_refused",
                "Connections to the metrics endpoint closed as they came, --metrics-max-connections being open.",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, u64, u64>(&self.connections_refused, None)?;
        if let Some(n) = self.password_checks_refused {
            encoder
                .encode_descriptor(
                    "syscost_scrape_password_checks_refused",
                    "Requests answered 503 (Retry-After) because every password check was busy.",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, u64, u64>(&n, None)?;
        }
        Ok(())
    }
}

/// The end of the text exposition.
const EOF: &[u8] = b"# EOF\n";

/// `body`, a sample's exposition in `format`, with the endpoint's `counters` added: the
/// text's families before its `# EOF`, protobuf's messages after the others. The answer
/// is the body (or all of it but its `# EOF`), shared, not copied, and a tail: a scrape
/// costs the counters' encoding, whatever the size of the sample's.
pub fn with_endpoint_counters(
    format: Format,
    body: &Bytes,
    counters: EndpointCounters,
) -> Result<(Bytes, Bytes)> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(counters));
    match format {
        Format::Text => {
            let mut tail = String::new();
            prometheus_client::encoding::text::encode(&mut tail, &registry)
                .map_err(|_| anyhow::anyhow!("cannot encode the endpoint's counters"))?;
            let head = match body.strip_suffix(EOF) {
                Some(head) => body.slice(..head.len()),
                None => body.clone(),
            };
            Ok((head, Bytes::from(tail)))
        }
        Format::Protobuf => {
            let tail =
                prometheus_client::encoding::prometheus_protobuf::encode_to_vec(&registry)
                    .map_err(|e| anyhow::anyhow!("cannot encode the endpoint's counters: {e:?}"))?;
            Ok((body.clone(), Bytes::from(tail)))
        }
    }
}

/// The native histograms' zero bucket: 2^-128 s, as Prometheus's own clients use, so
/// that it holds the calls of 0 ns alone (latencies are whole nanoseconds).
const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// The formats of the exposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Protobuf,
}

/// The format an `Accept` header asks for: protobuf when it names the delimited
/// `io.prometheus.client.MetricFamily` with a quality above every text type's (as a
/// Prometheus with native histograms on asks), text otherwise.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut protobuf, mut text) = (None::<f64>, None::<f64>);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut q, mut proto, mut delimited) = (1.0, false, false);
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match (
                k.trim().to_ascii_lowercase().as_str(),
                v.trim().trim_matches('"'),
            ) {
                ("q", v) => q = v.parse().unwrap_or(0.0),
                ("proto", "io.prometheus.client.MetricFamily") => proto = true,
                ("encoding", "delimited") => delimited = true,
                _ => {}
            }
        }
        let best = |slot: &mut Option<f64>| *slot = Some(slot.map_or(q, |b: f64| b.max(q)));
        match media.as_str() {
            "application/vnd.google.protobuf" if proto && delimited => best(&mut protobuf),
            "application/openmetrics-text" | "text/plain" | "text/*" | "*/*" => best(&mut text),
            _ => {}
        }
    }
    match (protobuf, text) {
        (Some(p), t) if p > 0.0 && p > t.unwrap_or(0.0) => Format::Protobuf,
        _ => Format::Text,
    }
}

#[cfg(test)]
mod tests;
