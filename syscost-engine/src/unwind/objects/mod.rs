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
//! the symbol files kept and the bounded copy of their sections (`symbols`), the bounds
//! (`limits`), opening a file under a process's root (`open`).

use super::maps::{MapsLine, Mounts};
use std::{
    fs::File,
    os::{fd::OwnedFd, unix::fs::OpenOptionsExt as _},
};

mod debug_link;
mod limits;
mod open;
mod symbols;
#[cfg(test)]
mod tests;

pub use self::{
    debug_link::*,
    limits::{SEARCH_DEADLINE, SYMBOL_BUDGET},
    open::process_root,
    symbols::*,
};
use self::{
    limits::MAX_OBJECT,
    open::{in_root, reopened},
};

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
