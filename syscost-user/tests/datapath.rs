//! The data path under load and at its limits (root only): profiles saved from a busy
//! target are always accepted, scrapes keep their invariants, the maps' memory does not
//! grow with pid_max, whatever the tables cannot hold is counted, and the numbers the
//! syscall tables lack, thread exits in any order and exec from a thread are counted
//! right.

mod common;

use std::{
    collections::BTreeMap,
    process::{Command, Stdio},
    time::Duration,
};

use common::*;
use syscost_user::map_sizes::TableSizes;

/// A busy target: 2 threads calling close(-1) and getppid as fast as they can (killed
/// with the test, should it be killed).
fn busy_target() -> Reaped {
    let mut target = Command::new(workload_path())
        .args(["--die-with-parent", "mixed-forever", "2"])
        .stdout(Stdio::null())
        .spawn_reaped();
    // Let both threads start.
    wait_until(
        "the workload's threads",
        PATIENCE,
        Duration::from_millis(10),
        || {
            let n = std::fs::read_dir(format!("/proc/{}/task", target.id()))
                .map(|d| d.count())
                .unwrap_or(0);
            if n >= 3 {
                Ok(())
            } else {
                Err(format!(": {n} threads"))
            }
        },
    );
    assert!(target.try_wait().unwrap().is_none());
    target
}

/// The last `n` lines of `text`, for a failure's message.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn profiles_saved_from_a_busy_target_are_always_accepted() {
    let Some(t) = root_test!() else {
        return;
    };
    let target = busy_target();
    for round in 0..20 {
        let path = t.path(&format!("busy-{round}.json"));
        // Saved while the target is busy: syscost stopped (SIGINT) once the target has
        // run on a CPU for two clock ticks more since syscost said it traces.
        let (tracer, _err) = attach(target.id(), &["--json", path.to_str().unwrap()]);
        let ran = cpu_ticks(target.id());
        wait_until(
            "the target to run while traced",
            PATIENCE,
            Duration::from_millis(5),
            || {
                let now = cpu_ticks(target.id());
                (now >= ran + 2)
                    .then_some(())
                    .ok_or_else(|| format!(": {} ticks", now - ran))
            },
        );
        // SAFETY: signals the tracer this test started.
        unsafe { libc::kill(tracer.id() as i32, libc::SIGINT) };
        let o = tracer.into_inner().output_within();
        assert!(
            o.status.success(),
            "round {round}: {}",
            tail(&stderr(&o), 5)
        );
        let r = output(syscost().arg("report").arg(&path));
        assert!(
            r.status.success(),
            "round {round}: report refused: {}",
            stderr(&r)
        );
        let p = read_profile(&path);
        let close = p.syscall("close").expect("close counted");
        assert!(close.calls > 0, "round {round}: no close call");
        assert_eq!(close.errors, close.calls, "every close(-1) fails");
        assert_eq!(close.errnos.get("EBADF"), Some(&close.errors));
        let d = output(syscost().arg("diff").arg(&path).arg(&path));
        assert!(
            d.status.success(),
            "round {round}: diff refused: {}",
            stderr(&d)
        );
    }
}

/// One scrape's series: name with labels -> value.
fn scrape(addr: &str) -> BTreeMap<String, f64> {
    scrape_text(addr)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}

