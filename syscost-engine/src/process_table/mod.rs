//! The machine's processes as `syscost top`, `export --top` and `--per-process` show
//! them: the kernel's per-(process, syscall) table turned into per-process intervals and
//! totals (rows: `syscost_report::report::top`). Pure: the sampler feeds it copies of the
//! table (and what /proc says of each process, [`crate::process::ProcInfo`]) and deletes
//! what it says is finished.
//!
//! Counting rule: the table holds cumulative figures per process and syscall; each
//! step takes the difference with the previous copy (never negative: a figure copied
//! while it changed is one call late at most, and counts only grow). A process's exit
//! record (sent by the kernel side when its last thread exits) gives the final figures
//! of its keys, which are then deleted from the table: that is how the table stays
//! bounded by the processes alive. A process whose record was not sent (no room) is
//! found gone from /proc at a step, which counts its final difference and deletes its
//! keys the same way.

use std::collections::{BTreeMap, HashMap, VecDeque};

use syscost_common::{TopKey, TopValue};

use crate::process::ProcInfo;
pub use syscost_report::report::top::{Name, ProcessRow, add};
use syscost_report::syscall_names::SyscallId;

/// `now - before`, never negative, errors never above calls.
pub fn delta(now: &TopValue, before: &TopValue) -> TopValue {
    let calls = now.calls.saturating_sub(before.calls);
    let total_ns = now.total_ns.saturating_sub(before.total_ns);
    TopValue {
        calls,
        errors: now.errors.saturating_sub(before.errors).min(calls),
        total_ns,
        offcpu_ns: now.offcpu_ns.saturating_sub(before.offcpu_ns).min(total_ns),
    }
}

/// One step: every process with a syscall in the interval, the table keys to delete,
/// and the processes found gone (with or without calls in the interval).
#[derive(Clone, Debug, Default)]
pub struct TopStep {
    pub interval: Vec<ProcessRow>,
    pub forget: Vec<TopKey>,
    pub exited: Vec<u32>,
}

/// Steps not yet taken by the view that takes them, summed as they come (an exit record
/// is a step of one process: thousands a second on a churning machine, each merged in
/// O(log n)).
#[derive(Debug, Default)]
pub struct PendingSteps {
    rows: BTreeMap<u32, ProcessRow>,
    exited: Vec<u32>,
}

impl PendingSteps {
    /// Adds a step (rows of the same process summed, the later name and threads kept).
    pub fn absorb(&mut self, step: TopStep) {
        for r in step.interval {
            match self.rows.get_mut(&r.pid) {
                Some(e) => {
                    for (id, v) in &r.syscalls {
                        e.add(*id, v);
                    }
                    e.threads = r.threads;
                    e.exited |= r.exited;
                    e.comm = r.comm;
                    e.cgroup = r.cgroup;
                    e.kube = r.kube;
                }
                None => {
                    self.rows.insert(r.pid, r);
                }
            }
        }
        self.exited.extend(step.exited);
    }

    /// Everything absorbed since the last take, as one step.
    pub fn take(&mut self) -> TopStep {
        let mut exited = std::mem::take(&mut self.exited);
        exited.sort_unstable();
        TopStep {
            interval: std::mem::take(&mut self.rows).into_values().collect(),
            forget: Vec::new(),
            exited,
        }
    }
}

/// The per-process state between steps.
#[derive(Debug)]
pub struct ProcessTable {
    /// Keep totals since the start (not for `export --top`, which runs for days and
    /// only needs the steps).
    keep_totals: bool,
    previous: HashMap<TopKey, TopValue>,
    /// Steps in a row each key of a live process has not changed in.
    quiet: HashMap<TopKey, u32>,
    /// Totals since the start (or the last reset) of the processes alive at the last step.
    live: HashMap<u32, ProcessRow>,
    /// Totals of processes that have exited, in the order they went: the latest
    /// [`GONE_KEPT`] of them (a busy host starts thousands a second).
    gone: VecDeque<ProcessRow>,
    /// The exited processes beyond those, summed per cgroup (pid 0), in at most
    /// [`FOLDED_CGROUPS`] rows and one for the other cgroups: their calls stay in the
    /// totals.
    folded: BTreeMap<Name, (u64, ProcessRow)>,
    /// Processes found gone at the last step, whose exit records have not come.
    dead: std::collections::HashSet<u32>,
    /// The name and cgroup /proc last gave for each process seen alive with calls: the
    /// name while it lives and, once gone, the cgroup (an exit record's is the one it was
    /// first seen in; its name, the main thread's at its exit, is taken).
    known: HashMap<u32, ProcInfo>,
}

