//! A traced process's file read for the `object` crate's parsers within a budget of
//! bytes. A parser reads what the file's headers claim (a symbol table's size, a
//! compressed section's length): `object`'s own cache allocates each claim whole before
//! it reads, so an ELF file of a few KB (sparse, or its headers lying within its size)
//! could make root allocate gigabytes. Here a read past the budget fails as a short file
//! would, before anything is allocated, and every byte read counts, each claim once.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    fs::File,
    ops::Range,
    os::unix::fs::FileExt as _,
};

/// What one parse of one file may read, bytes: the headers, symbol and string tables,
/// notes, a compressed section's input, unwind sections.
pub const READ_BUDGET: u64 = 256 << 20;

/// Strings are looked for this far at most (section and symbol names).
const MAX_STRING: u64 = 4096;

/// Buffers read, by what they were asked as.
type Kept<K> = RefCell<HashMap<K, Box<[u8]>>>;

/// `file` for `object`'s parsers (`&Bounded` is their `ReadRef`), within `budget` bytes.
pub struct Bounded {
    file: File,
    len: u64,
    left: Cell<u64>,
    /// What was read, by (offset, size) and by (offset, delimiter): a parser asks for the
    /// same bytes many times and holds what it got as long as it holds this.
    bytes: Kept<(u64, u64)>,
    strings: Kept<(u64, u8)>,
}

impl Bounded {
    pub fn new(file: File, budget: u64) -> std::io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self {
            file,
            len,
            left: Cell::new(budget),
            bytes: RefCell::default(),
            strings: RefCell::default(),
        })
    }

    /// Takes `n` bytes from the budget, or none when it has fewer.
    fn spend(&self, n: u64) -> Result<(), ()> {
        let left = self.left.get().checked_sub(n).ok_or(())?;
        self.left.set(left);
        Ok(())
    }

    /// Bytes still allowed.
    pub fn left(&self) -> u64 {
        self.left.get()
    }
}

/// Extends a borrow of a kept buffer to the reader's lifetime.
///
/// # Safety
/// `b` must be the heap data of a `Box<[u8]>` kept in one of `Bounded`'s maps, which
/// never remove nor replace an entry: the data stays where it is (a map that grows
/// moves the boxes, not what they point to) for as long as the `Bounded` lives.
unsafe fn kept<'a>(b: &[u8]) -> &'a [u8] {
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) }
}

impl<'a> object::ReadRef<'a> for &'a Bounded {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        if size == 0 {
            return Ok(&[]);
        }
        let end = offset.checked_add(size).ok_or(())?;
        if end > self.len {
            return Err(());
        }
        let mut map = self.bytes.borrow_mut();
        if let Some(b) = map.get(&(offset, size)) {
            // SAFETY: a box of the map, never removed.
            return Ok(unsafe { kept(b) });
        }
        self.spend(size)?;
        let mut b = vec![0u8; usize::try_from(size).map_err(|_| ())?].into_boxed_slice();
        self.file.read_exact_at(&mut b, offset).map_err(|_| ())?;
        let b = map.entry((offset, size)).or_insert(b);
        // SAFETY: a box of the map, never removed.
        Ok(unsafe { kept(b) })
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let end = range.end.min(self.len);
        if range.start >= end {
            return Err(());
        }
        let mut map = self.strings.borrow_mut();
        if let Some(b) = map.get(&(range.start, delimiter)) {
            // SAFETY: a box of the map, never removed.
            return Ok(unsafe { kept(b) });
        }
        let n = (end - range.start).min(MAX_STRING);
        self.spend(n)?;
        let mut buf = vec![0u8; n as usize];
        let got = self.file.read_at(&mut buf, range.start).map_err(|_| ())?;
        let at = buf[..got].iter().position(|&c| c == delimiter).ok_or(())?;
        buf.truncate(at);
        let b = map
            .entry((range.start, delimiter))
            .or_insert(buf.into_boxed_slice());
        // SAFETY: a box of the map, never removed.
        Ok(unsafe { kept(b) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::ReadRef as _;

    fn file_of(bytes: &[u8], name: &str) -> (std::path::PathBuf, File) {
        let p = std::env::temp_dir().join(format!("syscost-bounded-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        let f = File::open(&p).unwrap();
        (p, f)
    }

    #[test]
    fn reads_within_the_file_and_the_budget() {
        let (p, f) = file_of(b"hello\0world\0", "basic");
        let b = Bounded::new(f, 8).unwrap();
        let r = &b;
        assert_eq!(r.read_bytes_at(0, 5), Ok(&b"hello"[..]));
        // The same claim again costs nothing.
        assert_eq!(r.read_bytes_at(0, 5), Ok(&b"hello"[..]));
        assert_eq!(b.left(), 3);
        // Past the file, past the budget, past u64: refused, nothing spent.
        assert!(r.read_bytes_at(10, 5).is_err());
        assert!(r.read_bytes_at(6, 5).is_err());
        assert!(r.read_bytes_at(u64::MAX, 2).is_err());
        assert_eq!(b.left(), 3);
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn strings_end_at_their_delimiter_within_bounds() {
        let (p, f) = file_of(b"hello\0world", "strings");
        let b = Bounded::new(f, 1 << 20).unwrap();
        let r = &b;
        assert_eq!(r.read_bytes_at_until(0..11, 0), Ok(&b"hello"[..]));
        assert_eq!(r.read_bytes_at_until(6..11, 0), Err(()), "no delimiter");
        assert_eq!(r.read_bytes_at_until(20..30, 0), Err(()), "past the end");
        std::fs::remove_file(p).unwrap();
    }

    /// A sparse file of 1 GiB whose ELF header claims a section table at its end: the
    /// parse asks for what the headers claim and is refused past the budget, never
    /// allocating it.
    #[test]
    fn a_file_that_claims_more_than_the_budget_is_refused() {
        let (p, f) = file_of(b"", "sparse");
        let big = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        big.set_len(1 << 30).unwrap();
        let b = Bounded::new(f, 1 << 20).unwrap();
        assert!((&b).read_bytes_at(0, 512 << 20).is_err());
        assert_eq!(b.left(), 1 << 20);
        std::fs::remove_file(p).unwrap();
    }
}
