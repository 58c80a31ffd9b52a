//! The process syscost attaches to: checks that it exists and can be traced, reads its
//! name and threads, and waits for it to exit (through a pidfd, which cannot be fooled by
//! pid reuse).

use std::{
    fs,
    os::fd::{FromRawFd as _, OwnedFd},
};
use syscost_report::report::top::{Name, PodLabels};

use anyhow::{Context as _, Result, bail};

use syscost_report::untrusted::{decode, shown};

/// PF_KTHREAD in /proc/<pid>/stat's flags field.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A live process.
#[derive(Debug)]
pub struct Process {
    pub pid: u32,
    pub comm: String,
    /// Open pidfd: readable once the process has exited.
    pub pidfd: OwnedFd,
}

/// Looks up `pid`, refusing what cannot be profiled.
pub fn open(pid: u32) -> Result<Process> {
    if pid == 0 {
        bail!("PID 0 is the kernel's idle task, not a process syscost can profile");
    }
    // Bytes, not a String: the comm in it is the process's to choose.
    let stat =
        fs::read(format!("/proc/{pid}/stat")).map_err(|_| anyhow::anyhow!("no process {pid}"))?;
    let (comm, flags) =
        parse_stat(&stat).with_context(|| format!("cannot parse /proc/{pid}/stat"))?;
    if flags & PF_KTHREAD != 0 {
        bail!(
            "process {pid} ({}) is a kernel thread: it makes no syscalls to profile",
            shown(&comm)
        );
    }
    // A thread's id reads as a process in /proc, but is not one.
    if let Some(tgid) = thread_group_of(pid)
        && tgid != pid
    {
        let leader = fs::read(format!("/proc/{tgid}/stat"))
            .ok()
            .and_then(|s| parse_stat(&s))
            .map(|(c, _)| format!(" ({})", shown(&c)))
            .unwrap_or_default();
        bail!(
            "{pid} is a thread of process {tgid}{leader}: give -p {tgid}, which traces all its threads"
        );
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            bail!("no process {pid}");
        }
        return Err(e).with_context(|| format!("pidfd_open({pid})"));
    }
    // SAFETY: fd is a fresh descriptor we own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    Ok(Process { pid, comm, pidfd })
}

/// The thread group (process) of task `tid`, from /proc/TID/status.
fn thread_group_of(tid: u32) -> Option<u32> {
    let status = fs::read(format!("/proc/{tid}/status")).ok()?;
    let text = String::from_utf8_lossy(&status);
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

/// comm ([`decode`]d: any bytes) and flags of a `/proc/<pid>/stat` line. comm may contain
/// spaces and ')', so the fields after it are found from the last ')'.
pub fn parse_stat(stat: &[u8]) -> Option<(String, u64)> {
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let comm = decode(stat.get(open + 1..close)?);
    // After ") ": state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9).
    let flags = std::str::from_utf8(stat.get(close + 2..)?)
        .ok()?
        .split_whitespace()
        .nth(6)?
        .parse()
        .ok()?;
    Some((comm, flags))
}

/// The name the kernel gives a process that execs `program` (its `comm`): the file
/// name, cut to 15 bytes. `run` labels its command with it, so that it carries the same
/// name as under `attach` and `export`, which read the comm of a running process.
pub fn exec_comm(program: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let name = program
        .file_name()
        .map(|n| n.as_bytes())
        .unwrap_or_default();
    decode(&name[..name.len().min(15)])
}

/// The comm of process or thread `id` now (any bytes, [`decode`]d), if it exists.
pub fn comm_of(id: u32) -> Option<String> {
    let bytes = crate::procfs::read_proc(&format!("/proc/{id}/comm")).ok()?;
    Some(decode(bytes.strip_suffix(b"\n").unwrap_or(&bytes)))
}

/// A process of a tree: its pid, its parent's and when it started (clock ticks since
/// boot, /proc/PID/stat's `starttime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descendant {
    pub pid: u32,
    pub ppid: u32,
    pub start: u64,
}

