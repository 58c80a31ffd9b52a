//! syscost's own cost: its programs' run time, measured in windows.

use std::time::{Duration, Instant};

use crate::tracer::{RunTimeStats, Tracer};

/// syscost's own cost, measured in windows (see [`OwnCost`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwnCostReading {
    /// Average run time of one program run, ns.
    pub ns_per_run: f64,
    /// Share of one CPU spent in syscost's programs, percent.
    pub cpu_percent: f64,
}

impl std::fmt::Display for OwnCostReading {
    /// `95 ns/event, 0.40% CPU`: how every view shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} ns/event, {:.2}% CPU",
            self.ns_per_run, self.cpu_percent
        )
    }
}

/// Why there is no own-cost figure with CAP_BPF and CAP_PERFMON alone.
pub const NEEDS_SYS_ADMIN: &str = "n/a: BPF run-time statistics need CAP_SYS_ADMIN";

/// BPF run-time statistics make the kernel read the clock around every program run on
/// the machine (about 195 ns per traced syscall here), so they are on only for a
/// window of `WINDOW` in every `PERIOD`: a tenth of that price, and a fresh figure every
/// 10 s.
pub struct OwnCost {
    window: Option<(RunTimeStats, Instant, (u64, u64))>,
    next_window: Instant,
    last: Option<OwnCostReading>,
    /// Why there is no figure (no CAP_SYS_ADMIN, say), once known.
    unavailable: Option<String>,
    /// Program run time within windows, and the windows' wall time, ns (for the
    /// metrics endpoint's counters).
    run_ns: u64,
    measured_ns: u64,
    wanted: bool,
}

impl OwnCost {
    pub const WINDOW: Duration = Duration::from_secs(1);
    pub const PERIOD: Duration = Duration::from_secs(10);

    pub(super) fn new(wanted: bool) -> Self {
        let unavailable = if !wanted {
            Some("off".to_string())
        } else if !crate::privileges::can_enable_run_stats() {
            Some(NEEDS_SYS_ADMIN.to_string())
        } else {
            None
        };
        Self {
            window: None,
            next_window: Instant::now(),
            last: None,
            unavailable,
            run_ns: 0,
            measured_ns: 0,
            wanted,
        }
    }

    /// Opens or closes the measurement window when due; `closing`: close an open window
    /// now (the programs are about to be unloaded).
    pub(super) fn tick(&mut self, tracer: Option<&Tracer>, closing: bool) {
        let now = Instant::now();
        if let Some((_, opened, (t0, c0))) = &self.window {
            let elapsed = now.duration_since(*opened);
            if elapsed < Self::WINDOW && !closing {
                return;
            }
            let (t0, c0) = (*t0, *c0);
            if let Some(tracer) = tracer {
                let (t1, c1) = tracer.program_run_totals();
                let (dt, dc) = (t1.saturating_sub(t0), c1.saturating_sub(c0));
                self.run_ns += dt;
                self.measured_ns += elapsed.as_nanos() as u64;
                self.last = Some(OwnCostReading {
                    ns_per_run: if dc == 0 { 0.0 } else { dt as f64 / dc as f64 },
                    cpu_percent: 100.0 * dt as f64 / elapsed.as_nanos().max(1) as f64,
                });
            }
            self.window = None;
            self.next_window = now + Self::PERIOD - Self::WINDOW;
            return;
        }
        let Some(tracer) = tracer else { return };
        if closing || !self.wanted || self.unavailable.is_some() || now < self.next_window {
            return;
        }
        match RunTimeStats::enable() {
            Ok(stats) => self.window = Some((stats, now, tracer.program_run_totals())),
            Err(e) => self.unavailable = Some(format!("n/a: {e:#}")),
        }
    }

    /// When [`OwnCost::tick`] has something to do next: the open window's end, or the
    /// next window's start; `None` when no window will open.
    pub(super) fn next_due(&self) -> Option<Instant> {
        match &self.window {
            Some((_, opened, _)) => Some(*opened + Self::WINDOW),
            None => (self.wanted && self.unavailable.is_none()).then_some(self.next_window),
        }
    }

    /// Why there is no figure and will be none (privileges, `--no-run-stats`), if so.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// The latest figure, or why there is none.
    pub fn reading(&self) -> Result<Option<OwnCostReading>, String> {
        match (&self.last, &self.unavailable) {
            (Some(r), _) => Ok(Some(*r)),
            (None, Some(why)) => Err(why.clone()),
            (None, None) => Ok(None),
        }
    }

    /// Program run time measured so far and the wall time it was measured over, ns;
    /// `None` when run-time statistics are off or unavailable.
    pub fn totals(&self) -> Option<(u64, u64)> {
        (self.wanted && self.unavailable.is_none()).then_some((self.run_ns, self.measured_ns))
    }
}
