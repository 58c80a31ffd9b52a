//! `GET /debug/pprof/syscalls?seconds=N` (`export --stacks`): the calls by user stack of
//! a window, as a gzipped pprof profile, as Go's `net/http/pprof` serves
//! `profile?seconds=N`: what Parca's scrape configuration and Grafana Alloy's
//! `pyroscope.scrape` collect.
//!
//! A window runs from the first sample the session publishes after the request to the
//! first taken at least N seconds after the request (or the first after the programs
//! were unloaded: nothing more can be counted), so the answer comes at most an interval
//! (`-i`) after N seconds; it holds exactly the calls the kernel's tables counted between
//! the two samples, and says how long it was (the profile's duration). The tables are
//! read into samples only while a window is open.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime},
};

use anyhow::{Result, anyhow, bail};
use syscost_engine::session::{Sample, SessionHandle};
use syscost_report::report::pprof;

/// The path served.
pub const PATH: &str = "/debug/pprof/syscalls";

/// A window's length unless `seconds` says (Go's `profile` default).
pub const DEFAULT_SECONDS: u64 = 30;
/// The longest window: a connection is held for as long.
pub const MAX_SECONDS: u64 = 3600;

/// The windows' source: the session's samples, and how many windows are open.
pub struct Windows {
    session: SessionHandle,
    samples: tokio::sync::watch::Receiver<Option<Arc<Sample>>>,
    open: Arc<AtomicUsize>,
}

impl Windows {
    /// Fed with every sample the session publishes from now on.
    pub fn new(session: SessionHandle) -> Self {
        let (tx, samples) = tokio::sync::watch::channel(None);
        session.on_sample(move |sample| {
            tx.send_replace(Some(sample.clone()));
            // Kept while the endpoint's receiver lives.
            !tx.is_closed()
        });
        Self {
            session,
            samples,
            open: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The calls by stack of a window of `seconds`, gzipped pprof.
    pub async fn profile(&self, seconds: u64) -> Result<Vec<u8>> {
        let asked = std::time::Instant::now();
        let _open = Open::new(self);
        let mut rx = self.samples.clone();
        rx.borrow_and_update();
        let first = next_with_tables(&mut rx).await?;
        log::debug!(
            "{PATH}: a window of {seconds} s from sample {} opened",
            first.seq
        );
        let end = asked + Duration::from_secs(seconds);
        let last = loop {
            let s = next_with_tables(&mut rx).await?;
            if s.unloaded || s.taken >= end {
                break s;
            }
        };
        let (Some(a), Some(b)) = (&first.stack_tables, &last.stack_tables) else {
            unreachable!("both samples carry the tables");
        };
        let stacks = self.session.assemble_stacks(&b.since(a));
        let start = SystemTime::now()
            .checked_sub(first.taken.elapsed())
            .unwrap_or(SystemTime::UNIX_EPOCH)
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        Ok(pprof::encode(
            &stacks,
            pprof::Window {
                start_unix_ns: start,
                duration_ns: last.taken.saturating_duration_since(first.taken).as_nanos() as i64,
            },
        ))
    }
}

/// The next sample published that carries the stack tables.
async fn next_with_tables(
    rx: &mut tokio::sync::watch::Receiver<Option<Arc<Sample>>>,
) -> Result<Arc<Sample>> {
    loop {
        rx.changed()
            .await
            .map_err(|_| anyhow!("the session has ended"))?;
        let s = rx.borrow_and_update().clone();
        if let Some(s) = s.filter(|s| s.stack_tables.is_some()) {
            return Ok(s);
        }
    }
}

/// An open window: the samples carry the tables while there is one.
struct Open<'a>(&'a Windows);

impl<'a> Open<'a> {
    fn new(w: &'a Windows) -> Self {
        if w.open.fetch_add(1, Ordering::AcqRel) == 0 {
            w.session.want_stack_tables(true);
        }
        Self(w)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.session.want_stack_tables(false);
        }
    }
}

/// `seconds=N` of a request's query: [`DEFAULT_SECONDS`] without it, else 1 to
/// [`MAX_SECONDS`].
pub fn seconds(query: Option<&str>) -> Result<u64> {
    let Some(v) = query
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("seconds="))
    else {
        return Ok(DEFAULT_SECONDS);
    };
    match v.parse::<u64>() {
        Ok(n) if (1..=MAX_SECONDS).contains(&n) => Ok(n),
        _ => bail!(
            "seconds={} is not a window syscost serves: 1 to {MAX_SECONDS}",
            v.chars().take(20).collect::<String>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_asked_for_in_seconds_within_bounds() {
        assert_eq!(seconds(None).unwrap(), DEFAULT_SECONDS);
        assert_eq!(seconds(Some("debug=1")).unwrap(), DEFAULT_SECONDS);
        assert_eq!(seconds(Some("seconds=5")).unwrap(), 5);
        assert_eq!(seconds(Some("x=1&seconds=3600")).unwrap(), 3600);
        for bad in [
            "seconds=0",
            "seconds=3601",
            "seconds=-1",
            "seconds=1.5",
            "seconds=",
        ] {
            let e = seconds(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("1 to 3600"), "{bad}: {e}");
        }
    }
}
