//! `program`: a static program written as bytes (an ELF with no loader and no libc)
//! that makes N getppid calls, for each ABI the kernel runs.

/// The ABIs `program` writes: the 64-bit one of each architecture and its 32-bit one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Abi {
    X86_64,
    I386,
    Aarch64,
    /// AArch32 (ARM EABI), which arm64 kernels with compat support run.
    Arm,
}

impl Abi {
    /// This architecture's own ABI (what `spawn` runs).
    #[cfg(target_arch = "x86_64")]
    pub(crate) const NATIVE: Abi = Abi::X86_64;
    #[cfg(target_arch = "aarch64")]
    pub(crate) const NATIVE: Abi = Abi::Aarch64;

    fn is_64(self) -> bool {
        matches!(self, Abi::X86_64 | Abi::Aarch64)
    }
}

/// The code of `getppid_program`: `n` getppid calls, with n > 0 one each of the eight id
/// calls (64-bit ABIs), then exit_group(0) (64-bit) or exit(0) (32-bit).
pub(crate) fn getppid_code(abi: Abi, n: u32) -> Vec<u8> {
    let mut code = Vec::new();
    // A64 and A32 instructions, one little-endian word each.
    let words =
        |code: &mut Vec<u8>, ws: &[u32]| ws.iter().for_each(|w| code.extend(w.to_le_bytes()));
    // movz/movk Xd, #imm16 (A64); mov Xd, #imm16 is movz.
    let movz = |rd: u32, imm: u32, hw: u32| 0xd280_0000 | hw << 21 | (imm & 0xffff) << 5 | rd;
    let movk = |rd: u32, imm: u32, hw: u32| 0xf280_0000 | hw << 21 | (imm & 0xffff) << 5 | rd;
    const SVC: u32 = 0xd400_0001; // svc #0 (A64)
    // movw/movt Rd, #imm16 (A32).
    let movw = |rd: u32, imm: u32| 0xe300_0000 | (imm >> 12 & 0xf) << 16 | rd << 12 | (imm & 0xfff);
    let movt = |rd: u32, imm: u32| 0xe340_0000 | (imm >> 12 & 0xf) << 16 | rd << 12 | (imm & 0xfff);
    const SVC32: u32 = 0xef00_0000; // svc #0 (A32)
    if n > 0 {
        match abi {
            Abi::X86_64 | Abi::I386 => {
                code.push(0xbe); // mov $n, %esi
                code.extend_from_slice(&n.to_le_bytes());
            }
            Abi::Aarch64 => words(&mut code, &[movz(19, n, 0), movk(19, n >> 16, 1)]),
            Abi::Arm => words(&mut code, &[movw(4, n & 0xffff), movt(4, n >> 16)]),
        }
        match abi {
            Abi::X86_64 => code.extend_from_slice(&[
                0xb8, 110, 0, 0, 0, // 1: mov $110, %eax (getppid)
                0x0f, 0x05, // syscall
                0xff, 0xce, // dec %esi
                0x75, 0xf5, // jnz 1b
            ]),
            Abi::I386 => code.extend_from_slice(&[
                0xb8, 64, 0, 0, 0, // 1: mov $64, %eax (getppid)
                0xcd, 0x80, // int $0x80
                0x4e, // dec %esi
                0x75, 0xf6, // jnz 1b
            ]),
            Abi::Aarch64 => words(
                &mut code,
                &[
                    movz(8, 173, 0), // 1: mov x8, #173 (getppid)
                    SVC,
                    0xf100_0673, // subs x19, x19, #1
                    0x54ff_ffa1, // b.ne 1b
                ],
            ),
            Abi::Arm => words(
                &mut code,
                &[
                    0xe3a0_7040, // 1: mov r7, #64 (getppid)
                    SVC32,
                    0xe254_4001, // subs r4, r4, #1
                    0x1aff_fffb, // bne 1b
                ],
            ),
        }
    }
    // With N > 0, one each of eight id syscalls (getsid(0) with the first argument
    // zeroed): with execve and getppid, ten distinct syscalls, about what a static C
    // program makes at its start. With N = 0 only execve and exit_group: a process start
    // alone.
    match abi {
        Abi::X86_64 => {
            if n > 0 {
                code.extend_from_slice(&[0x31, 0xff]); // xor %edi, %edi
                // getpid gettid getuid getgid geteuid getegid getpgrp getsid
                for nr in [39u8, 186, 102, 104, 107, 108, 111, 124] {
                    code.extend_from_slice(&[0xb8, nr, 0, 0, 0, 0x0f, 0x05]); // mov $nr, %eax; syscall
                }
            }
            code.extend_from_slice(&[
                0xb8, 231, 0, 0, 0, // mov $231, %eax (exit_group)
                0x31, 0xff, // xor %edi, %edi
                0x0f, 0x05, // syscall
            ]);
        }
        Abi::Aarch64 => {
            if n > 0 {
                // getpid gettid getuid getgid geteuid getegid getpgid(0) getsid(0): x0
                // is zeroed before each (it holds the previous call's result).
                for nr in [172, 178, 174, 176, 175, 177, 155, 156] {
                    words(&mut code, &[movz(0, 0, 0), movz(8, nr, 0), SVC]);
                }
            }
            words(&mut code, &[movz(0, 0, 0), movz(8, 94, 0), SVC]); // exit_group(0)
        }
        Abi::I386 => code.extend_from_slice(&[
            0xb8, 1, 0, 0, 0, // mov $1, %eax (exit)
            0x31, 0xdb, // xor %ebx, %ebx
            0xcd, 0x80, // int $0x80
        ]),
        Abi::Arm => words(
            &mut code,
            &[0xe3a0_0000, 0xe3a0_7001, SVC32], // mov r0, #0; mov r7, #1 (exit); svc #0
        ),
    }
    code
}

