//! Helpers for the tests that drive the `syscost` binary; what every root test needs
//! (one at a time, nothing left loaded, skips that fail under CI) is
//! `syscost_test_support`'s, re-exported here.
#![allow(dead_code)]

use std::{
    io::BufRead as _,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
};

use syscost_user::{profile::Profile, report::json};

pub use syscost_test_support::*;

/// The C programs of tests/c, built by its build.sh into the test target's directory
/// (on a kernel of the matrix, where there is no compiler, `cargo xtask vm-test` ships
/// them built).
#[allow(dead_code)]
pub fn c_programs() -> &'static PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-workloads");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/build.sh");
        if script.exists() {
            let o = output(std::process::Command::new("sh").arg(&script).arg(&dir));
            assert!(
                o.status.success(),
                "{} failed: {}",
                script.display(),
                stderr(&o)
            );
        }
        assert!(
            dir.join("chain").exists(),
            "{} has no C programs (built by tests/c/build.sh)",
            dir.display()
        );
        dir
    })
}

/// syscost, to be started by the test: should the test's thread end without reaping it
/// (a test killed, a panic unwound past its guard), syscost gets SIGTERM, which ends it
/// as Ctrl-C does: its programs unloaded, `run`'s command told too.
pub fn syscost() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_syscost"));
    dies_with_its_test(&mut c, libc::SIGTERM);
    c
}

/// `cmd`'s process gets `signal` when the test's thread that starts it ends, a test
/// killed outright included (SIGTERM for syscost, which then unloads its programs).
pub fn dies_with_its_test(cmd: &mut Command, signal: libc::c_int) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: prctl is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, signal);
            Ok(())
        });
    }
    cmd
}

pub fn workload_path() -> &'static str {
    env!("CARGO_BIN_EXE_syscost-workload")
}

/// Runs `cmd` to its end and returns its output; fails the test on a spawn error, and
/// after [`PATIENCE`] (the command's process group killed, what it printed shown).
pub fn output(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn_reaped();
    let out = read_all(child.stdout.take().map(|s| Box::new(s) as _));
    let err = read_all(child.stderr.take().map(|s| Box::new(s) as _));
    let what = format!("{:?} to exit", cmd.get_program());
    let status = wait_child(&mut child, &what);
    Output {
        status,
        stdout: out.collected("its stdout"),
        stderr: err.collected("its stderr"),
    }
}

/// What a pipe held up to its end, read on a thread of its own.
pub struct ReadAll(std::sync::mpsc::Receiver<Vec<u8>>);

/// Reads `r` (if piped) to its end on a thread of its own.
pub fn read_all(r: Option<Box<dyn std::io::Read + Send>>) -> ReadAll {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut v);
        }
        let _ = tx.send(v);
    });
    ReadAll(rx)
}

impl ReadAll {
    /// The bytes, once the pipe's last writer closed it (the process ended, and any
    /// child it left holding the pipe); fails after [`PATIENCE`].
    pub fn collected(self, what: &str) -> Vec<u8> {
        self.0.recv_timeout(PATIENCE).unwrap_or_else(|_| {
            panic!(
                "{what} still open {} s after the process ended: a process it left holds it",
                PATIENCE.as_secs()
            )
        })
    }
}

