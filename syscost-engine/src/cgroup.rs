//! cgroup v2: where the hierarchy is mounted, the id and level of a cgroup (what the
//! kernel programs compare with), and the cgroup a process is in.

use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};

/// statfs magic of a cgroup v2 file system.
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// A cgroup v2 as the programs filter by it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    /// Its directory.
    pub dir: PathBuf,
    /// Its path in the hierarchy, as /proc/PID/cgroup writes it (`/system.slice/x`).
    pub path: String,
    /// The kernel's cgroup id (the directory's inode number).
    pub id: u64,
    /// Its depth: the root is level 0.
    pub level: u32,
}

/// The mount point of the cgroup v2 hierarchy, from a mountinfo text.
pub fn v2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS`
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount = fields.next()?;
        (fstype == "cgroup2" && root == "/").then(|| PathBuf::from(unescape(mount)))
    })
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where this host mounts cgroup v2, or why there is none.
pub fn v2_mount() -> Result<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .context("cannot read /proc/self/mountinfo")?;
    v2_mount_in(&info).context(
        "no cgroup v2 hierarchy is mounted (no cgroup2 line in /proc/self/mountinfo): mount one with `mount -t cgroup2 none /sys/fs/cgroup/unified`",
    )
}

/// Resolves `--cgroup PATH`: a directory of the v2 mount, or a path in the hierarchy
/// (`/system.slice/ssh.service`, as /proc/PID/cgroup shows it).
pub fn resolve(arg: &Path) -> Result<Cgroup> {
    check_namespace()?;
    let mount = v2_mount()?;
    let dir = if arg.starts_with(&mount) {
        arg.to_path_buf()
    } else {
        mount.join(arg.strip_prefix("/").unwrap_or(arg))
    };
    let meta = std::fs::metadata(&dir).with_context(|| {
        format!(
            "no cgroup {} (looked for {}; cgroup v2 is mounted at {})",
            arg.display(),
            dir.display(),
            mount.display()
        )
    })?;
    if !meta.is_dir() || !is_cgroup2(&dir) {
        bail!("{} is not a cgroup v2 directory", dir.display());
    }
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let rel = dir
        .strip_prefix(&mount)
        .with_context(|| format!("{} is outside {}", dir.display(), mount.display()))?;
    let level = rel.components().count() as u32;
    let path = format!(
        "/{}",
        syscost_report::untrusted::decode(rel.as_os_str().as_encoded_bytes())
    );
    Ok(Cgroup {
        dir,
        path,
        id: meta.ino(),
        level,
    })
}

/// Refuses a cgroup namespace of syscost's own (a container's): paths and levels there
/// start below the hierarchy's root, the kernel's ids and levels do not.
fn check_namespace() -> Result<()> {
    let ns = |p: &str| std::fs::metadata(p).map(|m| m.ino()).ok();
    match (ns("/proc/self/ns/cgroup"), ns("/proc/1/ns/cgroup")) {
        (Some(a), Some(b)) if a != b => bail!(
            "syscost runs in a cgroup namespace of its own: --cgroup needs the host's (docker run --cgroupns=host, or run it on the host)"
        ),
        _ => Ok(()),
    }
}

fn is_cgroup2(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills one struct for a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == CGROUP2_SUPER_MAGIC }
}

/// Paths of cgroup ids (for processes gone before their /proc entry was read), from a
/// walk of the v2 hierarchy, walked again at most once a second when an id is unknown.
#[derive(Debug, Default)]
pub struct CgroupNames {
    by_id: std::collections::HashMap<u64, String>,
    walked: Option<std::time::Instant>,
}

impl CgroupNames {
    pub fn path_of(&mut self, id: u64) -> Option<String> {
        if let Some(p) = self.by_id.get(&id) {
            return Some(p.clone());
        }
        if self
            .walked
            .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1))
        {
            return None;
        }
        self.walked = Some(std::time::Instant::now());
        let mount = v2_mount().ok()?;
        self.by_id.clear();
        let mut stack = vec![mount.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue;
            };
            let rel = dir.strip_prefix(&mount).unwrap_or(Path::new(""));
            let rel = syscost_report::untrusted::decode(rel.as_os_str().as_encoded_bytes());
            self.by_id.insert(meta.ino(), format!("/{rel}"));
            if let Ok(entries) = std::fs::read_dir(&dir) {
                stack.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
        self.by_id.get(&id).cloned()
    }
}

/// The v2 cgroup path of a process (`/system.slice/ssh.service`), if it is readable.
pub fn of_process(pid: u32) -> Option<String> {
    // Bytes: a cgroup's name is whoever made it's to choose.
    let text =
        syscost_report::untrusted::decode(&std::fs::read(format!("/proc/{pid}/cgroup")).ok()?);
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_v2_mount_of_a_hybrid_host() {
        let info = "\
25 30 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/systemd rw shared:11 - cgroup cgroup rw,name=systemd
";
        assert_eq!(
            v2_mount_in(info),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(v2_mount_in("41 31 0:38 / /x rw - cgroup cgroup rw"), None);
        // A bind mount of a sub-tree is not the hierarchy's root.
        assert_eq!(
            v2_mount_in(
                "41 31 0:38 /a /x rw - cgroup2 cgroup2 rw\n43 1 0:38 / /c\\040g rw - cgroup2 none rw"
            ),
            Some(PathBuf::from("/c g"))
        );
    }
}
