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

use object::{
    Endianness, FileKind,
    elf::{self, FileHeader32, FileHeader64},
    read::elf::{ElfFile, FileHeader, SectionHeader as _},
};

use super::{
    bounded::{Bounded, READ_BUDGET},
    maps::{MapsLine, Mounts},
};

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
    fn candidates(&self, path: Option<&str>) -> Vec<(String, Option<u32>)> {
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
fn plain_name(name: &str) -> bool {
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

/// A sealed copy of an object for the symbolizer, and where it is
/// (`/proc/self/fd/N`).
pub struct SymbolFile {
    /// Open while the copy is used: `path` names it.
    _fd: OwnedFd,
    pub path: PathBuf,
    /// Bytes copied (what the copy holds in memory).
    pub bytes: u64,
    /// The object's loadable segments: (file offset, file size, address).
    pub loads: Vec<(u64, u64, u64)>,
}

impl Drop for SymbolFile {
    fn drop(&mut self) {
        // Still counted: the symbolizer may map it until it is made anew.
        FREED.fetch_add(self.bytes, Ordering::Relaxed);
    }
}

/// Bytes of the copies closed while the symbolizer could still hold them.
pub fn freed_bytes() -> u64 {
    FREED.load(Ordering::Relaxed)
}

/// Call once the symbolizer that may have read the closed copies is gone: their bytes
/// stop counting.
pub fn release_freed() {
    SYMBOL_BYTES.fetch_sub(FREED.swap(0, Ordering::Relaxed), Ordering::Relaxed);
}

impl SymbolFile {
    /// The address (as the object's headers give it) of file offset `offset`.
    pub fn address_of(&self, offset: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|&&(off, size, _)| off <= offset && offset - off < size)
            .map(|&(off, _, addr)| addr.wrapping_add(offset - off))
    }
}

/// Bytes of the copies for the symbolizer alive now, or held by it.
pub fn symbol_bytes() -> u64 {
    SYMBOL_BYTES.load(Ordering::Relaxed)
}

/// Section names the symbolizer would follow to another file, renamed in a copy.
const LINKS: [&[u8]; 3] = [b".gnu_debuglink", b".gnu_debugaltlink", b".debug_sup"];

/// Copies what naming needs of ELF `file` into a sealed memfd; `check`: what its content
/// must match (a debug file's).
pub fn symbol_copy(file: &File, check: Option<&Check>) -> Result<SymbolFile, String> {
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size > MAX_OBJECT {
        return Err(format!("larger than {} GiB", MAX_OBJECT >> 30));
    }
    if let Some(Check::Crc(crc)) = check {
        let mut hasher = crc32fast::Hasher::new();
        let mut r = std::io::BufReader::with_capacity(
            1 << 20,
            file.try_clone().map_err(|e| e.to_string())?,
        );
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < size {
            let n = r.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            at += n as u64;
        }
        if hasher.finalize() != *crc {
            return Err("its debug file's CRC is not the debug link's".into());
        }
    }
    let cache = Bounded::new(file.try_clone().map_err(|e| e.to_string())?, READ_BUDGET)
        .map_err(|e| e.to_string())?;
    let copy = match FileKind::parse(&cache) {
        Ok(FileKind::Elf32) => copy_elf::<FileHeader32<Endianness>>(file, &cache, size),
        Ok(FileKind::Elf64) => copy_elf::<FileHeader64<Endianness>>(file, &cache, size),
        _ => Err("not an ELF file".to_string()),
    }?;
    if let Some(Check::BuildId(id)) = check {
        use object::Object as _;
        let own = File::open(&copy.path).ok().and_then(|f| {
            let c = Bounded::new(f, READ_BUDGET).ok()?;
            object::File::parse(&c)
                .ok()?
                .build_id()
                .ok()
                .flatten()
                .map(<[u8]>::to_vec)
        });
        if own.as_ref() != Some(id) {
            return Err("its debug file's build id is not the object's".into());
        }
    }
    Ok(copy)
}

/// Where a copy's pieces go: the memfd, what was copied, and a section header's fields.
struct Copy<'a> {
    src: &'a File,
    dst: File,
    size: u64,
    bytes: u64,
}

