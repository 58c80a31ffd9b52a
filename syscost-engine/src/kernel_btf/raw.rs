//! A reader of raw BTF (the format of `/sys/kernel/btf/vmlinux`, the kernel's
//! Documentation/bpf/btf.rst) for the few lookups the layout needs: structs and unions
//! by name with their members, typedefs, pointers and function prototypes. One pass over
//! the type section notes where each type starts and which structs, unions and typedefs
//! have the names asked for; nothing else is decoded until asked for. (btf-rs decodes every type of
//! the kernel's 100,000 and more up front, which takes a few hundred milliseconds of a
//! start that should take a few; the tests hold this reader to its answers.)

use std::collections::HashMap;

use anyhow::{Result, bail};

const MAGIC: u16 = 0xeb9f;

/// BTF kinds (`BTF_KIND_*`).
mod kind {
    pub const INT: u32 = 1;
    pub const PTR: u32 = 2;
    pub const ARRAY: u32 = 3;
    pub const STRUCT: u32 = 4;
    pub const UNION: u32 = 5;
    pub const ENUM: u32 = 6;
    pub const FWD: u32 = 7;
    pub const TYPEDEF: u32 = 8;
    pub const VOLATILE: u32 = 9;
    pub const CONST: u32 = 10;
    pub const RESTRICT: u32 = 11;
    pub const FUNC: u32 = 12;
    pub const FUNC_PROTO: u32 = 13;
    pub const VAR: u32 = 14;
    pub const DATASEC: u32 = 15;
    pub const FLOAT: u32 = 16;
    pub const DECL_TAG: u32 = 17;
    pub const TYPE_TAG: u32 = 18;
    pub const ENUM64: u32 = 19;
}

/// Parsed BTF, borrowing the bytes it was read from.
pub struct Btf<'a> {
    types: &'a [u8],
    strings: &'a [u8],
    /// Where type `id` starts in `types`, at `id - 1` (id 0 is void).
    starts: Vec<u32>,
    /// The structs, unions and typedefs of the names asked for, by name.
    named: HashMap<String, Vec<u32>>,
}

/// One type, decoded as far as the layout needs.
#[derive(Debug)]
pub enum Type<'a> {
    /// A struct or a union, with its members.
    Composite {
        members: Members<'a>,
        union: bool,
    },
    Typedef(u32),
    Ptr(u32),
    /// A function prototype and how many parameters it has.
    FuncProto(usize),
    Other,
}

/// The members of a struct or union.
#[derive(Clone, Debug)]
pub struct Members<'a> {
    data: &'a [u8],
    /// Offsets hold a bitfield size in their top byte (the `kind_flag`).
    bitfields: bool,
}

/// One member of a struct or union.
#[derive(Debug, PartialEq, Eq)]
pub struct Member<'a> {
    pub name: &'a str,
    pub type_id: u32,
    pub bit_offset: u32,
    /// 0 unless a bitfield.
    pub bitfield_size: u32,
}

fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    match b.get(at..at + 4) {
        Some(x) => Ok(u32::from_ne_bytes(x.try_into().expect("4 bytes"))),
        None => bail!("BTF ends inside a type (offset {at})"),
    }
}

