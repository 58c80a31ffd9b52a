//! The live view's state and the pure rules that change it. The sampler (mod.rs) feeds
//! it samples, the key handler changes the view settings, and the render functions only
//! read it.

use std::{
    collections::{BTreeMap, VecDeque},
    time::Duration,
};

use syscost_engine::sampler::OwnCostReading;
use syscost_report::profile::{Profile, SortKey, SyscallProfile};

/// Intervals of rate history kept for the sparklines.
pub const HISTORY: usize = 60;

/// What is attached to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetInfo {
    pub pid: u32,
    pub comm: String,
    pub threads: usize,
    /// Shown instead of "pid N (comm)" (a cgroup).
    pub label: Option<String>,
}

/// Cumulative since attach (or the last reset), or the last interval only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    #[default]
    Cumulative,
    Interval,
}

/// Columns the main table can be sorted by, in the order `s` cycles through them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortColumn {
    Calls,
    Rate,
    Errors,
    #[default]
    Time,
    Avg,
    P50,
    P99,
    Max,
    OnCpu,
    Blocked,
    Name,
}

impl SortColumn {
    pub const ALL: [SortColumn; 11] = [
        Self::Calls,
        Self::Rate,
        Self::Errors,
        Self::Time,
        Self::Avg,
        Self::P50,
        Self::P99,
        Self::Max,
        Self::OnCpu,
        Self::Blocked,
        Self::Name,
    ];

    /// The profile's sort key of the column; `None` for the rate, the view's own.
    pub fn key(self) -> Option<SortKey> {
        Some(match self {
            Self::Calls => SortKey::Calls,
            Self::Rate => return None,
            Self::Errors => SortKey::Errors,
            Self::Time => SortKey::Time,
            Self::Avg => SortKey::Avg,
            Self::P50 => SortKey::P50,
            Self::P99 => SortKey::P99,
            Self::Max => SortKey::Max,
            Self::OnCpu => SortKey::Oncpu,
            Self::Blocked => SortKey::Offcpu,
            Self::Name => SortKey::Name,
        })
    }

    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&c| c == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::Rate => "calls/s",
            Self::Errors => "errors",
            Self::Time => "% time",
            Self::Avg => "avg",
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::Max => "max",
            Self::OnCpu => "on-cpu",
            Self::Blocked => "blocked",
            Self::Name => "name",
        }
    }
}

/// One thread in the per-thread view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadRow {
    pub tid: u32,
    pub comm: String,
    pub calls: u64,
    pub total_ns: u64,
    /// The syscall it is inside now and for how long ("read for 2.30s"), or empty.
    pub now: String,
}

/// A call in progress for longer than [`STUCK_AFTER`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StuckCall {
    pub tid: u32,
    pub syscall: String,
    pub elapsed: Duration,
    /// Switched out (blocked, or waiting for a CPU) rather than running.
    pub blocked: bool,
}

/// How long a call runs before the header shows it as stuck.
pub const STUCK_AFTER: Duration = Duration::from_secs(1);

/// One refresh worth of data, made by the sampler.
#[derive(Clone, Debug, PartialEq)]
pub struct Refresh {
    pub cumulative: Profile,
    pub interval: Profile,
    pub interval_secs: f64,
    pub attached_for: Duration,
    pub threads: Vec<ThreadRow>,
    pub thread_count: usize,
    pub overhead: Option<OwnCostReading>,
    /// Why there is no own-cost figure yet ("measuring", no privilege for it, off).
    pub overhead_note: Option<String>,
    /// Calls in progress for longer than [`STUCK_AFTER`], longest first.
    pub stuck: Vec<StuckCall>,
    /// With `--slow`: the latest slow calls, newest first.
    pub slow: Option<Vec<syscost_report::profile::SlowCall>>,
    /// Slow calls received so far.
    pub slow_received: u64,
    /// With `--stacks`: the calls by stack since the start.
    pub stacks: Option<std::sync::Arc<syscost_report::profile::CallStacks>>,
}

/// Calls per second over an interval; none before an interval has passed (a rate over a
/// few microseconds would be noise).
fn per_second(calls: u64, secs: f64) -> f64 {
    if secs < 1e-3 {
        0.0
    } else {
        calls as f64 / secs
    }
}

/// The live view's state.
#[derive(Clone, Debug)]
pub struct App {
    pub target: TargetInfo,
    pub attached_for: Duration,
    pub cumulative: Profile,
    pub interval: Profile,
    pub interval_secs: f64,
    /// Syscall name -> calls per second, oldest first.
    pub rates: BTreeMap<String, VecDeque<u64>>,
    pub overhead: Option<OwnCostReading>,
    pub overhead_note: Option<String>,
    pub stuck: Vec<StuckCall>,
    pub threads: Vec<ThreadRow>,
    /// `--per` unit syscall.
    pub per: Option<String>,
    /// A line of advice shown under the header (the demo's).
    pub hint: Option<String>,

