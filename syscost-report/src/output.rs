//! The files syscost writes (profiles, tables, stacks, flame graphs, traces, manual
//! pages). syscost runs as root and the directory may be another user's (`/tmp`, a
//! home), so a file is never written through what is already at its path: it is made
//! apart under a name no one can have guessed, with mode 0600 whatever the umask, given
//! to the user it is for, and renamed onto the path whole (a rename replaces a link or
//! a file, never follows the one or writes into the other). Nothing at the path is
//! opened, created or removed before that rename.
//!
//! [`check`], at the start of a command, refuses a path that is a symbolic link or not
//! a regular file and a directory that takes no new file, so that a long profile does
//! not end in an error; [`write()`] at the end.

use std::{
    ffi::{CStr, CString, OsStr},
    fs::File,
    io::Write as _,
    os::{
        fd::{AsRawFd as _, FromRawFd as _},
        unix::{ffi::OsStrExt as _, fs::PermissionsExt as _},
    },
    path::Path,
};

use anyhow::{Context as _, Result, bail};

/// The user a file is given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

impl Owner {
    /// The user who ran syscost through sudo (`SUDO_UID`, `SUDO_GID`), when syscost runs
    /// as root: its files are theirs, as they would be without sudo.
    pub fn invoker() -> Option<Self> {
        // SAFETY: plain getter.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let id = |var: &str| std::env::var(var).ok()?.trim().parse::<u32>().ok();
        Some(Self {
            uid: id("SUDO_UID")?,
            gid: id("SUDO_GID")?,
        })
    }
}

/// Checks, without touching `path`, that [`write()`] can put a file there: the path is
/// absent, a regular file or `/dev/null`, and its directory takes a new file (one is
/// made there and removed).
pub fn check(path: &Path) -> Result<()> {
    if stream(path).is_some() {
        return Ok(());
    }
    let at = At::open(path)?;
    let p = path.display();
    match at.existing()? {
        Existing::Replaceable => {}
        Existing::Null => return Ok(()),
        Existing::Link => bail!(
            "{p} is a symbolic link: syscost does not write through links; remove it or give the path of a file"
        ),
        Existing::Other(what) => bail!(
            "{p} is {what}: syscost writes regular files only; give the path of a file (or /dev/null)"
        ),
    }
    let (probe, name) = at.temporary()?;
    drop(probe);
    at.remove(&name);
    Ok(())
}

/// Writes `bytes` to `path`: to a new file of mode 0600 in the same directory, synced,
/// given to `owner` (when there is one), then renamed onto `path`. The new file is
/// removed on any failure; what was at `path` is left as it was. `/dev/null` takes
/// nothing.
pub fn write(path: &Path, bytes: &[u8], owner: Option<Owner>) -> Result<()> {
    write_mode(path, bytes, owner, 0o600)
}

