//! The machine's processes as rows (`syscost top`, `export --top`, `--per-process`):
//! [`ProcessRow`], one process's figures per syscall over some period, plain data like a
//! profile; the rows summed by cgroup and by syscall (`sums`), sorted by a column, and
//! written as `top`'s text tables and JSON file. The engine's process table makes the
//! rows; the live view and the commands show them.

pub mod sums;

use std::collections::BTreeMap;

use anyhow::Result;
use syscost_common::TopValue;

use crate::{
    profile::{ProcessSyscall, ProcessTotals, TOP_SCHEMA, TopDocument, TopSort},
    syscall_names::SyscallId,
    untrusted,
};

/// A process's name or a cgroup's path in a row: shared, as thousands of rows a second
/// on a churning host carry the same few (a clone counts a reference, allocates nothing).
pub type Name = std::sync::Arc<str>;

/// The Kubernetes labels of a row's cgroup (`pod_uid`, `container_id`, `namespace`,
/// `pod`, `container`, those known), named by the engine where it names the process;
/// empty for a cgroup that is no container's, or when no view asked for them. Shared like
/// a [`Name`].
pub type PodLabels = std::sync::Arc<[(&'static str, String)]>;

/// One process's figures over some period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessRow {
    pub pid: u32,
    pub comm: Name,
    pub cgroup: Name,
    /// The pod and container its cgroup is.
    pub kube: PodLabels,
    /// Threads now (0 once exited).
    pub threads: u32,
    pub exited: bool,
    pub syscalls: BTreeMap<SyscallId, TopValue>,
    /// A row of exited processes summed (pid 0, beyond those `top` keeps one by one):
    /// how many; 0 for one process's row.
    pub summed: u64,
}

impl ProcessRow {
    /// The processes the row stands for: 1, or those it sums.
    pub fn processes(&self) -> u64 {
        self.summed.max(1)
    }
}

impl ProcessRow {
    fn sum(&self) -> TopValue {
        self.syscalls.values().fold(TopValue::default(), add)
    }
    pub fn calls(&self) -> u64 {
        self.sum().calls
    }
    pub fn errors(&self) -> u64 {
        self.sum().errors
    }
    pub fn total_ns(&self) -> u64 {
        self.sum().total_ns
    }
    /// Time in syscalls on a CPU (wall minus switched out).
    pub fn oncpu_ns(&self) -> u64 {
        let s = self.sum();
        s.total_ns - s.offcpu_ns.min(s.total_ns)
    }
    /// The syscall it spent most time in, and that time.
    pub fn top_syscall(&self) -> Option<(SyscallId, u64)> {
        self.syscalls
            .iter()
            .max_by_key(|(id, v)| (v.total_ns, std::cmp::Reverse(**id)))
            .map(|(id, v)| (*id, v.total_ns))
    }

    /// Adds figures of syscall `id`.
    pub fn add(&mut self, id: SyscallId, v: &TopValue) {
        let e = self.syscalls.entry(id).or_default();
        *e = add(*e, v);
    }
}

impl From<&ProcessRow> for ProcessTotals {
    /// Each syscall's off-CPU time at most its total (an exit record's figures are the
    /// kernel's as they stand), and the process's on-CPU time the rest of its total, as
    /// the top file's reader checks.
    fn from(r: &ProcessRow) -> Self {
        let syscalls: Vec<ProcessSyscall> = r
            .syscalls
            .iter()
            .map(|(id, v)| ProcessSyscall {
                name: id.name(),
                calls: v.calls,
                errors: v.errors,
                total_ns: v.total_ns,
                offcpu_ns: v.offcpu_ns.min(v.total_ns),
            })
            .collect();
        let offcpu: u64 = syscalls.iter().map(|s| s.offcpu_ns).sum();
        Self {
            pid: r.pid,
            comm: r.comm.to_string(),
            cgroup: r.cgroup.to_string(),
            exited: r.exited,
            threads: r.threads,
            summed: r.summed,
            calls: r.calls(),
            errors: r.errors(),
            total_ns: r.total_ns(),
            oncpu_ns: r.total_ns() - offcpu,
            syscalls,
        }
    }
}

impl From<&ProcessTotals> for ProcessRow {
    /// A row read back from a file: a name this build does not know counts under the
    /// unknown-number key (with every other such name).
    fn from(p: &ProcessTotals) -> Self {
        let mut row = Self {
            pid: p.pid,
            comm: p.comm.as_str().into(),
            cgroup: p.cgroup.as_str().into(),
            threads: p.threads,
            exited: p.exited,
            ..Default::default()
        };
        for s in &p.syscalls {
            let id = crate::syscall_names::number(&s.name).unwrap_or(SyscallId::native(u64::MAX));
            let v = TopValue {
                calls: s.calls,
                errors: s.errors,
                total_ns: s.total_ns,
                offcpu_ns: s.offcpu_ns,
            };
            row.add(id, &v);
        }
        row
    }
}

/// The sum of two figures.
pub fn add(a: TopValue, b: &TopValue) -> TopValue {
    TopValue {
        calls: a.calls + b.calls,
        errors: a.errors + b.errors,
        total_ns: a.total_ns + b.total_ns,
        offcpu_ns: a.offcpu_ns + b.offcpu_ns,
    }
}

/// A cgroup path shortened for a column: its last component, a container's 64-digit
/// id cut to 12 (`docker-0123456789ab.scope`), `/` for the root.
pub fn short_cgroup(path: &str) -> String {
    let last = path.rsplit('/').find(|p| !p.is_empty()).unwrap_or("/");
    let (stem, suffix) = match last.rsplit_once('.') {
        Some((s, suf)) if !suf.is_empty() && suf.len() <= 7 => (s, format!(".{suf}")),
        _ => (last, String::new()),
    };
    let (prefix, id) = stem.rsplit_once('-').unwrap_or(("", stem));
    if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        let sep = if prefix.is_empty() { "" } else { "-" };
        return format!("{prefix}{sep}{}{suffix}", &id[..12]);
    }
    last.to_string()
}