#[test]
fn scrapes_of_a_busy_target_keep_their_invariants() {
    let Some(_t) = root_test!() else {
        return;
    };
    let target = busy_target();
    let mut export = syscost()
        .args(["export", "--metrics-addr", "127.0.0.1:0", "-p"])
        .arg(target.id().to_string())
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = Lines::of(export.stderr.take().unwrap(), "stderr");
    let addr = endpoint_in(&err.next().unwrap().unwrap());
    let histograms = |m: &BTreeMap<String, f64>| {
        m.keys()
            .filter(|s| s.starts_with("syscost_syscall_duration_seconds_count"))
            .count()
    };
    let has_both = |m: &BTreeMap<String, f64>| {
        ["close", "getppid"].iter().all(|name| {
            m.keys().any(|s| {
                s.starts_with("syscost_syscall_duration_seconds_count")
                    && s.contains(&format!("syscall=\"{name}\""))
            })
        })
    };
    let close_calls = |m: &BTreeMap<String, f64>| {
        m.iter()
            .filter(|(s, _)| {
                s.starts_with("syscost_syscalls_total") && s.contains("syscall=\"close\"")
            })
            .map(|(_, &v)| v)
            .sum::<f64>()
    };
    // Once a scrape holds both syscalls' histograms, every later one does.
    let first = wait_until(
        "a scrape with the histograms of close and getppid",
        PATIENCE,
        Duration::from_millis(10),
        || {
            let m = scrape(&addr);
            if has_both(&m) {
                Ok(m)
            } else {
                Err(format!(": {} histograms", histograms(&m)))
            }
        },
    );
    let mut previous = first.clone();
    for i in 0..200 {
        let now = scrape(&addr);
        assert!(
            has_both(&now),
            "scrape {i}: {} histograms, close's or getppid's gone",
            histograms(&now)
        );
        for (series, &value) in &now {
            // Counters never go backwards between scrapes.
            if let Some(&before) = previous.get(series) {
                assert!(value >= before, "{series} went from {before} to {value}");
            }
            // _count equals the +Inf bucket, in every scrape.
            if let Some(prefix) = series.strip_prefix("syscost_syscall_duration_seconds_count") {
                let inf = format!(
                    "syscost_syscall_duration_seconds_bucket{{le=\"+Inf\",{}",
                    &prefix[1..]
                );
                assert_eq!(now.get(&inf), Some(&value), "{series} vs {inf}");
            }
        }
        previous = now;
    }
    // The busy target is still counted: close's counter grows past the first scrape's.
    let before = close_calls(&first);
    assert!(before > 0.0, "close not counted");
    wait_until(
        "close counted further",
        PATIENCE,
        Duration::from_millis(10),
        || {
            let now = close_calls(&scrape(&addr));
            (now > before)
                .then_some(())
                .ok_or_else(|| format!(": {now} close calls, {before} at first"))
        },
    );
    drop(export);
}

/// Bytes of BPF map memory a process holds, from the memlock lines of its map fds, each
/// map once (a map may have two descriptors: the exit-record reader waits on a copy of
/// the ring's).
fn map_memory(pid: u32) -> u64 {
    let field = |info: &str, name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .parse::<u64>()
            .ok()
    };
    let maps: std::collections::BTreeMap<u64, u64> =
        std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .filter(|info| info.contains("map_type:"))
            .filter_map(|info| Some((field(&info, "map_id:")?, field(&info, "memlock:")?)))
            .collect();
    maps.values().sum()
}

#[test]
fn map_memory_does_not_grow_with_pid_max() {
    let Some(_t) = root_test!() else {
        return;
    };
    let cpus = aya::util::nr_cpus().unwrap() as u64;
    let expected = TableSizes::for_slots(1).memory(cpus, 1);
    let mut seen = Vec::new();
    let set_pid_max = PidMax::set(32_768);
    for pid_max in [32_768, 4_194_304] {
        set_pid_max.to(pid_max);
        let mut target = Command::new(workload_path())
            .args(["--die-with-parent", "sleep", "600000"])
            .spawn_reaped();
        let (tracer, _err) = attach(target.id(), &[]);
        let bytes = map_memory(tracer.id());
        seen.push(bytes);
        assert!(
            bytes <= 16 << 20,
            "pid_max {pid_max}: {bytes} bytes of maps, more than 16 MB"
        );
        // The formula the README quotes describes what the kernel accounts.
        let off = (bytes as f64 - expected as f64).abs() / expected as f64;
        assert!(
            off < 0.10,
            "pid_max {pid_max}: {bytes} bytes, formula {expected}"
        );
        drop(tracer);
        let _ = target.kill();
    }
    drop(set_pid_max);
    assert_eq!(seen[0], seen[1], "the maps' memory depends on pid_max");
    // `top`: the per-process table, the live processes' records and the exit records on
    // top, as the formula counts them.
    let expected = TableSizes::for_slots(2).with_top().memory(cpus, 2);
    let (top, first, _err) = started(
        syscost()
            .args(["top", "--no-tui"])
            .stdout(std::process::Stdio::null()),
    );
    assert!(first.starts_with("syscost: watching"), "{first}");
    let bytes = map_memory(top.id());
    let off = (bytes as f64 - expected as f64).abs() / expected as f64;
    assert!(off < 0.10, "top: {bytes} bytes, formula {expected}");
    drop(top);
}

