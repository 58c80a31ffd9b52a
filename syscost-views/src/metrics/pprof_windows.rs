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
    sync::{Arc, Mutex},
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

/// Windows open at once: each holds a connection and has every sample read the
/// kernel's stack tables; one more is answered 503 at once (as Go's CPU profile refuses
/// a second), so that windows never take every connection from the scrapes.
pub const MAX_WINDOWS: usize = 4;

/// How long past its end a window waits for the sample that closes it before it
/// answers 503 (a session whose samples stopped carrying the tables): this, or two
/// intervals where they are longer.
pub const GRACE: Duration = Duration::from_secs(60);

/// The windows' source: the session's samples, and how many windows are open.
pub struct Windows {
    session: SessionHandle,
    samples: tokio::sync::watch::Receiver<Option<Arc<Sample>>>,
    open: Arc<Mutex<usize>>,
}

/// Why a window was not served.
pub enum Refused {
    /// [`MAX_WINDOWS`] are open.
    Busy,
    /// The samples that open or close it did not come, or the profile could not be
    /// made.
    Failed(anyhow::Error),
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
            open: Arc::new(Mutex::new(0)),
        }
    }

    /// The calls by stack of a window of `seconds`, gzipped pprof; at most `most`
    /// windows open at once.
    pub async fn profile(&self, seconds: u64, most: usize) -> Result<Vec<u8>, Refused> {
        let asked = tokio::time::Instant::now();
        let _open = Open::new(self, most).ok_or(Refused::Busy)?;
        let grace = GRACE.max(2 * self.session.interval());
        let mut rx = self.samples.clone();
        rx.borrow_and_update();
        let end = asked + Duration::from_secs(seconds);
        let samples = async {
            let first = next_with_tables(&mut rx).await?;
            log::debug!(
                "{PATH}: a window of {seconds} s from sample {} opened",
                first.seq
            );
            loop {
                let s = next_with_tables(&mut rx).await?;
                if s.unloaded || s.taken >= end.into_std() {
                    return Ok::<_, anyhow::Error>((first, s));
                }
            }
        };
        let (first, last) = tokio::time::timeout_at(end + grace, samples)
            .await
            .map_err(|_| {
                Refused::Failed(anyhow!(
                    "no sample with the stack tables came within {} s of the window's end",
                    grace.as_secs()
                ))
            })?
            .map_err(Refused::Failed)?;
        // Off the endpoint's thread: the tables' difference, the naming (a /proc read a
        // process) and the encoding.
        let session = self.session.clone();
        tokio::task::spawn_blocking(move || window_profile(&session, &first, &last))
            .await
            .map_err(|e| Refused::Failed(anyhow!("the window's profile failed: {e}")))
    }
}

/// The profile of the calls between samples `first` and `last`.
fn window_profile(session: &SessionHandle, first: &Sample, last: &Sample) -> Vec<u8> {
    let (Some(a), Some(b)) = (&first.stack_tables, &last.stack_tables) else {
        unreachable!("both samples carry the tables");
    };
    let stacks = session.assemble_stacks(&b.since(a));
    let note = b.moved_past_the_bound(a).then(|| {
        format!(
            "syscost: not exact: entries were summed past the {} kept one by one during the window, and the sums beyond that bound may hold calls from before it",
            syscost_engine::by_stack::DRAINED_KEYS
        )
    });
    let start = SystemTime::now()
        .checked_sub(first.taken.elapsed())
        .unwrap_or(SystemTime::UNIX_EPOCH)
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    pprof::encode(
        &stacks,
        pprof::Window {
            start_unix_ns: start,
            duration_ns: last.taken.saturating_duration_since(first.taken).as_nanos() as i64,
            note,
        },
    )
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
    /// `None` when `most` are open.
    fn new(w: &'a Windows, most: usize) -> Option<Self> {
        let mut open = syscost_engine::locks::lock(&w.open);
        if *open >= most {
            return None;
        }
        *open += 1;
        if *open == 1 {
            w.session.want_stack_tables(true);
        }
        Some(Self(w))
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        let mut open = syscost_engine::locks::lock(&self.0.open);
        *open -= 1;
        if *open == 0 {
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