/// Sorts rows by a column: largest first, pid and comm ascending.
pub fn sort_rows(rows: &mut [ProcessRow], sort: TopSort) {
    sort_by_column(rows, sort);
}

/// Sorts rows (or references to them) by a column, each row's figure summed once.
fn sort_by_column<R: std::borrow::Borrow<ProcessRow>>(rows: &mut [R], sort: TopSort) {
    use std::cmp::Reverse;
    let figure = |r: &ProcessRow| match sort {
        TopSort::Time => r.total_ns(),
        TopSort::Oncpu => r.oncpu_ns(),
        TopSort::Calls => r.calls(),
        TopSort::Errors => r.errors(),
        TopSort::Threads => u64::from(r.threads),
        TopSort::Pid | TopSort::Comm => 0,
    };
    match sort {
        TopSort::Comm => rows.sort_by(|a, b| {
            let (a, b) = (a.borrow(), b.borrow());
            a.comm.cmp(&b.comm).then(a.pid.cmp(&b.pid))
        }),
        _ => rows.sort_by_cached_key(|r| {
            let r = r.borrow();
            (Reverse(figure(r)), r.pid)
        }),
    }
}

/// Rows sorted and cut to `rows` (0: all); how many were left out. Only the rows shown
/// are copied: an interval of a churning machine has thousands.
fn shown(rows: &[ProcessRow], sort: TopSort, n: usize) -> (Vec<ProcessRow>, u64) {
    let mut order: Vec<&ProcessRow> = rows.iter().collect();
    sort_by_column(&mut order, sort);
    // The processes of the rows left out (a row may sum many exited ones).
    let more = if n > 0 && order.len() > n {
        order[n..]
            .iter()
            .fold(0u64, |n, r| n.saturating_add(r.processes()))
    } else {
        0
    };
    order.truncate(if n == 0 { order.len() } else { n });
    (order.into_iter().cloned().collect(), more)
}

