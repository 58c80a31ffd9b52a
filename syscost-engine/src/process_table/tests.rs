use super::*;

/// The step of one exit record.
fn exit(m: &mut ProcessTable, pid: u32, info: ProcInfo, finals: &[(TopKey, TopValue)]) -> TopStep {
    let mut step = TopStep::default();
    m.exit(pid, info, finals, &mut step);
    step
}

use syscost_report::fixtures::{top_key as k, top_value as v};

#[test]
fn deltas_never_go_negative() {
    assert_eq!(delta(&v(10, 2, 100, 50), &v(4, 1, 40, 10)), v(6, 1, 60, 40));
    // A copy one call late, then the next copy: no underflow, errors <= calls.
    assert_eq!(delta(&v(4, 3, 40, 10), &v(5, 1, 50, 10)), v(0, 0, 0, 0));
    assert_eq!(delta(&v(5, 3, 50, 90), &v(5, 1, 40, 0)), v(0, 0, 10, 10));
}

#[test]
fn a_copy_made_mid_update_loses_nothing() {
    let mut m = ProcessTable::new(true);
    let info = |_| ProcInfo::default();
    // Errors written before calls: a copy can show one error too many, and time
    // switched out above the total.
    m.step(&[(k(1, 3), v(4, 5, 40, 50))], |_| Some(1), info);
    let mut later = PendingSteps::default();
    later.absorb(m.step(&[(k(1, 3), v(5, 5, 50, 50))], |_| Some(1), info));
    // Gone: left for a step (its exit record may come), then counted and forgotten.
    later.absorb(m.step(&[(k(1, 3), v(5, 5, 50, 50))], |_| None, info));
    assert!(later.take().exited.is_empty());
    later.absorb(m.step(&[(k(1, 3), v(5, 5, 50, 50))], |_| None, info));
    assert_eq!(later.take().exited, vec![1]);
    let t = &m.totals()[0];
    assert_eq!((t.calls(), t.errors(), t.total_ns()), (5, 5, 50));
    assert_eq!(t.oncpu_ns(), 0);
    assert!(t.exited);
}

#[test]
fn steps_count_each_call_once_and_forget_the_dead() {
    let mut m = ProcessTable::new(true);
    let info = |pid| ProcInfo {
        comm: format!("p{pid}").into(),
        cgroup: "/a".into(),
        from_proc: true,
        kube: Default::default(),
    };
    let t1 = [(k(1, 39), v(10, 0, 1000, 0)), (k(2, 3), v(5, 5, 500, 100))];
    let s = m.step(&t1, |_| Some(1), info);
    assert_eq!(s.interval.len(), 2);
    assert!(s.forget.is_empty());
    let t2 = [(k(1, 39), v(25, 0, 2500, 0)), (k(2, 3), v(6, 6, 600, 100))];
    let s = m.step(&t2, |p| (p == 1).then_some(3), info);
    assert_eq!(s.interval[0].calls(), 15);
    assert_eq!(s.interval[0].threads, 3);
    // Process 2 is gone: nothing of it yet, its exit record may be on its way.
    assert_eq!(s.interval.len(), 1);
    assert!(s.forget.is_empty());
    // None came: the next step counts its last difference and forgets it.
    let s = m.step(&t2, |p| (p == 1).then_some(3), info);
    assert_eq!(s.interval.len(), 1);
    assert_eq!(
        (
            s.interval[0].pid,
            s.interval[0].calls(),
            s.interval[0].exited
        ),
        (2, 1, true)
    );
    assert_eq!(s.forget, vec![k(2, 3)]);
    assert_eq!(s.exited, vec![2]);
    let totals = m.totals();
    assert_eq!(totals.len(), 2);
    assert_eq!((totals[0].pid, totals[0].calls()), (1, 25));
    assert_eq!(
        (totals[1].pid, totals[1].calls(), totals[1].errors()),
        (2, 6, 6)
    );
    // A new process with the old pid starts from zero.
    let t3 = [(k(1, 39), v(25, 0, 2500, 0)), (k(2, 3), v(2, 0, 20, 0))];
    let s = m.step(&t3, |_| Some(1), info);
    assert_eq!(s.interval.len(), 1);
    assert_eq!(s.interval[0].calls(), 2);
    assert_eq!(m.totals().len(), 3);
    m.reset();
    assert!(m.totals().is_empty());
}