impl Copy<'_> {
    /// Copies `len` bytes at `offset` (clipped to the file) to the same offset.
    fn range(&mut self, offset: u64, len: u64) -> Result<(), String> {
        let end = offset.saturating_add(len).min(self.size);
        let mut at = offset.min(end);
        let mut buf = vec![0u8; (end - at).min(1 << 20) as usize];
        while at < end {
            let n = ((end - at) as usize).min(buf.len());
            self.src
                .read_exact_at(&mut buf[..n], at)
                .map_err(|e| format!("cannot read it: {e}"))?;
            self.dst
                .write_all_at(&buf[..n], at)
                .map_err(|e| format!("cannot copy it: {e}"))?;
            at += n as u64;
            self.bytes += n as u64;
        }
        Ok(())
    }

    fn write(&mut self, at: u64, bytes: &[u8]) -> Result<(), String> {
        self.dst
            .write_all_at(bytes, at)
            .map_err(|e| format!("cannot copy it: {e}"))
    }
}

/// A section header field as (offset in the header, width in bytes), by class.
fn field(is_64: bool, name: &str) -> (u64, usize) {
    match (is_64, name) {
        (true, "flags") => (8, 8),
        (true, "offset") => (24, 8),
        (true, "size") => (32, 8),
        (false, "flags") => (8, 4),
        (false, "offset") => (16, 4),
        (false, "size") => (20, 4),
        _ => unreachable!("a field this module writes"),
    }
}

