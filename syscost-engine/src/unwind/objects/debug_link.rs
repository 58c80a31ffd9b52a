//! An object's separate debug file: its GNU debuglink or build id, looked for where
//! debuggers look, within bounds.

use super::limits::{MAX_OBJECT, SEARCH_DEADLINE, STUCK, STUCK_MAX};
use super::open::in_root;
use crate::unwind::{
    bounded::{Bounded, READ_BUDGET},
    maps::Mounts,
};

use std::{fs::File, os::fd::OwnedFd, sync::atomic::Ordering, time::Duration};

/// An object's pointers to separate debug information.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DebugLink {
    pub build_id: Option<Vec<u8>>,
    /// `.gnu_debuglink`: the file's name and its CRC-32.
    pub link: Option<(String, u32)>,
}

impl DebugLink {
    /// Read from the object's headers (only what they point at).
    pub fn of(file: &File) -> Self {
        use object::Object as _;
        let Some(cache) = file
            .try_clone()
            .ok()
            .and_then(|f| Bounded::new(f, READ_BUDGET).ok())
        else {
            return Self::default();
        };
        let Ok(elf) = object::File::parse(&cache) else {
            return Self::default();
        };
        Self {
            build_id: elf
                .build_id()
                .ok()
                .flatten()
                .filter(|id| (2..=64).contains(&id.len()))
                .map(<[u8]>::to_vec),
            link: elf.gnu_debuglink().ok().flatten().and_then(|(name, crc)| {
                let name = std::str::from_utf8(name).ok()?;
                plain_name(name).then(|| (name.to_string(), crc))
            }),
        }
    }

    /// The places to look, inside the process's root, for an object at `path` there
    /// (none beside it when its path is not known), and the CRC a debug link's file must
    /// have (`None`: found by build id, checked by its own).
    pub(super) fn candidates(&self, path: Option<&str>) -> Vec<(String, Option<u32>)> {
        let mut out = Vec::new();
        if let Some(id) = &self.build_id {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            out.push((
                format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]),
                None,
            ));
        }
        if let Some((name, crc)) = &self.link
            && let Some(dir) = path.and_then(|p| p.rsplit_once('/')).map(|(d, _)| d)
        {
            out.push((format!("{dir}/{name}"), Some(*crc)));
            out.push((format!("{dir}/.debug/{name}"), Some(*crc)));
            out.push((format!("/usr/lib/debug{dir}/{name}"), Some(*crc)));
        }
        out
    }
}

/// A name a debug link may carry: one file name, nothing that climbs or descends.
pub(super) fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\0')
}

/// A debug file found for an object, open, to be checked and copied when first needed.
pub struct DebugFile {
    pub file: File,
    /// The CRC-32 the debug link gave (the file's whole content must have it), or the
    /// build id it was found by (its own must be the same).
    pub check: Check,
}

pub enum Check {
    Crc(u32),
    BuildId(Vec<u8>),
}

/// Looks for `link`'s debug file inside `root` (see the module's documentation) on a
/// thread of its own, waiting for it at most [`SEARCH_DEADLINE`].
pub fn find_debug_file(
    root: OwnedFd,
    path: Option<String>,
    link: DebugLink,
    mounts: Option<std::sync::Arc<Mounts>>,
) -> Option<DebugFile> {
    let candidates = link.candidates(path.as_deref());
    if candidates.is_empty() {
        return None;
    }
    within(SEARCH_DEADLINE, move || {
        candidates.into_iter().find_map(|(candidate, crc)| {
            if mounts.as_ref().is_some_and(|m| m.fuse_path(&candidate)) {
                return None;
            }
            // A regular file: `reopened` saw to it.
            let (file, _, st) = in_root(&root, &candidate, mounts.as_deref()).ok()?;
            if st.st_size as u64 > MAX_OBJECT {
                return None;
            }
            let check = match crc {
                Some(crc) => Check::Crc(crc),
                None => Check::BuildId(link.build_id.clone()?),
            };
            Some(DebugFile { file, check })
        })
    })
    .flatten()
}

/// Runs `f` on a thread of its own and waits for it at most `deadline`: past it the
/// thread is left to itself (it ends with syscost) and `None` returned; after
/// [`STUCK_MAX`] such threads nothing more is run.
pub fn within<T: Send + 'static>(
    deadline: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    if STUCK.load(Ordering::Relaxed) >= STUCK_MAX {
        return None;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("syscost-search".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    match rx.recv_timeout(deadline) {
        Ok(v) => Some(v),
        Err(_) => {
            STUCK.fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "a search for a traced process's debug file did not end within {deadline:?}; left behind"
            );
            None
        }
    }
}