/// Calls counted, of every syscall.
fn counted(p: &syscost_user::profile::Profile) -> u64 {
    p.syscalls.iter().map(|s| s.calls).sum()
}

/// `syscost attach --no-tui --json JSON -p PID` with the tables `sizes` (none: the
/// defaults), traced once it has said so; its stdout (the final table) is piped.
fn attach_sized(pid: u32, sizes: Option<&str>, json: &std::path::Path) -> (Reaped, StderrLines) {
    let mut cmd = syscost();
    if let Some(sizes) = sizes {
        cmd.env("SYSCOST_TABLE_SIZES", sizes);
    }
    let (tracer, first, err) = started(
        cmd.args(["attach", "--no-tui", "-p", &pid.to_string(), "--json"])
            .arg(json)
            .stdout(Stdio::piped()),
    );
    assert!(first.starts_with("syscost: tracing process"), "{first}");
    (tracer, err)
}

/// The dropped figure of the line under the table ("..., N events dropped").
fn table_dropped(table: &str) -> Option<u64> {
    table.lines().find_map(|l| {
        l.strip_suffix(" events dropped")?
            .rsplit(' ')
            .next()?
            .parse()
            .ok()
    })
}

/// Tracers with shrunken tables and one with room, attached to the same waiting process
/// (every thread already blocked, so all see the same calls), which is then let go:
/// each event a shrunken tracer saw is counted, unpaired or dropped, exactly once, so
/// its three figures sum to the calls and unpaired exits of the tracer with room; the
/// table under it, the JSON and the metrics endpoint say the same dropped figure.
fn every_event_accounted(
    t: &RootTest,
    sizes: &str,
    work: &[&str],
) -> (
    Vec<syscost_user::profile::Profile>,
    syscost_user::profile::Profile,
) {
    let (mut w, _out) = if work[0] == "threads-waiting" {
        ready(std::process::Command::new(workload_path()).args(work))
    } else {
        waiting(work)
    };
    let pid = w.id();
    let (full, _full_err) = attach_sized(pid, None, &t.path("full.json"));
    let smalls: Vec<_> = (0..2)
        .map(|i| attach_sized(pid, Some(sizes), &t.path(&format!("small-{i}.json"))))
        .collect();
    let mut export = syscost()
        .env("SYSCOST_TABLE_SIZES", sizes)
        .args([
            "export",
            "--metrics-addr",
            "127.0.0.1:0",
            "-p",
            &pid.to_string(),
        ])
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut export_err = Lines::of(export.stderr.take().unwrap(), "stderr");
    let addr = endpoint_in(
        &export_err
            .by_ref()
            .map(Result::unwrap)
            .find(|l| l.contains("http://"))
            .expect("the endpoint's address"),
    );
    {
        use std::io::Write as _;
        writeln!(w.stdin.as_mut().unwrap(), "go").unwrap();
    }
    assert!(w.wait_exit().success());
    let finish = |tracer: Reaped| {
        let o = tracer.into_inner().output_within();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    finish(full);
    let full = read_profile(&t.path("full.json"));
    assert_eq!(full.dropped, 0, "the tracer with room dropped events");
    let mut shrunk = Vec::new();
    for (i, (tracer, _err)) in smalls.into_iter().enumerate() {
        let table = finish(tracer);
        let p = read_profile(&t.path(&format!("small-{i}.json")));
        assert!(p.dropped > 0, "{sizes}: nothing dropped");
        assert_eq!(
            counted(&p) + p.dropped + p.unpaired,
            counted(&full) + full.unpaired,
            "{sizes}: {} counted + {} dropped + {} unpaired, against {} calls and {} unpaired \
             seen with room",
            counted(&p),
            p.dropped,
            p.unpaired,
            counted(&full),
            full.unpaired
        );
        assert_eq!(
            table_dropped(&table),
            Some(p.dropped),
            "the table's last lines: {}",
            tail(&table, 3)
        );
        shrunk.push(p);
    }
    // The endpoint: the final counts of the exited process, the same sum.
    let m = wait_until(
        "the endpoint's final counts",
        PATIENCE,
        Duration::from_millis(100),
        || {
            let m = scrape(&addr);
            let sum = |prefix: &str| -> f64 {
                m.iter()
                    .filter(|(k, _)| k.starts_with(prefix))
                    .map(|(_, v)| v)
                    .sum()
            };
            let seen = sum("syscost_syscalls_total{")
                + sum("syscost_events_dropped_total{")
                + sum("syscost_events_unpaired_total{");
            if seen == (counted(&full) + full.unpaired) as f64 {
                Ok(m)
            } else {
                Err(format!(": {seen} events on the endpoint"))
            }
        },
    );
    let dropped: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("syscost_events_dropped_total{"))
        .map(|(_, v)| v)
        .sum();
    assert!(dropped > 0.0, "no dropped events on the endpoint");
    drop(export);
    (shrunk, full)
}