/// A static ELF executable for `abi` whose code makes `n` getppid calls and exits 0,
/// written as bytes (one loadable segment: the headers and the code).
pub(crate) fn getppid_program(abi: Abi, n: u32) -> Vec<u8> {
    let code = getppid_code(abi, n);
    let u16s = |v: &mut Vec<u8>, xs: &[u16]| xs.iter().for_each(|x| v.extend(x.to_le_bytes()));
    let u32s = |v: &mut Vec<u8>, xs: &[u32]| xs.iter().for_each(|x| v.extend(x.to_le_bytes()));
    let u64s = |v: &mut Vec<u8>, xs: &[u64]| xs.iter().for_each(|x| v.extend(x.to_le_bytes()));
    let mut elf = vec![
        0x7f,
        b'E',
        b'L',
        b'F',
        if abi.is_64() { 2 } else { 1 },
        1,
        1,
        0,
    ];
    elf.resize(16, 0);
    // e_machine: EM_X86_64, EM_386, EM_AARCH64, EM_ARM; e_flags: ARM's EABI version 5.
    let (machine, flags) = match abi {
        Abi::X86_64 => (62, 0),
        Abi::I386 => (3, 0),
        Abi::Aarch64 => (183, 0),
        Abi::Arm => (40, 0x0500_0000),
    };
    if abi.is_64() {
        const BASE: u64 = 0x40_0000;
        let headers = 64 + 56;
        let size = headers + code.len() as u64;
        u16s(&mut elf, &[2, machine]); // ET_EXEC
        u32s(&mut elf, &[1]);
        u64s(&mut elf, &[BASE + headers, 64, 0]); // entry, phoff, shoff
        u32s(&mut elf, &[flags]);
        u16s(&mut elf, &[64, 56, 1, 0, 0, 0]); // ehsize, phentsize, phnum, no sections
        u32s(&mut elf, &[1, 5]); // PT_LOAD, read + execute
        u64s(&mut elf, &[0, BASE, BASE, size, size, 0x1000]);
        assert_eq!(elf.len() as u64, headers);
    } else {
        const BASE: u32 = 0x0804_8000;
        let headers = 52 + 32;
        let size = headers + code.len() as u32;
        u16s(&mut elf, &[2, machine]); // ET_EXEC
        u32s(&mut elf, &[1, BASE + headers, 52, 0, flags]);
        u16s(&mut elf, &[52, 32, 1, 0, 0, 0]);
        u32s(&mut elf, &[1, 0, BASE, BASE, size, size, 5, 0x1000]);
        assert_eq!(elf.len() as u32, headers);
    }
    elf.extend_from_slice(&code);
    elf
}

pub(crate) fn write_program(path: &std::path::Path, abi: Abi, n: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, getppid_program(abi, n)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
