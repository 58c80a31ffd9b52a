//! The initramfs the kernel matrix boots: a cpio archive (the "newc" format the kernel
//! unpacks) holding an init script, busybox, the test binaries and syscost at the paths
//! they were built at, and the shared libraries they load.

use std::{
    collections::BTreeMap,
    path::{Component, Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};

/// What one path of the archive holds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File { data: Vec<u8>, executable: bool },
    Symlink(String),
}

/// A tree of files to archive, by absolute path; parent directories are implied.
#[derive(Default)]
pub struct Tree {
    entries: BTreeMap<PathBuf, Entry>,
}

impl Tree {
    pub fn dir(&mut self, path: &str) {
        self.add(Path::new(path), Entry::Dir);
    }

    pub fn file(&mut self, path: &Path, data: Vec<u8>, executable: bool) {
        self.add(path, Entry::File { data, executable });
    }

    pub fn symlink(&mut self, path: &str, target: &str) {
        self.add(Path::new(path), Entry::Symlink(target.to_string()));
    }

    /// Copies the host file `path` (symlinks followed) to the same path in the tree.
    pub fn copy_from_host(&mut self, path: &Path) -> Result<()> {
        let data =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mode = std::fs::metadata(path)?.permissions();
        let executable = std::os::unix::fs::PermissionsExt::mode(&mode) & 0o111 != 0;
        self.file(path, data, executable);
        Ok(())
    }

    fn add(&mut self, path: &Path, entry: Entry) {
        let path = relative(path);
        let mut parent = path.parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            self.entries.entry(p.to_path_buf()).or_insert(Entry::Dir);
            parent = p.parent();
        }
        self.entries.insert(path, entry);
    }

    /// The archive: every directory before what it holds (the map is ordered by path,
    /// and a parent sorts before its children), then the trailer.
    pub fn cpio(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for (ino, (path, entry)) in (1..).zip(&self.entries) {
            let name = path.to_str().context("a non-UTF-8 path")?;
            let (mode, data): (u32, &[u8]) = match entry {
                Entry::Dir => (0o040_755, &[]),
                Entry::File { data, executable } => {
                    (if *executable { 0o100_755 } else { 0o100_644 }, data)
                }
                Entry::Symlink(target) => (0o120_777, target.as_bytes()),
            };
            write_member(&mut out, ino, mode, name, data)?;
        }
        write_member(&mut out, 0, 0, "TRAILER!!!", &[])?;
        Ok(out)
    }
}

/// `/a/b` as `a/b` (the archive's names are relative to its root).
fn relative(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

/// One newc member: a 110-byte header of hex fields, the name and its NUL padded to 4
/// bytes, the data padded to 4 bytes.
fn write_member(out: &mut Vec<u8>, ino: u32, mode: u32, name: &str, data: &[u8]) -> Result<()> {
    let Ok(size) = u32::try_from(data.len()) else {
        bail!("{name} is too big for a cpio archive");
    };
    let nlink = if mode & 0o040_000 != 0 { 2 } else { 1 };
    let fields = [
        ino,
        mode,
        0, // uid
        0, // gid
        nlink,
        0, // mtime
        size,
        0, // devmajor
        0, // devminor
        0, // rdevmajor
        0, // rdevminor
        name.len() as u32 + 1,
        0, // check
    ];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
    out.extend_from_slice(data);
    pad4(out);
    Ok(())
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// The shared libraries and the interpreter `ldd` lists for `binary`.
pub fn shared_libraries(ldd_output: &str) -> Vec<PathBuf> {
    ldd_output
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
            // "/lib64/ld-linux-x86-64.so.2 (0x...)"; "linux-vdso.so.1 (0x...)" has no file.
            let path = match l.split_once("=>") {
                Some((_, right)) => right.trim(),
                None => l,
            };
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a newc archive back: (name, mode, data) of each member before the trailer.
    fn members(mut a: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            assert_eq!(&a[..6], b"070701", "magic at {offset}");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&a[6 + 8 * i..14 + 8 * i]).unwrap(), 16)
                    .unwrap()
            };
            let (mode, size, namesize) = (field(1), field(6) as usize, field(11) as usize);
            let name = std::str::from_utf8(&a[110..110 + namesize - 1])
                .unwrap()
                .to_string();
            assert_eq!(a[110 + namesize - 1], 0, "name ends in NUL");
            let data_at = (110 + namesize).div_ceil(4) * 4;
            let data = a[data_at..data_at + size].to_vec();
            let next = (data_at + size).div_ceil(4) * 4;
            if name == "TRAILER!!!" {
                assert_eq!(next, a.len(), "nothing after the trailer");
                return out;
            }
            out.push((name, mode, data));
            a = &a[next..];
            offset += next;
        }
    }

    #[test]
    fn archive_has_parents_first_and_aligned_members() {
        let mut t = Tree::default();
        t.file(
            Path::new("/work/target/debug/deps/engine-1"),
            b"abcde".to_vec(),
            true,
        );
        t.symlink("/bin/sh", "busybox");
        t.file(Path::new("/init"), b"#!/bin/sh\n".to_vec(), true);
        t.file(
            Path::new("/etc/passwd"),
            b"root:x:0:0::/root:/bin/sh\n".to_vec(),
            false,
        );
        t.dir("/tmp");
        let a = t.cpio().unwrap();
        assert_eq!(a.len() % 4, 0);
        let m = members(&a);
        let names: Vec<&str> = m.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "bin",
                "bin/sh",
                "etc",
                "etc/passwd",
                "init",
                "tmp",
                "work",
                "work/target",
                "work/target/debug",
                "work/target/debug/deps",
                "work/target/debug/deps/engine-1"
            ]
        );
        let get = |n: &str| m.iter().find(|(name, _, _)| name == n).unwrap().clone();
        assert_eq!(get("bin/sh").1, 0o120_777);
        assert_eq!(get("bin/sh").2, b"busybox");
        assert_eq!(get("init").1, 0o100_755);
        assert_eq!(get("etc/passwd").1, 0o100_644);
        assert_eq!(get("work/target/debug/deps/engine-1").2, b"abcde");
        assert_eq!(get("tmp").1, 0o040_755);
    }

    #[test]
    fn ldd_lines_give_the_files_to_copy() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd5d7e5000)\n\
                   \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f2)\n";
        assert_eq!(
            shared_libraries(ldd),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }
}