impl<'a> Btf<'a> {
    /// Reads BTF in this machine's byte order (the kernel's own), finding the structs,
    /// unions and typedefs called one of `names` on the way.
    pub fn parse(bytes: &'a [u8], names: &[&str]) -> Result<Self> {
        if bytes.len() < 24 {
            bail!("BTF too short for its header ({} bytes)", bytes.len());
        }
        let magic = u16::from_ne_bytes([bytes[0], bytes[1]]);
        if magic != MAGIC {
            bail!("not BTF in this machine's byte order (magic {magic:#06x})");
        }
        if bytes[2] != 1 {
            bail!("BTF version {} (this reader knows 1)", bytes[2]);
        }
        let hdr_len = u32_at(bytes, 4)? as usize;
        if hdr_len < 24 {
            bail!("a BTF header of {hdr_len} bytes (version 1's has 24)");
        }
        let section = |off_at: usize| -> Result<&'a [u8]> {
            let off = u32_at(bytes, off_at)? as usize;
            let len = u32_at(bytes, off_at + 4)? as usize;
            let start = hdr_len.checked_add(off);
            match start.and_then(|s| bytes.get(s..s.checked_add(len)?)) {
                Some(s) => Ok(s),
                None => bail!("a BTF section lies beyond its {} bytes", bytes.len()),
            }
        };
        let types = section(8)?;
        let strings = section(16)?;
        let mut btf = Btf {
            types,
            strings,
            // Kernels' types take 16 to 40 bytes each on average.
            starts: Vec::with_capacity(types.len() / 16),
            named: names.iter().map(|n| (n.to_string(), Vec::new())).collect(),
        };
        let mut at = 0usize;
        while at < types.len() {
            let name_off = u32_at(types, at)?;
            let info = u32_at(types, at + 4)?;
            let (k, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let extra = match k {
                kind::INT | kind::VAR | kind::DECL_TAG => 4,
                kind::ARRAY => 12,
                kind::STRUCT | kind::UNION | kind::DATASEC | kind::ENUM64 => 12 * vlen,
                kind::ENUM | kind::FUNC_PROTO => 8 * vlen,
                kind::PTR
                | kind::FWD
                | kind::TYPEDEF
                | kind::VOLATILE
                | kind::CONST
                | kind::RESTRICT
                | kind::FUNC
                | kind::FLOAT
                | kind::TYPE_TAG => 0,
                other => bail!(
                    "BTF type {} has kind {other}, unknown here",
                    btf.starts.len() + 1
                ),
            };
            btf.starts.push(at as u32);
            if matches!(k, kind::STRUCT | kind::UNION | kind::TYPEDEF) && name_off != 0 {
                let name = btf.name_bytes(name_off)?;
                if let Some(wanted) = names.iter().find(|n| n.as_bytes() == name) {
                    let id = btf.starts.len() as u32;
                    btf.named.get_mut(*wanted).expect("asked for").push(id);
                }
            }
            at += 12 + extra;
        }
        if at != types.len() {
            bail!("the last BTF type runs past the type section");
        }
        Ok(btf)
    }

