//! What `/proc/PID/maps` and `/proc/PID/mountinfo` say of a traced process: the
//! executable mappings a stack is unwound and named through, and the filesystems they
//! are on. Both texts are the kernel's, but the paths in them are the process's to
//! choose (any bytes but a newline), so nothing here trusts a path: a mapping is
//! identified by its device and inode, and a filesystem by its device or mount point.

use std::ops::Range;

/// One executable mapping of `/proc/PID/maps`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct MapsLine {
    pub range: Range<u64>,
    pub offset: u64,
    /// The device as maps prints it (`fd:01`, hex major and minor).
    pub dev: String,
    pub inode: u64,
    /// As the process sees it (`" (deleted)"` at its end once the file is gone).
    pub path: String,
}

impl MapsLine {
    /// The device number (`st_dev`) of `dev`, if it reads.
    pub fn dev_t(&self) -> Option<u64> {
        let (major, minor) = self.dev.split_once(':')?;
        Some(libc::makedev(
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        ))
    }

    /// The path as it was when mapped, if the file still has it (a deleted file's path
    /// names nothing, or another file).
    pub fn live_path(&self) -> Option<&str> {
        (self.path.starts_with('/') && !self.path.ends_with(" (deleted)"))
            .then_some(self.path.as_str())
    }
}

/// The lines of `/proc/PID/maps` that map something executable, by address.
pub(crate) fn parse_maps(text: &str) -> Vec<MapsLine> {
    let mut out: Vec<MapsLine> = text
        .lines()
        .filter_map(|line| {
            let mut f = line.splitn(6, ' ');
            let (range, perms, offset, dev, inode) =
                (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let path = f.next().unwrap_or("").trim_start().to_string();
            if !perms.contains('x') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            let range = u64::from_str_radix(a, 16).ok()?..u64::from_str_radix(b, 16).ok()?;
            if range.start >= range.end {
                return None;
            }
            Some(MapsLine {
                range,
                offset: u64::from_str_radix(offset, 16).ok()?,
                dev: dev.to_string(),
                inode: inode.parse().ok()?,
                path,
            })
        })
        .collect();
    out.sort_by_key(|l| l.range.start);
    out
}

/// The mounts a process sees (`/proc/PID/mountinfo`), as far as syscost needs them: which
/// are FUSE filesystems, whose server (any user's process) decides when an open, a stat
/// or a lookup in them returns. syscost never waits on one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Mounts {
    /// (device, mount id, mount point) of each FUSE mount.
    fuse: Vec<(u64, u32, String)>,
    /// (mount id, device) of every mount, by id.
    devices: Vec<(u32, u64)>,
}

impl Mounts {
    /// Process `pid`'s mounts; `None` when they cannot be read (the process is gone).
    pub fn of(pid: u32) -> Option<Self> {
        let text = std::fs::read(format!("/proc/{pid}/mountinfo")).ok()?;
        Some(Self::parse(&String::from_utf8_lossy(&text)))
    }

    pub fn parse(text: &str) -> Self {
        let mut fuse = Vec::new();
        let mut devices = Vec::new();
        for line in text.lines() {
            let Some((mount, fs)) = line.split_once(" - ") else {
                continue;
            };
            let mut f = mount.split(' ');
            let Some(id) = f.next().and_then(|i| i.parse().ok()) else {
                continue;
            };
            let Some(dev) = f.nth(1).and_then(|d| {
                let (major, minor) = d.split_once(':')?;
                Some(libc::makedev(major.parse().ok()?, minor.parse().ok()?))
            }) else {
                continue;
            };
            devices.push((id, dev));
            if fs.split(' ').next().is_some_and(is_fuse)
                && let Some(point) = f.nth(1)
            {
                fuse.push((dev, id, unescape(point)));
            }
        }
        devices.sort_unstable();
        Self { fuse, devices }
    }

    /// The device of mount `id` (its filesystem's, as /proc/PID/maps shows it, where
    /// stat may show another: btrfs subvolumes), if the process sees that mount.
    pub fn device_of(&self, id: u32) -> Option<u64> {
        let i = self.devices.binary_search_by_key(&id, |&(m, _)| m).ok()?;
        Some(self.devices[i].1)
    }

    /// Whether the filesystem of device `dev` is a FUSE one.
    pub fn fuse_device(&self, dev: u64) -> bool {
        self.fuse.iter().any(|&(d, _, _)| d == dev)
    }

