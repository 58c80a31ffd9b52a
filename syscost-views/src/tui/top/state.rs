//! `top`'s view state: which table is shown, the rows of the last interval, the
//! selection and the filter, and what a key asks of the loop.

use std::time::Duration;

use syscost_report::profile::TopSort;
use syscost_report::report::top::{ProcessRow, sort_rows, sums};
use syscost_report::syscall_names::SyscallId;

/// Which table is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Processes,
    /// Processes summed by cgroup.
    Cgroups,
    Syscalls,
    /// The processes making one syscall.
    SyscallProcesses(SyscallId),
}

/// What the loop should do after a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    Continue,
    Quit,
    /// Drill into this process's per-syscall view (with its threads shown: `t`).
    Drill {
        pid: u32,
        threads: bool,
    },
}

/// The state of the view.
#[derive(Debug)]
pub struct TopView {
    /// Where it looks: "the machine" or a cgroup's path.
    pub scope: String,
    pub rows: Vec<ProcessRow>,
    pub interval_secs: f64,
    pub mode: Mode,
    pub sort: TopSort,
    pub reverse: bool,
    pub filter: String,
    pub editing_filter: bool,
    pub selected: usize,
    pub paused: bool,
    pub show_help: bool,
    pub elapsed: Duration,
    /// Events the kernel side had no room for, since the start.
    pub dropped: u64,
    pub own_cost: String,
    /// Whether time switched out is measured (not with `--no-offcpu`).
    pub offcpu: bool,
    /// Enter on a cgroup: only its processes (exactly that cgroup).
    pub cgroup_filter: Option<String>,
}

impl TopView {
    pub fn new(scope: String, sort: TopSort) -> Self {
        Self {
            scope,
            rows: Vec::new(),
            interval_secs: syscost_engine::session::INTERVAL.as_secs_f64(),
            mode: Mode::Processes,
            sort,
            reverse: false,
            filter: String::new(),
            editing_filter: false,
            selected: 0,
            paused: false,
            show_help: false,
            elapsed: Duration::ZERO,
            dropped: 0,
            own_cost: String::new(),
            offcpu: true,
            cgroup_filter: None,
        }
    }

    /// A new interval's rows (kept as they are while paused).
    pub fn apply(&mut self, rows: Vec<ProcessRow>, interval_secs: f64) {
        if !self.paused {
            self.rows = rows;
            self.interval_secs = interval_secs.max(1e-3);
            self.clamp();
        }
    }

    pub(super) fn per_sec(&self, n: u64) -> f64 {
        n as f64 / self.interval_secs
    }

    /// The process (or cgroup) rows shown, filtered and sorted.
    pub fn process_rows(&self) -> Vec<ProcessRow> {
        let mut rows = match self.mode {
            Mode::Cgroups => sums::by_cgroup(&self.rows),
            _ => self.rows.clone(),
        };
        let f = self.filter.to_lowercase();
        if let (Some(cg), Mode::Processes) = (&self.cgroup_filter, self.mode) {
            rows.retain(|r| *r.cgroup == **cg);
        }
        rows.retain(|r| {
            f.is_empty()
                || r.comm.to_lowercase().contains(&f)
                || r.cgroup.to_lowercase().contains(&f)
                || r.pid.to_string() == f
                || r.top_syscall()
                    .is_some_and(|(id, _)| id.name().contains(&f))
        });
        sort_rows(&mut rows, self.sort);
        if self.reverse {
            rows.reverse();
        }
        rows
    }

    /// The syscall rows: each syscall summed over processes, with the processes.
    pub fn syscall_rows(&self) -> Vec<sums::SyscallRow> {
        let f = self.filter.to_lowercase();
        let mut rows = sums::by_syscall(&self.rows);
        rows.retain(|(id, _, _)| f.is_empty() || id.name().contains(&f));
        if self.reverse {
            rows.reverse();
        }
        rows
    }

    pub(super) fn syscall_process_rows(&self, id: SyscallId) -> Vec<sums::ProcessShare> {
        sums::by_syscall(&self.rows)
            .into_iter()
            .find(|(i, _, _)| *i == id)
            .map(|(_, _, p)| p)
            .unwrap_or_default()
    }

    pub fn row_count(&self) -> usize {
        match self.mode {
            Mode::Processes | Mode::Cgroups => self.process_rows().len(),
            Mode::Syscalls => self.syscall_rows().len(),
            Mode::SyscallProcesses(id) => self.syscall_process_rows(id).len(),
        }
    }

    pub(super) fn clamp(&mut self) {
        self.selected = self.selected.min(self.row_count().saturating_sub(1));
    }

    pub(super) fn selected_pid(&self) -> Option<u32> {
        match self.mode {
            Mode::Processes => self.process_rows().get(self.selected).map(|r| r.pid),
            Mode::SyscallProcesses(id) => self
                .syscall_process_rows(id)
                .get(self.selected)
                .map(|p| p.0),
            _ => None,
        }
    }
}

pub(super) fn next_sort(s: TopSort) -> TopSort {
    match s {
        TopSort::Time => TopSort::Oncpu,
        TopSort::Oncpu => TopSort::Calls,
        TopSort::Calls => TopSort::Errors,
        TopSort::Errors => TopSort::Threads,
        TopSort::Threads => TopSort::Pid,
        TopSort::Pid => TopSort::Comm,
        TopSort::Comm => TopSort::Time,
    }
}