/// [`write()`] with the file's mode `mode` (manual pages, 0644: for every user to read).
pub fn write_mode(path: &Path, bytes: &[u8], owner: Option<Owner>, mode: u32) -> Result<()> {
    if let Some(fd) = stream(path) {
        let mut out: Box<dyn std::io::Write> = if fd == 1 {
            Box::new(std::io::stdout().lock())
        } else {
            Box::new(std::io::stderr().lock())
        };
        return out
            .write_all(bytes)
            .and_then(|()| out.flush())
            .with_context(|| format!("cannot write {}", path.display()));
    }
    let at = At::open(path)?;
    // Anything that appeared since `check` is replaced by the rename, never followed
    // (a directory makes the rename fail).
    if at.existing()? == Existing::Null {
        return Ok(());
    }
    let (mut file, temporary) = at.temporary()?;
    let pending = Pending::keep(&at, &temporary);
    let done = (|| -> std::io::Result<()> {
        // The mode the umask may have narrowed (or, with a lax umask, not).
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Some(o) = owner {
            std::os::unix::fs::fchown(&file, Some(o.uid), Some(o.gid))?;
        }
        drop(file);
        // SAFETY: both names are NUL-terminated and relative to the directory's fd.
        let r = unsafe {
            libc::renameat(
                at.dir.as_raw_fd(),
                temporary.as_ptr(),
                at.dir.as_raw_fd(),
                at.name.as_ptr(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })();
    if let Err(e) = done {
        at.remove(&temporary);
        drop(pending);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    drop(pending);
    // The rename itself made durable; a file system that cannot sync a directory has
    // the file anyway.
    let _ = at.dir.sync_all();
    Ok(())
}

/// The temporary file being written, for [`abandon`]: its directory's descriptor and
/// its name (NUL-terminated), set while [`PENDING_SET`] is true.
struct PendingFile(std::cell::UnsafeCell<(i32, [u8; PENDING_NAME])>);
// SAFETY: written only by the writer that claimed PENDING_SET (false to true) before it
// publishes it (the flag set to true, release); read only after the flag is seen true
// (acquire), by `abandon`, from a signal handler.
unsafe impl Sync for PendingFile {}
const PENDING_NAME: usize = 128;
static PENDING: PendingFile = PendingFile(std::cell::UnsafeCell::new((-1, [0; PENDING_NAME])));
/// Claimed by a writer (it fills [`PENDING`]), then published.
static PENDING_CLAIMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// [`PENDING`] holds a file being written.
static PENDING_SET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The registration of one temporary file in [`PENDING`], undone when dropped (the file
/// renamed or removed). A second writer at the same time is not registered.
struct Pending(bool);

impl Pending {
    fn keep(at: &At<'_>, name: &CStr) -> Self {
        use std::sync::atomic::Ordering;
        let bytes = name.to_bytes_with_nul();
        if bytes.len() > PENDING_NAME
            || PENDING_CLAIMED
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return Self(false);
        }
        // SAFETY: claimed above: no one else writes it, and `abandon` reads it only once
        // the flag below is set.
        unsafe {
            let p = &mut *PENDING.0.get();
            p.0 = at.dir.as_raw_fd();
            p.1[..bytes.len()].copy_from_slice(bytes);
        }
        PENDING_SET.store(true, Ordering::Release);
        Self(true)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        if self.0 {
            PENDING_SET.store(false, Ordering::Release);
            PENDING_CLAIMED.store(false, Ordering::Release);
        }
    }
}

/// Removes the temporary file [`write()`] is writing, if any: syscost is ending at once
/// (a second signal), and leaves no half-written file behind. Async-signal-safe: an
/// atomic load and `unlinkat`.
pub fn abandon() {
    use std::sync::atomic::Ordering;
    if PENDING_SET.load(Ordering::Acquire) {
        // SAFETY: published complete before the flag was set, and not written while it
        // is; the name is NUL-terminated within the buffer. A file the rename already
        // took is gone from this name: unlinkat then fails harmlessly (ENOENT).
        unsafe {
            let p = &*PENDING.0.get();
            libc::unlinkat(p.0, p.1.as_ptr().cast(), 0);
        }
    }
}

/// `/dev/stdout` and `/dev/stderr` as the user typed them: syscost's own standard
/// output or error (1 or 2), written as streams (links both, which a file is never
/// written through).
fn stream(path: &Path) -> Option<i32> {
    match path.as_os_str().as_bytes() {
        b"/dev/stdout" => Some(1),
        b"/dev/stderr" => Some(2),
        _ => None,
    }
}

/// What is at the path now.
#[derive(Debug, PartialEq, Eq)]
enum Existing {
    /// Nothing, or a regular file.
    Replaceable,
    /// The null device: writing there is writing nowhere.
    Null,
    /// A symbolic link.
    Link,
    /// Anything else: what it is.
    Other(&'static str),
}

/// A path as its directory (open) and its name in it: every step below is relative to
/// that one directory, whatever happens to the path's other components meanwhile.
struct At<'a> {
    path: &'a Path,
    dir: File,
    name: CString,
}

impl<'a> At<'a> {
    fn open(path: &'a Path) -> Result<Self> {
        let cannot = || format!("cannot write {}", path.display());
        let name = path
            .file_name()
            .filter(|_| !path.as_os_str().as_bytes().ends_with(b"/"))
            .with_context(|| {
                format!(
                    "cannot write {}: it names a directory; give the path of a file",
                    path.display()
                )
            })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir_c = CString::new(dir.as_os_str().as_bytes()).with_context(cannot)?;
        // SAFETY: a NUL-terminated path; the fd is owned by the File made of it.
        let fd = unsafe {
            libc::open(
                dir_c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).with_context(cannot);
        }
        Ok(Self {
            path,
            // SAFETY: a descriptor just opened, owned by nothing else.
            dir: unsafe { File::from_raw_fd(fd) },
            name: CString::new(name.as_bytes()).with_context(cannot)?,
        })
    }

    /// What is at the path, never followed.
    fn existing(&self) -> Result<Existing> {
        // SAFETY: `st` is filled by fstatat; the name is NUL-terminated.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::fstatat(
                self.dir.as_raw_fd(),
                self.name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOENT) {
                return Ok(Existing::Replaceable);
            }
            return Err(e).with_context(|| format!("cannot write {}", self.path.display()));
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Existing::Replaceable,
            libc::S_IFCHR if st.st_rdev == libc::makedev(1, 3) => Existing::Null,
            libc::S_IFLNK => Existing::Link,
            libc::S_IFDIR => Existing::Other("a directory"),
            libc::S_IFIFO => Existing::Other("a FIFO"),
            libc::S_IFSOCK => Existing::Other("a socket"),
            libc::S_IFCHR => Existing::Other("a character device"),
            libc::S_IFBLK => Existing::Other("a block device"),
            _ => Existing::Other("not a regular file"),
        })
    }

    /// A new file in the directory, mode 0600 (at most: the umask applies until it is
    /// set again), under a name made for it, and that name.
    fn temporary(&self) -> Result<(File, CString)> {
        // The name's start, for someone who finds one left by a syscost killed while
        // writing; cut so that the whole stays within NAME_MAX.
        let stem: Vec<u8> = self.name.as_bytes().iter().copied().take(64).collect();
        let mut last = None;
        for _ in 0..16 {
            let mut random = [0u8; 8];
            // SAFETY: fills the 8 bytes given.
            let n = unsafe { libc::getrandom(random.as_mut_ptr().cast(), 8, 0) };
            if n != 8 {
                last = Some(std::io::Error::last_os_error());
                continue;
            }
            let mut name = b".".to_vec();
            name.extend_from_slice(&stem);
            name.extend_from_slice(
                format!(".{:016x}.syscost-tmp", u64::from_ne_bytes(random)).as_bytes(),
            );
            let name = CString::new(name).expect("no NUL: made of a C string and hex digits");
            // SAFETY: a NUL-terminated name relative to the directory's fd; the fd is
            // owned by the File made of it.
            let fd = unsafe {
                libc::openat(
                    self.dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o600 as libc::c_uint,
                )
            };
            if fd >= 0 {
                // SAFETY: a descriptor just opened, owned by nothing else.
                return Ok((unsafe { File::from_raw_fd(fd) }, name));
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                last = Some(e);
                break;
            }
            last = Some(e);
        }
        let e = last.expect("an attempt was made");
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Err(e).with_context(|| {
            format!(
                "cannot write {}: no new file can be made in {}",
                self.path.display(),
                dir.display()
            )
        })
    }

    /// Removes the file called `name` in the directory (one this made).
    fn remove(&self, name: &CStr) {
        // SAFETY: a NUL-terminated name relative to the directory's fd.
        unsafe { libc::unlinkat(self.dir.as_raw_fd(), name.as_ptr(), 0) };
    }
}

/// The name [`write()`] gives its temporary files in `dir`, for tests that look for them.
pub fn is_temporary(name: &OsStr) -> bool {
    let b = name.as_bytes();
    b.starts_with(b".") && b.ends_with(b".syscost-tmp")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt as _;

    struct Dir(std::path::PathBuf);
    impl Dir {
        fn new(name: &str) -> Self {
            let d =
                std::env::temp_dir().join(format!("syscost-output-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Self(d)
        }
        fn names(&self) -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn unwritable_paths_fail_early() {
        let e = check(Path::new("/nonexistent-dir/x.json")).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "cannot write /nonexistent-dir/x.json: No such file or directory (os error 2)"
        );
        let e = check(Path::new("/tmp/")).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "cannot write /tmp/: it names a directory; give the path of a file"
        );
    }

    #[test]
    fn links_and_special_files_are_refused_and_left_alone() {
        let d = Dir::new("refused");
        let victim = d.0.join("victim");
        std::fs::write(&victim, "kept").unwrap();
        let link = d.0.join("out.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert_eq!(
            format!("{:#}", check(&link).unwrap_err()),
            format!(
                "{} is a symbolic link: syscost does not write through links; remove it or give the path of a file",
                link.display()
            )
        );
        let sub = d.0.join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(
            format!("{:#}", check(&sub).unwrap_err()).ends_with(
                "sub is a directory: syscost writes regular files only; give the path of a file (or /dev/null)"
            )
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept");
        assert_eq!(
            d.names(),
            ["out.json", "sub", "victim"],
            "the probe is gone"
        );
        // At the end, a link that appeared meanwhile is replaced, its target untouched.
        write(&link, b"new", None).unwrap();
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept");
        check(Path::new("/dev/null")).unwrap();
        write(Path::new("/dev/null"), b"nothing", None).unwrap();
        // syscost's own streams, by the names the shells use.
        check(Path::new("/dev/stdout")).unwrap();
        check(Path::new("/dev/stderr")).unwrap();
        assert_eq!(stream(Path::new("/dev/stderr")), Some(2));
        assert_eq!(stream(Path::new("/dev/./stdout")), None);
    }

    #[test]
    fn a_file_is_replaced_whole_with_mode_0600() {
        let d = Dir::new("whole");
        let path = d.0.join("t.txt");
        std::fs::write(&path, "old contents, longer than the new").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let before = std::fs::metadata(&path).unwrap().ino();
        check(&path).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().ino(),
            before,
            "check touched it"
        );
        write(&path, b"new", None).unwrap();
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(m.mode() & 0o777, 0o600);
        assert_ne!(m.ino(), before, "a new file, renamed onto the path");
        assert_eq!(d.names(), ["t.txt"]);
        // A relative path is in the working directory.
        assert!(write(Path::new("no-such-dir/x"), b"", None).is_err());
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let d = Dir::new("failed");
        let sub = d.0.join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("inside"), "").unwrap();
        // The rename onto a directory that is not empty fails after the file was made.
        let e = write(&sub, b"x", None).unwrap_err();
        assert!(format!("{e:#}").starts_with("cannot write"), "{e:#}");
        assert_eq!(d.names(), ["sub"]);
        assert!(is_temporary(OsStr::new(
            ".t.txt.0123456789abcdef.syscost-tmp"
        )));
    }

    #[test]
    fn the_file_being_written_is_removed_when_syscost_ends_at_once() {
        let d = Dir::new("abandon");
        let path = d.0.join("p.json");
        let at = At::open(&path).unwrap();
        let (file, name) = at.temporary().unwrap();
        drop(file);
        {
            // Another test's write may hold the one registration for a moment.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let _pending = loop {
                let p = Pending::keep(&at, &name);
                if p.0 {
                    break p;
                }
                assert!(std::time::Instant::now() < deadline, "never registered");
                std::thread::yield_now();
            };
            assert_eq!(d.names().len(), 1);
            abandon();
            assert!(d.names().is_empty(), "{:?}", d.names());
        }
    }
}