fn copy_elf<Elf: FileHeader<Endian = Endianness>>(
    src: &File,
    cache: &Bounded,
    size: u64,
) -> Result<SymbolFile, String> {
    let elf = ElfFile::<Elf, _>::parse(cache).map_err(|e| format!("not a valid ELF file: {e}"))?;
    let endian = elf.endian();
    let header = elf.elf_header();
    let is_64 = header.is_type_64();
    let big = object::Endian::is_big_endian(endian);
    let table = elf.elf_section_table();
    let shstrndx = header
        .shstrndx(endian, cache)
        .map_err(|e| format!("no section names: {e}"))?;
    let names_at = table
        .section(object::SectionIndex(shstrndx as usize))
        .map(|s| s.sh_offset(endian).into())
        .unwrap_or(0);
    let shoff: u64 = header.e_shoff(endian).into();
    let shentsize = u64::from(header.e_shentsize(endian));
    let is_debug = |name: &[u8]| name.starts_with(b".debug_") || name.starts_with(b".zdebug_");

    // The plan, before anything is copied: the byte ranges of the file the copy needs
    // (each byte copied once, however many sections claim it: the copy is never larger
    // than the file), apart from the DWARF's and the compressed sections' (decompressed:
    // their claimed sizes), which are copied whole or not at all.
    enum Part {
        Skip,
        Hide,
        Base(u64, u64),
        Extra(u64, u64),
        Compressed(u64),
    }
    let mut parts = Vec::with_capacity(table.len());
    for sh in table.iter() {
        let name = table.section_name(endian, sh).unwrap_or_default();
        let sh_type = sh.sh_type(endian);
        let flags: u64 = sh.sh_flags(endian).into();
        let wanted = matches!(
            sh_type,
            elf::SHT_SYMTAB | elf::SHT_DYNSYM | elf::SHT_STRTAB | elf::SHT_NOTE
        ) || flags & u64::from(elf::SHF_ALLOC) == 0;
        parts.push(if LINKS.contains(&name) {
            Part::Hide
        } else if sh_type == elf::SHT_NOBITS || !wanted {
            Part::Skip
        } else if flags & u64::from(elf::SHF_COMPRESSED) != 0 {
            match sh.compression(endian, cache) {
                Ok(Some((ch, _, _))) => {
                    use object::read::elf::CompressionHeader as _;
                    Part::Compressed(ch.ch_size(endian).into())
                }
                _ => Part::Hide,
            }
        } else {
            let (off, len) = sh.file_range(endian).unwrap_or((0, 0));
            if is_debug(name) {
                Part::Extra(off, len)
            } else {
                Part::Base(off, len)
            }
        });
    }
    let phoff: u64 = header.e_phoff(endian).into();
    let mut base: Vec<(u64, u64)> = vec![
        (0, std::mem::size_of::<Elf>() as u64),
        (
            phoff,
            u64::from(header.e_phentsize(endian)) * u64::from(header.e_phnum(endian)),
        ),
        (shoff, shentsize.saturating_mul(table.len() as u64)),
    ];
    let mut extra: Vec<(u64, u64)> = Vec::new();
    let mut compressed = 0u64;
    for p in &parts {
        match *p {
            Part::Base(off, len) => base.push((off, len)),
            Part::Extra(off, len) => extra.push((off, len)),
            Part::Compressed(n) => compressed = compressed.saturating_add(n),
            Part::Skip | Part::Hide => {}
        }
    }
    let base = merged(base, size);
    let base_bytes: u64 = base.iter().map(|(a, b)| b - a).sum();
    if symbol_bytes().saturating_add(base_bytes) > SYMBOL_BUDGET {
        return Err(format!(
            "the copies for naming already take {} MiB of {}: not copied",
            symbol_bytes() >> 20,
            SYMBOL_BUDGET >> 20
        ));
    }
    let with_extra = merged(
        base.iter().map(|&(a, b)| (a, b - a)).chain(extra).collect(),
        size,
    );
    let extra_bytes = with_extra
        .iter()
        .map(|(a, b)| b - a)
        .sum::<u64>()
        .saturating_sub(base_bytes)
        .saturating_add(compressed);
    let dwarf = extra_bytes <= MAX_DWARF
        && symbol_bytes()
            .saturating_add(base_bytes)
            .saturating_add(extra_bytes)
            <= SYMBOL_BUDGET;

    let memfd = rustix::fs::memfd_create(
        "syscost-symbols",
        rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
    )
    .map_err(|e| format!("no memory for its copy: {e}"))?;
    let dst = File::from(memfd);
    dst.set_len(size)
        .map_err(|e| format!("no memory for its copy: {e}"))?;
    let mut c = Copy {
        src,
        dst,
        size,
        bytes: 0,
    };
    for &(from, to) in if dwarf { &with_extra } else { &base } {
        c.range(from, to - from)?;
    }
    // Changes to the copy's headers and names, made once every range is copied (a
    // range copied after would undo them).
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    let set_field = |patches: &mut Vec<(u64, Vec<u8>)>, index: usize, name: &str, value: u64| {
        let (at, width) = field(is_64, name);
        let bytes = match (width, big) {
            (8, false) => value.to_le_bytes().to_vec(),
            (8, true) => value.to_be_bytes().to_vec(),
            (_, false) => (value as u32).to_le_bytes().to_vec(),
            (_, true) => (value as u32).to_be_bytes().to_vec(),
        };
        patches.push((shoff + index as u64 * shentsize + at, bytes));
    };
    // Renames a section so that the symbolizer never reads it ('.' -> 'X').
    let hide = |patches: &mut Vec<(u64, Vec<u8>)>, sh: &Elf::SectionHeader| {
        let at = names_at.saturating_add(u64::from(sh.sh_name(endian)));
        patches.push((at, b"X".to_vec()));
    };
    // Decompressed sections go after the file's end.
    let mut end = size.next_multiple_of(8);
    for (index, (sh, part)) in table.iter().zip(&parts).enumerate() {
        match part {
            Part::Skip | Part::Base(..) => {}
            Part::Hide => hide(&mut patches, sh),
            Part::Extra(..) if !dwarf => hide(&mut patches, sh),
            Part::Extra(..) => {}
            Part::Compressed(_) if !dwarf => hide(&mut patches, sh),
            Part::Compressed(_) => {
                let flags: u64 = sh.sh_flags(endian).into();
                match decompress::<Elf>(sh, endian, cache) {
                    Some(data)
                        if is_64
                            || end.saturating_add(data.len() as u64) <= u64::from(u32::MAX) =>
                    {
                        c.write(end, &data)?;
                        c.bytes += data.len() as u64;
                        set_field(
                            &mut patches,
                            index,
                            "flags",
                            flags & !u64::from(elf::SHF_COMPRESSED),
                        );
                        set_field(&mut patches, index, "offset", end);
                        set_field(&mut patches, index, "size", data.len() as u64);
                        end = (end + data.len() as u64).next_multiple_of(8);
                    }
                    _ => hide(&mut patches, sh),
                }
            }
        }
    }
    for (at, bytes) in patches {
        c.write(at, &bytes)?;
    }
    let loads = elf
        .elf_program_headers()
        .iter()
        .filter(|p| {
            use object::read::elf::ProgramHeader as _;
            p.p_type(endian) == elf::PT_LOAD
        })
        .map(|p| {
            use object::read::elf::ProgramHeader as _;
            (
                p.p_offset(endian).into(),
                p.p_filesz(endian).into(),
                p.p_vaddr(endian).into(),
            )
        })
        .collect();
    let Copy { dst, bytes, .. } = c;
    use rustix::fs::SealFlags;
    rustix::fs::fcntl_add_seals(
        &dst,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
    )
    .map_err(|e| format!("cannot seal its copy: {e}"))?;
    let fd: OwnedFd = dst.into();
    let path = PathBuf::from(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&fd)
    ));
    verify(&path)?;
    SYMBOL_BYTES.fetch_add(bytes, Ordering::Relaxed);
    Ok(SymbolFile {
        _fd: fd,
        path,
        bytes,
        loads,
    })
}

