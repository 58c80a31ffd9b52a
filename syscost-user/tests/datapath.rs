//! The data path under load and at its limits (root only): profiles saved from a busy
//! target are always accepted, scrapes keep their invariants, the maps' memory does not
//! grow with pid_max, whatever the tables cannot hold is counted, and the numbers the
//! syscall tables lack, thread exits in any order and exec from a thread are counted
//! right.

mod common;

use std::{
    collections::BTreeMap,
    io::{BufRead as _, Read as _},
    process::Stdio,
    time::Duration,
};

use common::*;
use syscost_user::map_sizes::TableSizes;

/// A busy target: 2 threads calling close(-1) and getppid as fast as they can.
fn busy_target() -> Reaped {
    let mut target = std::process::Command::new(workload_path())
        .args(["mixed-forever", "2"])
        .stdout(Stdio::null())
        .spawn_reaped();
    // Let both threads start.
    wait_until(
        "the workload's threads",
        Duration::from_secs(5),
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

#[test]
fn profiles_saved_from_a_busy_target_are_always_accepted() {
    let Some(t) = root_test("profiles_saved_from_a_busy_target_are_always_accepted") else {
        return;
    };
    let target = busy_target();
    let pid = target.id().to_string();
    for round in 0..20 {
        let path = t.path(&format!("busy-{round}.json"));
        let o = output(
            syscost()
                .args(["attach", "-p", &pid, "-d", "1", "--no-tui", "--json"])
                .arg(&path),
        );
        assert!(o.status.success(), "round {round}: {}", stderr(&o));
        let r = output(syscost().arg("report").arg(&path));
        assert!(
            r.status.success(),
            "round {round}: report refused: {}",
            stderr(&r)
        );
        let p = read_profile(&path);
        let close = p.syscall("close").expect("close counted");
        assert!(
            close.calls > 1000,
            "round {round}: {} close calls",
            close.calls
        );
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
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    use std::io::Write as _;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let body = text.split("\r\n\r\n").nth(1).expect("an HTTP body");
    assert!(body.ends_with("# EOF\n"), "{body}");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}

#[test]
fn scrapes_of_a_busy_target_keep_their_invariants() {
    let Some(_t) = root_test("scrapes_of_a_busy_target_keep_their_invariants") else {
        return;
    };
    let target = busy_target();
    let mut export = syscost()
        .args(["export", "--metrics-addr", "127.0.0.1:0", "-p"])
        .arg(target.id().to_string())
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut err = std::io::BufReader::new(export.stderr.take().unwrap()).lines();
    let line = err.next().unwrap().unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line}"))
        .to_string();
    let mut previous: BTreeMap<String, f64> = BTreeMap::new();
    let mut checked = 0;
    for _ in 0..200 {
        let now = scrape(&addr);
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
                checked += 1;
            }
        }
        previous = now;
    }
    assert!(checked >= 400, "only {checked} histograms checked");
    assert!(
        previous
            .iter()
            .any(|(s, &v)| s.contains("syscall=\"close\"")
                && s.starts_with("syscost_syscalls_total")
                && v > 10_000.0),
        "close not counted"
    );
    drop(export);
}

/// Bytes of BPF map memory a process holds, from the memlock lines of its map fds.
fn map_memory(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter(|info| info.contains("map_type:"))
        .filter_map(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("memlock:"))?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// pid_max set to `value` while this lives.
struct PidMax(String);

impl PidMax {
    fn set(value: u32) -> Self {
        let old = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
        std::fs::write("/proc/sys/kernel/pid_max", value.to_string()).unwrap();
        Self(old)
    }
}

impl Drop for PidMax {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/pid_max", self.0.trim());
    }
}