    pub selected: usize,
    pub sort: SortColumn,
    pub reverse: bool,
    pub filter: String,
    pub editing_filter: bool,
    pub paused: bool,
    pub view: View,
    pub show_help: bool,
    pub show_threads: bool,
    /// The slow calls' view (`l`, with `--slow`).
    pub show_slow: bool,
    /// The latest slow calls, newest first (`None` without `--slow`).
    pub slow: Option<Vec<syscost_report::profile::SlowCall>>,
    pub slow_received: u64,
    /// The callers pane (`w`, with `--stacks`): the selected syscall's stacks.
    pub show_callers: bool,
    /// With `--stacks`: the calls by stack since the start (`None` without).
    pub stacks: Option<std::sync::Arc<syscost_report::profile::CallStacks>>,
    /// The only process whose stacks the callers pane shows (`top`'s drill-down).
    pub stacks_of: Option<u32>,
    pub exited: bool,
    /// Entered from `syscost top`: Esc goes back to it.
    pub drilled: bool,
    /// Set by `r`; the sampler takes a new baseline and clears it.
    pub reset_requested: bool,
    /// Why the last key did nothing (`l` without `--slow`), shown in the footer until
    /// the next key.
    pub notice: Option<String>,
}

impl App {
    pub fn new(target: TargetInfo, empty: Profile) -> Self {
        Self {
            target,
            attached_for: Duration::ZERO,
            cumulative: empty.clone(),
            interval: empty,
            interval_secs: 0.0,
            rates: BTreeMap::new(),
            overhead: None,
            overhead_note: None,
            stuck: Vec::new(),
            threads: Vec::new(),
            per: None,
            hint: None,
            selected: 0,
            sort: SortColumn::default(),
            reverse: false,
            filter: String::new(),
            editing_filter: false,
            paused: false,
            view: View::default(),
            show_help: false,
            show_threads: false,
            notice: None,
            show_slow: false,
            slow: None,
            slow_received: 0,
            show_callers: false,
            stacks: None,
            stacks_of: None,
            drilled: false,
            exited: false,
            reset_requested: false,
        }
    }

    /// The selected syscall's stacks (of [`App::stacks_of`] alone when set), most calls
    /// first: empty without `--stacks` or a selected syscall.
    pub fn callers(&self) -> Vec<&syscost_report::profile::CallStack> {
        let (Some(stacks), Some(row)) = (&self.stacks, self.selected_row()) else {
            return Vec::new();
        };
        stacks
            .stacks
            .iter()
            .filter(|s| s.syscall == row.name && self.stacks_of.is_none_or(|p| s.pid == p))
            .collect()
    }

    /// Takes a new sample; a paused view keeps showing the old one.
    pub fn apply(&mut self, sample: Refresh) {
        if self.paused {
            return;
        }
        for s in &sample.cumulative.syscalls {
            self.rates.entry(s.name.clone()).or_default();
        }
        for (name, history) in self.rates.iter_mut() {
            let calls = sample.interval.syscall(name).map_or(0, |s| s.calls);
            history.push_back(per_second(calls, sample.interval_secs).round() as u64);
            while history.len() > HISTORY {
                history.pop_front();
            }
        }
        self.target.threads = sample.thread_count;
        self.attached_for = sample.attached_for;
        self.cumulative = sample.cumulative;
        self.interval = sample.interval;
        self.interval_secs = sample.interval_secs;
        self.threads = sample.threads;
        self.overhead = sample.overhead;
        self.overhead_note = sample.overhead_note;
        self.stuck = sample.stuck;
        // The selected slow call stays selected as newer ones come in above it.
        let selected = self
            .slow
            .as_ref()
            .and_then(|s| s.get(self.selected))
            .map(|c| (c.end_ns, c.tid));
        self.slow = sample.slow;
        self.slow_received = sample.slow_received;
        if sample.stacks.is_some() {
            self.stacks = sample.stacks;
        }
        if self.show_slow
            && let (Some(key), Some(calls)) = (selected, &self.slow)
            && let Some(i) = calls.iter().position(|c| (c.end_ns, c.tid) == key)
        {
            self.selected = i;
        }
        self.clamp_selection();
    }

    /// Forgets the rate history (after a reset).
    pub fn clear_history(&mut self) {
        self.rates.clear();
    }

    /// The profile the table shows.
    pub fn shown(&self) -> &Profile {
        match self.view {
            View::Cumulative => &self.cumulative,
            View::Interval => &self.interval,
        }
    }

    /// Calls per second of `name` in the last interval.
    pub fn rate(&self, name: &str) -> f64 {
        let calls = self.interval.syscall(name).map_or(0, |s| s.calls);
        per_second(calls, self.interval_secs)
    }

    /// All syscalls per second in the last interval.
    pub fn events_per_sec(&self) -> f64 {
        per_second(self.interval.totals().0, self.interval_secs)
    }