/// Ranges given as (offset, length), clipped to `size`, as sorted, disjoint
/// (start, end) ranges covering the same bytes.
fn merged(ranges: Vec<(u64, u64)>, size: u64) -> Vec<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = ranges
        .into_iter()
        .map(|(off, len)| (off.min(size), off.saturating_add(len).min(size)))
        .filter(|(a, b)| a < b)
        .collect();
    r.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A compressed section's data, decompressed: zlib only, and only when it holds exactly
/// the size its header claims, within [`MAX_DWARF`].
fn decompress<Elf: FileHeader<Endian = Endianness>>(
    sh: &Elf::SectionHeader,
    endian: Endianness,
    cache: &Bounded,
) -> Option<Vec<u8>> {
    use object::read::{ReadRef as _, elf::CompressionHeader as _};
    let (ch, offset, len) = sh.compression(endian, cache).ok()??;
    if ch.ch_type(endian) != elf::ELFCOMPRESS_ZLIB {
        return None;
    }
    let size: u64 = ch.ch_size(endian).into();
    if size > MAX_DWARF {
        return None;
    }
    let data = cache.read_bytes_at(offset, len).ok()?;
    let mut out = Vec::with_capacity(size as usize);
    let mut z = flate2::read::ZlibDecoder::new(data).take(size + 1);
    z.read_to_end(&mut out).ok()?;
    (out.len() as u64 == size).then_some(out)
}

/// Checks a finished copy as a reader would see it: no section left that names another
/// file, none compressed.
fn verify(path: &std::path::Path) -> Result<(), String> {
    let f = File::open(path).map_err(|e| format!("cannot read its copy: {e}"))?;
    let cache = Bounded::new(f, READ_BUDGET).map_err(|e| format!("cannot read its copy: {e}"))?;
    let bad = |r: Result<Vec<(Vec<u8>, u64)>, String>| -> Result<(), String> {
        for (name, flags) in r? {
            if LINKS.contains(&name.as_slice()) {
                return Err("its copy still names another file".into());
            }
            if flags & u64::from(elf::SHF_COMPRESSED) != 0 && !name.starts_with(b"X") {
                return Err("its copy still holds a compressed section".into());
            }
        }
        Ok(())
    };
    match FileKind::parse(&cache) {
        Ok(FileKind::Elf32) => bad(sections::<FileHeader32<Endianness>>(&cache)),
        Ok(FileKind::Elf64) => bad(sections::<FileHeader64<Endianness>>(&cache)),
        _ => Err("its copy is not ELF".into()),
    }
}