#[test]
fn map_memory_does_not_grow_with_pid_max() {
    let Some(_t) = root_test("map_memory_does_not_grow_with_pid_max") else {
        return;
    };
    let cpus = aya::util::nr_cpus().unwrap() as u64;
    let expected = TableSizes::for_slots(1).memory(cpus, 1);
    let mut seen = Vec::new();
    for pid_max in [32_768, 4_194_304] {
        let _pid_max = PidMax::set(pid_max);
        let mut target = std::process::Command::new(workload_path())
            .args(["sleep", "600000"])
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

#[test]
fn threads_beyond_the_tables_are_counted_as_dropped() {
    let Some(t) = root_test("threads_beyond_the_tables_are_counted_as_dropped") else {
        return;
    };
    // One direct slot and two in the overflow map for 8 threads running at once.
    let json = t.path("small.json");
    let o = output(
        syscost()
            .env("SYSCOST_TABLE_SIZES", "thread_slots=1,thread_overflow=2")
            .args(["run", "--json"])
            .arg(&json)
            .args(["--", workload_path(), "threads", "8", "20000"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    let counted = calls(&p, "getppid");
    assert!(
        counted < 160_000,
        "all {counted} counted with 3 thread slots"
    );
    assert!(p.dropped > 0, "nothing dropped");
    assert!(
        counted + p.dropped >= 160_000,
        "{counted} counted + {} dropped: calls lost without a trace",
        p.dropped
    );
    assert!(stderr(&o).contains("events dropped"), "{}", stderr(&o));
}

#[test]
fn syscalls_beyond_the_pool_are_counted_as_dropped() {
    let Some(t) = root_test("syscalls_beyond_the_pool_are_counted_as_dropped") else {
        return;
    };
    let json = t.path("pool.json");
    let o = output(
        syscost()
            .env("SYSCOST_TABLE_SIZES", "pool_per_cpu=2")
            .args(["run", "--no-offcpu", "--json"])
            .arg(&json)
            .args(["--", workload_path(), "close-ebadf", "1000"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = read_profile(&json);
    let counted: u64 = p.syscalls.iter().map(|s| s.calls).sum();
    let cpus = aya::util::nr_cpus().unwrap();
    assert!(
        p.syscalls.len() <= 2 * cpus,
        "{} syscalls in 2 entries per CPU",
        p.syscalls.len()
    );
    assert!(
        p.dropped > 0 && counted > 0,
        "{counted} counted, {} dropped",
        p.dropped
    );
}

#[test]
fn numbers_the_tables_lack_are_counted_apart() {
    let Some(t) = root_test("numbers_the_tables_lack_are_counted_apart") else {
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
    let Some(t) = root_test("leader_exiting_first_loses_nothing") else {
        return;
    };
    let (o, p) = run_workload(&t, &["leader-exit", "50000"]);
    // The other thread's calls, made after the leader is gone, all counted.
    assert_eq!(calls(&p, "getppid"), 50_000, "{}", stderr(&o));
    assert_eq!((p.dropped, p.unpaired), (0, 0));
}

#[test]
fn exec_from_a_thread_keeps_its_syscall() {
    let Some(t) = root_test("exec_from_a_thread_keeps_its_syscall") else {
        return;
    };
    let (o, p) = run_workload(&t, &["exec-thread", "20000"]);
    assert_eq!(calls(&p, "getppid"), 20_000, "{}", stderr(&o));
    // The command's own execve and the thread's: both paired, none unpaired.
    assert_eq!(calls(&p, "execve"), 2);
    assert_eq!((p.dropped, p.unpaired), (0, 0));
}

#[test]
fn switches_agree_with_the_kernels_own_counts() {
    let Some(t) = root_test("switches_agree_with_the_kernels_own_counts") else {
        return;
    };
    let (o, p) = run_workload(&t, &["switches", "20000"]);
    let (nvcsw, nivcsw) = (printed(&o, "nvcsw"), printed(&o, "nivcsw"));
    let (vol, invol): (u64, u64) = p.syscalls.iter().fold((0, 0), |(v, i), s| {
        (v + s.voluntary_switches, i + s.involuntary_switches)
    });
    let yields = p.syscall("sched_yield").expect("sched_yield counted");
    // Two runnable threads on one CPU yield to each other: switched out runnable,
    // not blocked.
    assert!(
        yields.involuntary_switches > 10_000,
        "{} involuntary switches in sched_yield",
        yields.involuntary_switches
    );
    assert!(
        yields.voluntary_switches < 100,
        "{} sched_yield switches called blocked",
        yields.voluntary_switches
    );
    // Two runnable threads on one CPU yield to each other: most yields switch.
    assert!(
        yields.involuntary_switches as f64 >= 2.0 * 20_000.0 * 0.5,
        "{} involuntary switches in 40000 sched_yield calls",
        yields.involuntary_switches
    );
    // The kernel counts switches anywhere, syscost those inside syscalls. A thread
    // blocks only inside a syscall, so the voluntary ones agree; a woken thread often
    // preempts the waker on its way back to user space, after its syscall ended, so
    // the kernel has more involuntary ones.
    let vol = vol as f64;
    assert!(
        vol <= nvcsw + 10.0 && vol >= nvcsw * 0.95 - 10.0,
        "voluntary: syscost {vol}, kernel {nvcsw}"
    );
    assert!(
        invol as f64 <= nivcsw + 10.0,
        "involuntary: syscost {invol}, kernel {nivcsw}"
    );
}
