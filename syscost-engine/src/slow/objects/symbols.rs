//! The symbol files kept for the symbolizer: a bounded copy of each, freed when done.

use super::*;

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