/// Waits for `child` to exit; after [`PATIENCE`] the child and its process group are
/// killed and the test fails "timed out waiting for `what`".
pub fn wait_child(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() >= deadline {
            // SAFETY: signals the child and the process group it may lead.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
            let _ = child.wait();
            panic!(
                "timed out after {} s waiting for {what} (pid {}, killed)",
                PATIENCE.as_secs(),
                child.id()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A child's end, awaited with a deadline ([`PATIENCE`]) instead of forever.
pub trait WaitWithin {
    /// Its exit status.
    fn wait_exit(&mut self) -> std::process::ExitStatus;
    /// Its exit status and what it wrote to the stdout and stderr still piped.
    fn output_within(self) -> Output;
}

impl WaitWithin for Child {
    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let what = format!("process {} to exit", self.id());
        wait_child(self, &what)
    }

    fn output_within(mut self) -> Output {
        let out = read_all(self.stdout.take().map(|s| Box::new(s) as _));
        let err = read_all(self.stderr.take().map(|s| Box::new(s) as _));
        let status = self.wait_exit();
        Output {
            status,
            stdout: out.collected("its stdout"),
            stderr: err.collected("its stderr"),
        }
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `syscost run --json FILE -- workload ARGS` and the profile it saved.
pub fn run_workload(t: &RootTest, args: &[&str]) -> (Output, Profile) {
    let json_path = t.path("run.json");
    let o = output(
        syscost()
            .arg("run")
            .arg("--json")
            .arg(&json_path)
            .arg("--")
            .arg(workload_path())
            .args(args),
    );
    assert!(o.status.success(), "syscost run failed: {}", stderr(&o));
    (o, read_profile(&json_path))
}

pub fn read_profile(path: &Path) -> Profile {
    json::read(path).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Calls of `name` in `p` (0 when absent).
pub fn calls(p: &Profile, name: &str) -> u64 {
    p.syscall(name).map_or(0, |s| s.calls)
}

/// The number a workload printed as `key=<number>` on stdout.
pub fn printed(o: &Output, key: &str) -> f64 {
    let out = stdout(o);
    out.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in {out:?}"))
}

/// Lines of a child's output, read on a thread of their own so that every wait for one
/// has a deadline: `next()` gives the next line (`Ok`, as `std::io::Lines` does) or
/// `None` at the end, and fails the test after [`PATIENCE`] without one, with what it
/// waited for and the last lines seen.
pub struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
    what: String,
    last: std::collections::VecDeque<String>,
}

impl Lines {
    /// The lines of `from`, called `what` in a failure ("syscost's stderr").
    pub fn of(from: impl std::io::Read + Send + 'static, what: &str) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(from).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Self {
            rx,
            what: what.to_string(),
            last: Default::default(),
        }
    }

    /// The next line, `None` at the end; fails after [`PATIENCE`].
    pub fn line(&mut self) -> Option<String> {
        match self.rx.recv_timeout(PATIENCE) {
            Ok(l) => Some(self.seen(l)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
                "timed out after {} s waiting for a line of {}; the last lines: {:?}",
                PATIENCE.as_secs(),
                self.what,
                self.last
            ),
        }
    }

    /// A line already read, if there is one; never waits.
    pub fn line_ready(&mut self) -> Option<String> {
        let l = self.rx.try_recv().ok()?;
        Some(self.seen(l))
    }

    /// Keeps `l` among the last lines shown in a failure.
    fn seen(&mut self, l: String) -> String {
        if self.last.len() == 5 {
            self.last.pop_front();
        }
        self.last.push_back(l.clone());
        l
    }

    /// Reads up to the first line that `wanted` accepts and gives it; fails at the end
    /// of the output or after [`PATIENCE`] without one, saying `awaited`.
    pub fn until(&mut self, awaited: &str, mut wanted: impl FnMut(&str) -> bool) -> String {
        // A writer that never stops writing is waited on no longer than a silent one.
        let deadline = std::time::Instant::now() + PATIENCE;
        while let Some(l) = self.line() {
            if wanted(&l) {
                return l;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out after {} s waiting for {awaited} in {}; the last lines: {:?}",
                PATIENCE.as_secs(),
                self.what,
                self.last
            );
        }
        panic!(
            "{} ended before {awaited}; its last lines: {:?}",
            self.what, self.last
        )
    }

    /// Every line up to the end (the writer exited).
    pub fn rest(&mut self) -> Vec<String> {
        std::iter::from_fn(|| self.line()).collect()
    }
}

impl Iterator for Lines {
    type Item = std::io::Result<String>;
    fn next(&mut self) -> Option<Self::Item> {
        self.line().map(Ok)
    }
}

/// Lines of a child's stderr.
pub type StderrLines = Lines;

/// Starts `cmd` (a syscost command) with stderr piped; its first stderr line (syscost's
/// "tracing"/"watching"/"serving" line, said once it is ready) and the lines after.
pub fn started(cmd: &mut Command) -> (Reaped, String, StderrLines) {
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn_reaped();
    let mut err = Lines::of(child.stderr.take().unwrap(), "syscost's stderr");
    // A kernel lacking a default measurement says so first, in a line of its own.
    let first = err.until("its first line", |l| {
        !l.starts_with("syscost: this kernel:")
    });
    (child, first, err)
}

/// Starts `syscost attach --no-tui -p PID [extra]` and waits until it traces.
pub fn attach(pid: u32, extra: &[&str]) -> (Reaped, StderrLines) {
    let (tracer, first, err) = started(
        syscost()
            .args(["attach", "--no-tui", "-p", &pid.to_string()])
            .args(extra)
            .stdout(std::process::Stdio::piped()),
    );
    assert!(first.starts_with("syscost: tracing process"), "{first}");
    (tracer, err)
}

/// Lines of a child's stdout.
pub type StdoutLines = Lines;

/// Starts `cmd` (the workload, in a mode that prints `ready` once it is set up) with
/// stdin and stdout piped, and waits for `ready`; the lines of its stdout after it.
pub fn ready(cmd: &mut Command) -> (Reaped, StdoutLines) {
    let mut w = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn_reaped();
    let mut out = Lines::of(w.stdout.take().unwrap(), "the workload's stdout");
    assert_eq!(out.line().as_deref(), Some("ready"));
    (w, out)
}

/// The workload in mode `args`, blocked on stdin until told to start (a line on its
/// stdin), and the lines of its stdout after `ready`.
pub fn waiting(args: &[&str]) -> (Reaped, StdoutLines) {
    ready(Command::new(workload_path()).arg("--wait-stdin").args(args))
}

/// The endpoint's address in the line syscost printed about it
/// ("... http://ADDR/metrics ...").
pub fn endpoint_in(line: &str) -> String {
    line.split("http://")
        .nth(1)
        .and_then(|r| r.split("/metrics").next())
        .unwrap_or_else(|| panic!("no endpoint in {line:?}"))
        .to_string()
}

/// One scrape of the metrics endpoint at `addr`: the exposition's text, which ends in
/// `# EOF`.
pub fn scrape_text(addr: &str) -> String {
    try_scrape(addr).unwrap_or_else(|e| panic!("{e}"))
}

/// One scrape of the metrics endpoint at `addr`: the exposition's text, or why there is
/// none (the connection refused, or closed before an answer: the endpoint's connections
/// all taken).
pub fn try_scrape(addr: &str) -> Result<String, String> {
    use std::io::{Read as _, Write as _};
    let to: std::net::SocketAddr = addr.parse().unwrap();
    let mut stream = std::net::TcpStream::connect_timeout(&to, PATIENCE)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.set_write_timeout(Some(PATIENCE)).unwrap();
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n")
        .map_err(|e| format!("cannot send a scrape to {addr}: {e}"))?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| format!("no answer from {addr}: {e}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .ok_or_else(|| format!("no answer from {addr}: {text:?}"))?;
    assert!(body.ends_with("# EOF\n"), "{body}");
    Ok(body.to_string())
}

/// Scrapes the endpoint at `addr` until `check` accepts an exposition, and gives what
/// it gave: the endpoint shows the latest sample syscost took (one a second, and one
/// when a process `export -p` traces exits), so a count reached shows at a later
/// scrape. Fails after [`PATIENCE`] saying `what` it waited for and `check`'s last
/// detail.
pub fn scrape_until<T>(
    addr: &str,
    what: &str,
    mut check: impl FnMut(&str) -> Result<T, String>,
) -> T {
    wait_until(what, PATIENCE, std::time::Duration::from_millis(50), || {
        check(&try_scrape(addr).map_err(|e| format!(": {e}"))?)
    })
}

/// The value of the sample of `family` whose labels include every one of `labels`, in
/// exposition `text`.
pub fn sample_value(text: &str, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(family)?;
        let (set, value) = match rest.strip_prefix('{') {
            Some(r) => r.rsplit_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        labels
            .iter()
            .all(|(k, v)| {
                set.split("\",")
                    .any(|kv| kv.trim_end_matches('"') == format!("{k}=\"{v}"))
            })
            .then(|| value.trim().parse().ok())?
    })
}

/// `syscost top --json` rows, by pid.
pub fn top_json(path: &Path) -> std::collections::BTreeMap<u32, serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["processes"]
        .as_array()
        .unwrap_or_else(|| panic!("no processes: {v}"))
        .iter()
        .map(|p| (p["pid"].as_u64().unwrap() as u32, p.clone()))
        .collect()
}

/// Calls of syscall `name` in a `top --json` row (0 when it made none).
pub fn syscall_calls(row: &serde_json::Value, name: &str) -> u64 {
    row["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map_or(0, |s| s["calls"].as_u64().unwrap())
}

/// Calls of syscall `name` in a printed `strace -c`-style table (`report`, `run`): a
/// row that starts with a percentage (`99.98`), not a pid.
pub fn table_calls(table: &str, name: &str) -> Option<u64> {
    table.lines().find_map(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        let row = cols.len() >= 5 && cols[0].contains('.') && cols[0].parse::<f64>().is_ok();
        let named = row && (cols[4] == name || cols.get(5) == Some(&name));
        named.then(|| cols[3].parse().ok()).flatten()
    })
}

/// The first child of process `pid`, if it has one.
pub fn first_child(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A cgroup made under the v2 mount for one test, removed when dropped (its processes
/// are the test's, killed by their `Reaped` guards first).
pub struct TestCgroup {
    pub dir: PathBuf,
    /// Its path in the hierarchy, as `--cgroup` takes it.
    pub path: String,
}

impl TestCgroup {
    pub fn new(name: &str) -> Self {
        let mount = syscost_user::cgroup::v2_mount().expect("a cgroup v2 mount");
        sweep_cgroups_of_gone_tests(&mount);
        let leaf = format!("syscost-test-{}-{name}", std::process::id());
        let dir = mount.join(&leaf);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Self {
            dir,
            path: format!("/{leaf}"),
        }
    }

    pub fn enter(&self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .unwrap_or_else(|e| panic!("cannot move {pid} into {}: {e}", self.dir.display()));
    }

    /// `sh -c` that moves itself in, then execs the workload.
    pub fn run_inside(&self, args: &str) -> Command {
        let mut c = Command::new("sh");
        let dir = self.dir.display().to_string().replace('\'', "'\\''");
        c.arg("-c").arg(format!(
            "echo $$ > '{dir}/cgroup.procs' && exec {} {args}",
            workload_path()
        ));
        c
    }
}

impl TestCgroup {
    /// A child cgroup of this one (drop it first).
    pub fn child(&self, name: &str) -> TestCgroup {
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        TestCgroup {
            path: format!("{}/{name}", self.path),
            dir,
        }
    }
}

/// Removes the cgroups a test process that no longer exists left (killed before its
/// guards ran): `syscost-test-PID-*` under the v2 mount, empty ones only.
fn sweep_cgroups_of_gone_tests(mount: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(mount) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("syscost-test-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            // Children first (a test's child cgroups); a populated one stays.
            if let Ok(children) = std::fs::read_dir(e.path()) {
                for c in children.flatten().filter(|c| c.path().is_dir()) {
                    let _ = std::fs::remove_dir(c.path());
                }
            }
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Exited processes leave the cgroup a moment after they are reaped (a loaded or
        // emulated machine takes longer): tried until the tests' deadline.
        let deadline = std::time::Instant::now() + PATIENCE;
        let mut last = None;
        while std::time::Instant::now() < deadline {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let msg = format!(
            "cannot remove the test's cgroup {} within {PATIENCE:?}: {last:?}",
            self.dir.display()
        );
        if std::thread::panicking() {
            eprintln!("{msg}");
        } else {
            panic!("{msg}");
        }
    }
}

pub const PID_MAX: &str = "/proc/sys/kernel/pid_max";

/// A pid `p` such that no task has `p + o` for any of `offsets`, far behind the last pid
/// the kernel gave (ns_last_pid, only read): it hands pids out upwards from there, so it
/// comes to these last. `skip`: another one for each retry.
pub fn free_pid(skip: u32, offsets: &[u32]) -> u32 {
    let read = |path: &str| -> i64 {
        let v = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        v.trim().parse().unwrap_or_else(|_| panic!("{path}: {v:?}"))
    };
    let (last, max) = (read("/proc/sys/kernel/ns_last_pid"), read(PID_MAX));
    let reach = i64::from(offsets.iter().copied().max().unwrap_or(0));
    // Pids up to 300 are left to the kernel's own threads after a wrap.
    let span = max - 301 - reach;
    (0..span)
        .map(|i| 301 + (last - 301 - 1000 - reach - 100 * i64::from(skip) - i).rem_euclid(span))
        .find(|p| {
            offsets
                .iter()
                .all(|o| !std::path::Path::new(&format!("/proc/{}", p + i64::from(*o))).exists())
        })
        .expect("a free pid") as u32
}

/// pid_max changed while this lives. The value it had is written back when this is
/// dropped and, should the test be killed first, by a restorer: a workload in a session
/// of its own (`restore-on-eof`) that holds the old value and writes it back once its
/// stdin, a pipe whose write end only this test holds, is closed, as it is when the test
/// ends in any way (SIGKILL included).
pub struct PidMax {
    old: String,
    restorer: Child,
}

impl PidMax {
    /// Starts the restorer, then sets pid_max to `value`.
    pub fn set(value: u32) -> Self {
        let old = std::fs::read_to_string(PID_MAX)
            .unwrap_or_else(|e| panic!("cannot read {PID_MAX}: {e}"))
            .trim()
            .to_string();
        let mut restorer = Command::new(workload_path())
            .args(["restore-on-eof", PID_MAX, &old])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the pid_max restorer: {e}"));
        let mut out = Lines::of(restorer.stdout.take().unwrap(), "the restorer's stdout");
        assert_eq!(
            out.line().as_deref(),
            Some("ready"),
            "the pid_max restorer did not start"
        );
        let guard = Self { old, restorer };
        guard.to(value);
        guard
    }

    pub fn to(&self, value: u32) {
        std::fs::write(PID_MAX, value.to_string())
            .unwrap_or_else(|e| panic!("cannot set pid_max to {value}: {e}"));
    }
}

impl Drop for PidMax {
    fn drop(&mut self) {
        let mut failed = Vec::new();
        if let Err(e) = std::fs::write(PID_MAX, &self.old) {
            failed.push(format!("cannot set pid_max back to {}: {e}", self.old));
        }
        // The restorer writes it too once its stdin is closed, then exits.
        drop(self.restorer.stdin.take());
        let status = wait_child(&mut self.restorer, "the pid_max restorer to exit");
        if !status.success() {
            failed.push(format!("the pid_max restorer failed: {status}"));
        }
        match std::fs::read_to_string(PID_MAX) {
            Ok(now) if now.trim() == self.old => {}
            now => failed.push(format!(
                "pid_max {now:?} after the test, {} before",
                self.old
            )),
        }
        if failed.is_empty() {
        } else if std::thread::panicking() {
            eprintln!("{}", failed.join("; "));
        } else {
            panic!("{}", failed.join("; "));
        }
    }
}

/// The text of `attach -i`/`-C` over a run of two intervals or a little more: one or
/// two interval tables (a tick syscost was kept from is not made up), the last part
/// unless it was empty and under a tenth of an interval (a tick handled late on a
/// loaded machine), and the total under a heading of its own.
pub fn assert_interval_tables(out: &str) {
    let intervals = out.matches("--- interval ending").count();
    assert!((1..=2).contains(&intervals), "{intervals} interval tables");
    let last = out.matches("--- last interval, ending").count();
    assert!(last <= 1, "{out}");
    assert_eq!(
        out.matches("% time     seconds").count(),
        intervals + last + 1,
        "{out}"
    );
    assert_eq!(out.matches("--- the whole run (").count(), 1, "{out}");
}