#[test]
fn pending_steps_sum_the_rows_of_a_process() {
    let row = |pid: u32, calls: u64, exited: bool, comm: &str| {
        let mut r = ProcessRow {
            pid,
            comm: comm.into(),
            exited,
            ..Default::default()
        };
        r.add(top_id(&k(pid, 39)), &v(calls, 0, calls, 0));
        r
    };
    let mut p = PendingSteps::default();
    for (r, gone) in [
        (row(5, 2, false, "a"), vec![]),
        (row(3, 1, false, "x"), vec![]),
        (row(5, 4, true, "b"), vec![5]),
    ] {
        p.absorb(TopStep {
            interval: vec![r],
            forget: Vec::new(),
            exited: gone,
        });
    }
    let s = p.take();
    let got: Vec<(u32, u64, bool, &str)> = s
        .interval
        .iter()
        .map(|r| (r.pid, r.calls(), r.exited, &*r.comm))
        .collect();
    assert_eq!(got, [(3, 1, false, "x"), (5, 6, true, "b")]);
    assert_eq!(s.exited, vec![5]);
    assert!(p.take().interval.is_empty(), "taken once");
}

/// The exit record's final figures count once, whether a step saw the process gone
/// before the record came or not; under the record's name (the one the process ended
/// with) and the cgroup /proc gave while it lived, or the record's for a process never
/// seen alive.
#[test]
fn an_exit_record_counts_the_last_calls_once() {
    let info = |pid| ProcInfo {
        comm: format!("p{pid}").into(),
        cgroup: "/a".into(),
        kube: [("pod", "a".to_string())].into(),
        from_proc: true,
    };
    let record = |pid| ProcInfo {
        comm: format!("end{pid}").into(),
        cgroup: "/b".into(),
        kube: [("pod", "b".to_string())].into(),
        from_proc: false,
    };
    for (seen_alive, step_between) in [(true, false), (true, true), (false, true)] {
        let mut m = ProcessTable::new(true);
        if seen_alive {
            m.step(&[(k(7, 39), v(10, 1, 100, 0))], |_| Some(1), info);
        }
        if step_between {
            // Gone from /proc, the record not read yet: nothing counted, nothing lost.
            let s = m.step(&[(k(7, 39), v(30, 2, 300, 0))], |_| None, info);
            assert!(s.interval.is_empty() && s.forget.is_empty());
        }
        let s = exit(
            &mut m,
            7,
            record(7),
            &[(k(7, 39), v(30, 2, 300, 0)), (k(7, 3), v(1, 0, 5, 0))],
        );
        assert_eq!(s.exited, vec![7]);
        let name = if seen_alive {
            ("end7", "/a")
        } else {
            ("end7", "/b")
        };
        let r = &s.interval[0];
        let last = if seen_alive { 21 } else { 31 };
        assert_eq!((&*r.comm, r.calls(), r.exited), (name.0, last, true));
        // The pod goes with the cgroup it was named from.
        let pod = if seen_alive { "a" } else { "b" };
        assert_eq!(&*r.kube, &[("pod", pod.to_string())], "{r:?}");
        let t = m.totals();
        assert_eq!(t.len(), 1);
        assert_eq!((&*t[0].comm, &*t[0].cgroup), name);
        assert_eq!((t[0].calls(), t[0].errors(), t[0].total_ns()), (31, 2, 305));
        // The keys are deleted by the caller; a later step does not see them.
        let s = m.step(&[], |_| None, info);
        assert!(s.interval.is_empty() && s.exited.is_empty());
        assert_eq!(m.totals().len(), 1);
    }
}

/// A process that exits between the check that it is alive and the read of its name
/// (so /proc gave none) is named from its exit record, not "?".
#[test]
fn a_name_proc_could_not_give_comes_from_the_record() {
    let mut m = ProcessTable::new(true);
    let unread = |_| ProcInfo {
        comm: "?".into(),
        cgroup: "?".into(),
        from_proc: false,
        kube: Default::default(),
    };
    m.step(&[(k(7, 39), v(10, 0, 100, 0))], |_| Some(1), unread);
    let record = ProcInfo {
        comm: "syscost-getppid".into(),
        cgroup: "/b".into(),
        from_proc: false,
        kube: Default::default(),
    };
    let s = exit(&mut m, 7, record, &[(k(7, 39), v(12, 0, 120, 0))]);
    assert_eq!(&*s.interval[0].comm, "syscost-getppid");
    let t = m.totals();
    assert_eq!((&*t[0].comm, t[0].calls()), ("syscost-getppid", 12));
}