impl ProcessTable {
    /// The next step from a copy of the kernel's table. `status(pid)`: the process's
    /// thread count now, `None` when it no longer exists (one read of /proc a process);
    /// `info(pid)`: its name and cgroup now (asked for each process with calls in the
    /// step, so an exec or a cgroup move shows).
    ///
    /// A process found gone is left as it is for one step: its exit record (with its
    /// name, which /proc no longer has) is on its way and [`ProcessTable::exit`] counts it.
    /// Still in the table at the next step, it had none (no room): its final difference
    /// is counted then, and its keys are to be deleted.
    pub fn step(
        &mut self,
        table: &[(TopKey, TopValue)],
        status: impl Fn(u32) -> Option<u32>,
        mut info: impl FnMut(u32) -> ProcInfo,
    ) -> TopStep {
        let mut keys_of: BTreeMap<u32, Vec<(TopKey, TopValue)>> = BTreeMap::new();
        for (k, v) in table {
            keys_of.entry(k.tgid).or_default().push((*k, *v));
        }
        let mut rows: BTreeMap<u32, ProcessRow> = BTreeMap::new();
        // Processes whose name this step read from /proc.
        let mut named = std::collections::HashSet::new();
        let mut forget = Vec::new();
        let mut exited = Vec::new();
        let mut dead_now = std::collections::HashSet::new();
        for (pid, keys) in keys_of {
            let threads = status(pid);
            let live = threads.is_some();
            if !live && !self.dead.contains(&pid) {
                dead_now.insert(pid);
                continue;
            }
            for (k, v) in &keys {
                let before = self.previous.get(k).copied().unwrap_or_default();
                let d = delta(v, &before);
                // What was counted: a part clipped now (errors above calls in a copy made
                // while the entry changed) is counted once the rest of it is read.
                self.previous.insert(*k, add(before, &d));
                if d.calls == 0 && d.total_ns == 0 {
                    *self.quiet.entry(*k).or_default() += 1;
                    continue;
                }
                self.quiet.remove(k);
                let row = rows.entry(pid).or_insert_with(|| {
                    let pi = match (live, self.known.get(&pid)) {
                        // Gone (no record came): its last name, /proc has none now.
                        (false, Some(known)) => known.clone(),
                        _ => info(pid),
                    };
                    if pi.from_proc {
                        named.insert(pid);
                    }
                    ProcessRow {
                        pid,
                        comm: pi.comm,
                        cgroup: pi.cgroup,
                        kube: pi.kube,
                        ..Default::default()
                    }
                });
                row.add(top_id(k), &d);
            }
            // Kept only when /proc gave it: a process that exits between the check that
            // it is alive and the read of its name takes its record's name instead.
            if live
                && named.contains(&pid)
                && let Some(r) = rows.get(&pid)
            {
                self.known.insert(
                    pid,
                    ProcInfo {
                        comm: r.comm.clone(),
                        cgroup: r.cgroup.clone(),
                        kube: r.kube.clone(),
                        from_proc: true,
                    },
                );
            }
            if self.keep_totals
                && let Some(row) = rows.get(&pid)
            {
                let total = self.live.entry(pid).or_default();
                total.pid = pid;
                total.comm = row.comm.clone();
                total.cgroup = row.cgroup.clone();
                total.kube = row.kube.clone();
                for (id, v) in &row.syscalls {
                    total.add(*id, v);
                }
            }
            if let Some(n) = threads {
                if let Some(r) = rows.get_mut(&pid) {
                    r.threads = n;
                }
                if let Some(r) = self.live.get_mut(&pid) {
                    r.threads = n;
                }
                continue;
            }
            // Gone for a step and no exit record came: this was its last difference.
            if let Some(r) = rows.get_mut(&pid) {
                r.exited = true;
            }
            if let Some(mut r) = self.live.remove(&pid) {
                r.exited = true;
                r.threads = 0;
                self.went(r);
            }
            for (k, _) in &keys {
                self.previous.remove(k);
                self.quiet.remove(k);
            }
            self.known.remove(&pid);
            forget.extend(keys.iter().map(|(k, _)| *k));
            exited.push(pid);
        }
        self.dead = dead_now;
        TopStep {
            interval: rows.into_values().collect(),
            forget,
            exited,
        }
    }

    /// The last step of an exited process from its exit record, added to `step`:
    /// `finals`, the final figures of its keys (which the caller has deleted from the
    /// kernel's table).
    pub fn exit(
        &mut self,
        pid: u32,
        info: ProcInfo,
        finals: &[(TopKey, TopValue)],
        step: &mut TopStep,
    ) {
        self.dead.remove(&pid);
        // The record's name is the one the process ended with (its main thread's at its
        // exit); /proc's cgroup, when it was seen, is later than the record's.
        let info = match self.known.remove(&pid) {
            Some(known) => ProcInfo {
                cgroup: known.cgroup,
                kube: known.kube,
                ..info
            },
            None => info,
        };
        let mut row = ProcessRow {
            pid,
            comm: info.comm,
            cgroup: info.cgroup,
            kube: info.kube,
            exited: true,
            ..Default::default()
        };
        for (k, v) in finals {
            self.quiet.remove(k);
            let before = self.previous.remove(k).unwrap_or_default();
            let d = delta(v, &before);
            if d.calls != 0 || d.total_ns != 0 {
                row.add(top_id(k), &d);
            }
        }
        if self.keep_totals {
            let mut total = self.live.remove(&pid).unwrap_or_else(|| ProcessRow {
                pid,
                ..Default::default()
            });
            if !(total.syscalls.is_empty() && row.syscalls.is_empty()) {
                total.comm = row.comm.clone();
                total.cgroup = row.cgroup.clone();
                total.kube = row.kube.clone();
                for (id, v) in &row.syscalls {
                    total.add(*id, v);
                }
                total.exited = true;
                total.threads = 0;
                self.went(total);
            }
        }
        if !row.syscalls.is_empty() {
            step.interval.push(row);
        }
        step.exited.push(pid);
    }