#[test]
fn threads_beyond_the_tables_are_counted_as_dropped() {
    let Some(t) = root_test!() else {
        return;
    };
    // One direct slot and two in the overflow map for 8 threads of 20,000 getppid each
    // and the main thread.
    let (shrunk, full) = every_event_accounted(
        &t,
        "thread_slots=1,thread_overflow=2",
        &["threads-waiting", "8", "20000"],
    );
    assert_eq!(calls(&full, "getppid"), 160_000);
    for p in shrunk {
        assert!(
            calls(&p, "getppid") < 160_000,
            "all counted with 3 thread slots"
        );
    }
}

#[test]
fn syscalls_beyond_the_pool_are_counted_as_dropped() {
    let Some(t) = root_test!() else {
        return;
    };
    // Two entries a CPU for three raw numbers of 1,000 calls on each of two CPUs, and the
    // process's other calls.
    let (shrunk, full) = every_event_accounted(
        &t,
        "pool_per_cpu=2",
        &["numbers", "1000", "600", "1000", "5000"],
    );
    assert_eq!(calls(&full, "syscall_0x258"), 1000);
    let cpus = aya::util::nr_cpus().unwrap();
    for p in shrunk {
        assert!(
            p.syscalls.len() <= 2 * cpus,
            "{} syscalls in 2 entries per CPU",
            p.syscalls.len()
        );
    }
}

/// A followed child that finds the process tables full is counted in `dropped`, once,
/// and none of its calls are: each child is counted whole or not at all.
#[test]
fn children_beyond_the_process_tables_are_counted_as_dropped() {
    let Some(t) = root_test!() else {
        return;
    };
    let json = t.path("procs.json");
    let o = output(
        syscost()
            .env("SYSCOST_TABLE_SIZES", "proc_slots=1,proc_overflow=1")
            .args(["run", "--json"])
            .arg(&json)
            .args(["--", workload_path(), "fork", "20", "10000"]),
    );
    assert!(o.status.success(), "{}", tail(&stderr(&o), 5));
    let p = read_profile(&json);
    let getppid = calls(&p, "getppid");
    assert_eq!(getppid % 10_000, 0, "a child counted in part: {getppid}");
    assert!(p.dropped > 0, "every child found room in 2 process entries");
    assert_eq!(
        getppid / 10_000 + p.dropped,
        20,
        "{getppid} getppid counted, {} children dropped",
        p.dropped
    );
    assert_eq!(
        table_dropped(&stderr(&o)),
        Some(p.dropped),
        "the table's last lines: {}",
        tail(&stderr(&o), 3)
    );
}

