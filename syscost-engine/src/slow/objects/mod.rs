//! The files of traced processes that syscost reads to unwind and name their stacks,
//! opened as root from what the processes chose (their mappings' paths, their objects'
//! debug links), so treated as hostile:
//!
//! - A mapped object is opened through `/proc/PID/map_files` (the kernel's own link to
//!   the mapped file, whatever its path), else by its path inside the process's root
//!   (`openat2` with `RESOLVE_IN_ROOT`, no magic links, the last component not a link,
//!   on a thread waited on for at most [`SEARCH_DEADLINE`]). Either way it is first
//!   opened as a path alone (`O_PATH`: no device's driver, FIFO's partner or
//!   filesystem's open is asked anything, wherever a folder replaced by a link led), and
//!   opened for reading (`O_NONBLOCK`, through that descriptor, so the same inode) only
//!   once `fstat` says it is a regular file and procfs that it lies on one of the
//!   process's mounts; it is kept when it has the inode the mapping has (and its device,
//!   by stat or by its mount, when opened by its path). A file on a FUSE filesystem,
//!   whose server (any user's process) decides when an open or a read returns, is never
//!   opened: the mapping's device, or a FUSE mount its path lies under, refuses it
//!   before the lookup, and the mount the lookup reached (`mnt_id` in procfs's fdinfo,
//!   which asks the filesystem nothing) before the open.
//! - Separate debug information is looked for only inside the process's root (the
//!   build id under `/usr/lib/debug/.build-id`, the debug link beside the object, in its
//!   `.debug` folder and under `/usr/lib/debug`), a debug link's name only when it is a
//!   plain file name, with the same checks (its mount too), on a thread of its own that
//!   syscost waits on for at most [`SEARCH_DEADLINE`].
//! - The symbolizer (blazesym) is never handed a traced process's file: it maps what it
//!   reads, and a file its owner truncates would fault syscost, and it follows debug
//!   links by itself. It gets a sealed copy in memory (a memfd) of what naming needs
//!   (headers, symbol and string tables, notes, DWARF), with the debug-link sections
//!   renamed away and compressed DWARF decompressed within bounds (a section that claims
//!   more than it holds, or zstd, is left out). Each byte of the file is copied once
//!   however many sections claim it, decompressed sections count by their size, and the
//!   copies are bounded per object ([`MAX_DWARF`] of DWARF) and in all ([`SYMBOL_BUDGET`],
//!   the symbolizer's caches made anew once closed objects' copies are freed): past the
//!   budget an object is named from its symbols alone, or not at all.
//!
//! By file: opening a traced process's mapped objects here; debug files (`debug_link`),
//! the symbol files kept (`symbols`), the bounded copy of their sections (`copy`).

use super::{
    bounded::{Bounded, READ_BUDGET},
    maps::{MapsLine, Mounts},
};
use object::{
    Endianness, FileKind,
    elf::{self, FileHeader32, FileHeader64},
    read::elf::{ElfFile, FileHeader, SectionHeader as _},
};
use std::{
    fs::File,
    io::Read as _,
    os::{
        fd::{AsFd as _, OwnedFd},
        unix::fs::{FileExt as _, OpenOptionsExt as _},
    },
    path::PathBuf,
    sync::atomic::{AtomicU32, AtomicU64, Ordering},
    time::Duration,
};

mod copy;
mod debug_link;
mod symbols;
#[cfg(test)]
mod tests;

use self::copy::*;
pub use self::{debug_link::*, symbols::*};

/// Objects larger than this are not read.
const MAX_OBJECT: u64 = 4 << 30;

/// The copies for the symbolizer alive at once, bytes: beyond, an object is copied
/// without its DWARF (named by its symbols, without lines).
pub const SYMBOL_BUDGET: u64 = 512 << 20;

/// An object's DWARF larger than this is not copied (named by its symbols alone).
const MAX_DWARF: u64 = 256 << 20;

/// How long syscost waits for the search of a debug file (opens inside a traced
/// process's root: a path there may lead to a filesystem that stalls).
pub const SEARCH_DEADLINE: Duration = Duration::from_millis(500);

/// Searches that did not end in time: past this many, no more are made.
const STUCK_MAX: u32 = 4;

/// Bytes of the copies alive (those closed included until the symbolizer, which may
/// still map them, is made anew).
static SYMBOL_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes of the copies closed since the symbolizer was last made anew.
static FREED: AtomicU64 = AtomicU64::new(0);

/// Searches abandoned at their deadline.
static STUCK: AtomicU32 = AtomicU32::new(0);