    /// Keys of live processes that have not changed for `steps` steps in a row or more,
    /// the quietest first.
    pub fn idle_keys(&self, steps: u32) -> Vec<TopKey> {
        let mut idle: Vec<(u32, TopKey)> = self
            .quiet
            .iter()
            .filter(|&(k, &n)| n >= steps && !self.dead.contains(&k.tgid))
            .map(|(k, &n)| (n, *k))
            .collect();
        idle.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.tgid.cmp(&b.1.tgid)));
        idle.into_iter().map(|(_, k)| k).collect()
    }

    /// The figures of keys of live processes handed over as their keys were deleted
    /// from the kernel's table ([`ProcessTable::idle_keys`], reclaimed): what they gained
    /// since the last step is counted (a step of their processes, which live on), and
    /// each key starts again from zero when the kernel side makes it anew.
    pub fn reclaimed(&mut self, finals: &[(TopKey, TopValue)]) -> TopStep {
        let mut rows: BTreeMap<u32, ProcessRow> = BTreeMap::new();
        for (k, v) in finals {
            self.quiet.remove(k);
            let before = self.previous.remove(k).unwrap_or_default();
            let d = delta(v, &before);
            if d.calls == 0 && d.total_ns == 0 {
                continue;
            }
            let row = rows.entry(k.tgid).or_insert_with(|| {
                let known = self.known.get(&k.tgid).cloned().unwrap_or_default();
                ProcessRow {
                    pid: k.tgid,
                    comm: known.comm,
                    cgroup: known.cgroup,
                    kube: known.kube,
                    ..Default::default()
                }
            });
            row.add(top_id(k), &d);
            if self.keep_totals {
                let total = self.live.entry(k.tgid).or_default();
                total.pid = k.tgid;
                total.add(top_id(k), &d);
            }
        }
        TopStep {
            interval: rows.into_values().collect(),
            forget: Vec::new(),
            exited: Vec::new(),
        }
    }

    /// Keeps an exited process's totals: the oldest kept is summed into its cgroup's
    /// row once more than [`GONE_KEPT`] are.
    fn went(&mut self, row: ProcessRow) {
        self.gone.push_back(row);
        if self.gone.len() <= GONE_KEPT {
            return;
        }
        let Some(old) = self.gone.pop_front() else {
            return;
        };
        // Nothing allocated for a cgroup folded before: a host starting thousands of
        // processes a second passes here for each.
        let cgroup = if self.folded.contains_key(&old.cgroup) || self.folded.len() < FOLDED_CGROUPS
        {
            old.cgroup
        } else {
            OTHER_CGROUPS.into()
        };
        let (n, row) = self.folded.entry(cgroup).or_insert_with_key(|cgroup| {
            (
                0,
                ProcessRow {
                    pid: 0,
                    cgroup: cgroup.clone(),
                    exited: true,
                    ..Default::default()
                },
            )
        });
        *n += 1;
        // Its name, "(N exited)", is given when the totals are read.
        row.summed = *n;
        for (id, v) in &old.syscalls {
            row.add(*id, v);
        }
    }

    /// Totals since the start (or reset): live processes, then those that exited, then
    /// the exited processes summed per cgroup (pid 0) beyond the latest [`GONE_KEPT`].
    pub fn totals(&self) -> Vec<ProcessRow> {
        let mut v: Vec<ProcessRow> = self.live.values().cloned().collect();
        v.sort_by_key(|r| r.pid);
        v.extend(self.gone.iter().cloned());
        v.extend(self.folded.values().map(|(n, r)| ProcessRow {
            comm: format!("({n} exited)").into(),
            ..r.clone()
        }));
        v
    }

    pub fn new(keep_totals: bool) -> Self {
        Self {
            keep_totals,
            previous: HashMap::new(),
            quiet: HashMap::new(),
            live: HashMap::new(),
            gone: VecDeque::new(),
            folded: BTreeMap::new(),
            dead: Default::default(),
            known: HashMap::new(),
        }
    }

    /// Starts the totals again from now.
    pub fn reset(&mut self) {
        self.live.clear();
        self.gone.clear();
        self.folded.clear();
    }
}

/// Exited processes whose totals are kept one by one (about 1 KB each).
pub const GONE_KEPT: usize = 10_000;
/// Cgroups whose older exited processes are summed in a row of their own.
pub const FOLDED_CGROUPS: usize = 1_000;
/// The cgroup of the row that sums the older exited processes of every other cgroup.
pub const OTHER_CGROUPS: &str = "(other cgroups)";

/// A table key as a syscall (numbers without a key of their own share one id).
pub fn top_id(k: &TopKey) -> SyscallId {
    SyscallId::of(k.key, u64::MAX)
}

#[cfg(test)]
mod tests;