/// The on-CPU figure of a column `width` wide, or `-` when it was not measured
/// (`--no-offcpu`), as the live view shows it.
fn oncpu_cell(ns: u64, per_secs: f64, offcpu: bool, width: usize) -> String {
    if offcpu {
        format!("{:>width$.3}", ns as f64 / 1e9 / per_secs)
    } else {
        format!("{:>width$}", "-")
    }
}

/// The per-process table of one interval, as rates; `offcpu`: the on-CPU split was
/// measured.
pub fn render_rates(
    rows: &[ProcessRow],
    secs: f64,
    sort: TopSort,
    n: usize,
    offcpu: bool,
) -> String {
    let (rows, more) = shown(rows, sort, n);
    let mut out = format!(
        "{:>8} {:<16} {:<24} {:>10} {:>9} {:>9} {:>9} {:>4}  {}\n",
        "PID",
        "COMM",
        "CGROUP",
        "CALLS/s",
        "ERRORS/s",
        "TIME s/s",
        "ONCPU s/s",
        "THR",
        "TOP SYSCALL (s/s)"
    );
    for r in rows {
        let top = r
            .top_syscall()
            .map(|(id, ns)| format!("{} {:.3}", id.name(), ns as f64 / 1e9 / secs))
            .unwrap_or_default();
        out += &format!(
            "{:>8} {:<16} {:<24} {:>10.1} {:>9.1} {:>9.3} {} {:>4}  {}{}\n",
            r.pid,
            untrusted::shown(&r.comm),
            untrusted::shown(&short_cgroup(&r.cgroup)),
            r.calls() as f64 / secs,
            r.errors() as f64 / secs,
            r.total_ns() as f64 / 1e9 / secs,
            oncpu_cell(r.oncpu_ns(), secs, offcpu, 9),
            threads_cell(&r),
            top,
            if r.exited { " (exited)" } else { "" }
        );
    }
    if more > 0 {
        out += &format!("... {more} more processes (-n 0 shows all)\n");
    }
    out
}

/// The calls in flight when tracing began (each process's or thread's first event seen
/// was an exit): not in the rows, said in a line of their own when there were any.
pub fn unpaired_line(unpaired: u64) -> String {
    if unpaired == 0 {
        return String::new();
    }
    format!("syscost: unpaired {unpaired}: calls in flight when tracing began, in no row\n")
}

/// A row's THR: its threads now, `-` once it has exited (the row ends in "(exited)").
fn threads_cell(r: &ProcessRow) -> String {
    if r.exited {
        "-".to_string()
    } else {
        r.threads.to_string()
    }
}

/// The totals since the start, per process, under a line that starts with `title`.
pub fn render_totals(
    title: &str,
    rows: &[ProcessRow],
    secs: f64,
    sort: TopSort,
    n: usize,
    dropped: u64,
    offcpu: bool,
) -> String {
    let (shown_rows, more) = shown(rows, sort, n);
    let calls: u64 = rows.iter().map(|r| r.calls()).sum();
    let processes = rows
        .iter()
        .fold(0u64, |n, r| n.saturating_add(r.processes()));
    let mut out = format!(
        "{title}: {} made {calls} syscalls in {secs:.1} s; dropped {dropped}\n",
        crate::units::counted(processes as usize, "process", "processes")
    );
    out += &format!(
        "{:>8} {:<16} {:<24} {:>12} {:>9} {:>10} {:>10} {:>4}  {}\n",
        "PID", "COMM", "CGROUP", "CALLS", "ERRORS", "TIME s", "ONCPU s", "THR", "TOP SYSCALL (s)"
    );
    for r in shown_rows {
        let top = r
            .top_syscall()
            .map(|(id, ns)| format!("{} {:.3}", id.name(), ns as f64 / 1e9))
            .unwrap_or_default();
        out += &format!(
            "{:>8} {:<16} {:<24} {:>12} {:>9} {:>10.3} {} {:>4}  {}{}\n",
            r.pid,
            untrusted::shown(&r.comm),
            untrusted::shown(&short_cgroup(&r.cgroup)),
            r.calls(),
            r.errors(),
            r.total_ns() as f64 / 1e9,
            oncpu_cell(r.oncpu_ns(), 1.0, offcpu, 10),
            threads_cell(&r),
            top,
            if r.exited { " (exited)" } else { "" }
        );
    }
    if more > 0 {
        let kept = if rows.iter().any(|r| r.summed > 0) {
            "exited processes past the latest 10,000 are summed per cgroup"
        } else {
            "--json keeps every one"
        };
        out += &format!("... {more} more processes (-n 0 shows all; {kept})\n");
    }
    out
}

