//! `syscost lab echo-load`: a load generator for the echo server. Each connection
//! connects, sends a 12-byte request, waits for the echo, and closes (or, with
//! `--keepalive R`, sends R requests before closing). Bounded in count and in time; it
//! stops by itself.

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddrV4, TcpStream},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Result, bail};
use histogram::Histogram;
use syscost_common::{GROUPING_POWER, MAX_VALUE_POWER};

use crate::cli::LoadArgs;

const REQUEST: &[u8; 12] = b"hello syscos";

/// What the load generator saw.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    pub connections: u64,
    pub requests: u64,
    /// Failed connects, resets, or echoes that differ from the request.
    pub errors: u64,
    pub seconds: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Why the first failed connection failed.
    pub first_error: Option<String>,
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "connections={} requests={} errors={} seconds={:.3} requests_per_sec={:.0} p50_us={:.1} p99_us={:.1}",
            self.connections,
            self.requests,
            self.errors,
            self.seconds,
            self.requests as f64 / self.seconds.max(1e-9),
            self.p50_us,
            self.p99_us
        )
    }
}

/// One connection's requests; the number of requests echoed exactly.
fn one_connection(addr: SocketAddrV4, requests: u64, latency: &mut Histogram) -> Result<u64> {
    let mut s = TcpStream::connect(addr).map_err(|e| {
        anyhow::anyhow!(
            "cannot connect to {addr}: {e}{}",
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                " (is `syscost lab echo-server` listening there?)"
            } else {
                ""
            }
        )
    })?;
    s.set_nodelay(true)?;
    let mut reply = [0u8; 12];
    for _ in 0..requests {
        let t = Instant::now();
        s.write_all(REQUEST)
            .map_err(|e| anyhow::anyhow!("sending to {addr}: {e}"))?;
        s.read_exact(&mut reply)
            .map_err(|e| anyhow::anyhow!("waiting for the echo from {addr}: {e}"))?;
        let _ = latency.increment(t.elapsed().as_nanos() as u64);
        if &reply != REQUEST {
            bail!("echo differs from the request");
        }
    }
    Ok(requests)
}

pub fn run(args: &LoadArgs) -> Result<LoadReport> {
    if args.concurrency == 0 || args.keepalive == 0 {
        bail!("--concurrency and --keepalive must be at least 1");
    }
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.duration.max(0.0));
    let next = Arc::new(AtomicU64::new(0));
    let totals = Arc::new(Mutex::new((
        0u64,
        0u64,
        0u64,
        Histogram::new(GROUPING_POWER, MAX_VALUE_POWER)?,
        None::<String>,
    )));
    let workers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            let (next, totals, args) = (next.clone(), totals.clone(), args.clone());
            std::thread::spawn(move || {
                let mut hist =
                    Histogram::new(GROUPING_POWER, MAX_VALUE_POWER).expect("valid config");
                let (mut connections, mut requests, mut errors) = (0u64, 0u64, 0u64);
                let mut first_error = None;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= args.connections || Instant::now() >= deadline {
                        break;
                    }
                    if let Some(rate) = args.rate {
                        let due = start + Duration::from_secs_f64(i as f64 / rate);
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(
                                (due - now).min(deadline.saturating_duration_since(now)),
                            );
                        }
                    }
                    connections += 1;
                    match one_connection(args.addr, args.keepalive, &mut hist) {
                        Ok(n) => requests += n,
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert_with(|| format!("{e:#}"));
                        }
                    }
                }
                let mut t = totals.lock().expect("no worker panics while holding it");
                t.0 += connections;
                t.1 += requests;
                t.2 += errors;
                t.3 = t.3.checked_add(&hist).expect("same config");
                if t.4.is_none() {
                    t.4 = first_error;
                }
            })
        })
        .collect();
    for w in workers {
        w.join()
            .map_err(|_| anyhow::anyhow!("a load worker panicked"))?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let (connections, requests, errors, hist, first_error) =
        &*totals.lock().expect("workers are done");
    let pct = |q: f64| {
        hist.quantile(q)
            .ok()
            .flatten()
            .and_then(|r| r.entries().values().next().map(|b| b.end() as f64 / 1e3))
            .unwrap_or(0.0)
    };
    Ok(LoadReport {
        connections: *connections,
        requests: *requests,
        errors: *errors,
        seconds,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        first_error: first_error.clone(),
    })
}
