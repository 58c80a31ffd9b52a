//! `cargo xtask soak --minutes N`: the daemon case held for a long run. `syscost export
//! --top` (scraped every second by a real Prometheus) and `syscost top --no-tui` run side
//! by side while processes churn: short processes (fork, exec, exit) from hundreds of
//! copies of a small static program under distinct names, started straight into
//! hundreds of cgroups of a temporary cgroup v2 subtree, one in four renaming itself
//! (prctl PR_SET_NAME) several times before it exits; plus a few long-lived processes
//! making steady syscalls. Every minute, one line per syscost process: its RSS, open
//! descriptors, threads, the occupancy of its bounded BPF maps, the events dropped (its
//! own figure and the kernel's counters) and, for the endpoint, the scrape latency as
//! Prometheus measured it. At the end, the table, the slope of each process's RSS after
//! the warm-up, and the table written to bench/soak-DATE.txt. A benchmark, not a test:
//! it prints figures and asserts nothing.
//!
//! Everything it starts is undone at its end and when it is interrupted (SIGINT, SIGTERM,
//! SIGHUP): each process in a process group of its own, killed with its group, and
//! started with PR_SET_PDEATHSIG (SIGKILL); the cgroups emptied (processes moved out)
//! and removed; the temporary folder (the programs, Prometheus's config and data)
//! removed. When the soak itself is killed outright, a janitor it forked first (a
//! process of its own, blind to the terminal's signals) sees its pipe close, kills what
//! is left in the cgroups (cgroup.kill) and removes them and the folder.
//!
//! The maps are read with the bpf syscall, no bpftool: syscost's map ids from
//! /proc/PID/fdinfo, each map opened by id (BPF_MAP_GET_FD_BY_ID), named by
//! BPF_OBJ_GET_INFO_BY_FD; a hash map's entries counted by walking its keys
//! (BPF_MAP_GET_NEXT_KEY, each key counted once: a walk that restarts because its key
//! was deleted meanwhile counts no key twice), the per-CPU counters looked up.

use std::{
    fmt::Write as _,
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::TcpStream,
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
        unix::process::CommandExt as _,
    },
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use anyhow::{Context as _, Result, bail};
use syscost_common::{config::map_names, counter};

/// What the soak runs.
pub struct Options {
    /// Minutes of churn (a row per syscost process each minute, and one at the start).
    pub minutes: u64,
    /// Process starts a second.
    pub rate: u32,
    /// Copies of the churn program, each under a name of its own.
    pub binaries: u32,
    /// Cgroups of the subtree the churn is started in.
    pub cgroups: u32,
    /// Minutes left out of the RSS slope.
    pub warmup: u64,
}

/// One start in this many renames itself...
const RENAME_EVERY: u32 = 4;
/// ...this many times.
const RENAMES: u32 = 3;
/// Churn processes alive at once, at most.
const MAX_LIVE: u32 = 64;
/// The long-lived processes: getppid calls a second of each.
const STEADY_RATES: [u32; 3] = [1_000, 2_000, 5_000];
/// The churn programs' file names: NAME-0000, NAME-0001, ... (their comms).
const CHURN_NAME: &str = "soak";

