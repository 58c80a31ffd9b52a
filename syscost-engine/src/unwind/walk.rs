//! A user stack unwound: the copied stack, the mapped objects and their unwind
//! information, a process's mappings.

use super::limits::{CLOSED, MAX_FRAMES, MAX_UNWIND_SECTION, UNWIND_BUDGET, UNWIND_BYTES};

use crate::unwind::objects::{self, DebugFile, SymbolFile};
#[cfg(target_arch = "aarch64")]
use framehop::aarch64::{
    CacheAarch64 as Cache, PtrAuthMask, UnwindRegsAarch64, UnwinderAarch64 as ArchUnwinder,
};
#[cfg(target_arch = "x86_64")]
use framehop::x86_64::{CacheX86_64 as Cache, UnwindRegsX86_64, UnwinderX86_64 as ArchUnwinder};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};
use object::{Object as _, ObjectSection as _, ObjectSegment as _};
use std::{
    fs::File,
    ops::{Deref, Range},
    sync::{Arc, Mutex, OnceLock, atomic::Ordering},
};

/// What the kernel side sent for unwinding: the registers at the exit and the stack copy.
pub struct StackCopy {
    /// The instruction pointer, stack pointer and frame pointer (arm64: pc, sp, x29).
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    /// The link register (arm64's x30; unused on x86_64).
    pub lr: u64,
    /// The copy's first address (a page boundary at or below `sp`).
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl StackCopy {
    pub(super) fn read(&self, addr: u64) -> Result<u64, ()> {
        let off = addr.checked_sub(self.base).ok_or(())? as usize;
        let word = self
            .bytes
            .get(off..off.checked_add(8).ok_or(())?)
            .ok_or(())?;
        Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
    }
}

/// Section data shared between the processes that map one object.
#[derive(Clone, Default)]
pub(super) struct Bytes(Arc<[u8]>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A mapped file, open while a process known to map it lives (or a call of one waits).
pub(super) struct Object {
    /// Unique to this opening: what names are cached by.
    pub(super) serial: u64,
    pub(super) file: File,
    /// Its file name (the frames' module).
    pub(super) name: String,
    /// Its GNU build id, hex (the frames' mapping's).
    pub(super) build_id: Option<String>,
    /// Read at its first unwind (by the naming thread: the receiving one only opens).
    pub(super) unwind: OnceLock<Option<UnwindInfo>>,
    /// Its separate debug file, found when it was opened, until it is copied.
    pub(super) debug_file: Mutex<Option<DebugFile>>,
    /// Its copies for the symbolizer, made at its first naming: its own and its debug
    /// file's.
    pub(super) symbols: OnceLock<Result<(SymbolFile, Option<SymbolFile>), String>>,
}

impl Object {
    pub(super) fn unwind(&self) -> Option<&UnwindInfo> {
        self.unwind
            .get_or_init(|| UnwindInfo::read(&self.file))
            .as_ref()
    }

    pub(super) fn symbols(&self) -> Result<&(SymbolFile, Option<SymbolFile>), &str> {
        self.symbols
            .get_or_init(|| {
                let own = objects::symbol_copy(&self.file, None)?;
                let debug = crate::locks::lock(&self.debug_file).take().and_then(|d| {
                    match objects::symbol_copy(&d.file, Some(&d.check)) {
                        Ok(copy) => Some(copy),
                        Err(e) => {
                            log::debug!("{}: debug file not used: {e}", self.name);
                            None
                        }
                    }
                });
                Ok((own, debug))
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        CLOSED.fetch_add(1, Ordering::Relaxed);
    }
}

/// What framehop needs of an object, and its executable loadable segments (file offset,
/// file size, address) to place it.
pub(super) struct UnwindInfo {
    pub(super) sections: ExplicitModuleSectionInfo<Bytes>,
    pub(super) loads: Vec<(u64, u64, u64)>,
    /// Bytes of its sections (counted in [`UNWIND_BYTES`] while it lives).
    pub(super) bytes: u64,
}

impl Drop for UnwindInfo {
    fn drop(&mut self) {
        UNWIND_BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl UnwindInfo {
    pub(super) fn read(file: &File) -> Option<Self> {
        // Read where needed (headers, the unwind sections), not the whole file; a section
        // is read only when its size is within bounds and the budget has room for it.
        let cache = crate::unwind::bounded::Bounded::new(
            file.try_clone().ok()?,
            crate::unwind::bounded::READ_BUDGET + 2 * MAX_UNWIND_SECTION,
        )
        .ok()?;
        let elf = object::File::parse(&cache).ok()?;
        let mut bytes = 0u64;
        let mut section = |name: &str| {
            elf.section_by_name(name).and_then(|s| {
                let size = s.size();
                if size > MAX_UNWIND_SECTION
                    || UNWIND_BYTES
                        .load(Ordering::Relaxed)
                        .saturating_add(bytes + size)
                        > UNWIND_BUDGET
                {
                    return None;
                }
                let data = s.data().ok()?;
                bytes += data.len() as u64;
                Some((
                    s.address()..s.address().saturating_add(size),
                    Bytes(Arc::from(data)),
                ))
            })
        };
        let (eh_frame_svma, eh_frame) = section(".eh_frame").unzip();
        let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr").unzip();
        // Its bytes only serve Mach-O: the range is enough here.
        let text_svma = elf
            .section_by_name(".text")
            .map(|s| s.address()..s.address().saturating_add(s.size()));
        let got_svma = elf
            .section_by_name(".got")
            .map(|s| s.address()..s.address().saturating_add(s.size()));
        eh_frame.as_ref()?;
        // Only the executable ones: the mappings placed are the executable ones, and a
        // layout may start one inside the previous segment's last page (lld's).
        let loads = elf
            .segments()
            .filter(|s| {
                matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0)
            })
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        UNWIND_BYTES.fetch_add(bytes, Ordering::Relaxed);
        Some(Self {
            sections: ExplicitModuleSectionInfo {
                base_svma: 0,
                text_svma,
                got_svma,
                eh_frame_svma,
                eh_frame,
                eh_frame_hdr_svma,
                eh_frame_hdr,
                ..Default::default()
            },
            loads,
            bytes,
        })
    }

    /// The object's load bias in a process where file offset `offset` is mapped at
    /// `start` (an executable mapping).
    pub(super) fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        let &(p_offset, _, p_vaddr) = self.loads.iter().find(|&&(off, size, _)| {
            (off & !(syscost_common::USER_STACK_PAGE as u64 - 1)) <= offset
                && offset < off.saturating_add(size)
        })?;
        Some(
            start
                .wrapping_sub(offset)
                .wrapping_sub(p_vaddr.wrapping_sub(p_offset)),
        )
    }
}

/// What one mapping holds.
#[derive(Clone)]
pub(super) enum Holds {
    File(Arc<Object>),
    Vdso,
    /// Memory of no file (JIT code, or an anonymous mapping).
    Anonymous,
    /// A file that could not be opened: why.
    Unopened(String),
}

#[derive(Clone)]
pub(super) struct Mapping {
    pub(super) range: Range<u64>,
    pub(super) offset: u64,
    pub(super) holds: Holds,
}

/// A process's mappings as read at its first slow call (again when a frame fell outside
/// them while it lived), and its unwinder (made at its first unwind).
pub struct Process {
    pub(super) mappings: Vec<Mapping>,
    pub(super) unwinder: OnceLock<ArchUnwinder<Bytes>>,
}

impl Process {
    /// An unwinder over the objects it maps that have call frame information.
    pub(super) fn unwinder(&self) -> &ArchUnwinder<Bytes> {
        self.unwinder.get_or_init(|| {
            let mut unwinder = ArchUnwinder::new();
            let mut added: Vec<*const Object> = Vec::new();
            for m in &self.mappings {
                let Holds::File(o) = &m.holds else { continue };
                if added.contains(&Arc::as_ptr(o)) {
                    continue;
                }
                added.push(Arc::as_ptr(o));
                let Some(info) = o.unwind() else { continue };
                let Some(bias) = info.bias(m.range.start, m.offset) else {
                    continue;
                };
                let span = self
                    .mappings
                    .iter()
                    .filter(|n| matches!(&n.holds, Holds::File(p) if Arc::ptr_eq(p, o)))
                    .fold(m.range.clone(), |r, n| {
                        r.start.min(n.range.start)..r.end.max(n.range.end)
                    });
                unwinder.add_module(Module::new(
                    o.name.clone(),
                    span,
                    bias,
                    info.sections.clone(),
                ));
            }
            unwinder
        })
    }
}

pub(super) fn mapping_of(p: &Process, addr: u64) -> Option<&Mapping> {
    let i = p.mappings.partition_point(|m| m.range.start <= addr);
    let m = p.mappings.get(i.checked_sub(1)?)?;
    m.range.contains(&addr).then_some(m)
}

/// The copy unwound by call frame information (frame pointers where an address has
/// none), innermost first.
pub(super) fn unwind(p: &Process, cache: &mut Cache, c: &StackCopy) -> Vec<u64> {
    let mut read = |addr| c.read(addr);
    #[cfg(target_arch = "x86_64")]
    let regs = UnwindRegsX86_64::new(c.ip, c.sp, c.bp);
    // Return addresses may carry a pointer authentication code above the 48 bits of a
    // user address.
    #[cfg(target_arch = "aarch64")]
    let regs =
        UnwindRegsAarch64::new_with_ptr_auth_mask(PtrAuthMask(u64::MAX >> 16), c.lr, c.sp, c.bp);
    let mut it = p.unwinder().iter_frames(c.ip, regs, cache, &mut read);
    let mut out = Vec::new();
    while out.len() < MAX_FRAMES {
        match it.next() {
            // Below the first page: not code (the stack's end, e.g. argc at an exec's
            // entry point).
            Ok(Some(f)) if f.address() >= 0x1000 => out.push(f.address()),
            _ => break,
        }
    }
    out
}

/// Objects stay open (and their copies for the symbolizer): the soft limit on open files
/// is raised to the hard one.
pub(super) fn raise_open_files_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write one rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

/// What was kept of a process as its call arrived, for its stack to be unwound and
/// named later (see [`super::Names`]).
pub struct Captured {
    /// The process's mappings (none: it was gone before its first slow call was read).
    pub(super) process: Option<Arc<Process>>,
    /// Whether it still lived when its call arrived.
    pub(super) alive: bool,
    /// A 32-bit call: its vDSO is not syscost's (64-bit) one.
    pub(super) compat: bool,
}