    /// Whether mount `id` (`mnt_id:` of fdinfo) is a FUSE one.
    pub fn fuse_mount(&self, id: u32) -> bool {
        self.fuse.iter().any(|&(_, m, _)| m == id)
    }

    /// Whether `path` (absolute, in the process's root) lies in or under a FUSE mount.
    pub fn fuse_path(&self, path: &str) -> bool {
        self.fuse.iter().any(|(_, _, point)| {
            point == "/"
                || path
                    .strip_prefix(point.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }
}

/// The mount id (`mnt_id:` of /proc/self/fdinfo) of a file syscost holds open: where it
/// is, read from procfs without asking its filesystem anything.
pub(crate) fn mount_of(file: &impl std::os::fd::AsRawFd) -> Option<u32> {
    let fd = file.as_raw_fd();
    fdinfo_mnt_id(&std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?)
}

/// The `mnt_id:` of a /proc/PID/fdinfo/N text.
pub(crate) fn fdinfo_mnt_id(info: &str) -> Option<u32> {
    info.lines()
        .find_map(|l| l.strip_prefix("mnt_id:"))
        .and_then(|v| v.trim().parse().ok())
}

fn is_fuse(fstype: &str) -> bool {
    fstype == "fuse" || fstype == "fuseblk" || fstype.starts_with("fuse.")
}

/// A mountinfo path with its octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && let Some(oct) = b.get(i + 1..i + 4)
            && oct.iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push(
                oct.iter()
                    .fold(0u32, |v, c| v * 8 + u32::from(c - b'0'))
                    .min(255) as u8,
            );
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_keep_the_executable_mappings_in_order() {
        let text = "\
7f10a0000000-7f10a0028000 r--p 00000000 fd:01 1835 /usr/lib/x86_64-linux-gnu/libc.so.6
7f10a0028000-7f10a019d000 r-xp 00028000 fd:01 1835 /usr/lib/x86_64-linux-gnu/libc.so.6
55d0c0001000-55d0c0002000 r-xp 00001000 fd:01 42 /tmp/a b (deleted)
7ffd1e5f4000-7ffd1e5f6000 r-xp 00000000 00:00 0                          [vdso]
7f10a1000000-7f10a1001000 rwxp 00000000 00:00 0 
7f10a2000000-7f10a1000000 r-xp 00000000 00:00 0 
";
        let l = parse_maps(text);
        assert_eq!(
            l.len(),
            4,
            "the mapping that ends before it starts is dropped"
        );
        assert_eq!(l[0].path, "/tmp/a b (deleted)");
        assert_eq!(l[0].live_path(), None);
        assert_eq!(l[0].range, 0x55d0c0001000..0x55d0c0002000);
        assert_eq!(l[0].offset, 0x1000);
        assert_eq!((l[1].dev.as_str(), l[1].inode), ("fd:01", 1835));
        assert_eq!(l[1].dev_t(), Some(libc::makedev(0xfd, 1)));
        assert_eq!(
            l[1].live_path(),
            Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(l[2].path, "");
        assert_eq!(l[3].path, "[vdso]");
        assert_eq!(l[3].live_path(), None);
    }

    #[test]
    fn fuse_mounts_are_found_by_device_id_and_path() {
        let m = Mounts::parse(
            "\
22 27 0:21 / /proc rw,relatime - proc proc rw
40 27 0:45 / /home/u/my\\040fs rw,nosuid - fuse.sshfs u@h: rw,user_id=1000
41 27 0:46 / /mnt/b rw - fuseblk /dev/sdb1 rw
42 27 8:1 / /data rw - ext4 /dev/sda1 rw
garbage line
",
        );
        assert!(m.fuse_device(libc::makedev(0, 45)));
        assert!(m.fuse_device(libc::makedev(0, 46)));
        assert!(!m.fuse_device(libc::makedev(8, 1)));
        assert!(m.fuse_mount(40) && !m.fuse_mount(42));
        assert!(m.fuse_path("/home/u/my fs/bin/p"));
        assert!(m.fuse_path("/home/u/my fs"));
        assert!(!m.fuse_path("/home/u/my fsx/p"));
        assert!(!m.fuse_path("/data/p"));
        assert!(!Mounts::parse("42 27 8:1 / / rw - ext4 /dev/sda1 rw\n").fuse_path("/x"));
        let root = Mounts::parse("42 27 0:50 / / rw - fuse.x x rw\n");
        assert!(root.fuse_path("/usr/lib/debug/x.debug"));
    }
}