pub fn soak(root: &Path, o: &Options) -> Result<()> {
    if !crate::setup::is_root() {
        bail!("the soak loads BPF programs and makes cgroups: run it as root");
    }
    for tool in ["prometheus", "gcc"] {
        if !crate::setup::output(Command::new("sh").args(["-c", &format!("command -v {tool}")]))
            .is_ok_and(|p| !p.is_empty())
        {
            bail!("{tool} is missing (cargo xtask setup installs it)");
        }
    }
    let syscost = root.join("target/release/syscost");
    let workload = root.join("target/release/syscost-workload");
    let started_at = crate::setup::output(Command::new("date").args(["-u", "+%F %H:%M UTC"]))?;
    let tree = tree_described(root);
    let load_before = load_average();

    let cgroup_mount = cgroup2_mount()?;
    let own_cgroup = cgroup_mount.join(own_cgroup2_path()?.trim_start_matches('/'));
    let id = std::process::id();
    let scratch = Scratch {
        dir: std::env::temp_dir().join(format!("syscost-soak-{id}")),
        cgroup: cgroup_mount.join(format!("syscost-soak-{id}")),
        move_to: own_cgroup,
    };
    // The janitor first (forked while this process has one thread), then anything to
    // clean up. Declared first: dropped last, told the soak cleaned up after itself.
    let janitor = Janitor::fork(&scratch)?;
    let scratch = ScratchGuard(scratch);
    catch_stop_signals();

    let s = &scratch.0;
    std::fs::create_dir_all(s.dir.join("bin"))?;
    std::fs::create_dir(&s.cgroup)
        .with_context(|| format!("cannot make the cgroup {}", s.cgroup.display()))?;
    for i in 0..o.cgroups {
        std::fs::create_dir(s.cgroup.join(format!("c{i:03}")))?;
    }
    std::fs::create_dir(s.cgroup.join("tools"))?;
    let (churn_bin, child_bin) = build_churn_programs(&s.dir)?;
    for i in 0..o.binaries {
        std::fs::copy(&child_bin, s.dir.join(format!("bin/{CHURN_NAME}-{i:04}")))?;
    }
    // syscost, Prometheus and the churn's driver run in the subtree's `tools` cgroup (so
    // the janitor's cgroup.kill reaches them too).
    let tools = CgroupProcs::open(&s.cgroup.join("tools"))?;
    let mut running = Running::default();

    // The two syscost processes.
    let export = running.start(
        "export",
        Command::new(&syscost)
            .args(["export", "--top", "--metrics-addr", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
        &tools,
    )?;
    let export_lines = Tail::of(running.take_stderr(export)?, 40);
    let endpoint = export_lines
        .wait_for("syscost: serving", Duration::from_secs(120), || {
            running.exited(export)
        })
        .context("export --top did not start")?
        .split("http://")
        .nth(1)
        .and_then(|r| r.split("/metrics").next())
        .map(str::to_string)
        .context("no endpoint in export's line")?;
    let top = running.start(
        "top",
        Command::new(&syscost)
            .args(["top", "--no-tui"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        &tools,
    )?;
    let top_err = Tail::of(running.take_stderr(top)?, 40);
    // Its tables, one a second, are read and dropped; the last lines kept for its final
    // totals (`syscost top: ... ; dropped N`).
    let top_out = Tail::of(running.take_stdout(top)?, 80);
    top_err
        .wait_for("syscost: watching", Duration::from_secs(120), || {
            running.exited(top)
        })
        .context("top --no-tui did not start")?;

    // The long-lived processes, one in each of the first cgroups.
    for (i, rate) in STEADY_RATES.iter().enumerate() {
        let cg = CgroupProcs::open(&s.cgroup.join(format!("c{:03}", i as u32 % o.cgroups)))?;
        running.start(
            "steady",
            Command::new(&workload)
                .args(["--die-with-parent", "paced"])
                .arg(rate.to_string())
                .arg((o.minutes * 60 + 3600).to_string())
                .stdout(Stdio::null()),
            &cg,
        )?;
    }

    // Prometheus, scraping the endpoint every second.
    let prom_dir = s.dir.join("prometheus");
    std::fs::create_dir(&prom_dir)?;
    let config = prom_dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1m\nscrape_configs:\n  - job_name: syscost\n    static_configs:\n      - targets: ['{endpoint}']\n"
        ),
    )?;
    let log = prom_dir.join("prometheus.log");
    let log_file = std::fs::File::create(&log)?;
    let prometheus = running.start(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                prom_dir.join("data").display()
            ))
            .arg("--web.listen-address=127.0.0.1:0")
            .stdout(log_file.try_clone()?)
            .stderr(log_file),
        &tools,
    )?;
    let web = wait(Duration::from_secs(60), "Prometheus to listen", || {
        if running.exited(prometheus) {
            bail!("Prometheus exited; its log ends:\n{}", file_tail(&log, 20));
        }
        Ok(listening_port(running.pid(prometheus)).map(|p| format!("127.0.0.1:{p}")))
    })?;
    wait(
        Duration::from_secs(60),
        "Prometheus's first scrape of the endpoint",
        // Not ready yet: Prometheus answers 503 until it is.
        || {
            Ok(query(&web, "up{job=\"syscost\"}", None)
                .ok()
                .flatten()
                .filter(|v| *v == 1.0))
        },
    )?;

    // The churn.
    let churn = running.start(
        "churn",
        Command::new(&churn_bin)
            .arg(o.rate.to_string())
            .arg(s.dir.join("bin"))
            .arg(CHURN_NAME)
            .arg(o.binaries.to_string())
            .arg(&s.cgroup)
            .arg(o.cgroups.to_string())
            .arg(RENAME_EVERY.to_string())
            .arg(RENAMES.to_string())
            .arg(MAX_LIVE.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        &tools,
    )?;
    let churn_out = Tail::of(running.take_stdout(churn)?, 5);
    let churn_err = Tail::of(running.take_stderr(churn)?, 10);

    let watched = [("export", export), ("top", top)];
    let mut rows: Vec<Row> = Vec::new();
    let mut churn_rows: Vec<ChurnRow> = Vec::new();
    let mut maps_legend: Vec<String> = Vec::new();
    let t0 = Instant::now();
    println!(
        "soak: {} minutes; churn {} starts/s from {} binaries into {} cgroups; export at http://{endpoint}/metrics, Prometheus at http://{web}; Ctrl-C ends it early",
        o.minutes, o.rate, o.binaries, o.cgroups
    );
    println!("{}", Row::header());
    let mut interrupted = false;
    let mut failure: Option<anyhow::Error> = None;
    for minute in 0..=o.minutes {
        let due = t0 + Duration::from_secs(minute * 60);
        while Instant::now() < due && !stop_asked() {
            std::thread::sleep(Duration::from_millis(100));
        }
        if stop_asked() {
            interrupted = true;
            break;
        }
        // Every process still there?
        if let Some(gone) = running.first_exited() {
            let tail = match gone {
                "export" => export_lines.text(),
                "top" => top_err.text(),
                "churn" => churn_err.text(),
                "prometheus" => file_tail(&log, 20),
                _ => String::new(),
            };
            failure = Some(anyhow::anyhow!(
                "{gone} exited during the soak (minute {minute}); it printed:\n{tail}"
            ));
            break;
        }
        let at = unix_now();
        for (name, h) in watched {
            let pid = running.pid(h);
            let maps = match read_maps(pid) {
                Ok(m) => m,
                Err(e) => {
                    failure = Some(e.context(format!("cannot read the maps of {name}")));
                    break;
                }
            };
            if minute == 0 {
                maps_legend.push(format!("{name}: {}", maps.legend));
            }
            let scrape = (name == "export" && minute > 0)
                .then(|| scrape_minute(&web, at))
                .transpose()?;
            let own_dropped = if name == "export" {
                query(
                    &web,
                    "sum(syscost_events_dropped_total{job=\"syscost\"})",
                    Some(at),
                )?
                .map(|v| v as u64)
            } else {
                None
            };
            let row = Row {
                minute,
                process: name,
                rss_kib: status_field(pid, "VmRSS:").unwrap_or(0),
                anon_kib: status_field(pid, "RssAnon:").unwrap_or(0),
                fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count()),
                threads: status_field(pid, "Threads:").unwrap_or(0),
                maps,
                own_dropped,
                scrape,
            };
            println!("{}", row.line());
            rows.push(row);
        }
        if failure.is_some() {
            break;
        }
        let c = ChurnRow::parse(minute, &churn_out.last().unwrap_or_default());
        churn_rows.push(c);
    }
    if stop_asked() {
        interrupted = true;
    }

    // The whole run's scrape latency after the warm-up, while Prometheus still runs.
    let minutes_done = rows.iter().map(|r| r.minute).max().unwrap_or(0);
    let warmup = effective_warmup(o.warmup, minutes_done);
    let run_scrapes = if minutes_done > warmup {
        Some(scrape_window(
            &web,
            unix_now(),
            (minutes_done - warmup) * 60,
        )?)
    } else {
        None
    };

    let load_after = load_average();
    // The end: the churn first, then the rest; top's final totals read.
    running.stop_all();
    // Their outputs read to the end.
    churn_out.finish(Duration::from_secs(5));
    top_out.finish(Duration::from_secs(5));
    let churn_done = churn_out.last().unwrap_or_default();
    let top_final: Vec<String> = top_out
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("syscost top:") || l.contains("unpaired"))
        .collect();
    drop(running);
    drop(tools);
    drop(scratch);
    drop(janitor);

    let report = render(
        o,
        &rows,
        &churn_rows,
        &maps_legend,
        warmup,
        run_scrapes,
        &top_final,
        &churn_done,
        (&load_before, &load_after),
    );
    println!();
    print!("{report}");
    if let Some(e) = failure {
        return Err(e);
    }
    if interrupted {
        println!("soak: interrupted; the table above is not written to bench/");
        return Ok(());
    }
    let date = crate::setup::output(Command::new("date").args(["-u", "+%F"]))?;
    let mut file = root.join(format!("bench/soak-{date}.txt"));
    for n in 2.. {
        if !file.exists() {
            break;
        }
        file = root.join(format!("bench/soak-{date}-{n}.txt"));
    }
    let header = format!(
        "# cargo xtask soak --minutes {} --rate {} --binaries {} --cgroups {} --warmup {}, on {tree}\n# {started_at}, {}, {} CPUs, kernel {}\n\n",
        o.minutes,
        o.rate,
        o.binaries,
        o.cgroups,
        o.warmup,
        std::env::consts::ARCH,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        crate::setup::output(Command::new("uname").arg("-r")).unwrap_or_default(),
    );
    std::fs::write(&file, header + &report)?;
    println!("soak: written to {}", file.display());
    Ok(())
}