/// The processes descended from `root` now (children, their children...), from each
/// process's parent in /proc.
pub fn descendants(root: u32) -> Vec<Descendant> {
    let mut all: Vec<Descendant> = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, start)) = fs::read(e.path().join("stat"))
            .ok()
            .and_then(|s| parent_and_start(&s))
        {
            all.push(Descendant { pid, ppid, start });
        }
    }
    let mut out: Vec<Descendant> = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for d in &all {
            if d.ppid == p && d.pid != root && !out.iter().any(|o| o.pid == d.pid) {
                out.push(*d);
                frontier.push(d.pid);
            }
        }
    }
    out.sort_unstable_by_key(|d| d.pid);
    out
}

/// Process `pid`'s parent and start time now, if it exists.
pub fn parent_and_start_of(pid: u32) -> Option<(u32, u64)> {
    parent_and_start(&fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// The parent pid and `starttime` of a /proc/<pid>/stat line (the fields after the
/// state: ppid is the 4th field, starttime the 22nd).
fn parent_and_start(stat: &[u8]) -> Option<(u32, u64)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let fields: Vec<&str> = std::str::from_utf8(stat.get(close + 2..)?)
        .ok()?
        .split_whitespace()
        .collect();
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// Now, in the clock ticks since boot that /proc/PID/stat's `starttime` counts.
pub fn now_ticks() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills one timespec; sysconf reads a constant.
    let hz = unsafe {
        libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut t);
        libc::sysconf(libc::_SC_CLK_TCK)
    }
    .max(1) as u64;
    t.tv_sec as u64 * hz + t.tv_nsec as u64 * hz / 1_000_000_000
}

/// Whether the process behind `pidfd` has exited (without blocking).
pub fn has_exited(pidfd: &OwnedFd) -> bool {
    use std::os::fd::AsRawFd as _;
    let mut pfd = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n > 0 && pfd.revents & libc::POLLIN != 0
}

/// Inode number of the initial PID namespace (`PROC_PID_INIT_INO`), the same on every
/// kernel.
const INIT_PID_NS_INODE: u64 = 0xEFFF_FFFC;

/// Fails unless syscost runs in the initial PID namespace: the kernel programs see the
/// host's process ids, and from a namespace of its own (a container without the host's
/// PID namespace) syscost could not tell which process a pid of its names.
pub fn check_pid_namespace() -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let ns = fs::metadata("/proc/self/ns/pid").context("cannot read /proc/self/ns/pid")?;
    if ns.ino() != INIT_PID_NS_INODE {
        bail!(
            "syscost runs in a PID namespace of its own (a container without the host's PID namespace), where the kernel's process ids cannot be seen: run it in the host's PID namespace (docker run --pid=host, or nsenter -t 1 -p)"
        );
    }
    Ok(())
}

/// Reads `/proc/sys/kernel/pid_max`.
pub fn pid_max() -> Result<u32> {
    let s = fs::read_to_string("/proc/sys/kernel/pid_max")
        .context("cannot read /proc/sys/kernel/pid_max")?;
    s.trim()
        .parse()
        .context("cannot parse /proc/sys/kernel/pid_max")
}

/// What /proc says about a process, read once when it is first seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcInfo {
    pub comm: Name,
    /// Its cgroup v2 path ("" when unknown).
    pub cgroup: Name,
    /// The pod and container that cgroup is, once a view asked ([`Names::name_pods`]).
    pub kube: PodLabels,
    /// The name was read from /proc (the process was alive then); otherwise it is what
    /// the kernel side kept, or "?".
    pub from_proc: bool,
}

impl ProcInfo {
    /// What the kernel side kept of an exited process (its comm at its last exec, and
    /// its cgroup's id).
    pub fn of_record(r: &syscost_common::ProcRecord, names: &mut Names) -> Self {
        let cgroup = names
            .cgroups
            .path_of(r.cgroup_id)
            .unwrap_or_else(|| "?".into());
        Self {
            comm: names.comm(&r.comm),
            kube: names.pod_of(&cgroup),
            cgroup,
            from_proc: false,
        }
    }