#[test]
fn numbers_the_tables_lack_are_counted_apart() {
    let Some(t) = root_test!() else {
        return;
    };
    let (_, p) = run_workload(&t, &["numbers", "1000", "600", "1000", "5000"]);
    for name in ["syscall_0x258", "syscall_0x3e8", "syscall_0x1388"] {
        let s = p.syscall(name).unwrap_or_else(|| panic!("no {name}"));
        assert_eq!((s.calls, s.errors), (1000, 1000), "{name}");
        assert_eq!(s.errnos.get("ENOSYS"), Some(&1000), "{name}");
    }
    assert!(
        p.syscalls.iter().all(|s| !s.name.starts_with("i386:")),
        "native numbers named as compat ones"
    );
    assert_eq!(p.dropped, 0);
}

#[test]
fn leader_exiting_first_loses_nothing() {
    let Some(t) = root_test!() else {
        return;
    };
    let (o, p) = run_workload(&t, &["leader-exit", "50000"]);
    // The other thread's calls, made after the leader is gone, all counted.
    assert_eq!(calls(&p, "getppid"), 50_000, "{}", tail(&stderr(&o), 3));
    assert_eq!((p.dropped, p.unpaired), (0, 0));
}

#[test]
fn exec_from_a_thread_keeps_its_syscall() {
    let Some(t) = root_test!() else {
        return;
    };
    let (o, p) = run_workload(&t, &["exec-thread", "20000"]);
    assert_eq!(calls(&p, "getppid"), 20_000, "{}", tail(&stderr(&o), 3));
    // The command's own execve and the thread's: both paired, none unpaired.
    assert_eq!(calls(&p, "execve"), 2);
    assert_eq!((p.dropped, p.unpaired), (0, 0));
}

#[test]
fn switches_agree_with_the_kernels_own_counts() {
    let Some(t) = root_test!() else {
        return;
    };
    let (o, p) = run_workload(&t, &["switches", "20000"]);
    let (nvcsw, nivcsw) = (printed(&o, "nvcsw"), printed(&o, "nivcsw"));
    // The yielding threads' own involuntary switches over their yields, as the kernel
    // counted them: how many yields switch depends on the scheduler and on the
    // machine's speed (a thread charged a long stretch of time yields on without
    // switching until the other catches up), so the test compares with this.
    let yield_nivcsw = printed(&o, "yield_nivcsw");
    let (vol, invol): (u64, u64) = p.syscalls.iter().fold((0, 0), |(v, i), s| {
        (v + s.voluntary_switches, i + s.involuntary_switches)
    });
    let yields = p.syscall("sched_yield").expect("sched_yield counted");
    let figures = format!(
        "sched_yield: {} calls, {} involuntary and {} voluntary switches by syscost, {yield_nivcsw} involuntary by the kernel over the yields; whole process: syscost {vol} voluntary, {invol} involuntary; kernel {nvcsw}, {nivcsw}",
        yields.calls, yields.involuntary_switches, yields.voluntary_switches
    );
    assert!(yield_nivcsw > 0.0, "the yields never switched: {figures}");
    // Two runnable threads on one CPU yield to each other: switched out runnable, not
    // blocked. Nearly every switch of a thread in its loop is inside sched_yield (the
    // kernel also counts a preemption in the loop's few instructions outside it).
    let invol_yields = yields.involuntary_switches as f64;
    assert!(
        invol_yields <= yield_nivcsw && invol_yields >= yield_nivcsw * 0.95 - 10.0,
        "involuntary switches in sched_yield: {figures}"
    );
    assert!(
        yields.voluntary_switches < 100,
        "sched_yield switches called blocked: {figures}"
    );
    // The kernel counts switches anywhere, syscost those inside syscalls. A thread
    // blocks only inside a syscall, so the voluntary ones agree; a woken thread often
    // preempts the waker on its way back to user space, after its syscall ended, so
    // the kernel has more involuntary ones.
    let vol = vol as f64;
    assert!(
        vol <= nvcsw + 10.0 && vol >= nvcsw * 0.95 - 10.0,
        "voluntary: {figures}"
    );
    assert!(invol as f64 <= nivcsw + 10.0, "involuntary: {figures}");
}