/// The warm-up the slope leaves out: `asked`, unless that leaves fewer than 2 minutes
/// after it (then none).
fn effective_warmup(asked: u64, minutes: u64) -> u64 {
    if minutes >= asked + 2 { asked } else { 0 }
}

/// The commit the tree is, and the tracked files changed in it since (header lines of
/// about 100 columns).
fn tree_described(root: &Path) -> String {
    let git = |args: &[&str]| {
        crate::setup::output(Command::new("git").current_dir(root).args(args)).unwrap_or_default()
    };
    let head = git(&["rev-parse", "--short", "HEAD"]);
    let changed: Vec<String> = git(&["diff", "--name-only", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect();
    if changed.is_empty() {
        return format!("the tree of {head}");
    }
    let mut out = format!(
        "the tree of {head} with uncommitted changes to {} files:",
        changed.len()
    );
    let mut line_len = out.len();
    for f in changed {
        if line_len + f.len() > 100 {
            out += "\n#  ";
            line_len = 3;
        }
        out += " ";
        out += &f;
        line_len += f.len() + 1;
    }
    out
}

/// The 1-minute load average (/proc/loadavg).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

// ---- the churn programs ----

/// Compiles the churn's driver and its program into `dir`: (driver, program).
fn build_churn_programs(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (driver_c, child_c) = (dir.join("churn.c"), dir.join("churn-child.c"));
    std::fs::write(&driver_c, include_str!("soak/churn.c"))?;
    std::fs::write(&child_c, include_str!("soak/churn-child.c"))?;
    let (driver, child) = (dir.join("churn"), dir.join("churn-child"));
    crate::setup::output(
        Command::new("gcc")
            .args(["-O2", "-Wall", "-o"])
            .arg(&driver)
            .arg(&driver_c),
    )?;
    crate::setup::output(
        Command::new("gcc")
            .args([
                "-static",
                "-nostdlib",
                "-ffreestanding",
                "-fno-builtin",
                "-fno-stack-protector",
                "-fno-pie",
                "-no-pie",
                "-fno-asynchronous-unwind-tables",
                "-Wl,--build-id=none",
                "-O2",
                "-s",
                "-Wall",
                "-o",
            ])
            .arg(&child)
            .arg(&child_c),
    )?;
    Ok((driver, child))
}

// ---- processes ----

/// A process of the soak, by its place in [`Running`].
#[derive(Clone, Copy)]
struct Handle(usize);

/// Every process the soak started, stopped in the reverse order (each with its process
/// group) when dropped.
#[derive(Default)]
struct Running {
    procs: Vec<(&'static str, Child)>,
}

impl Running {
    /// Starts `cmd` in a process group of its own, in the cgroup of `cgroup`, killed
    /// (SIGKILL) when this thread ends.
    fn start(
        &mut self,
        name: &'static str,
        cmd: &mut Command,
        cgroup: &CgroupProcs,
    ) -> Result<Handle> {
        let fd = cgroup.fd.as_raw_fd();
        cmd.stdin(Stdio::null()).process_group(0);
        // SAFETY: prctl and write are async-signal-safe; the fd stays open until the
        // spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0": the writing process itself.
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}: {cmd:?}"))?;
        self.procs.push((name, child));
        Ok(Handle(self.procs.len() - 1))
    }

    fn pid(&self, h: Handle) -> u32 {
        self.procs[h.0].1.id()
    }

    fn take_stderr(&mut self, h: Handle) -> Result<std::process::ChildStderr> {
        self.procs[h.0].1.stderr.take().context("stderr not piped")
    }

    fn take_stdout(&mut self, h: Handle) -> Result<std::process::ChildStdout> {
        self.procs[h.0].1.stdout.take().context("stdout not piped")
    }

    /// Whether the process has ended (not reaped: its group stays its own).
    fn exited(&self, h: Handle) -> bool {
        ended(self.pid(h))
    }

    fn first_exited(&self) -> Option<&'static str> {
        self.procs
            .iter()
            .find(|(_, c)| ended(c.id()))
            .map(|(n, _)| *n)
    }

    /// Stops every process, the last started first: SIGINT (syscost and the churn end
    /// cleanly on it; Prometheus on SIGTERM), up to 30 s, then SIGKILL to its group.
    fn stop_all(&mut self) {
        while let Some((name, mut child)) = self.procs.pop() {
            let pid = child.id() as i32;
            let sig = if name == "prometheus" {
                libc::SIGTERM
            } else {
                libc::SIGINT
            };
            // SAFETY: signals a child of this process, not yet reaped.
            unsafe { libc::kill(pid, sig) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while !ended(pid as u32) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            // Its group, the leader unreaped (so the group id is still this group's).
            // SAFETY: signals the process group this child leads.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Whether child `pid` has ended, without reaping it.
fn ended(pid: u32) -> bool {
    // SAFETY: a zeroed siginfo for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waits (without blocking or reaping) for a child of this process.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is set when a child was found.
    r != 0 || unsafe { info.si_pid() } != 0
}

/// The last lines a stream printed (read to its end by a thread of their own).
struct Tail {
    lines: Arc<Mutex<std::collections::VecDeque<String>>>,
    ended: Arc<AtomicBool>,
}

impl Tail {
    fn of(stream: impl std::io::Read + Send + 'static, keep: usize) -> Self {
        let lines = Arc::new(Mutex::new(std::collections::VecDeque::new()));
        let ended = Arc::new(AtomicBool::new(false));
        let (l, e) = (lines.clone(), ended.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                let mut l = l.lock().unwrap();
                if l.len() == keep {
                    l.pop_front();
                }
                l.push_back(line);
            }
            e.store(true, Ordering::Relaxed);
        });
        Self { lines, ended }
    }

    /// Waits (up to `patience`) for the stream's end.
    fn finish(&self, patience: Duration) {
        let deadline = Instant::now() + patience;
        while !self.ended.load(Ordering::Relaxed) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().iter().cloned().collect()
    }

    fn last(&self) -> Option<String> {
        self.lines.lock().unwrap().back().cloned()
    }

    fn text(&self) -> String {
        self.lines().join("\n")
    }

    /// The first kept line starting with `prefix`, waited for up to `patience` (failing
    /// early when `gone` says its writer has ended).
    fn wait_for(
        &self,
        prefix: &str,
        patience: Duration,
        gone: impl Fn() -> bool,
    ) -> Result<String> {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| l.starts_with(prefix)) {
                return Ok(l);
            }
            if gone() || Instant::now() > deadline || stop_asked() {
                // What it printed, read to its end.
                std::thread::sleep(Duration::from_millis(200));
                bail!("no line {prefix:?}; it printed:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Polls `f` every 200 ms until it gives a value, for up to `patience`.
fn wait<T>(patience: Duration, what: &str, mut f: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(v) = f()? {
            return Ok(v);
        }
        if Instant::now() > deadline || stop_asked() {
            bail!("gave up waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn file_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A field of /proc/PID/status, its first number (VmRSS: KiB).
fn status_field(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

// ---- signals ----

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT, SIGTERM and SIGHUP end the soak early (cleanly, through the same end).
fn catch_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as usize;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn stop_asked() -> bool {
    STOP.load(Ordering::Relaxed)
}

// ---- cgroups, the temporary folder, the janitor ----

/// Where cgroup v2 is mounted (/proc/self/mountinfo): /sys/fs/cgroup on a unified
/// layout, /sys/fs/cgroup/unified on a hybrid one.
fn cgroup2_mount() -> Result<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")?;
    info.lines()
        .find_map(|l| {
            let (mount, fs) = l.split_once(" - ")?;
            (fs.split_whitespace().next() == Some("cgroup2"))
                .then(|| mount.split_whitespace().nth(4).map(PathBuf::from))
                .flatten()
        })
        .context("no cgroup v2 hierarchy is mounted")
}

/// This process's cgroup in the v2 hierarchy (the `0::` line of /proc/self/cgroup).
fn own_cgroup2_path() -> Result<String> {
    std::fs::read_to_string("/proc/self/cgroup")?
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .context("this process has no cgroup v2 path")
}

/// A cgroup's `cgroup.procs`, open for writing.
struct CgroupProcs {
    fd: OwnedFd,
}

impl CgroupProcs {
    fn open(dir: &Path) -> Result<Self> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .with_context(|| format!("cannot open {}/cgroup.procs", dir.display()))?;
        Ok(Self { fd: f.into() })
    }
}

/// What the soak made outside itself.
struct Scratch {
    /// The temporary folder: the churn's programs, Prometheus's config and data.
    dir: PathBuf,
    /// The cgroup subtree.
    cgroup: PathBuf,
    /// Where a process left in the subtree is moved: the soak's own cgroup.
    move_to: PathBuf,
}

impl Scratch {
    /// Kills (`kill`) or moves out what is left in the subtree, removes its cgroups and
    /// the folder. Says what it could not undo.
    fn clean(&self, kill: bool) -> Vec<String> {
        let mut problems = Vec::new();
        if self.cgroup.exists() {
            if kill {
                // Every process of the subtree (5.14 and later), else one by one.
                if std::fs::write(self.cgroup.join("cgroup.kill"), "1").is_err() {
                    for d in cgroup_dirs(&self.cgroup) {
                        for pid in procs_of(&d) {
                            // SAFETY: SIGKILL to a process of the soak's own cgroups.
                            unsafe { libc::kill(pid, libc::SIGKILL) };
                        }
                    }
                }
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let mut left = 0;
                for d in cgroup_dirs(&self.cgroup) {
                    for pid in procs_of(&d) {
                        left += 1;
                        let _ = std::fs::write(self.move_to.join("cgroup.procs"), pid.to_string());
                    }
                }
                // Deepest first.
                for d in cgroup_dirs(&self.cgroup).iter().rev() {
                    let _ = std::fs::remove_dir(d);
                }
                if !self.cgroup.exists() {
                    break;
                }
                if Instant::now() > deadline {
                    problems.push(format!(
                        "cgroup {} not removed ({left} processes left in it)",
                        self.cgroup.display()
                    ));
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if self.dir.exists()
            && let Err(e) = std::fs::remove_dir_all(&self.dir)
        {
            problems.push(format!("{} not removed: {e}", self.dir.display()));
        }
        problems
    }
}

/// The subtree's folders, each before its children.
fn cgroup_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            let mut subs: Vec<PathBuf> = rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            subs.sort();
            out.extend(subs);
        }
        i += 1;
    }
    out
}

fn procs_of(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Cleans up when dropped: on every way out of the soak but its being killed.
struct ScratchGuard(Scratch);

impl Drop for ScratchGuard {
    fn drop(&mut self) {
        for p in self.0.clean(false) {
            eprintln!("soak: {p}");
        }
    }
}

/// A process forked at the start that cleans up after a soak killed outright: it waits
/// for its pipe to close, and unless the soak wrote `clean` first, kills what is left in
/// the cgroups and removes them and the folder.
struct Janitor {
    pipe: Option<std::fs::File>,
}

impl Janitor {
    fn fork(s: &Scratch) -> Result<Self> {
        let threads = status_field(std::process::id(), "Threads:");
        if threads != Some(1) {
            bail!("the janitor is forked from one thread, and this process has {threads:?}");
        }
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds; close-on-exec, so nothing the soak starts holds
        // the write end.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!("pipe2: {}", std::io::Error::last_os_error());
        }
        // SAFETY: two fresh fds this process owns.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: this process has one thread (checked above), so the child may run
        // ordinary code.
        match unsafe { libc::fork() } {
            -1 => bail!("fork: {}", std::io::Error::last_os_error()),
            0 => {
                drop(w);
                // SAFETY: this process's own group and dispositions.
                unsafe {
                    libc::setpgid(0, 0);
                    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                        libc::signal(sig, libc::SIG_IGN);
                    }
                }
                let mut said = String::new();
                let _ = std::fs::File::from(r).read_to_string(&mut said);
                if !said.contains("clean") && (s.cgroup.exists() || s.dir.exists()) {
                    let problems = s.clean(true);
                    eprintln!(
                        "soak: the janitor cleaned up after the soak (killed what was left in {}, removed it and {}){}",
                        s.cgroup.display(),
                        s.dir.display(),
                        problems
                            .iter()
                            .map(|p| format!("; {p}"))
                            .collect::<String>()
                    );
                }
                // SAFETY: ends the child without running the parent's destructors.
                unsafe { libc::_exit(0) };
            }
            _ => Ok(Self {
                pipe: Some(std::fs::File::from(w)),
            }),
        }
    }
}

/// Dropped on every way out but the soak's being killed (after [`ScratchGuard`]): the
/// soak cleaned up after itself, the janitor has nothing to do.
impl Drop for Janitor {
    fn drop(&mut self) {
        if let Some(mut p) = self.pipe.take() {
            let _ = p.write_all(b"clean\n");
        }
    }
}

// ---- the BPF maps ----

mod bpf {
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

    const MAP_LOOKUP_ELEM: libc::c_long = 1;
    const MAP_GET_NEXT_KEY: libc::c_long = 4;
    const MAP_GET_FD_BY_ID: libc::c_long = 14;
    const OBJ_GET_INFO_BY_FD: libc::c_long = 15;

    pub const HASH: u32 = 1;
    pub const PERCPU_HASH: u32 = 5;
    pub const ARRAY: u32 = 2;
    pub const PERCPU_ARRAY: u32 = 6;
    pub const LRU_HASH: u32 = 9;
    pub const LRU_PERCPU_HASH: u32 = 10;

    #[repr(C)]
    struct ElemAttr {
        map_fd: u32,
        _pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }

    #[repr(C)]
    struct IdAttr {
        id: u32,
        next_id: u32,
        open_flags: u32,
    }

    #[repr(C)]
    struct InfoAttr {
        bpf_fd: u32,
        info_len: u32,
        info: u64,
    }

    /// The start of `struct bpf_map_info`.
    #[repr(C)]
    #[derive(Default)]
    struct MapInfo {
        kind: u32,
        id: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        map_flags: u32,
        name: [u8; 16],
    }

    fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<libc::c_long> {
        // SAFETY: bpf(2) reads (and for some commands writes) one attr of the size given.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                attr as *mut T,
                std::mem::size_of::<T>() as u32,
            )
        };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    /// A map opened by its id.
    pub struct Map {
        fd: OwnedFd,
        pub kind: u32,
        pub key_size: u32,
        pub value_size: u32,
        pub max_entries: u32,
        pub name: String,
    }

    impl Map {
        pub fn open(id: u32) -> std::io::Result<Self> {
            let mut a = IdAttr {
                id,
                next_id: 0,
                open_flags: 0,
            };
            let fd = bpf(MAP_GET_FD_BY_ID, &mut a)?;
            // SAFETY: a fresh fd the kernel gave this process.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            let mut info = MapInfo::default();
            let mut a = InfoAttr {
                bpf_fd: fd.as_raw_fd() as u32,
                info_len: std::mem::size_of::<MapInfo>() as u32,
                info: &mut info as *mut MapInfo as u64,
            };
            bpf(OBJ_GET_INFO_BY_FD, &mut a)?;
            let len = info.name.iter().position(|b| *b == 0).unwrap_or(16);
            Ok(Self {
                fd,
                kind: info.kind,
                key_size: info.key_size,
                value_size: info.value_size,
                max_entries: info.max_entries,
                name: String::from_utf8_lossy(&info.name[..len]).into_owned(),
            })
        }

        /// The keys in the map, each counted once, by walking them; a walk whose key is
        /// deleted meanwhile starts again (as the kernel does) and counts no key twice;
        /// at most 4 walks' worth of steps.
        pub fn count(&self) -> std::io::Result<u64> {
            let n = self.key_size as usize;
            let mut seen: std::collections::HashSet<Vec<u8>> = Default::default();
            let mut key: Option<Vec<u8>> = None;
            let mut next = vec![0u8; n];
            for _ in 0..(4 * u64::from(self.max_entries) + 16) {
                let mut a = ElemAttr {
                    map_fd: self.fd.as_raw_fd() as u32,
                    _pad: 0,
                    key: key.as_ref().map_or(0, |k| k.as_ptr() as u64),
                    value: next.as_mut_ptr() as u64,
                    flags: 0,
                };
                match bpf(MAP_GET_NEXT_KEY, &mut a) {
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
                    Err(e) => return Err(e),
                }
                seen.insert(next.clone());
                key = Some(next.clone());
            }
            Ok(seen.len() as u64)
        }

        /// Array element `i` read into `value` (the element's size, or every possible
        /// CPU's for a per-CPU array).
        fn lookup(&self, i: u32, value: &mut [u8]) -> std::io::Result<()> {
            let mut key = i;
            let mut a = ElemAttr {
                map_fd: self.fd.as_raw_fd() as u32,
                _pad: 0,
                key: &mut key as *mut u32 as u64,
                value: value.as_mut_ptr() as u64,
                flags: 0,
            };
            bpf(MAP_LOOKUP_ELEM, &mut a).map(|_| ())
        }

        /// An array's elements whose first 4 bytes (a tag) are not 0: the slots in use.
        pub fn tagged(&self) -> std::io::Result<u64> {
            let mut value = vec![0u8; (self.value_size as usize).max(4)];
            let mut n = 0;
            for i in 0..self.max_entries {
                self.lookup(i, &mut value)?;
                if value[..4] != [0; 4] {
                    n += 1;
                }
            }
            Ok(n)
        }

        /// A per-CPU array's element `i`: one u64 per possible CPU (the value's first 8
        /// bytes, or its first 4 for a u32).
        pub fn per_cpu(&self, i: u32, cpus: usize) -> std::io::Result<Vec<u64>> {
            let stride = (self.value_size as usize).div_ceil(8) * 8;
            let mut buf = vec![0u8; stride * cpus];
            self.lookup(i, &mut buf)?;
            Ok(buf
                .chunks(stride)
                .map(|c| {
                    if self.value_size >= 8 {
                        u64::from_ne_bytes(c[..8].try_into().unwrap())
                    } else {
                        u64::from(u32::from_ne_bytes(c[..4].try_into().unwrap()))
                    }
                })
                .collect())
        }
    }
}

/// What a syscost process's maps hold.
#[derive(Default)]
struct Maps {
    /// Entries of TOP, and names kept (PROC_NAMES's slots in use plus PROC_INFO's
    /// entries): one per live traced process.
    top: Option<u64>,
    proc_info: Option<u64>,
    /// Entries of the other hash maps (the overflow tables, BIG_INDEX, ...).
    other_hash: u64,
    /// Statistics entries of POOL in use (POOL_NEXT, summed over CPUs).
    pool: Option<u64>,
    /// COUNTERS, summed over slots and CPUs, by kind.
    counters: [u64; counter::COUNT as usize],
    /// Each map's name and size, for the table's legend.
    legend: String,
}

impl Maps {
    /// Events dropped, as syscost sums them (collector::Snapshot::dropped).
    fn dropped(&self) -> u64 {
        [
            counter::DROPPED_THREAD,
            counter::DROPPED_SYSCALL,
            counter::DROPPED_CHILD,
            counter::DROPPED_PROCESS,
            counter::DROPPED_TOP,
        ]
        .iter()
        .map(|&c| self.counters[c as usize])
        .sum()
    }
}

/// The kernel's name of a map (15 bytes at most).
fn kernel_name(name: &str) -> &str {
    &name[..name.len().min(15)]
}

fn possible_cpus() -> Result<usize> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let mut n = 0;
    for part in s.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        n += b.parse::<usize>()? - a.parse::<usize>()? + 1;
    }
    Ok(n)
}

/// The maps of process `pid` (by the ids in its fds' fdinfo).
fn read_maps(pid: u32) -> Result<Maps> {
    let mut ids = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let e = e?;
        if std::fs::read_link(e.path()).is_ok_and(|l| l.as_os_str() == "anon_inode:bpf-map") {
            let info = std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                e.file_name().to_string_lossy()
            ))
            .unwrap_or_default();
            if let Some(id) = info
                .lines()
                .find_map(|l| l.strip_prefix("map_id:"))
                .and_then(|v| v.trim().parse::<u32>().ok())
            {
                ids.push(id);
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    let cpus = possible_cpus()?;
    let mut m = Maps::default();
    let mut legend = Vec::new();
    let mut pool_size = None;
    let mut pool_next = None;
    for id in ids {
        let Ok(map) = bpf::Map::open(id) else {
            continue; // closed meanwhile
        };
        let is_hash = matches!(
            map.kind,
            bpf::HASH | bpf::PERCPU_HASH | bpf::LRU_HASH | bpf::LRU_PERCPU_HASH
        );
        let name = map.name.as_str();
        if is_hash {
            let n = map.count()?;
            legend.push(format!("{name} {}", map.max_entries));
            if name == kernel_name(map_names::TOP) {
                m.top = Some(n);
            } else if name == kernel_name(map_names::PROC_INFO) {
                *m.proc_info.get_or_insert(0) += n;
            } else {
                m.other_hash += n;
            }
        } else if name == kernel_name(map_names::COUNTERS) && map.kind == bpf::PERCPU_ARRAY {
            for i in 0..map.max_entries {
                let sum: u64 = map.per_cpu(i, cpus)?.iter().sum();
                m.counters[(i % counter::COUNT) as usize] += sum;
            }
        } else if name == kernel_name(map_names::PROC_NAMES) && map.kind == bpf::ARRAY {
            legend.push(format!("{name} {}", map.max_entries));
            *m.proc_info.get_or_insert(0) += map.tagged()?;
        } else if name == kernel_name(map_names::POOL) {
            pool_size = Some(map.max_entries);
            legend.push(format!("{name} {}", map.max_entries));
        } else if name == kernel_name(map_names::POOL_NEXT) && map.kind == bpf::PERCPU_ARRAY {
            pool_next = Some(map.per_cpu(0, cpus)?.iter().sum::<u64>());
        }
    }
    m.pool = pool_size.and(pool_next);
    legend.sort();
    m.legend = format!("max entries: {}", legend.join(", "));
    Ok(m)
}

// ---- Prometheus ----

/// The loopback port process `pid` listens on: a TCP socket of its (found through its
/// fds' inodes) in LISTEN state in /proc/net/tcp.
fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    std::fs::read_to_string("/proc/net/tcp")
        .ok()?
        .lines()
        .skip(1)
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address, state (0A = LISTEN), inode.
            (f.get(3) == Some(&"0A") && inodes.iter().any(|i| Some(&i.as_str()) == f.get(9)))
                .then(|| u16::from_str_radix(f[1].split(':').nth(1)?, 16).ok())
                .flatten()
        })
}

/// An HTTP/1.0 GET of `path` from `addr`: the body of a 200 answer.
fn http_get(addr: &str, path: &str) -> Result<String> {
    let mut s = TcpStream::connect(addr).with_context(|| format!("cannot connect to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if head.split_whitespace().nth(1) != Some("200") {
        bail!(
            "GET http://{addr}{path}: {}",
            head.lines().next().unwrap_or("")
        );
    }
    Ok(body.to_string())
}

fn url_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query (at `at`, unix seconds; now when not given): the first result's
/// value, None when there is none.
fn query(web: &str, promql: &str, at: Option<f64>) -> Result<Option<f64>> {
    let mut path = format!("/api/v1/query?query={}", url_encoded(promql));
    if let Some(t) = at {
        let _ = write!(path, "&time={t:.3}");
    }
    let body = http_get(web, &path)?;
    let v: serde_json::Value =
        serde_json::from_str(&body).with_context(|| format!("not JSON from Prometheus: {body}"))?;
    if v["status"] != "success" {
        bail!("Prometheus refused {promql}: {body}");
    }
    Ok(v["data"]["result"]
        .as_array()
        .and_then(|r| r.first())
        .and_then(|r| r["value"][1].as_str())
        .and_then(|s| s.parse().ok()))
}

/// Scrapes of the endpoint as Prometheus measured them over a window.
#[derive(Clone, Copy)]
struct Scrapes {
    /// scrape_duration_seconds: p50, p99, max, ms.
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    /// Scrapes in the window, and those that failed (up == 0).
    count: u64,
    failed: u64,
    /// The most samples one scrape brought (scrape_samples_scraped).
    samples: u64,
}

fn scrape_window(web: &str, at: f64, secs: u64) -> Result<Scrapes> {
    let q = |f: &str| -> Result<f64> {
        Ok(query(web, &f.replace("W", &format!("{secs}s")), Some(at))?.unwrap_or(f64::NAN))
    };
    let count = q("count_over_time(up{job=\"syscost\"}[W])")?;
    let up = q("sum_over_time(up{job=\"syscost\"}[W])")?;
    Ok(Scrapes {
        p50_ms: 1e3 * q("quantile_over_time(0.5, scrape_duration_seconds{job=\"syscost\"}[W])")?,
        p99_ms: 1e3 * q("quantile_over_time(0.99, scrape_duration_seconds{job=\"syscost\"}[W])")?,
        max_ms: 1e3 * q("max_over_time(scrape_duration_seconds{job=\"syscost\"}[W])")?,
        count: count as u64,
        failed: (count - up) as u64,
        samples: q("max_over_time(scrape_samples_scraped{job=\"syscost\"}[W])")? as u64,
    })
}

fn scrape_minute(web: &str, at: f64) -> Result<Scrapes> {
    scrape_window(web, at, 60)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

// ---- the table ----

struct Row {
    minute: u64,
    process: &'static str,
    rss_kib: u64,
    /// The part of the RSS that is the process's own memory (heap, stacks): the rest is
    /// pages of files (its binary's code, shared libraries), read in as code first runs
    /// and given back under pressure.
    anon_kib: u64,
    fds: usize,
    threads: u64,
    maps: Maps,
    /// The process's own figure of events dropped (the endpoint's, for export).
    own_dropped: Option<u64>,
    scrape: Option<Scrapes>,
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn ms(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.1}")
    }
}

impl Row {
    fn header() -> String {
        format!(
            "{:>3} {:<7} {:>8} {:>8} {:>4} {:>3} {:>7} {:>9} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7}",
            "min",
            "process",
            "rss_KiB",
            "anon_KiB",
            "fds",
            "thr",
            "TOP",
            "names",
            "hash+",
            "pool",
            "dropped",
            "k_drop",
            "unsent",
            "unpair",
            "p50_ms",
            "p99_ms",
            "max_ms",
            "scrapes",
            "samples"
        )
    }

    fn line(&self) -> String {
        let s = self.scrape;
        let k = &self.maps.counters;
        format!(
            "{:>3} {:<7} {:>8} {:>8} {:>4} {:>3} {:>7} {:>9} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7}",
            self.minute,
            self.process,
            self.rss_kib,
            self.anon_kib,
            self.fds,
            self.threads,
            opt(self.maps.top),
            opt(self.maps.proc_info),
            self.maps.other_hash,
            opt(self.maps.pool),
            opt(self.own_dropped),
            self.maps.dropped(),
            k[counter::EXIT_UNSENT as usize],
            k[counter::UNPAIRED as usize],
            s.map_or("-".into(), |s| ms(s.p50_ms)),
            s.map_or("-".into(), |s| ms(s.p99_ms)),
            s.map_or("-".into(), |s| ms(s.max_ms)),
            s.map_or("-".into(), |s| format!("{}/{}", s.count, s.failed)),
            s.map_or("-".into(), |s| s.samples.to_string()),
        )
    }
}

/// The churn's counts at a minute.
struct ChurnRow {
    minute: u64,
    starts: u64,
    renamed: u64,
    failed: u64,
    bad_exits: u64,
    late: u64,
    secs: f64,
}

impl ChurnRow {
    /// From the driver's last line (`t=SECS starts=N renamed=N failed=N bad_exits=N
    /// late=N live=N`).
    fn parse(minute: u64, line: &str) -> Self {
        let get = |k: &str| -> f64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        Self {
            minute,
            starts: get("starts") as u64,
            renamed: get("renamed") as u64,
            failed: get("failed") as u64,
            bad_exits: get("bad_exits") as u64,
            late: get("late") as u64,
            secs: get("t"),
        }
    }
}

/// Least-squares slope of (x, y).
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[allow(clippy::too_many_arguments)]
fn render(
    o: &Options,
    rows: &[Row],
    churn: &[ChurnRow],
    legend: &[String],
    warmup: u64,
    run_scrapes: Option<Scrapes>,
    top_final: &[String],
    churn_done: &str,
    (load_before, load_after): (&str, &str),
) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "{}", Row::header());
    for row in rows {
        let _ = writeln!(r, "{}", row.line());
    }
    for l in legend {
        let _ = writeln!(r, "maps of {l}");
    }
    let _ = writeln!(r);
    let _ = writeln!(
        r,
        "churn (one start in {RENAME_EVERY} renames itself {RENAMES} times; cumulative):"
    );
    let _ = writeln!(
        r,
        "{:>3} {:>9} {:>8} {:>8} {:>7} {:>9} {:>5} {:>9} {:>8} {:>9}",
        "min",
        "starts",
        "per_s",
        "renamed",
        "failed",
        "bad_exits",
        "late",
        "binaries",
        "cgroups",
        "comms"
    );
    for c in churn {
        let per_s = if c.secs > 0.0 {
            c.starts as f64 / c.secs
        } else {
            0.0
        };
        let _ = writeln!(
            r,
            "{:>3} {:>9} {:>8.1} {:>8} {:>7} {:>9} {:>5} {:>9} {:>8} {:>9}",
            c.minute,
            c.starts,
            per_s,
            c.renamed,
            c.failed,
            c.bad_exits,
            c.late,
            c.starts.min(u64::from(o.binaries)),
            c.starts.min(u64::from(o.cgroups)),
            c.starts.min(u64::from(o.binaries)) + c.renamed * u64::from(RENAMES),
        );
    }
    if !churn_done.is_empty() {
        let _ = writeln!(r, "churn's last line: {churn_done}");
    }
    let _ = writeln!(r);
    let last = rows.iter().map(|r| r.minute).max().unwrap_or(0);
    let _ = writeln!(
        r,
        "after the warm-up (minutes {warmup}-{last}{}):",
        if warmup < o.warmup {
            format!(
                ", no warm-up left out: the run is shorter than --warmup {} + 2",
                o.warmup
            )
        } else {
            String::new()
        }
    );
    for process in ["export", "top"] {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.process == process && r.minute >= warmup)
            .collect();
        let (Some(first), Some(end)) = (mine.first(), mine.last()) else {
            continue;
        };
        let per_hour = |f: fn(&Row) -> f64| {
            slope(
                &mine
                    .iter()
                    .map(|r| (r.minute as f64, f(r)))
                    .collect::<Vec<_>>(),
            )
            .map_or("-".into(), |s| format!("{:+.0}", s * 60.0))
        };
        let _ = writeln!(
            r,
            "  {process}: RSS {} -> {} KiB, slope {} KiB/h (its own memory {} -> {} KiB, slope {} KiB/h); fds {} -> {} ({}/h); TOP {} -> {} entries ({}/h); names {} -> {}; dropped (kernel) {} -> {}",
            first.rss_kib,
            end.rss_kib,
            per_hour(|r| r.rss_kib as f64),
            first.anon_kib,
            end.anon_kib,
            per_hour(|r| r.anon_kib as f64),
            first.fds,
            end.fds,
            per_hour(|r| r.fds as f64),
            opt(first.maps.top),
            opt(end.maps.top),
            per_hour(|r| r.maps.top.unwrap_or(0) as f64),
            opt(first.maps.proc_info),
            opt(end.maps.proc_info),
            first.maps.dropped(),
            end.maps.dropped(),
        );
    }
    if let Some(s) = run_scrapes {
        let _ = writeln!(
            r,
            "  export's scrapes (Prometheus's scrape_duration_seconds): p50 {} ms, p99 {} ms, max {} ms; {} scrapes, {} failed; up to {} samples a scrape",
            ms(s.p50_ms),
            ms(s.p99_ms),
            ms(s.max_ms),
            s.count,
            s.failed,
            s.samples
        );
    }
    for l in top_final {
        let _ = writeln!(r, "  top's own final line: {l}");
    }
    let _ = writeln!(
        r,
        "machine: 1-minute load average {load_before} before the soak's processes started, {load_after} at the end"
    );
    r
}