    /// Reads /proc/PID, falling back on what the kernel side kept (comm and cgroup id
    /// when it was first seen, the comm its main thread ended with) for a process that has
    /// gone.
    pub fn read(
        pid: u32,
        kernel: impl FnOnce() -> Option<(String, u64)>,
        names: &mut Names,
    ) -> Self {
        // Each step reads them for every process with calls: made into names once.
        let comm = crate::procfs::read_proc(&format!("/proc/{pid}/comm"))
            .ok()
            .map(|b| names.comm(b.strip_suffix(b"\n").unwrap_or(&b)));
        let cgroup = crate::cgroup::of_process(pid).map(|p| names.path(p));
        // What the kernel side kept, looked up only when /proc has not said it all.
        let kept = if comm.is_some() && cgroup.is_some() {
            None
        } else {
            kernel()
        };
        let (kcomm, kid) = match kept {
            Some((c, id)) => (Some(c), Some(id)),
            None => (None, None),
        };
        let cgroup = cgroup
            .or_else(|| kid.and_then(|id| names.cgroups.path_of(id)))
            .unwrap_or_else(|| "?".into());
        Self {
            from_proc: comm.is_some(),
            comm: comm
                .or_else(|| kcomm.map(Name::from))
                .unwrap_or_else(|| "?".into()),
            kube: names.pod_of(&cgroup),
            cgroup,
        }
    }
}

/// Names of processes and cgroups as the exit records and /proc give them, shared: a
/// churning host's thousands of exits a second carry a few names, and every step names
/// each process with calls again; each name is made once.
#[derive(Debug, Default)]
pub struct Names {
    pub cgroups: crate::cgroup::CgroupNames,
    comms: std::collections::HashMap<[u8; 16], Name>,
    paths: std::collections::HashSet<Name>,
    /// Where the pods are named, once a view asked ([`Names::name_pods`]).
    pods: Option<std::sync::Arc<crate::kube::Pods>>,
    /// Each cgroup's pod labels, and when they are to be asked again: never once
    /// settled; [`crate::kube::RETRY`] later for a container whose runtime's file was not
    /// read (not written yet, or not readable: the rows of its processes cost no lock
    /// and no parse meanwhile). Found by the address of the cgroup's shared name, which
    /// the entry holds (so no other name takes that address while it is kept): a lookup
    /// per row costs no hash of the path.
    kube: std::collections::HashMap<usize, (Name, PodLabels, Option<std::time::Instant>)>,
}

/// Names of each kind kept at the most (all forgotten when full: a host can start
/// processes of any number of names, in any number of cgroups).
const NAMES_KEPT: usize = 4096;

impl Names {
    /// The name in a `comm` (the kernel side's field, up to its first NUL, or
    /// /proc/PID/comm's line), made once.
    pub fn comm(&mut self, raw: &[u8]) -> Name {
        let raw = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        // A comm is 15 bytes at the most: anything longer is not kept.
        let Some(key) = (raw.len() <= 16).then(|| {
            let mut k = [0u8; 16];
            k[..raw.len()].copy_from_slice(raw);
            k
        }) else {
            return decode(raw).into();
        };
        if let Some(n) = self.comms.get(&key) {
            return n.clone();
        }
        if self.comms.len() >= NAMES_KEPT {
            self.comms.clear();
        }
        let n: Name = decode(raw).into();
        self.comms.insert(key, n.clone());
        n
    }

    /// A cgroup's path as /proc gave it, made once.
    pub fn path(&mut self, path: String) -> Name {
        if let Some(n) = self.paths.get(path.as_str()) {
            return n.clone();
        }
        if self.paths.len() >= NAMES_KEPT {
            self.paths.clear();
        }
        let n: Name = path.into();
        self.paths.insert(n.clone());
        n
    }

