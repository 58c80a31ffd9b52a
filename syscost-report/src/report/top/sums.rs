//! Process rows summed by cgroup and by syscall (`top`'s `g` and `y` views, the
//! metrics endpoint's cgroup series).

use std::collections::BTreeMap;

use syscost_common::TopValue;

use super::{Name, ProcessRow, add, short_cgroup};
use crate::syscall_names::SyscallId;

/// Rows summed by cgroup (the pid of each is 0, the comm the cgroup's short name).
pub fn by_cgroup(rows: &[ProcessRow]) -> Vec<ProcessRow> {
    let mut out: BTreeMap<Name, ProcessRow> = BTreeMap::new();
    for r in rows {
        // The cgroup's short name made once, for its first row (an interval of a
        // churning machine has thousands of rows in a few cgroups).
        if !out.contains_key(&r.cgroup) {
            out.insert(
                r.cgroup.clone(),
                ProcessRow {
                    comm: short_cgroup(&r.cgroup).into(),
                    cgroup: r.cgroup.clone(),
                    kube: r.kube.clone(),
                    ..Default::default()
                },
            );
        }
        let Some(g) = out.get_mut(&r.cgroup) else {
            continue;
        };
        // The pod labels the most complete of its rows carry (a row named before its
        // container's names were read has fewer).
        if r.kube.len() > g.kube.len() {
            g.kube = r.kube.clone();
        }
        g.threads += r.threads;
        for (id, v) in &r.syscalls {
            g.add(*id, v);
        }
    }
    out.into_values().collect()
}

/// One process's part of a syscall: pid, comm, figures.
pub type ProcessShare = (u32, Name, TopValue);
/// A syscall summed over processes, with the processes making it.
pub type SyscallRow = (SyscallId, TopValue, Vec<ProcessShare>);

/// Rows summed by syscall: for each syscall, the processes making it (`syscall ->
/// processes`), most time first.
pub fn by_syscall(rows: &[ProcessRow]) -> Vec<SyscallRow> {
    let mut out: BTreeMap<SyscallId, (TopValue, Vec<ProcessShare>)> = BTreeMap::new();
    for r in rows {
        for (id, v) in &r.syscalls {
            let e = out.entry(*id).or_default();
            e.0 = add(e.0, v);
            e.1.push((r.pid, r.comm.clone(), *v));
        }
    }
    let mut v: Vec<_> = out
        .into_iter()
        .map(|(id, (sum, mut procs))| {
            procs.sort_by_key(|p| std::cmp::Reverse(p.2.total_ns));
            (id, sum, procs)
        })
        .collect();
    v.sort_by_key(|(id, s, _)| (std::cmp::Reverse(s.total_ns), *id));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{top_key as k, top_value as v};

    /// The syscall a kernel key names (as the engine's process table reads it).
    fn top_id(k: &syscost_common::TopKey) -> SyscallId {
        SyscallId::of(k.key, u64::MAX)
    }

    #[test]
    fn rows_by_cgroup_and_by_syscall() {
        let row = |pid, cg: &str, key, calls, ns| {
            let mut r = ProcessRow {
                pid,
                comm: format!("p{pid}").into(),
                cgroup: cg.into(),
                threads: 1,
                ..Default::default()
            };
            r.add(top_id(&k(pid, key)), &v(calls, 0, ns, ns / 2));
            r
        };
        let mut rows = [
            row(1, "/a", 202, 10, 900),
            row(2, "/a", 0, 3, 30),
            row(3, "/b", 202, 1, 5000),
        ];
        // Row 2 was named once its container's names were read, row 1 before.
        rows[0].kube = [("container_id", "c".to_string())].into();
        rows[1].kube = [
            ("container_id", "c".to_string()),
            ("pod", "web".to_string()),
        ]
        .into();
        let g = by_cgroup(&rows);
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[0].kube, rows[1].kube,
            "the most complete row's pod labels"
        );
        assert!(g[1].kube.is_empty());
        assert_eq!((g[0].calls(), g[0].total_ns(), g[0].threads), (13, 930, 2));
        assert_eq!(g[0].oncpu_ns(), 930 - 450 - 15);
        assert_eq!(g[0].top_syscall().unwrap().0.name(), "futex");
        let s = by_syscall(&rows);
        assert_eq!(s[0].0.name(), "futex");
        assert_eq!(s[0].1.calls, 11);
        assert_eq!(
            s[0].2.iter().map(|p| p.0).collect::<Vec<_>>(),
            vec![3, 1],
            "most time first"
        );
    }
}