    /// Rows of the table: filtered by name, sorted, in display order.
    pub fn rows(&self) -> Vec<&SyscallProfile> {
        let mut rows: Vec<&SyscallProfile> = self
            .shown()
            .syscalls
            .iter()
            .filter(|s| self.filter.is_empty() || s.name.contains(self.filter.as_str()))
            .collect();
        match self.sort.key() {
            Some(key) => syscost_report::profile::sort_syscalls(&mut rows, key),
            // The rate over the last interval is the view's own column.
            None => {
                rows.sort_by_key(|s| s.nr);
                rows.sort_by_key(|s| std::cmp::Reverse((self.rate(&s.name) * 1000.0) as u64));
            }
        }
        if self.reverse {
            rows.reverse();
        }
        rows
    }

    /// The selected row, if any.
    pub fn selected_row(&self) -> Option<&SyscallProfile> {
        self.rows().get(self.selected).copied()
    }

    /// Number of rows in the current table (syscalls, threads or slow calls).
    pub fn row_count(&self) -> usize {
        if self.show_slow {
            self.slow.as_ref().map_or(0, Vec::len)
        } else if self.show_threads {
            self.threads.len()
        } else {
            self.rows().len()
        }
    }

    pub fn clamp_selection(&mut self) {
        let n = self.row_count();
        self.selected = if n == 0 { 0 } else { self.selected.min(n - 1) };
    }

    pub fn move_selection(&mut self, delta: isize) {
        let n = self.row_count() as isize;
        if n == 0 {
            self.selected = 0;
            return;
        }
        self.selected = (self.selected as isize + delta).clamp(0, n - 1) as usize;
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    pub use syscost_report::fixtures::{server_profile, syscall};

    /// A sample of one second's `interval`, `secs` after attaching, with nothing else.
    pub fn sample_of(cumulative: Profile, interval: Profile, secs: u64) -> Refresh {
        Refresh {
            cumulative,
            interval,
            interval_secs: 1.0,
            attached_for: Duration::from_secs(secs),
            threads: Vec::new(),
            thread_count: 1,
            overhead: None,
            overhead_note: None,
            stuck: Vec::new(),
            slow: None,
            slow_received: 0,
            stacks: None,
        }
    }

    pub fn sample_app() -> App {
        let mut app = App::new(
            TargetInfo {
                pid: 4242,
                comm: "echo-server".into(),
                threads: 1,
                label: None,
            },
            server_profile(0),
        );
        for i in 1..=5 {
            app.apply(Refresh {
                threads: vec![ThreadRow {
                    tid: 4242,
                    comm: "echo-server".into(),
                    calls: 8500 * i,
                    total_ns: 20_000_000 * i,
                    now: "epoll_wait for 1.20ms".into(),
                }],
                overhead: Some(OwnCostReading {
                    ns_per_run: 95.0,
                    cpu_percent: 0.4,
                }),
                ..sample_of(server_profile(i), server_profile(1), i)
            });
        }
        app
    }

    #[test]
    fn sorting_filtering_and_selection() {
        let mut app = sample_app();
        let names = |app: &App| {
            app.rows()
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&app)[0], "close"); // 6.3 us x 5000 is the most time
        app.sort = SortColumn::Calls;
        assert_eq!(names(&app)[..2], ["read", "epoll_ctl"]);
        app.reverse = true;
        // write, close and accept4 tie on calls; ties keep syscall-number order.
        assert_eq!(names(&app)[0], "accept4");
        app.sort = SortColumn::Name;
        app.reverse = false;
        assert_eq!(
            names(&app),
            [
                "accept4",
                "close",
                "epoll_ctl",
                "epoll_wait",
                "read",
                "write"
            ]
        );
        app.filter = "epoll".into();
        assert_eq!(names(&app), ["epoll_ctl", "epoll_wait"]);
        app.selected = 5;
        app.clamp_selection();
        assert_eq!(app.selected, 1);
        app.move_selection(-10);
        assert_eq!(app.selected, 0);
        assert_eq!(app.selected_row().unwrap().name, "epoll_ctl");
    }

    #[test]
    fn rates_history_and_pause() {
        let mut app = sample_app();
        assert_eq!(app.rates["read"].len(), 5);
        assert_eq!(app.rate("read"), 2000.0);
        assert_eq!(app.events_per_sec(), 8500.0);
        app.paused = true;
        let before = app.cumulative.clone();
        app.apply(sample_of(server_profile(99), server_profile(1), 99));
        assert_eq!(app.cumulative, before, "a paused view does not change");
        assert_eq!(app.rates["read"].len(), 5);
    }

    #[test]
    fn no_rate_without_an_interval() {
        let mut app = sample_app();
        app.interval_secs = 0.0;
        assert_eq!(app.rate("read"), 0.0);
        assert_eq!(app.events_per_sec(), 0.0);
        app.interval_secs = 0.5;
        assert_eq!(app.rate("read"), 4000.0);
    }

    #[test]
    fn sort_column_cycles_through_all() {
        let mut c = SortColumn::Calls;
        for _ in 0..SortColumn::ALL.len() {
            c = c.next();
        }
        assert_eq!(c, SortColumn::Calls);
    }
}