    /// From now on each process is named with the pod and container its cgroup is, from
    /// `pods` (the session's, which reads each container's runtime file once).
    pub fn name_pods(&mut self, pods: std::sync::Arc<crate::kube::Pods>) {
        self.pods = Some(pods);
    }

    /// The pod labels of `cgroup` (none until [`Names::name_pods`]), made once it is
    /// settled.
    pub fn pod_of(&mut self, cgroup: &Name) -> PodLabels {
        // A path unknown ("?", a fresh name each time) is no container's.
        let Some(pods) = self.pods.as_ref().filter(|_| cgroup.starts_with('/')) else {
            return PodLabels::default();
        };
        let at = std::sync::Arc::as_ptr(cgroup).cast::<u8>() as usize;
        if let Some((_, l, again)) = self.kube.get(&at)
            && again.is_none_or(|t| t.elapsed() < crate::kube::RETRY)
        {
            return l.clone();
        }
        let (labels, settled) = pods.labels_settled(cgroup);
        let labels: PodLabels = labels.into();
        if self.kube.len() >= NAMES_KEPT {
            self.kube.clear();
        }
        let again = (!settled).then(std::time::Instant::now);
        self.kube
            .insert(at, (cgroup.clone(), labels.clone(), again));
        labels
    }
}

/// What /proc says of a process: there, gone, or nothing (a read that failed for
/// another reason than its absence: out of descriptors or memory, refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
    Unknown,
}

/// Whether process `pid` exists (a zombie still does: its last syscall may not be read
/// yet): /proc/PID is there and is a process, not a thread of another one reusing the
/// number. Only ENOENT and ESRCH say it is gone: a read that fails for want of a
/// descriptor (EMFILE, ENFILE), of memory or of a permission says nothing of it.
pub fn liveness(pid: u32) -> Liveness {
    status(pid).0
}

/// [`liveness`] and the process's threads (0 unless alive), from one read of
/// /proc/PID/status.
pub fn status(pid: u32) -> (Liveness, u32) {
    match crate::procfs::read_proc(&format!("/proc/{pid}/status")) {
        Ok(s) => status_in(&s, pid),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) => {
            (Liveness::Gone, 0)
        }
        Err(_) => (Liveness::Unknown, 0),
    }
}

/// [`status`] from the file's text.
fn status_in(text: &[u8], pid: u32) -> (Liveness, u32) {
    let field = |name: &[u8]| {
        text.split(|&b| b == b'\n')
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u32>().ok())
    };
    match field(b"Tgid:") {
        Some(tgid) if tgid == pid => (Liveness::Alive, field(b"Threads:").unwrap_or(0)),
        // A thread of another process.
        Some(_) => (Liveness::Gone, 0),
        None => (Liveness::Unknown, 0),
    }
}

