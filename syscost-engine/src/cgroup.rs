//! cgroup v2: where the hierarchy is mounted, the id and level of a cgroup (what the
//! kernel programs compare with), and the cgroup a process is in.

use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};
use syscost_report::report::top::Name;

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

/// The cgroup v2 mounts that may be the hierarchy's root, from a mountinfo text, in its
/// order. A mount's root field is relative to the reader's cgroup namespace: `/` is the
/// namespace's root (the hierarchy's own on the host), and a root made only of climbs
/// (`/../..`) is above it, so, in a container of its own namespace, possibly the host's
/// hierarchy mounted into it. A mount of any other sub-tree is not a candidate.
pub fn v2_mounts_in(mountinfo: &str) -> Vec<PathBuf> {
    v2_mounts_with_climbs_in(mountinfo)
        .into_iter()
        .map(|(m, _)| m)
        .collect()
}

/// [`v2_mounts_in`], each with the climbs of its root field (how far the mount's root
/// is above the reader's cgroup namespace root).
fn v2_mounts_with_climbs_in(mountinfo: &str) -> Vec<(PathBuf, usize)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS`
            let (left, right) = line.split_once(" - ")?;
            let fstype = right.split_whitespace().next()?;
            let mut fields = left.split_whitespace();
            let root = fields.nth(3)?;
            let mount = fields.next()?;
            let above = root == "/" || root.split('/').skip(1).all(|s| s == "..");
            let climbs = root.split('/').filter(|s| *s == "..").count();
            (fstype == "cgroup2" && above).then(|| (PathBuf::from(unescape(mount)), climbs))
        })
        .collect()
}

/// The mount point of the cgroup v2 hierarchy, from a mountinfo text: the first mount of
/// a namespace's root (see [`v2_mounts_in`]).
pub fn v2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    v2_mounts_in(mountinfo).into_iter().next()
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

/// Where this host mounts cgroup v2, or why there is none: the hierarchy's root where
/// one is mounted (a container of its own cgroup namespace that mounted the host's
/// hierarchy, say at /host/sys/fs/cgroup, names every cgroup from there), else its
/// namespace's root.
pub fn v2_mount() -> Result<PathBuf> {
    Ok(hierarchy()?.mount)
}

/// Where cgroups are named from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// The mount point.
    pub mount: PathBuf,
    /// It is the hierarchy's root: paths below it are the host's, as the kernel's ids
    /// and levels are. Not so for a namespace's root mounted in a container.
    pub is_root: bool,
    /// How deep syscost's cgroup namespace root is in the hierarchy (0 in the host's).
    pub ns_depth: usize,
}

/// The cgroup v2 hierarchy as [`v2_mount`] finds it.
pub fn hierarchy() -> Result<Hierarchy> {
    // Bytes: a mount point's name is whoever mounted it's to choose (a FUSE mount on a
    // directory named in no UTF-8 must not hide the cgroup hierarchy).
    let info = std::fs::read("/proc/self/mountinfo").context("cannot read /proc/self/mountinfo")?;
    let mounts = v2_mounts_with_climbs_in(&String::from_utf8_lossy(&info));
    if let Some((root, climbs)) = mounts.iter().find(|(m, _)| is_hierarchy_root(m)) {
        return Ok(Hierarchy {
            mount: root.clone(),
            is_root: true,
            ns_depth: *climbs,
        });
    }
    let (mount, _) = mounts.into_iter().next().context(
        "no cgroup v2 hierarchy is mounted (no cgroup2 line in /proc/self/mountinfo): mount one with `mount -t cgroup2 none /sys/fs/cgroup/unified`",
    )?;
    Ok(Hierarchy {
        mount,
        is_root: !in_own_namespace(),
        ns_depth: 0,
    })
}

/// The hierarchy's root cgroup lacks the files every other has (`cgroup.type`,
/// `cgroup.events`); its directory's inode, its id, is 1.
fn is_hierarchy_root(dir: &Path) -> bool {
    let meta = std::fs::symlink_metadata(dir);
    meta.is_ok_and(|m| m.is_dir())
        && is_cgroup2(dir)
        && std::fs::symlink_metadata(dir.join("cgroup.procs")).is_ok()
        && std::fs::symlink_metadata(dir.join("cgroup.type")).is_err()
}

/// The inode number of the initial cgroup namespace, the host's (the kernel's
/// `CGROUP_NS_INIT_INO`, fixed since namespaces got inode numbers of their own).
const INIT_CGROUP_NS: u64 = 0xEFFF_FFFB;

/// Whether syscost runs in a cgroup namespace other than the host's: there
/// /proc/PID/cgroup paths are relative to its own namespace's root, and only the
/// kernel's ids name cgroups. Told by the namespace's inode number, which needs no look
/// at another process (a container without CAP_SYS_PTRACE may not read process 1's).
pub fn in_own_namespace() -> bool {
    static OWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OWN.get_or_init(|| {
        std::fs::metadata("/proc/self/ns/cgroup").is_ok_and(|m| m.ino() != INIT_CGROUP_NS)
    })
}

/// Resolves `--cgroup PATH`: a directory of the v2 mount, or a path in the hierarchy
/// (`/system.slice/ssh.service`, as /proc/PID/cgroup shows it).
pub fn resolve(arg: &Path) -> Result<Cgroup> {
    let Hierarchy { mount, is_root, .. } = hierarchy()?;
    if !is_root {
        bail!(
            "syscost runs in a cgroup namespace of its own and the host's cgroup hierarchy is not mounted: mount the host's /sys/fs/cgroup read-only (a hostPath volume at /host/sys/fs/cgroup, or podman -v /sys/fs/cgroup:/host/sys/fs/cgroup:ro), or share the host's (--cgroupns=host)"
        );
    }
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

fn is_cgroup2(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills one struct for a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == CGROUP2_SUPER_MAGIC }
}

/// Most directories one walk of the hierarchy reads: a host with more cgroups names the
/// rest "?" rather than let a walk grow without bound.
pub const WALK_LIMIT: usize = 100_000;

/// Paths of cgroup ids, from a walk of the v2 hierarchy (the id is the directory's inode
/// number). They name the cgroups of processes gone before their /proc entry was read,
/// and, where syscost runs in a cgroup namespace of its own, every process's.
///
/// An unknown id walks the hierarchy again at most once a second, but an id above every
/// id the last walk saw is a cgroup made since (the kernel gives cgroup ids in rising
/// order), so it walks again at once, up to [`QUICK_WALKS`] times a second: a process
/// that runs and exits in a cgroup made a moment after a walk is still named.
#[derive(Debug, Default)]
pub struct CgroupNames {
    by_id: std::collections::HashMap<u64, Name>,
    walked: Option<std::time::Instant>,
    /// The largest id the last walk saw.
    newest: u64,
    /// Walks for new cgroups in the second from `quick.0`: how many.
    quick: Option<(std::time::Instant, u32)>,
}

/// Walks for cgroups made since the last walk, at most, in a second (beside the one any
/// unknown id may cause): a host that makes cgroups without end costs a bounded walking.
pub const QUICK_WALKS: u32 = 4;

impl CgroupNames {
    pub fn path_of(&mut self, id: u64) -> Option<Name> {
        self.path_of_at(id, std::time::Instant::now(), || {
            // A namespace's root alone would name its own sub-tree as if it were the host's.
            hierarchy()
                .ok()
                .filter(|h| h.is_root)
                .map(|h| walk(&h.mount, WALK_LIMIT))
        })
    }

    /// [`CgroupNames::path_of`] at `now`, walking with `walk` (`None`: no hierarchy).
    fn path_of_at(
        &mut self,
        id: u64,
        now: std::time::Instant,
        walk: impl FnOnce() -> Option<std::collections::HashMap<u64, Name>>,
    ) -> Option<Name> {
        const SECOND: std::time::Duration = std::time::Duration::from_secs(1);
        if let Some(p) = self.by_id.get(&id) {
            return Some(p.clone());
        }
        let due = match self.walked {
            None => true,
            Some(t) if now.saturating_duration_since(t) >= SECOND => true,
            Some(_) if id > self.newest => {
                let (since, n) = match self.quick {
                    Some((since, n)) if now.saturating_duration_since(since) < SECOND => (since, n),
                    _ => (now, 0),
                };
                self.quick = Some((since, n + 1));
                n < QUICK_WALKS
            }
            Some(_) => false,
        };
        if !due {
            return None;
        }
        self.walked = Some(now);
        self.by_id = walk()?;
        // An id the walk did not find is of a cgroup gone already: it is no reason for
        // another walk at once.
        self.newest = self
            .by_id
            .keys()
            .copied()
            .max()
            .unwrap_or(0)
            .max(self.newest)
            .max(id);
        self.by_id.get(&id).cloned()
    }
}

/// The ids and paths of the cgroups below `mount`, at most `limit` of them. Nothing is
/// followed: a cgroup file system holds no links, and whatever is mounted below it is
/// another file system's.
fn walk(mount: &Path, limit: usize) -> std::collections::HashMap<u64, Name> {
    let mut by_id = std::collections::HashMap::new();
    let Ok(top) = std::fs::symlink_metadata(mount) else {
        return by_id;
    };
    let dev = top.dev();
    let mut stack = vec![(mount.to_path_buf(), top.ino())];
    // Directories seen (queued or named): the bound on the walk's memory and work.
    let mut seen = 1;
    while let Some((dir, ino)) = stack.pop() {
        let rel = dir.strip_prefix(mount).unwrap_or(Path::new(""));
        let rel = syscost_report::untrusted::decode(rel.as_os_str().as_encoded_bytes());
        by_id.insert(ino, format!("/{rel}").into());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if seen >= limit {
                break;
            }
            // The entry's type from the directory itself (no stat, no link followed):
            // a cgroup's 30-odd control files cost nothing.
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            // Its own metadata (lstat): the id, and whether it is another mount.
            let Ok(m) = e.metadata() else {
                continue;
            };
            if m.dev() == dev {
                seen += 1;
                stack.push((e.path(), m.ino()));
            }
        }
    }
    by_id
}

/// The v2 cgroup path of a process (`/system.slice/ssh.service`), as the host names it:
/// in a cgroup namespace of syscost's own, /proc/PID/cgroup is relative to that
/// namespace (`/../../kubepods.slice/...`) and is translated to the host's path from
/// where the namespace's root sits in the host's hierarchy; `None` where that cannot be
/// told (a gone process is named by its cgroup's id instead).
pub fn of_process(pid: u32) -> Option<String> {
    let own = in_own_namespace();
    // Bytes: a cgroup's name is whoever made it's to choose.
    let text = syscost_report::untrusted::decode(
        &crate::procfs::read_proc(&format!("/proc/{pid}/cgroup")).ok()?,
    );
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    if !own {
        return Some(path.to_string());
    }
    let ns = namespace_root()?;
    to_host(path, ns.segments.as_deref(), ns.depth)
}

/// Where syscost's own cgroup namespace is rooted in the host's hierarchy.
#[derive(Clone, Debug)]
struct NamespaceRoot {
    depth: usize,
    /// Its path's segments, when found (the cgroup of the depth that holds syscost).
    segments: Option<Vec<String>>,
}

/// [`NamespaceRoot`], found once (syscost does not move), in its own namespace with the
/// host's hierarchy mounted; `None` otherwise.
fn namespace_root() -> Option<NamespaceRoot> {
    static ROOT: std::sync::OnceLock<Option<NamespaceRoot>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let h = hierarchy().ok().filter(|h| h.is_root)?;
        // Its own cgroup, from its namespace's root ("/" when it sits there).
        let own = syscost_report::untrusted::decode(&std::fs::read("/proc/self/cgroup").ok()?);
        let own: Vec<String> = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))?
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        // Its own cgroup is inside its namespace; a climb would mean it moved out of it
        // (no depth to look at).
        if own.iter().any(|s| s == "..") {
            return Some(NamespaceRoot {
                depth: h.ns_depth,
                segments: None,
            });
        }
        let me = std::process::id().to_string();
        let holds_me = |dir: &Path| {
            std::fs::read_to_string(dir.join("cgroup.procs"))
                .is_ok_and(|t| t.lines().any(|l| l == me))
        };
        let found = find_at_depth(&h.mount, h.ns_depth + own.len(), WALK_LIMIT, holds_me);
        let segments = found.map(|p| {
            p.split('/')
                .filter(|s| !s.is_empty())
                .take(h.ns_depth)
                .map(str::to_string)
                .collect()
        });
        Some(NamespaceRoot {
            depth: h.ns_depth,
            segments,
        })
    })
    .clone()
}

/// The path below `mount` of the first directory `depth` levels down for which `pick`
/// holds, looking at no more than `limit` directories; nothing followed.
fn find_at_depth(
    mount: &Path,
    depth: usize,
    limit: usize,
    pick: impl Fn(&Path) -> bool,
) -> Option<String> {
    let dev = std::fs::symlink_metadata(mount).ok()?.dev();
    let mut stack = vec![(mount.to_path_buf(), 0usize)];
    let mut seen = 1;
    while let Some((dir, d)) = stack.pop() {
        if d == depth {
            if pick(&dir) {
                let rel = dir.strip_prefix(mount).ok()?;
                return Some(format!(
                    "/{}",
                    syscost_report::untrusted::decode(rel.as_os_str().as_encoded_bytes())
                ));
            }
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if seen >= limit {
                break;
            }
            let same_fs = e.file_type().is_ok_and(|t| t.is_dir())
                && e.metadata().is_ok_and(|m| m.dev() == dev);
            if same_fs {
                seen += 1;
                stack.push((e.path(), d + 1));
            }
        }
    }
    None
}

/// The host's path of a cgroup path read in a namespace rooted `depth` levels down the
/// hierarchy at `root` (its segments): `/../../a/b` climbs to the root's ancestor two
/// levels up, then goes down. `None` when it climbs past the hierarchy's root or needs
/// a root that was not found.
pub fn to_host(path: &str, root: Option<&[String]>, depth: usize) -> Option<String> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let climbs = segments.iter().take_while(|s| **s == "..").count();
    let rest = &segments[climbs..];
    if climbs > depth || rest.contains(&"..") {
        return None;
    }
    let keep = depth - climbs;
    let base: &[String] = if keep == 0 { &[] } else { root?.get(..keep)? };
    let all: Vec<&str> = base
        .iter()
        .map(String::as_str)
        .chain(rest.iter().copied())
        .collect();
    Some(format!("/{}", all.join("/")))
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

    #[test]
    fn a_host_hierarchy_mounted_in_a_namespace_is_a_candidate_and_a_sub_tree_is_not() {
        // Inside a container of its own cgroup namespace: the runtime's mount of the
        // namespace's root, then the host's hierarchy (climbs above it), then a sub-tree.
        let info = "\
97 84 0:51 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw
117 107 0:38 /../.. /host/sys/fs/cgroup ro,relatime - cgroup2 cgroup2 rw
118 107 0:38 /../../kubepods.slice /x ro - cgroup2 cgroup2 rw
119 107 0:38 /.. /y ro - cgroup2 cgroup2 rw
";
        assert_eq!(
            v2_mounts_in(info),
            ["/sys/fs/cgroup", "/host/sys/fs/cgroup", "/y"].map(PathBuf::from)
        );
        assert_eq!(
            v2_mounts_in("1 2 0:3 /..x /z ro - cgroup2 c rw"),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn a_walk_names_directories_by_inode_follows_no_link_and_stops_at_its_limit() {
        let dir = std::env::temp_dir().join(format!("syscost-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a.slice/b.scope")).unwrap();
        std::fs::create_dir_all(dir.join("c")).unwrap();
        std::os::unix::fs::symlink("/", dir.join("link")).unwrap();
        let ino = |p: &str| std::fs::metadata(dir.join(p)).unwrap().ino();
        let names = walk(&dir, 100);
        let root_ino = std::fs::metadata(&dir).unwrap().ino();
        assert_eq!(names.len(), 4, "{names:?}");
        assert_eq!(names[&root_ino], "/".into());
        assert_eq!(names[&ino("a.slice/b.scope")], "/a.slice/b.scope".into());
        assert_eq!(names[&ino("c")], "/c".into());
        assert_eq!(walk(&dir, 2).len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cgroup_made_since_the_last_walk_is_walked_for_at_once_a_few_times_a_second() {
        use std::{
            collections::HashMap,
            time::{Duration, Instant},
        };
        let tree = |ids: &[u64]| Some(ids.iter().map(|i| (*i, format!("/c{i}").into())).collect());
        let never = || -> Option<HashMap<u64, Name>> { panic!("walked") };
        let t0 = Instant::now();
        let mut names = CgroupNames::default();
        assert_eq!(
            names.path_of_at(10, t0, || tree(&[1, 10])),
            Some("/c10".into())
        );
        // Known: no walk.
        assert_eq!(names.path_of_at(1, t0, never), Some("/c1".into()));
        // An id below the newest seen, unknown (gone before the walk): once a second.
        assert_eq!(names.path_of_at(5, t0, never), None);
        // Ids made since, a moment after the walk: walked for at once.
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(
            names.path_of_at(11, at(1), || tree(&[1, 10, 11])),
            Some("/c11".into())
        );
        assert_eq!(names.path_of_at(5, at(2), never), None);
        // Up to QUICK_WALKS in a second, a new cgroup gone before its walk among them,
        // which walks no more.
        assert_eq!(names.path_of_at(13, at(3), || tree(&[1, 10, 11, 12])), None);
        assert_eq!(names.path_of_at(13, at(3), never), None);
        assert_eq!(
            names.path_of_at(14, at(4), || tree(&[14])),
            Some("/c14".into())
        );
        assert_eq!(
            names.path_of_at(15, at(5), || tree(&[14, 15])),
            Some("/c15".into())
        );
        assert_eq!(names.path_of_at(16, at(6), never), None);
        // A second on, any unknown id walks again, and new ids have their walks again.
        assert_eq!(
            names.path_of_at(16, at(1006), || tree(&[16])),
            Some("/c16".into())
        );
        assert_eq!(
            names.path_of_at(17, at(1007), || tree(&[17])),
            Some("/c17".into())
        );
        // No hierarchy now: nothing new named, the names from before kept.
        assert_eq!(names.path_of_at(18, at(2008), || None), None);
        assert_eq!(names.path_of_at(17, at(2009), never), Some("/c17".into()));
    }

    #[test]
    fn paths_read_in_a_namespace_of_its_own_are_the_hosts() {
        let root = ["kubepods.slice", "pod_a.slice", "cri-a.scope"].map(String::from);
        // Another pod's: climbs to the hierarchy's root.
        assert_eq!(
            to_host("/../../../kubepods.slice/pod_b.slice/cri-b.scope", None, 3).as_deref(),
            Some("/kubepods.slice/pod_b.slice/cri-b.scope")
        );
        // A sibling container of its own pod: needs the root's names.
        assert_eq!(to_host("/../cri-c.scope", None, 3), None);
        assert_eq!(
            to_host("/../cri-c.scope", Some(&root), 3).as_deref(),
            Some("/kubepods.slice/pod_a.slice/cri-c.scope")
        );
        // Below its own root, and its root itself.
        assert_eq!(
            to_host("/sub", Some(&root), 3).as_deref(),
            Some("/kubepods.slice/pod_a.slice/cri-a.scope/sub")
        );
        assert_eq!(to_host("/../../../..", Some(&root), 3), None);
        assert_eq!(to_host("/../x/../y", Some(&root), 3), None);
        assert_eq!(to_host("/", None, 0).as_deref(), Some("/"));
    }
}
