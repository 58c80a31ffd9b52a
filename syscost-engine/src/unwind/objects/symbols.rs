//! The symbol files kept for the symbolizer: a bounded copy of each object's symbol and
//! debug sections, checked, freed when done.

use super::debug_link::Check;
use super::limits::{FREED, MAX_DWARF, MAX_OBJECT, SYMBOL_BUDGET, SYMBOL_BYTES};
use crate::unwind::bounded::{Bounded, READ_BUDGET};
use object::{
    Endianness, FileKind,
    elf::{self, FileHeader32, FileHeader64},
    read::elf::{ElfFile, FileHeader, SectionHeader as _},
};
use std::{
    fs::File,
    io::Read as _,
    os::{fd::OwnedFd, unix::fs::FileExt as _},
    path::PathBuf,
    sync::atomic::Ordering,
};

/// A sealed copy of an object for the symbolizer, and where it is
/// (`/proc/self/fd/N`).
pub struct SymbolFile {
    /// Open while the copy is used: `path` names it.
    pub(super) _fd: OwnedFd,
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
pub(super) const LINKS: [&[u8]; 3] = [b".gnu_debuglink", b".gnu_debugaltlink", b".debug_sup"];

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
pub(super) struct Copy<'a> {
    pub(super) src: &'a File,
    pub(super) dst: File,
    pub(super) size: u64,
    pub(super) bytes: u64,
}

impl Copy<'_> {
    /// Copies `len` bytes at `offset` (clipped to the file) to the same offset.
    pub(super) fn range(&mut self, offset: u64, len: u64) -> Result<(), String> {
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

    pub(super) fn write(&mut self, at: u64, bytes: &[u8]) -> Result<(), String> {
        self.dst
            .write_all_at(bytes, at)
            .map_err(|e| format!("cannot copy it: {e}"))
    }
}

/// A section header field as (offset in the header, width in bytes), by class.
pub(super) fn field(is_64: bool, name: &str) -> (u64, usize) {
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

pub(super) fn copy_elf<Elf: FileHeader<Endian = Endianness>>(
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
pub(super) fn merged(ranges: Vec<(u64, u64)>, size: u64) -> Vec<(u64, u64)> {
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
pub(super) fn decompress<Elf: FileHeader<Endian = Endianness>>(
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
pub(super) fn verify(path: &std::path::Path) -> Result<(), String> {
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

pub(super) fn sections<Elf: FileHeader<Endian = Endianness>>(
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