/// Whether process `pid` may still exist: [`liveness`], a process /proc could not tell
/// about counted alive (counting a live one gone would free its kernel keys and lose
/// its counts; one gone is found so at a later reading).
pub fn alive(pid: u32) -> bool {
    liveness(pid) != Liveness::Gone
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows are named with their cgroup's pod labels once a view asked; a container
    /// whose runtime's file was not read is asked again only after the directory's
    /// retry time (its rows meanwhile cost no lock and no parse), one that was read is
    /// kept.
    #[test]
    fn pod_labels_kept_once_settled_and_asked_again_after_the_retry() {
        use crate::kube::{Directory, Pods, RETRY, Roots};
        const ID: &str = "3b2e5b0e2a9f4c7d8e1f0a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d";
        let dir = std::env::temp_dir().join(format!("syscost-pods-{}", std::process::id()));
        let file = Roots::under(&dir).containerd.join(ID).join("config.json");
        let cgroup: Name = format!("/kubepods/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/{ID}").into();
        let mut names = Names::default();
        assert!(names.pod_of(&cgroup).is_empty(), "none before a view asks");
        // A fresh directory each time: it reads the runtime's file when asked.
        let pods = || std::sync::Arc::new(Pods::from(Directory::new(Roots::under(&dir))));
        let pod = |names: &mut Names| {
            names
                .pod_of(&cgroup)
                .iter()
                .find(|(k, _)| *k == "pod")
                .map(|(_, v)| v.clone())
        };
        names.name_pods(pods());
        assert_eq!(pod(&mut names), None, "no file yet");
        assert!(
            names
                .pod_of(&cgroup)
                .iter()
                .any(|(k, _)| *k == "container_id")
        );
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            r#"{"annotations":{"io.kubernetes.cri.sandbox-name":"web"}}"#,
        )
        .unwrap();
        names.name_pods(pods());
        assert_eq!(pod(&mut names), None, "not asked again before the retry");
        for (_, _, again) in names.kube.values_mut() {
            *again = again.map(|t| t - RETRY);
        }
        assert_eq!(pod(&mut names).as_deref(), Some("web"), "asked again");
        std::fs::remove_file(&file).unwrap();
        names.name_pods(pods());
        assert_eq!(pod(&mut names).as_deref(), Some("web"), "kept once settled");
        let unknown: Name = "?".into();
        assert!(names.pod_of(&unknown).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A name made once serves the exit records and /proc alike (the same bytes, NUL
    /// ended or a line), and a cgroup path the same; what they say is not changed.
    #[test]
    fn names_are_made_once_and_say_what_was_read() {
        let mut names = Names::default();
        let mut record = [0u8; 16];
        record[..5].copy_from_slice(b"nginx");
        let from_record = names.comm(&record);
        let from_proc = names.comm(b"nginx");
        assert_eq!(&*from_record, "nginx");
        assert!(std::sync::Arc::ptr_eq(&from_record, &from_proc));
        assert_eq!(
            &*names.comm(b"\x1b[31mEVIL\x07"),
            &*decode(b"\x1b[31mEVIL\x07")
        );
        let a = names.path("/system.slice/a.service".to_string());
        let b = names.path("/system.slice/a.service".to_string());
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "/system.slice/a.service");
        assert_eq!(&*names.comm(&[b'x'; 20]), "x".repeat(20));
    }

    #[test]
    fn descendants_are_children_and_their_children() {
        let stat = b"42 (a b) c) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 10 20";
        assert_eq!(parent_and_start(stat), Some((7, 987654)));
        assert_eq!(parent_and_start(b"42 (x"), None);
        // This process started before now.
        let (_, mine) = parent_and_start_of(std::process::id()).unwrap();
        assert!(mine <= now_ticks());
        // This test's own child, and that child's child.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 600 & wait"])
            .spawn()
            .unwrap();
        let me = std::process::id();
        // Until both are seen, or a deadline no machine's speed reaches.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        let found = std::iter::from_fn(|| {
            (std::time::Instant::now() < deadline).then(|| {
                let d = descendants(me);
                let both = d.iter().any(|d| d.pid == child.id() && d.ppid == me)
                    && d.iter().any(|d| d.ppid == child.id());
                if !both {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                both.then_some(d)
            })
        })
        .flatten()
        .next();
        let _ = std::process::Command::new("pkill")
            .args(["-P", &child.id().to_string()])
            .status();
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.is_some(), "the child and its sleep never both found");
    }

    #[test]
    fn stat_with_odd_comm() {
        let s = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0";
        assert_eq!(
            parse_stat(s.as_bytes()),
            Some(("a) b (c)".to_string(), 4194560))
        );
        let k = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0";
        assert_ne!(parse_stat(k.as_bytes()).unwrap().1 & PF_KTHREAD, 0);
        assert_eq!(parse_stat(b"garbage"), None);
        // Any bytes in the comm, kept.
        let odd = b"7 (\x1b]0;x\x07\xff) S 1 7 7 0 -1 4194560 0 0";
        assert_eq!(
            parse_stat(odd).map(|(c, _)| syscost_report::untrusted::encode(&c)),
            Some(b"\x1b]0;x\x07\xff".to_vec())
        );
    }

    #[test]
    fn refuses_pid_0_kernel_threads_and_missing_pids() {
        assert_eq!(
            open(0).unwrap_err().to_string(),
            "PID 0 is the kernel's idle task, not a process syscost can profile"
        );
        // kthreadd is pid 2 on every Linux system.
        let e = open(2).unwrap_err().to_string();
        assert!(e.contains("kernel thread"), "{e}");
        let e = open(pid_max().unwrap() + 1).unwrap_err().to_string();
        assert!(e.starts_with("no process"), "{e}");
    }

    #[test]
    fn exec_comm_is_the_kernels() {
        use std::path::Path;
        assert_eq!(exec_comm(Path::new("/usr/bin/python3")), "python3");
        assert_eq!(
            exec_comm(Path::new("/x/a-very-long-program-name")),
            "a-very-long-pro"
        );
    }

    #[test]
    fn runs_in_the_initial_pid_namespace() {
        // The tests run on the host; the refusal inside a namespace is tested end to
        // end (tests/commands.rs, a_pid_namespace_of_its_own_is_refused_in_one_line).
        check_pid_namespace().unwrap();
    }

    /// A process out of descriptors cannot open /proc/PID/status: it still counts its
    /// own live pid alive, not gone. In a child (its descriptor limit lowered until
    /// opens fail with EMFILE), which says by its exit status: 0 when it holds, 2 when
    /// the opens did not fail, 3 when it counted itself gone, 4 when not `Unknown`.
    #[test]
    fn a_failed_read_of_proc_is_not_an_exit() {
        // SAFETY: the child calls only open, read, setrlimit and the allocator (glibc's
        // is fork-safe) before _exit; the parent waits for it.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork: {}", std::io::Error::last_os_error());
        if child == 0 {
            let code = (|| {
                let limit = libc::rlimit {
                    rlim_cur: 64,
                    rlim_max: 64,
                };
                // SAFETY: one valid rlimit.
                if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
                    return 5;
                }
                // Every descriptor up to the limit taken.
                // SAFETY: a NUL-terminated path; the descriptors stay open until _exit.
                while unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) } >= 0 {}
                let me = std::process::id();
                match std::fs::read(format!("/proc/{me}/status")) {
                    Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {}
                    _ => return 2,
                }
                if !alive(me) {
                    return 3;
                }
                if liveness(me) != Liveness::Unknown {
                    return 4;
                }
                0
            })();
            // SAFETY: ends the child at once, without the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(
            libc::WIFEXITED(status),
            "the child ended by a signal: {status}"
        );
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "2: opens did not fail, 3: counted gone, 4: not Unknown, 5: setrlimit failed"
        );
        // And with descriptors to spare: itself alive, a pid past pid_max gone.
        assert_eq!(liveness(std::process::id()), Liveness::Alive);
        // The name comes first and may hold anything but a newline.
        let text = b"Name:\tTgid: 7\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nThreads:\t3\n";
        assert_eq!(status_in(text, 42), (Liveness::Alive, 3));
        assert_eq!(
            status_in(text, 7),
            (Liveness::Gone, 0),
            "a thread of process 42"
        );
        assert_eq!(status_in(b"Name:\tx\n", 42), (Liveness::Unknown, 0));
        // A name in no UTF-8 (a text reader of the file failed on it: such a process
        // was never found gone).
        let text = b"Name:\t\xff\xfe\nTgid:\t42\nThreads:\t1\n";
        assert_eq!(status_in(text, 42), (Liveness::Alive, 1));
        assert_eq!(liveness(pid_max().unwrap() + 1), Liveness::Gone);
        assert!(!alive(pid_max().unwrap() + 1));
    }

    #[test]
    fn opens_itself() {
        let me = open(std::process::id()).unwrap();
        assert!(!me.comm.is_empty());
        assert!(!has_exited(&me.pidfd));
        assert!(status(me.pid).1 >= 1);
    }
}