fn sections<Elf: FileHeader<Endian = Endianness>>(
    cache: &Bounded,
) -> Result<Vec<(Vec<u8>, u64)>, String> {
    let elf = ElfFile::<Elf, _>::parse(cache).map_err(|e| e.to_string())?;
    let endian = elf.endian();
    let table = elf.elf_section_table();
    Ok(table
        .iter()
        .map(|sh| {
            (
                table.section_name(endian, sh).unwrap_or_default().to_vec(),
                sh.sh_flags(endian).into(),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of a process gone before it was opened: the error says the process went,
    /// not that the file is missing (it is there, as this test's own mapping shows).
    #[test]
    fn an_object_of_a_process_gone_says_the_process_went() {
        // Above any pid_max (4,194,304 at most): no process has it, or ever will.
        let gone = 0x7fff_fff0;
        let maps = std::fs::read_to_string("/proc/self/maps").expect("this test's maps");
        let line = crate::slow::maps::parse_maps(&maps)
            .into_iter()
            .find(|l| l.live_path().is_some())
            .expect("a file this test maps");
        let err = open_mapped(gone, &line, None).expect_err("no process to open it through");
        assert!(
            err.ends_with("the process exited before it was opened"),
            "{err}"
        );
    }

    #[test]
    fn a_debug_link_names_one_file() {
        assert!(plain_name("libc.so.6.debug"));
        for bad in ["", ".", "..", "../../dev/tty", "a/b", "x\0y"] {
            assert!(!plain_name(bad), "{bad:?}");
        }
        let long = "a".repeat(256);
        assert!(!plain_name(&long));
    }

    #[test]
    fn debug_files_are_looked_for_by_build_id_then_beside_the_object() {
        let link = DebugLink {
            build_id: Some(vec![0xab, 0xcd, 0xef]),
            link: Some(("p.debug".into(), 7)),
        };
        let got: Vec<_> = link
            .candidates(Some("/opt/app/bin/p"))
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            got,
            [
                "/usr/lib/debug/.build-id/ab/cdef.debug",
                "/opt/app/bin/p.debug",
                "/opt/app/bin/.debug/p.debug",
                "/usr/lib/debug/opt/app/bin/p.debug",
            ]
        );
        // A deleted object (no path) is found by its build id alone.
        assert_eq!(link.candidates(None).len(), 1);
    }

    /// A folder of the path replaced by a link (a traced process's `mv d d.old; ln -s
    /// /dev d` after its debug link was read): the lookup follows it, but nothing that
    /// is not a regular file is opened (a device's open may act: a watchdog armed), and
    /// a regular file there is opened through the very inode checked.
    #[test]
    fn a_folder_replaced_by_a_link_opens_no_device_or_fifo() {
        let dir = std::env::temp_dir().join(format!("syscost-in-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
        let fifo =
            std::ffi::CString::new(dir.join("elsewhere/p.debug").as_os_str().as_encoded_bytes())
                .unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::write(dir.join("elsewhere/q.debug"), b"a regular file").unwrap();
        std::os::unix::fs::symlink("/dev", dir.join("d")).unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere/q.debug"), dir.join("r")).unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join("e")).unwrap();
        let root = process_root(std::process::id()).unwrap();
        let mounts = Mounts::of(std::process::id());
        let opened = |path: std::path::PathBuf| {
            in_root(&root, path.to_str().unwrap(), mounts.as_ref()).map(|(f, _, _)| f)
        };
        let device = opened(dir.join("d/null"));
        let fifo = opened(dir.join("e/p.debug"));
        let regular = opened(dir.join("e/q.debug"));
        // A link to a regular file, as the last component: not followed.
        let link = opened(dir.join("r"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(device.unwrap_err(), "not a regular file: not read");
        assert_eq!(fifo.unwrap_err(), "not a regular file: not read");
        assert_eq!(link.unwrap_err(), "not a regular file: not read");
        let mut text = String::new();
        regular.unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "a regular file");
    }

    /// This test binary's own copy: symbols kept, nothing that names another file, the
    /// copy sealed and counted while it lives.
    #[test]
    fn a_copy_is_sealed_and_names_no_other_file() {
        let exe = File::open("/proc/self/exe").unwrap();
        let copy = symbol_copy(&exe, None).unwrap();
        assert!(copy.bytes > 0);
        verify(&copy.path).unwrap();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&copy.path)
            .unwrap();
        assert!(f.write_at(b"x", 0).is_err(), "the copy can be written");
        assert!(f.set_len(0).is_err(), "the copy can be truncated");
        assert!(!copy.loads.is_empty());
    }

    /// An object whose debug link names a file: the copy's link is renamed away.
    #[test]
    fn a_copy_hides_the_debug_link() {
        let dir = std::env::temp_dir().join(format!("syscost-objects-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (obj, debug) = (dir.join("true"), dir.join("true.debug"));
        std::fs::copy("/bin/true", &obj).unwrap();
        std::fs::write(&debug, b"not even ELF").unwrap();
        let objcopy = |arg: String| {
            std::process::Command::new("objcopy")
                .arg(arg)
                .arg(&obj)
                .status()
                .is_ok_and(|s| s.success())
        };
        // Debian's /bin/true links to its debug file already: replaced by one of ours.
        let ok = objcopy("--remove-section=.gnu_debuglink".into())
            && objcopy(format!("--add-gnu-debuglink={}", debug.display()));
        let link = DebugLink::of(&File::open(&obj).unwrap());
        let copy = symbol_copy(&File::open(&obj).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(ok, "objcopy (binutils) failed");
        assert_eq!(link.link.as_ref().map(|l| l.0.as_str()), Some("true.debug"));
        let copy = copy.unwrap();
        let names = sections::<FileHeader64<Endianness>>(
            &Bounded::new(File::open(&copy.path).unwrap(), READ_BUDGET).unwrap(),
        )
        .unwrap();
        assert!(names.iter().any(|(n, _)| n == b"Xgnu_debuglink"), "renamed");
        assert!(!names.iter().any(|(n, _)| n == b".gnu_debuglink"));
    }

    /// A C program built with compressed DWARF (`-gz=zlib`, as distributions ship debug
    /// files): its copy holds the DWARF decompressed, which names a function with its
    /// line; a section that decompresses to more than its header claims is left out.
    #[test]
    fn compressed_dwarf_is_decompressed_within_its_claim() {
        use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
        let dir = std::env::temp_dir().join(format!("syscost-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, bin) = (dir.join("t.c"), dir.join("t"));
        std::fs::write(&src, "int tripled(int x) { return x * 3; }\nint main(int c, char **v) { return tripled(c); }\n").unwrap();
        let built = std::process::Command::new("gcc")
            .args(["-g", "-O0", "-gz=zlib", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        let bytes = std::fs::read(&bin);
        let copy = symbol_copy(&File::open(&bin).unwrap(), None);
        // The same with .debug_info's claimed size cut to 16 bytes.
        let bomb = dir.join("bomb");
        let mut patched = bytes.as_ref().unwrap().clone();
        let (info_ch, tripled) = {
            let elf = object::File::parse(&patched[..]).unwrap();
            let info = elf.section_by_name(".debug_info").unwrap();
            let (off, _) = info.file_range().unwrap();
            let tripled = elf
                .symbols()
                .find(|s| s.name() == Ok("tripled"))
                .unwrap()
                .address();
            (off as usize, tripled)
        };
        // Elf64_Chdr: ch_type (4), reserved (4), ch_size (8), ch_addralign (8).
        patched[info_ch + 8..info_ch + 16].copy_from_slice(&16u64.to_le_bytes());
        std::fs::write(&bomb, &patched).unwrap();
        let bomb_copy = symbol_copy(&File::open(&bomb).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(built, "gcc -gz=zlib failed");
        let copy = copy.unwrap();
        let names = sections::<FileHeader64<Endianness>>(
            &Bounded::new(File::open(&copy.path).unwrap(), READ_BUDGET).unwrap(),
        )
        .unwrap();
        assert!(
            names
                .iter()
                .all(|(_, flags)| flags & u64::from(elf::SHF_COMPRESSED) == 0),
            "a compressed section is left"
        );
        let symbolizer = blazesym::symbolize::Symbolizer::builder()
            .set_debug_dirs(Some::<&[&std::path::Path]>(&[]))
            .build();
        let src = blazesym::symbolize::source::Source::Elf(blazesym::symbolize::source::Elf::new(
            &copy.path,
        ));
        let sym = symbolizer
            .symbolize_single(&src, blazesym::symbolize::Input::VirtOffset(tripled))
            .unwrap()
            .into_sym()
            .expect("tripled named");
        assert_eq!(sym.name, "tripled");
        let line = sym.code_info.as_ref().and_then(|c| c.line);
        assert_eq!(line, Some(1), "{:?}", sym.code_info);
        let bomb_copy = bomb_copy.unwrap();
        let names = sections::<FileHeader64<Endianness>>(
            &Bounded::new(File::open(&bomb_copy.path).unwrap(), READ_BUDGET).unwrap(),
        )
        .unwrap();
        assert!(
            names.iter().any(|(n, _)| n == b"Xdebug_info"),
            "the bomb kept"
        );
    }
}
