//! The files syscost writes, as root, where another user may have been first: a link
//! at the path is refused and its target left alone, a FIFO does not stall it, nothing
//! at the path is opened or made before the end, a new file is mode 0600 whatever the
//! umask and belongs to the user it is for (`run -u USER`, else the one who ran sudo).
//! The tests that run a command need root; those that fail before one runs do not.

mod common;

use std::{
    ffi::CString,
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
    path::{Path, PathBuf},
    process::Command,
};

use common::*;
use syscost_report::output::is_temporary;

/// A scratch directory for the tests that need no root, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("syscost-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The user `nobody` and its group, from the password database.
fn nobody() -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let o = output(Command::new("id").args([flag, "nobody"]));
        assert!(o.status.success(), "id {flag} nobody: {}", stderr(&o));
        stdout(&o).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

/// Watches `path` with inotify from now on; `events` gives what happened to it since,
/// each as its mask and, for a directory, the name it concerns.
struct Watch(i32);

impl Watch {
    fn new(path: &Path, mask: u32) -> Self {
        // SAFETY: plain syscalls on a NUL-terminated path.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            assert!(fd >= 0, "inotify_init1");
            let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            assert!(
                libc::inotify_add_watch(fd, c.as_ptr(), mask) >= 0,
                "inotify_add_watch"
            );
            Self(fd)
        }
    }

    /// The events queued so far (the kernel queues each as the call that makes it
    /// returns: everything a process did is there once it has exited).
    fn events(&self) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reads into the buffer given.
            let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return out;
            }
            let mut at = 0;
            while at < n as usize {
                let field =
                    |o: usize| u32::from_ne_bytes(buf[at + o..at + o + 4].try_into().unwrap());
                let (mask, len) = (field(4), field(12) as usize);
                let name = &buf[at + 16..at + 16 + len];
                let name = String::from_utf8_lossy(name)
                    .trim_end_matches('\0')
                    .to_string();
                out.push((mask, name));
                at += 16 + len;
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: closes our descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// `syscost run --json FILE -- CMD` failing after the check of its outputs (no such
/// command): what it does to FILE before it would have written it.
fn fails_after_the_check(json: &Path) -> String {
    let o = output(
        syscost()
            .args(["run", "--json"])
            .arg(json)
            .args(["--", "no-such-command-xyz"]),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    stderr(&o)
}

/// The check at the start opens, makes and removes nothing at the path: a file there
/// keeps its contents and is not even opened, an absent one is not made (only the
/// probe of the directory, under a name of its own, is); a FIFO is refused at once
/// rather than waited on; /dev/null passes.
#[test]
fn the_check_at_the_start_leaves_the_path_alone() {
    let d = Scratch::new("check");
    let existing = d.path("existing.json");
    std::fs::write(&existing, "kept").unwrap();
    let file = Watch::new(&existing, libc::IN_ALL_EVENTS);
    assert_eq!(
        fails_after_the_check(&existing),
        "syscost: command not found: no-such-command-xyz (not in PATH)\n"
    );
    assert_eq!(file.events(), [], "the file was touched");
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "kept");

    let absent = d.path("absent.json");
    let dir = Watch::new(&d.0, libc::IN_CREATE | libc::IN_DELETE | libc::IN_OPEN);
    fails_after_the_check(&absent);
    let events = dir.events();
    assert!(!absent.exists());
    // Events without a name are the directory's own (its opening).
    assert!(
        events
            .iter()
            .all(|(_, name)| name.is_empty() || is_temporary(name.as_ref())),
        "{events:?}"
    );
    assert!(
        events.iter().any(|(_, name)| is_temporary(name.as_ref())),
        "the directory was probed: {events:?}"
    );

    let fifo = d.path("fifo.json");
    let c = CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert_eq!(
        fails_after_the_check(&fifo),
        format!(
            "syscost: {} is a FIFO: syscost writes regular files only; give the path of a file (or /dev/null)\n",
            fifo.display()
        )
    );
    assert_eq!(
        fails_after_the_check(Path::new("/dev/null")),
        "syscost: command not found: no-such-command-xyz (not in PATH)\n"
    );
    let entries: Vec<_> = std::fs::read_dir(&d.0).unwrap().collect();
    assert_eq!(entries.len(), 2, "existing.json and fifo.json alone");
}

/// `--json` naming a link (to a file of root's, say) is refused in one line, the link
/// and its target as they were; so is `trace -o` and `flame -o`, which need no root.
#[test]
fn a_link_at_the_path_is_refused_and_its_target_left_alone() {
    let d = Scratch::new("link");
    let victim = d.path("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = d.path("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let refused = format!(
        "syscost: {} is a symbolic link: syscost does not write through links; remove it or give the path of a file\n",
        link.display()
    );
    assert_eq!(fails_after_the_check(&link), refused);
    let folded = d.path("in.folded");
    std::fs::write(&folded, "app;main;read 3\n").unwrap();
    let o = output(syscost().arg("flame").arg(&folded).arg("-o").arg(&link));
    assert_eq!((o.status.code(), stderr(&o)), (Some(1), refused.clone()));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    // A run to its end, as root.
    let Some(_t) = root_test!() else {
        return;
    };
    let o = output(
        syscost()
            .args(["run", "--json"])
            .arg(&link)
            .args(["--", "true"]),
    );
    assert_eq!((o.status.code(), stderr(&o)), (Some(1), refused));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

/// Every file of a run is new, mode 0600 under a lax umask as under a strict one, and
/// replaces what was at its path (a file of another mode, hard-linked elsewhere) rather
/// than writing into it.
#[test]
fn outputs_are_mode_0600_whatever_the_umask() {
    let Some(t) = root_test!() else {
        return;
    };
    for umask in ["022", "000", "077"] {
        let (json, table, stacks) = (
            t.path(&format!("p{umask}.json")),
            t.path(&format!("t{umask}.txt")),
            t.path(&format!("s{umask}.folded")),
        );
        std::fs::write(&table, "old").unwrap();
        std::fs::set_permissions(&table, std::fs::Permissions::from_mode(0o644)).unwrap();
        let other_name = t.path(&format!("other{umask}"));
        std::fs::hard_link(&table, &other_name).unwrap();
        let o = output(Command::new("sh").arg("-c").arg(format!(
            "umask {umask} && exec {} run --json {} -o {} --stacks {} -- true",
            env!("CARGO_BIN_EXE_syscost"),
            json.display(),
            table.display(),
            stacks.display()
        )));
        assert!(o.status.success(), "{}", stderr(&o));
        for f in [&json, &table, &stacks] {
            let m = std::fs::metadata(f).unwrap();
            assert_eq!(m.mode() & 0o7777, 0o600, "umask {umask}: {}", f.display());
            assert_eq!((m.uid(), m.gid()), (0, 0), "no sudo: root's");
        }
        assert!(std::fs::read_to_string(&table).unwrap().contains("total"));
        assert_eq!(std::fs::read_to_string(&other_name).unwrap(), "old");
    }
    let names: Vec<String> = std::fs::read_dir(&t.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| is_temporary(n.as_ref())),
        "a temporary file left: {names:?}"
    );
}

/// Manual pages are for every user to read: 0644 whatever the umask (a tarball's pages
/// keep the mode `syscost man` gave them).
#[test]
fn manual_pages_are_mode_0644_whatever_the_umask() {
    let dir = std::env::temp_dir().join(format!("syscost-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = output(Command::new("sh").arg("-c").arg(format!(
        "umask 077 && exec {} man {}",
        env!("CARGO_BIN_EXE_syscost"),
        dir.display()
    )));
    let pages: Vec<(String, u32)> = std::fs::read_dir(&dir)
        .map(|d| {
            d.map(|e| {
                let e = e.unwrap();
                let mode = e.metadata().unwrap().mode() & 0o7777;
                (e.file_name().to_string_lossy().into_owned(), mode)
            })
            .collect()
        })
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(pages.iter().any(|(n, _)| n == "syscost.1"), "{pages:?}");
    assert!(pages.iter().all(|&(_, m)| m == 0o644), "{pages:?}");
}

/// Under sudo (SUDO_UID, SUDO_GID) the files are the caller's; with `run -u USER` they
/// are USER's, whoever ran sudo.
#[test]
fn outputs_belong_to_the_user_they_are_for() {
    let Some(t) = root_test!() else {
        return;
    };
    let (uid, gid) = nobody();
    let owners = |files: &[&Path]| -> Vec<(u32, u32)> {
        files
            .iter()
            .map(|f| {
                let m = std::fs::metadata(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                (m.uid(), m.gid())
            })
            .collect()
    };
    // Under sudo, by nobody.
    let (json, table, stacks) = (t.path("p.json"), t.path("t.txt"), t.path("s.folded"));
    let o = output(
        syscost()
            .env("SUDO_UID", uid.to_string())
            .env("SUDO_GID", gid.to_string())
            .args(["run", "--json"])
            .arg(&json)
            .arg("-o")
            .arg(&table)
            .arg("--stacks")
            .arg(&stacks)
            .args(["--", "true"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(owners(&[&json, &table, &stacks]), [(uid, gid); 3]);
    // What is written from a profile: flame's and trace's outputs.
    let flame = t.path("f.folded");
    let o = output(
        syscost()
            .env("SUDO_UID", uid.to_string())
            .env("SUDO_GID", gid.to_string())
            .arg("flame")
            .arg(&stacks)
            .arg("-o")
            .arg(&flame),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(owners(&[&flame]), [(uid, gid)]);
    // -u nobody, under the sudo of another user (daemon, uid 1): nobody's.
    let json = t.path("u.json");
    let o = output(
        syscost()
            .env("SUDO_UID", "1")
            .env("SUDO_GID", "1")
            .env_remove("LD_LIBRARY_PATH")
            .args(["run", "-u", "nobody", "--json"])
            .arg(&json)
            .args(["--", "true"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(owners(&[&json]), [(uid, gid)]);
    let m = std::fs::metadata(&json).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600);
}

/// `--json /dev/stdout`, as pipelines write it: the profile comes out on syscost's
/// standard output (a link, but the user's own stream, not a file to replace).
#[test]
fn the_profile_goes_to_standard_output_when_asked() {
    let Some(_t) = root_test!() else {
        return;
    };
    let o = output(syscost().args([
        "run",
        "-o",
        "/dev/null",
        "--json",
        "/dev/stdout",
        "--",
        "/bin/true",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not the profile on stdout ({e}): {}", stdout(&o)));
    assert!(
        p["syscalls"].as_array().is_some_and(|s| !s.is_empty()),
        "{p}"
    );
}