/// A process gone without a record (none could be sent) is counted at the next step
/// under the name /proc gave while it lived.
#[test]
fn a_process_gone_without_a_record_keeps_its_name() {
    let mut m = ProcessTable::new(true);
    let proc_says = std::cell::Cell::new("app");
    let info = |_| ProcInfo {
        comm: proc_says.get().into(),
        cgroup: "/a".into(),
        from_proc: true,
        kube: Default::default(),
    };
    m.step(&[(k(9, 39), v(5, 0, 50, 0))], |_| Some(1), info);
    proc_says.set("?");
    m.step(&[(k(9, 39), v(8, 0, 80, 0))], |_| None, info);
    let s = m.step(&[(k(9, 39), v(8, 0, 80, 0))], |_| None, info);
    assert_eq!(s.forget, vec![k(9, 39)]);
    assert_eq!((&*s.interval[0].comm, s.interval[0].calls()), ("app", 3));
    assert_eq!(&*m.totals()[0].comm, "app");
}

/// Processes that come and go without end: the totals keep the latest
/// [`GONE_KEPT`] one by one and sum the others per cgroup (at most
/// [`FOLDED_CGROUPS`] rows and one for the rest); no call is lost.
#[test]
fn exited_processes_are_kept_within_bounds() {
    let mut m = ProcessTable::new(true);
    let n = (GONE_KEPT + 2 * FOLDED_CGROUPS + 10) as u32;
    for pid in 1..=n {
        let cg = format!("/c{}", pid % (FOLDED_CGROUPS as u32 + 50));
        let info = ProcInfo {
            comm: format!("p{pid}").into(),
            cgroup: cg.into(),
            from_proc: true,
            kube: Default::default(),
        };
        exit(&mut m, pid, info, &[(k(pid, 39), v(3, 1, 30, 0))]);
    }
    let t = m.totals();
    assert!(
        t.len() <= GONE_KEPT + FOLDED_CGROUPS + 1,
        "{} rows for {n} exited processes",
        t.len()
    );
    let calls: u64 = t.iter().map(ProcessRow::calls).sum();
    assert_eq!(calls, 3 * u64::from(n), "every call counted");
    // The latest are kept whole, under their own pid.
    assert!(t.iter().any(|r| r.pid == n && *r.comm == format!("p{n}")));
    let folded: Vec<_> = t.iter().filter(|r| r.pid == 0).collect();
    assert!(folded.iter().any(|r| &*r.cgroup == OTHER_CGROUPS));
    assert!(
        folded
            .iter()
            .all(|r| *r.comm == format!("({} exited)", r.summed)),
        "each folded row named by its count"
    );
    let summed: u64 = folded.iter().map(|r| r.summed).sum();
    assert_eq!(summed, u64::from(n) - GONE_KEPT as u64, "each folded once");
    let processes: u64 = t.iter().map(ProcessRow::processes).sum();
    assert_eq!(processes, u64::from(n), "every process counted once");
}

/// Keys that stop changing are idle after so many steps; reclaimed, what they
/// gained since the last step counts once, and a key made anew counts from zero.
#[test]
fn reclaimed_keys_count_once_and_start_again() {
    let mut m = ProcessTable::new(true);
    let info = |pid| ProcInfo {
        comm: format!("p{pid}").into(),
        cgroup: "/a".into(),
        from_proc: true,
        kube: Default::default(),
    };
    let live = |_| Some(1);
    m.step(
        &[(k(1, 39), v(10, 0, 100, 0)), (k(1, 3), v(1, 0, 10, 0))],
        live,
        info,
    );
    for n in 1..=3u64 {
        // getppid (39) keeps changing, close (3) does not.
        m.step(
            &[
                (k(1, 39), v(10 + n, 0, 100 + n, 0)),
                (k(1, 3), v(1, 0, 10, 0)),
            ],
            live,
            info,
        );
    }
    assert_eq!(m.idle_keys(3), vec![k(1, 3)]);
    assert!(m.idle_keys(4).is_empty());
    // Reclaimed with one more call since the last step: that call counts, once.
    let s = m.reclaimed(&[(k(1, 3), v(2, 0, 20, 0))]);
    assert_eq!(s.interval.len(), 1);
    assert_eq!((s.interval[0].pid, s.interval[0].calls()), (1, 1));
    assert!(!s.interval[0].exited && s.exited.is_empty());
    assert!(m.idle_keys(0).iter().all(|key| *key != k(1, 3)));
    // Made anew by the kernel side: from zero.
    let s = m.step(
        &[(k(1, 39), v(13, 0, 103, 0)), (k(1, 3), v(4, 0, 40, 0))],
        live,
        info,
    );
    let close: u64 = s.interval.iter().map(|r| r.calls()).sum();
    assert_eq!(close, 4, "the new key's 4 calls");
    let t = &m.totals()[0];
    assert_eq!(t.calls(), 13 + 6, "every call once");
}