/// The totals as JSON ([`TopDocument`]).
/// `(dropped, switch_ins_unseen)`: the counters of the whole run.
pub fn to_json(
    rows: &[ProcessRow],
    secs: f64,
    (dropped, switch_ins_unseen): (u64, u64),
    offcpu: bool,
    cgroup: Option<&str>,
) -> Result<String> {
    let doc = TopDocument {
        schema: TOP_SCHEMA,
        arch: std::env::consts::ARCH.to_string(),
        cgroup: cgroup.map(str::to_string),
        duration_secs: secs,
        offcpu_tracked: offcpu,
        dropped,
        switch_ins_unseen,
        processes: rows.iter().map(ProcessTotals::from).collect(),
    };
    Ok(crate::untrusted::json_safe(serde_json::to_string_pretty(&doc)?) + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscost_common::TopValue;

    fn row(pid: u32, comm: &str, calls: u64, ns: u64) -> ProcessRow {
        let mut r = ProcessRow {
            pid,
            comm: comm.into(),
            cgroup: "/system.slice/x.service".into(),
            threads: 1,
            ..Default::default()
        };
        r.syscalls.insert(
            SyscallId::native(39),
            TopValue {
                calls,
                errors: 0,
                total_ns: ns,
                offcpu_ns: 0,
            },
        );
        r
    }

    #[test]
    fn text_tables_and_json() {
        let rows = [row(1, "a", 100, 1_000_000), row(2, "b", 300, 5_000_000)];
        let t = render_rates(&rows, 2.0, TopSort::Time, 1, true);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(
            lines[1].contains(" b ") && lines[1].contains("150.0"),
            "{t}"
        );
        assert!(lines[1].contains("getpid 0.003"), "{t}");
        assert!(lines[2].starts_with("... 1 more"), "{t}");
        let t = render_totals("syscost top", &rows, 2.0, TopSort::Pid, 0, 7, true);
        assert!(t.starts_with("syscost top: 2 processes made 400 syscalls in 2.0 s; dropped 7"));
        // A row that sums 5,000 exited processes counts as them, shown or left out.
        let mut folded = row(0, "(5000 exited)", 50, 1_000);
        folded.summed = 5_000;
        let many = [rows[0].clone(), rows[1].clone(), folded];
        let t = render_totals("syscost top", &many, 2.0, TopSort::Pid, 0, 0, true);
        assert!(t.starts_with("syscost top: 5002 processes made 450"), "{t}");
        let t = render_totals("syscost top", &many, 2.0, TopSort::Time, 2, 0, true);
        assert!(t.contains("... 5000 more processes"), "{t}");
        let j: serde_json::Value =
            serde_json::from_str(&to_json(&many, 2.0, (0, 0), true, None).unwrap()).unwrap();
        assert_eq!(j["processes"][2]["summed"], 5000);
        assert!(j["processes"][0].get("summed").is_none(), "left out when 0");
        // Without the on-CPU split: `-`, not the wall time again.
        let t = render_totals("syscost top", &rows[..1], 2.0, TopSort::Pid, 0, 0, false);
        assert!(
            t.starts_with("syscost top: 1 process made 100 syscalls"),
            "{t}"
        );
        let row = t.lines().nth(2).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!((cols[5], cols[6]), ("0.001", "-"), "{t}");
        let t = render_rates(&rows, 2.0, TopSort::Time, 0, false);
        let cols: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(cols[6], "-", "{t}");
        let j: serde_json::Value =
            serde_json::from_str(&to_json(&rows, 2.0, (7, 0), true, None).unwrap()).unwrap();
        assert_eq!(j["processes"][1]["calls"], 300);
        assert_eq!(j["processes"][1]["syscalls"][0]["name"], "getpid");
        assert_eq!(j["dropped"], 7);
    }

    #[test]
    fn an_exited_process_shows_no_thread_count() {
        let mut gone = row(3, "c", 10, 1_000);
        gone.threads = 0;
        gone.exited = true;
        let rows = [row(1, "a", 100, 1_000_000), gone];
        for t in [
            render_totals("t", &rows, 1.0, TopSort::Pid, 0, 0, true),
            render_rates(&rows, 1.0, TopSort::Pid, 0, true),
        ] {
            let cols = |pid: &str| -> Vec<String> {
                let l = t
                    .lines()
                    .find(|l| l.split_whitespace().next() == Some(pid))
                    .unwrap();
                l.split_whitespace().map(String::from).collect()
            };
            assert_eq!(cols("1")[7], "1", "{t}");
            assert_eq!(cols("3")[7], "-", "{t}");
            assert!(
                t.lines()
                    .any(|l| l.trim_start().starts_with("3 ") && l.ends_with("(exited)")),
                "{t}"
            );
        }
    }

    /// What `top` writes, its reader reads: the same processes, and the sums of them.
    #[test]
    fn top_files_as_written_read_back() {
        let mut row = ProcessRow {
            pid: 7,
            comm: "w".into(),
            cgroup: "/".into(),
            threads: 2,
            ..Default::default()
        };
        let mut add = |nr: u64, calls: u64, total_ns: u64, offcpu_ns: u64| {
            row.syscalls.insert(
                crate::syscall_names::number(&crate::syscall_names::name(false, nr)).unwrap(),
                syscost_common::TopValue {
                    calls,
                    errors: 1,
                    total_ns,
                    offcpu_ns,
                },
            );
        };
        add(39, 10, 5_000, 1_000);
        // An exit record's figures as the kernel had them: off-CPU above the total.
        add(0, 3, 900, 1_200);
        let text = to_json(&[row.clone()], 1.5, (0, 0), true, None).unwrap();
        let p = crate::report::json::parse(text.as_bytes()).unwrap();
        assert_eq!(p.processes.len(), 1);
        assert_eq!(p.totals(), (13, 2, 5_900));
        let read = p.syscall("read").unwrap();
        assert_eq!((read.oncpu_ns, read.offcpu_ns), (0, 900));
        assert_eq!(p.processes[0].oncpu_ns, 4_000);
        // Names this build does not know read as written.
        let text = text.replace("\"getpid\"", "\"getpid_v2\"");
        let p = crate::report::json::parse(text.as_bytes()).unwrap();
        assert!(p.syscall("getpid_v2").is_some());
    }

    #[test]
    fn short_names() {
        assert_eq!(short_cgroup("/system.slice/ssh.service"), "ssh.service");
        assert_eq!(short_cgroup("/"), "/");
        let id = "0123456789abcdef".repeat(4);
        assert_eq!(
            short_cgroup(&format!("/system.slice/docker-{id}.scope")),
            "docker-0123456789ab.scope"
        );
        assert_eq!(
            short_cgroup(&format!("/kubepods/burstable/pod1/{id}")),
            "0123456789ab"
        );
        assert_eq!(
            short_cgroup("/user.slice/user-1000.slice"),
            "user-1000.slice"
        );
    }
}