    fn name_bytes(&self, off: u32) -> Result<&'a [u8]> {
        let Some(tail) = self.strings.get(off as usize..) else {
            bail!("BTF name offset {off} beyond the strings");
        };
        match tail.iter().position(|&c| c == 0) {
            Some(end) => Ok(&tail[..end]),
            None => bail!("BTF name at {off} not terminated"),
        }
    }

    fn name(&self, off: u32) -> Result<&'a str> {
        Ok(std::str::from_utf8(self.name_bytes(off)?)?)
    }

    /// The ids of the structs, unions and typedefs called `name` (one of the names
    /// given to [`Btf::parse`]).
    pub fn named(&self, name: &str) -> Result<&[u32]> {
        match self.named.get(name) {
            Some(ids) => Ok(ids),
            None => bail!("{name} was not looked for when the BTF was read"),
        }
    }

    /// Type `id` (0 is void, shown as `Other`).
    pub fn get(&self, id: u32) -> Result<Type<'a>> {
        if id == 0 {
            return Ok(Type::Other);
        }
        let Some(&at) = self.starts.get(id as usize - 1) else {
            bail!("BTF has no type {id} ({} types)", self.starts.len());
        };
        let at = at as usize;
        let info = u32_at(self.types, at + 4)?;
        let (k, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        let next = u32_at(self.types, at + 8)?;
        Ok(match k {
            kind::STRUCT | kind::UNION => Type::Composite {
                members: Members {
                    data: &self.types[at + 12..at + 12 + 12 * vlen],
                    bitfields: info >> 31 != 0,
                },
                union: k == kind::UNION,
            },
            kind::TYPEDEF => Type::Typedef(next),
            kind::PTR => Type::Ptr(next),
            kind::FUNC_PROTO => Type::FuncProto(vlen),
            _ => Type::Other,
        })
    }

    /// The members of `m`, in declaration order.
    pub fn members(&self, m: &Members<'a>) -> Result<Vec<Member<'a>>> {
        m.data
            .chunks_exact(12)
            .map(|c| {
                let offset = u32_at(c, 8)?;
                let (bit_offset, bitfield_size) = if m.bitfields {
                    (offset & 0xff_ffff, offset >> 24)
                } else {
                    (offset, 0)
                };
                Ok(Member {
                    name: self.name(u32_at(c, 0)?)?,
                    type_id: u32_at(c, 4)?,
                    bit_offset,
                    bitfield_size,
                })
            })
            .collect()
    }

    /// How many types there are (void not counted).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.starts.len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes raw BTF: types as (name, info, size-or-type, extra words), strings from 0.
    pub(crate) struct Builder {
        types: Vec<u8>,
        strings: Vec<u8>,
    }

    impl Builder {
        pub(crate) fn new() -> Self {
            Self {
                types: Vec::new(),
                strings: vec![0],
            }
        }

        pub(crate) fn string(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            let off = self.strings.len() as u32;
            self.strings.extend_from_slice(s.as_bytes());
            self.strings.push(0);
            off
        }

        pub(crate) fn push(
            &mut self,
            name: &str,
            kind: u32,
            vlen: u32,
            flag: bool,
            next: u32,
            extra: &[u32],
        ) {
            let name = self.string(name);
            let info = (u32::from(flag) << 31) | (kind << 24) | vlen;
            for w in [name, info, next].iter().chain(extra) {
                self.types.extend_from_slice(&w.to_ne_bytes());
            }
        }

        pub(crate) fn bytes(&self) -> Vec<u8> {
            let mut b = Vec::new();
            b.extend_from_slice(&MAGIC.to_ne_bytes());
            b.extend_from_slice(&[1, 0]);
            for w in [
                24u32,
                0,
                self.types.len() as u32,
                self.types.len() as u32,
                self.strings.len() as u32,
            ] {
                b.extend_from_slice(&w.to_ne_bytes());
            }
            b.extend_from_slice(&self.types);
            b.extend_from_slice(&self.strings);
            b
        }
    }

    #[test]
    fn reads_structs_members_and_prototypes() {
        let mut b = Builder::new();
        // 1: int
        b.push("int", kind::INT, 0, false, 4, &[32]);
        // 2: struct task { int pid; int tgid; union { int a; } ; int flags:3 }
        let (pid, tgid, flags) = (b.string("pid"), b.string("tgid"), b.string("flags"));
        b.push(
            "task",
            kind::STRUCT,
            4,
            true,
            16,
            &[pid, 1, 0, tgid, 1, 32, 0, 3, 64, flags, 1, (3 << 24) | 96],
        );
        // 3: union { int a; }
        let a = b.string("a");
        b.push("", kind::UNION, 1, false, 4, &[a, 1, 0]);
        // 4: enum with 2 values, to be skipped
        b.push("e", kind::ENUM, 2, false, 4, &[0, 0, 0, 1]);
        // 5: func proto (void *, int, int); 6: pointer to it; 7: typedef of the pointer.
        b.push("", kind::FUNC_PROTO, 3, false, 0, &[0, 1, 0, 1, 0, 1]);
        b.push("", kind::PTR, 0, false, 5, &[]);
        b.push("btf_trace_x", kind::TYPEDEF, 0, false, 6, &[]);
        let bytes = b.bytes();
        let btf = Btf::parse(&bytes, &["task", "btf_trace_x", "e", "none"]).unwrap();
        assert_eq!(btf.len(), 7);
        assert_eq!(btf.named("task").unwrap(), &[2]);
        assert_eq!(btf.named("btf_trace_x").unwrap(), &[7]);
        assert!(
            btf.named("e").unwrap().is_empty(),
            "enums are not looked for"
        );
        assert!(btf.named("none").unwrap().is_empty());
        assert!(btf.named("int").is_err(), "not asked for");
        let Type::Composite {
            members: m,
            union: false,
        } = btf.get(2).unwrap()
        else {
            panic!("struct task")
        };
        assert!(matches!(
            btf.get(3).unwrap(),
            Type::Composite { union: true, .. }
        ));
        let m = btf.members(&m).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[1],
            Member {
                name: "tgid",
                type_id: 1,
                bit_offset: 32,
                bitfield_size: 0
            }
        );
        assert_eq!(m[2].name, "");
        assert_eq!((m[3].bit_offset, m[3].bitfield_size), (96, 3));
        assert!(matches!(btf.get(7).unwrap(), Type::Typedef(6)));
        assert!(matches!(btf.get(6).unwrap(), Type::Ptr(5)));
        assert!(matches!(btf.get(5).unwrap(), Type::FuncProto(3)));
        assert!(btf.get(8).is_err());
    }

    #[test]
    fn refuses_what_is_not_btf() {
        assert!(Btf::parse(b"short", &[]).is_err());
        let mut bytes = Builder::new().bytes();
        bytes[0] ^= 0xff;
        let e = Btf::parse(&bytes, &[]).err().unwrap().to_string();
        assert!(e.contains("magic"), "{e}");
        let mut b = Builder::new();
        b.push("x", 31, 0, false, 0, &[]);
        let e = Btf::parse(&b.bytes(), &[]).err().unwrap().to_string();
        assert!(e.contains("kind 31"), "{e}");
        // A struct whose members run past the section.
        let mut b = Builder::new();
        b.push("s", kind::STRUCT, 2, false, 8, &[0, 0, 0]);
        assert!(Btf::parse(&b.bytes(), &[]).is_err());
        // A section beyond the file.
        let mut bytes = Builder::new().bytes();
        bytes[20] = 200;
        assert!(Btf::parse(&bytes, &[]).is_err());
    }
}
