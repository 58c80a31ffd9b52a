//! What every root test of syscost needs, whichever crate it tests (the engine's
//! in-process tests, the binary's): one root test at a time, a scratch directory, no
//! program of ours left loaded after it, a skip that fails under CI, children killed
//! with their test, waits with a deadline.

use std::{
    ops::{Deref, DerefMut},
    os::unix::process::CommandExt as _,
    path::PathBuf,
    process::{Child, Command},
    sync::{Mutex, MutexGuard},
};

/// Root tests run one at a time: each checks afterwards that no program of ours is left
/// loaded, which another test's live tracer would spoil.
static SERIAL: Mutex<()> = Mutex::new(());

/// A root test's context: holds the serial lock and a scratch directory, and on drop
/// checks that no syscost program is still loaded.
pub struct RootTest {
    _lock: MutexGuard<'static, ()>,
    pub dir: PathBuf,
    /// syscost programs already loaded when the test began (another syscost running on
    /// the machine): not the test's to account for.
    before: Vec<u32>,
}

/// Whether the tests run under CI: `CI` set to anything but empty, `0` or `false` (CI
/// services set `CI=true`, some `CI=1`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// A test that cannot run here: under CI the test fails; elsewhere it says so loudly
/// (libtest shows a passing test's output only with `--nocapture`, so the line is also
/// the reason a skip must never pass under CI).
pub fn skip(name: &str, why: &str) {
    if under_ci() {
        panic!("{name}: {why}, and a test may not skip under CI");
    }
    eprintln!("\n*** SKIPPED {name}: {why} ***\n");
}

/// [`root_test_named`] labelled with the name of the test function it is called in.
#[macro_export]
macro_rules! root_test {
    () => {
        $crate::root_test_named({
            fn here() {}
            let path = std::any::type_name_of_val(&here);
            let path = path.strip_suffix("::here").unwrap_or(path);
            path.rsplit("::").next().unwrap_or(path)
        })
    };
}

/// `Some` when this process may load BPF programs. Elsewhere it says loudly why the test
/// is skipped; under CI it fails instead.
pub fn root_test_named(name: &str) -> Option<RootTest> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip(
            name,
            "needs root to load BPF programs (run `sudo cargo xtask test`)",
        );
        return None;
    }
    let lock = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("syscost-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let before = loaded_syscost_programs()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    Some(RootTest {
        _lock: lock,
        dir,
        before,
    })
}

impl RootTest {
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Waits for the programs this test loaded to be gone; the names of those still
    /// loaded.
    pub fn wait_for_unload(&self) -> Vec<String> {
        wait_for_unload_except(&self.before)
    }
}

impl Drop for RootTest {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if !std::thread::panicking() {
            assert_eq!(
                self.wait_for_unload(),
                Vec::<String>::new(),
                "programs left loaded"
            );
        }
    }
}

/// Waits up to [`PATIENCE`] for syscost's programs to leave the kernel (they are freed
/// after an RCU grace period, not the moment the last fd closes); the names of those
/// still loaded then, other than the ids in `before`.
pub fn wait_for_unload_except(before: &[u32]) -> Vec<String> {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let left: Vec<String> = loaded_syscost_programs()
            .into_iter()
            .filter(|(id, _)| !before.contains(id))
            .map(|(_, name)| name)
            .collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Ids and names of loaded BPF programs that are syscost's.
pub fn loaded_syscost_programs() -> Vec<(u32, String)> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter_map(|p| p.name_as_str().map(|n| (p.id(), n.to_string())))
        .filter(|(_, n)| {
            syscost_engine::tracer::PROGRAM_NAME_PREFIXES
                .iter()
                .any(|prefix| n.starts_with(prefix))
        })
        .collect()
}

/// How long a test waits for one event (a line, a process's end, a state) before it
/// fails saying what it waited for: long enough for the kernel matrix's emulated CPUs,
/// some ten times slower than this machine, and never forever.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// A child started in a process group of its own; the group is killed when this is
/// dropped, so a failing test leaves no workload, tracer or server running (an endless
/// workload left behind would also hold the test run's output open).
pub struct Reaped(Option<Child>);

impl Reaped {
    /// The child, no longer killed on drop (to consume it with `wait_with_output`).
    pub fn into_inner(mut self) -> Child {
        self.0.take().expect("child present")
    }
}

impl Deref for Reaped {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().expect("child present")
    }
}

impl DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("child present")
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            // SAFETY: signals the process group this test started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
    }
}

pub trait SpawnReaped {
    /// Spawns in a new process group, killed with it on drop.
    fn spawn_reaped(&mut self) -> Reaped;
}

impl SpawnReaped for Command {
    fn spawn_reaped(&mut self) -> Reaped {
        Reaped(Some(self.process_group(0).spawn().unwrap()))
    }
}

/// Calls `check` every `every` until it gives a value; after `timeout` the test fails
/// "timed out waiting for `what`", followed by the detail `check` gave last.
pub fn wait_until<T>(
    what: &str,
    timeout: std::time::Duration,
    every: std::time::Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match check() {
            Ok(v) => return v,
            Err(detail) => assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}{detail}"
            ),
        }
        std::thread::sleep(every);
    }
}

/// CPU time process `pid` has used, in clock ticks (utime + stime of /proc/PID/stat).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/stat: {e}"));
    // After the comm: state(3) ... utime(14) stime(15), the 12th and 13th fields.
    let f: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let field = |i: usize| -> u64 {
        f.get(i)
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("/proc/{pid}/stat: {stat}"))
    };
    field(11) + field(12)
}
