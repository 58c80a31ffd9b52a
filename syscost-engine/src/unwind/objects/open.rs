//! A file under a traced process's root opened without following a link or blocking, and
//! checked to be the regular file its mount says.

use crate::unwind::maps::Mounts;
use std::{
    fs::File,
    os::{
        fd::{AsFd as _, OwnedFd},
        unix::fs::OpenOptionsExt as _,
    },
};

pub(super) const READ_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// The mount of `file`, which must be one of the process's (`mounts`) and not FUSE.
pub(super) fn mount_checked(
    file: &impl std::os::fd::AsRawFd,
    mounts: Option<&Mounts>,
) -> Result<u32, &'static str> {
    let mount = crate::unwind::maps::mount_of(file).ok_or("its mount does not read")?;
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
pub(super) fn in_root(
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
pub(super) fn reopened(
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