const READ_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// Opens the file mapping `l` of process `pid` holds (see the module's documentation).
pub fn open_mapped(pid: u32, l: &MapsLine, mounts: Option<&Mounts>) -> Result<File, String> {
    let name = l.path.trim_end_matches(" (deleted)");
    let dev = l
        .dev_t()
        .ok_or_else(|| format!("{name}: its device ({}) does not read", l.dev))?;
    if mounts.is_some_and(|m| m.fuse_device(dev)) {
        return Err(format!(
            "{name} is on a FUSE filesystem, whose server could stall syscost: not read"
        ));
    }
    // The kernel's link to the mapped file (root, or CAP_CHECKPOINT_RESTORE): not a path
    // walk, so it is followed (O_NOFOLLOW would refuse the link itself); as a path alone
    // (O_PATH), the file opened for reading only once checked.
    let by_map = format!(
        "/proc/{pid}/map_files/{:x}-{:x}",
        l.range.start, l.range.end
    );
    let (file, by_map) = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(&by_map)
    {
        Ok(f) => (
            reopened(OwnedFd::from(f), mounts).map_err(|why| format!("{name}: {why}"))?,
            true,
        ),
        Err(by_map_err) => {
            let Some(path) = l.live_path() else {
                return Err(format!(
                    "cannot open {name}: deleted, and {by_map}: {by_map_err}"
                ));
            };
            if mounts.is_some_and(|m| m.fuse_path(path)) {
                return Err(format!(
                    "{name} is on a FUSE filesystem, whose server could stall syscost: not read"
                ));
            }
            let root = process_root(pid).map_err(|e| match e.raw_os_error() {
                // /proc/PID is gone: the file may well be there, the process is not.
                Some(libc::ENOENT | libc::ESRCH) => {
                    format!("cannot open {name}: the process exited before it was opened")
                }
                _ => format!("cannot open {name}: {e}"),
            })?;
            // A link on the way may lead where a lookup stalls: on a thread of its own.
            let path = path.to_string();
            let mounts = mounts.cloned();
            let f = within(SEARCH_DEADLINE, move || {
                in_root(&root, &path, mounts.as_ref())
            })
            .ok_or_else(|| format!("cannot open {name}: its path did not resolve in time"))?
            .map_err(|e| format!("cannot open {name}: {e}"))?;
            (f, false)
        }
    };
    let (file, mount, st) = file;
    // The device: stat's, or its mount's (stat shows another on btrfs subvolumes), or
    // none to compare when the kernel's own link gave the file (an overlay shows its
    // own device, the mapping its layer's). A regular file: `reopened` saw to it.
    let same_device =
        by_map || st.st_dev == dev || mounts.and_then(|m| m.device_of(mount)) == Some(dev);
    if !same_device || st.st_ino != l.inode {
        return Err(format!("{name} is no longer the file mapped"));
    }
    if st.st_size as u64 > MAX_OBJECT {
        return Err(format!(
            "{name} is larger than {} GiB: not read",
            MAX_OBJECT >> 30
        ));
    }
    Ok(file)
}

/// The mount of `file`, which must be one of the process's (`mounts`) and not FUSE.
fn mount_checked(
    file: &impl std::os::fd::AsRawFd,
    mounts: Option<&Mounts>,
) -> Result<u32, &'static str> {
    let mount = super::maps::mount_of(file).ok_or("its mount does not read")?;
    match mounts {
        None => Err("the process's mounts do not read"),
        Some(m) if m.fuse_mount(mount) => {
            Err("on a FUSE filesystem, whose server could stall syscost: not read")
        }
        Some(m) if m.device_of(mount).is_none() => Err("on a mount the process does not see"),
        Some(_) => Ok(mount),
    }
}

/// Process `pid`'s root directory, for paths as the process sees them.
pub fn process_root(pid: u32) -> std::io::Result<OwnedFd> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(format!("/proc/{pid}/root"))?
        .into())
}

/// Opens `path` (absolute, as the process sees it) inside `root`: symbolic links are
/// resolved inside it, never a magic link, never the last component; then as
/// [`reopened`] says.
fn in_root(
    root: &OwnedFd,
    path: &str,
    mounts: Option<&Mounts>,
) -> Result<(File, u32, rustix::fs::Stat), String> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let fd = rustix::fs::openat2(
        root.as_fd(),
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|e| std::io::Error::from(e).to_string())?;
    reopened(fd, mounts)
}

/// The file `path` names (a descriptor opened `O_PATH`: the file itself not opened, so
/// no device's driver, FIFO's partner or FUSE server was asked anything), opened for
/// reading, never blocking, once `fstat` says it is a regular file and procfs that it
/// lies on one of the process's mounts (`mounts`), not a FUSE one: a link met on the
/// way (a folder of the path replaced by one) may have led anywhere its path does not
/// show. The file, its mount and its stat.
fn reopened(
    path: OwnedFd,
    mounts: Option<&Mounts>,
) -> Result<(File, u32, rustix::fs::Stat), String> {
    use std::os::fd::AsRawFd as _;
    // The mount first: procfs's fdinfo asks the filesystem nothing, where a stat on a
    // FUSE file asks its server.
    let mount = mount_checked(&path, mounts)?;
    let st = rustix::fs::fstat(&path).map_err(|e| std::io::Error::from(e).to_string())?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err("not a regular file: not read".into());
    }
    // The descriptor's own link: the same inode, not the path again.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(READ_FLAGS)
        .open(format!("/proc/self/fd/{}", path.as_raw_fd()))
        .map_err(|e| e.to_string())?;
    Ok((file, mount, st))
}
