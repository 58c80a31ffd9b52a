//! Facts about the running kernel read from its BTF (/sys/kernel/btf/vmlinux): where
//! `pid`, `tgid` and `signal` sit in `struct task_struct` and `live` in `struct
//! signal_struct` (the fork and exit hooks read them), the registers of a call in
//! `struct pt_regs` (this architecture's), and
//! what differs between kernels: whether sched_switch passes `prev_state`, and where a
//! task's cgroup ancestry is kept. Features are probed here, not inferred from versions.

mod raw;

use std::sync::OnceLock;

use anyhow::{Result, anyhow, bail};
use raw::{Btf, Type};

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The structs and typedefs the layout reads.
const NAMES: [&str; 12] = [
    "task_struct",
    "signal_struct",
    "pt_regs",
    "files_struct",
    "fdtable",
    "file",
    "inode",
    "path",
    "mount",
    "css_set",
    "cgroup",
    "btf_trace_sched_switch",
];

/// The running kernel's BTF, `/sys/kernel/btf/vmlinux`, taken once per process for
/// every reader of it (the layout; the BTF typed programs are loaded against): mapped
/// where the kernel lets the file be mapped (6.16 on: nothing is copied), else read in
/// one go (5 MB or so).
pub fn vmlinux() -> Result<&'static [u8]> {
    static BYTES: OnceLock<Result<&'static [u8], String>> = OnceLock::new();
    let bytes = BYTES.get_or_init(|| {
        let fail = |e: std::io::Error| needs_btf(&e);
        let file = std::fs::File::open(VMLINUX).map_err(fail)?;
        let len = file.metadata().map_err(fail)?.len() as usize;
        if let Some(mapped) = map_whole(&file, len) {
            return Ok(mapped);
        }
        let mut v = Vec::with_capacity(len);
        std::io::Read::read_to_end(&mut &file, &mut v).map_err(fail)?;
        if v.is_empty() {
            return Err(needs_btf(&"the file is empty"));
        }
        Ok(Vec::leak(v))
    });
    match bytes {
        Ok(b) => Ok(b),
        Err(e) => Err(anyhow!("{e}")),
    }
}

/// The one line for a kernel whose BTF cannot be had, with what went wrong.
fn needs_btf(why: &dyn std::fmt::Display) -> String {
    format!(
        "cannot read {VMLINUX}: syscost needs a kernel built with CONFIG_DEBUG_INFO_BTF ({why})"
    )
}

/// `file`'s `len` bytes mapped read-only for the rest of the process, if the file can be
/// mapped.
fn map_whole(file: &std::fs::File, len: usize) -> Option<&'static [u8]> {
    use std::os::fd::AsRawFd as _;
    if len == 0 {
        return None;
    }
    // SAFETY: a private read-only mapping of an open file, never unmapped: the slice
    // stays valid as long as the process lives, and the kernel's BTF does not change.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        );
        (p != libc::MAP_FAILED).then(|| std::slice::from_raw_parts(p.cast::<u8>(), len))
    }
}

/// aya's loader, made on a thread of its own while syscost reads the layout. syscost
/// relocates nothing against the kernel's BTF (the programs get their offsets from the
/// layout, as load-time constants), so the loader is given none; but aya 0.14's
/// `EbpfLoader::new()` reads and parses `/sys/kernel/btf/vmlinux` regardless (some 25 ms,
/// half of a start). Its thread therefore
/// makes it with its root moved to /sys/kernel/btf, where the path aya opens does not
/// exist: the root of that thread only (`unshare(CLONE_FS)`), which then ends. Where the
/// move is refused (no CAP_SYS_CHROOT), the loader is made as usual.
pub struct Loader(Option<std::thread::JoinHandle<aya::EbpfLoader<'static>>>);

impl Loader {
    pub fn start() -> Self {
        Self(
            std::thread::Builder::new()
                .name("syscost-loader".into())
                .spawn(|| {
                    // What this kernel's BPF offers, which aya probes once per process
                    // (a few ms of small loads), found here too, before the move.
                    let _ = aya::features();
                    // SAFETY: unshare(CLONE_FS) gives this thread a root and a working
                    // directory of its own; chroot then moves only this thread's.
                    let moved = unsafe {
                        libc::unshare(libc::CLONE_FS) == 0
                            && libc::chroot(c"/sys/kernel/btf".as_ptr()) == 0
                    };
                    if !moved {
                        // A slower start, not a failure: aya parses the BTF it finds.
                        log::debug!(
                            "the loader's thread keeps the root: {}",
                            std::io::Error::last_os_error()
                        );
                    }
                    let mut loader = aya::EbpfLoader::new();
                    loader.btf(None);
                    loader
                })
                .ok(),
        )
    }

    /// The loader, once made (made here if its thread could not be).
    pub fn get(self) -> aya::EbpfLoader<'static> {
        self.0.and_then(|t| t.join().ok()).unwrap_or_else(|| {
            let mut loader = aya::EbpfLoader::new();
            loader.btf(None);
            loader
        })
    }
}

/// [`vmlinux`] as aya reads it, parsed once, for the programs typed by the kernel's BTF
/// (the benchmark's tp_btf candidate, doctor's fentry probe).
pub fn aya_btf() -> Result<&'static aya::Btf> {
    static BTF: OnceLock<Result<aya::Btf, String>> = OnceLock::new();
    let bytes = vmlinux()?;
    match BTF.get_or_init(|| {
        aya::Btf::parse(bytes, aya::Endianness::default())
            .map_err(|e| format!("cannot parse {VMLINUX}: {e}"))
    }) {
        Ok(b) => Ok(b),
        Err(e) => Err(anyhow!("{e}")),
    }
}

/// What the kernel programs need to know about this kernel's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLayout {
    pub task_pid_offset: u64,
    pub task_tgid_offset: u64,
    /// `task_struct.signal` and `signal_struct.live` (threads of the group not yet
    /// exiting): the exit hook's test for the group's last thread.
    pub task_signal_offset: u64,
    /// `task_struct.mm` and `.self_exec_id`: slow calls carry them, to tell an exec apart.
    pub task_mm_offset: u64,
    pub task_exec_id_offset: u64,
    /// From a task to the inode of one of its open files (`--slow`'s fd check): see
    /// `config.file_offsets` in the kernel side.
    pub file_offsets: [u64; 8],
    pub signal_live_offset: u64,
    /// Where the registers of a syscall are in `struct pt_regs`.
    pub registers: Registers,
    /// Whether the sched_switch tracepoint passes `prev_state` (from 5.18).
    pub switch_has_prev_state: bool,
    /// Offset of `task_struct.__state` (`.state` before 5.14), where the switch hook
    /// reads the state on kernels whose tracepoint lacks `prev_state`.
    pub task_state_offset: Option<u64>,
    /// Where a task's default-hierarchy cgroup and its ancestors' ids are, on kernels
    /// that keep `cgroup.ancestor_ids[]` (before 6.0): `--cgroup` reads them where
    /// tracing programs lack the cgroup-ancestor helper (before 5.14).
    pub cgroup_walk: Option<CgroupWalk>,
}

/// Byte offsets in `struct pt_regs` of the registers the kernel side reads, for this
/// architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registers {
    /// How 32-bit (compat) user code is told from 64-bit: a register's offset, a mask
    /// and the value under the mask in 32-bit code (`config.compat_test` in the kernel side).
    pub compat_test: [u64; 3],
    /// The syscall argument registers in argument order, for `--slow`'s arguments
    /// (x86_64: di, si, dx, r10, r8, r9; arm64: orig_x0, x1-x5, as x0 holds the return
    /// value at the exit).
    pub args: [u64; 6],
    /// The same for 32-bit (compat) calls (x86: bx, cx, dx, si, di, bp; arm: orig_x0,
    /// x1-x5, AArch32's r0-r5).
    pub compat_args: [u64; 6],
    /// Instruction pointer, stack pointer, frame pointer and link register: where a
    /// slow call's stack is unwound from (x86_64, which has no link register: ip, sp,
    /// bp, ip; arm64: pc, sp, x29, x30).
    pub unwind: [u64; 4],
}

impl Registers {
    #[cfg(target_arch = "x86_64")]
    fn read(btf: &Btf) -> Result<Self> {
        let r = |name| member_offset(btf, "pt_regs", name);
        Ok(Self {
            compat_test: [r("cs")?, 0xffff, syscost_common::USER32_CS],
            args: [r("di")?, r("si")?, r("dx")?, r("r10")?, r("r8")?, r("r9")?],
            compat_args: [r("bx")?, r("cx")?, r("dx")?, r("si")?, r("di")?, r("bp")?],
            unwind: [r("ip")?, r("sp")?, r("bp")?, r("ip")?],
        })
    }

    #[cfg(target_arch = "aarch64")]
    fn read(btf: &Btf) -> Result<Self> {
        let r = |name| member_offset(btf, "pt_regs", name);
        // x0..x30 are `regs[31]`, in an anonymous struct of a union with `user_regs`.
        let regs = r("regs")?;
        let x = |i: u64| regs + 8 * i;
        let args = [r("orig_x0")?, x(1), x(2), x(3), x(4), x(5)];
        let mode32 = syscost_common::PSR_MODE32_BIT;
        Ok(Self {
            compat_test: [r("pstate")?, mode32, mode32],
            args,
            compat_args: args,
            unwind: [r("pc")?, r("sp")?, x(29), x(30)],
        })
    }
}

/// Offsets for following `task->cgroups->dfl_cgrp` to its `level` and `ancestor_ids[]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupWalk {
    pub task_cgroups: u64,
    pub css_set_dfl_cgrp: u64,
    pub cgroup_level: u64,
    pub cgroup_ancestor_ids: u64,
}

impl KernelLayout {
    /// The running kernel's layout, from its BTF (worked out once per process).
    pub fn read() -> Result<Self> {
        static LAYOUT: OnceLock<Result<KernelLayout, String>> = OnceLock::new();
        let layout = LAYOUT.get_or_init(|| {
            vmlinux()
                .and_then(Self::from_btf)
                .map_err(|e| format!("{e:#}"))
        });
        match layout {
            Ok(l) => Ok(*l),
            Err(e) => Err(anyhow!("{e}")),
        }
    }

    /// The layout described by raw BTF `bytes` (of the structs and typedefs in `NAMES`).
    pub(crate) fn from_btf(bytes: &[u8]) -> Result<Self> {
        let btf =
            Btf::parse(bytes, &NAMES).map_err(|e| anyhow!(needs_btf(&format_args!("{e:#}"))))?;
        let btf = &btf;
        Ok(Self {
            task_pid_offset: member_offset(btf, "task_struct", "pid")?,
            task_tgid_offset: member_offset(btf, "task_struct", "tgid")?,
            task_signal_offset: member_offset(btf, "task_struct", "signal")?,
            // Both only serve --slow's details: a kernel without them is not refused
            // (0: the kernel side reads nothing).
            task_mm_offset: member_offset(btf, "task_struct", "mm").unwrap_or(0),
            task_exec_id_offset: member_offset(btf, "task_struct", "self_exec_id").unwrap_or(0),
            file_offsets: (|| -> Result<[u64; 8]> {
                Ok([
                    member_offset(btf, "task_struct", "files")?,
                    member_offset(btf, "files_struct", "fdt")?,
                    member_offset(btf, "fdtable", "max_fds")?,
                    member_offset(btf, "fdtable", "fd")?,
                    member_offset(btf, "file", "f_inode")?,
                    member_offset(btf, "inode", "i_ino")?,
                    member_offset(btf, "file", "f_path")? + member_offset(btf, "path", "mnt")?,
                    member_offset(btf, "mount", "mnt_id")?
                        .wrapping_sub(member_offset(btf, "mount", "mnt")?),
                ])
            })()
            .unwrap_or([0; 8]),
            signal_live_offset: member_offset(btf, "signal_struct", "live")?,
            registers: Registers::read(btf)?,
            switch_has_prev_state: tracepoint_args(btf, "sched_switch")? >= 4,
            task_state_offset: member_offset(btf, "task_struct", "__state")
                .or_else(|_| member_offset(btf, "task_struct", "state"))
                .ok(),
            cgroup_walk: (|| {
                Ok::<_, anyhow::Error>(CgroupWalk {
                    task_cgroups: member_offset(btf, "task_struct", "cgroups")?,
                    css_set_dfl_cgrp: member_offset(btf, "css_set", "dfl_cgrp")?,
                    cgroup_level: member_offset(btf, "cgroup", "level")?,
                    cgroup_ancestor_ids: member_offset(btf, "cgroup", "ancestor_ids")?,
                })
            })()
            .ok(),
        })
    }

    /// What the switch hook is told about where the previous task's state is: 0 for the
    /// tracepoint's argument, else the field's offset; `None` when neither exists.
    pub fn switch_state_source(&self) -> Option<u64> {
        if self.switch_has_prev_state {
            Some(0)
        } else {
            self.task_state_offset
        }
    }
}

/// The arguments a raw tracepoint passes, from its BTF prototype `btf_trace_NAME` (a
/// pointer to a function whose first parameter is the probe's private data).
fn tracepoint_args(btf: &Btf, name: &str) -> Result<usize> {
    let typedef = format!("btf_trace_{name}");
    for &id in btf.named(&typedef)? {
        let mut t = btf.get(id)?;
        // typedef -> pointer -> function prototype.
        for _ in 0..4 {
            t = match t {
                Type::FuncProto(params) => return Ok(params.saturating_sub(1)),
                Type::Typedef(x) | Type::Ptr(x) => btf.get(x)?,
                _ => break,
            };
        }
    }
    bail!("kernel BTF has no prototype {typedef}")
}

/// The oldest kernel syscost supports: the oldest the kernel matrix (`cargo xtask
/// vm-test`) passes. It needs BPF_F_MMAPABLE arrays, `bpf_probe_read_kernel` and the
/// BPF ring buffer (5.8), and per-CPU hash elements zeroed when reused (5.10).
pub const OLDEST_KERNEL: (u32, u32) = (5, 10);

/// The running kernel's release ("6.18.44-fc-v657").
pub fn release() -> String {
    // SAFETY: uname fills one utsname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    // SAFETY: uname NUL-terminates its fields.
    unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// `major.minor` of a kernel release string ("6.18.44-fc-v657" -> (6, 18)).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Fails on a kernel older than syscost supports.
pub fn check_kernel() -> Result<()> {
    let rel = release();
    let Some(v) = kernel_version(&rel) else {
        return Ok(());
    };
    if v < OLDEST_KERNEL {
        bail!(
            "syscost needs Linux {}.{} or later; this kernel is {rel}",
            OLDEST_KERNEL.0,
            OLDEST_KERNEL.1
        );
    }
    Ok(())
}

/// Byte offset of `member` in `struct name`.
fn member_offset(btf: &Btf, name: &str, member: &str) -> Result<u64> {
    for &id in btf.named(name)? {
        if let Type::Composite {
            members,
            union: false,
        } = btf.get(id)?
            && let Some(bits) = find_member(btf, &members, member)?
        {
            if bits % 8 != 0 {
                bail!("{name}.{member} is a bitfield");
            }
            return Ok(bits / 8);
        }
    }
    Err(anyhow!(
        "kernel BTF has no member {member} in struct {name}"
    ))
}

/// Bit offset of `member` in a struct or union, looking into anonymous struct and union
/// members too (`pt_regs.cs` sits in an anonymous union since 6.9).
fn find_member(btf: &Btf, members: &raw::Members, member: &str) -> Result<Option<u64>> {
    find_member_within(btf, members, member, 0)
}

/// [`find_member`] at `depth` anonymous members down (a loop of them, which only a
/// malformed BTF has, ends in an error rather than the stack's end).
fn find_member_within(
    btf: &Btf,
    members: &raw::Members,
    member: &str,
    depth: u32,
) -> Result<Option<u64>> {
    if depth > 32 {
        bail!("anonymous members nested more than 32 deep looking for {member}");
    }
    for m in btf.members(members)? {
        if m.name == member {
            if m.bitfield_size != 0 {
                bail!("{member} is a bitfield");
            }
            return Ok(Some(u64::from(m.bit_offset)));
        }
        if m.name.is_empty() {
            let inner = match btf.get(m.type_id)? {
                Type::Composite { members, .. } => {
                    find_member_within(btf, &members, member, depth + 1)?
                }
                _ => None,
            };
            if let Some(bits) = inner {
                return Ok(Some(u64::from(m.bit_offset) + bits));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader agrees with btf-rs on every struct and union of this kernel: each
    /// member's name, bit offset and bitfield size; and finds the same structs by name.
    #[test]
    fn reads_every_struct_as_btf_rs_does() {
        if !std::path::Path::new(VMLINUX).exists() {
            let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
            assert!(!ci, "{VMLINUX} missing, and a test may not skip under CI");
            eprintln!(
                "\n*** SKIPPED reads_every_struct_as_btf_rs_does: {VMLINUX} is missing on this machine ***\n"
            );
            return;
        }
        let bytes = vmlinux().unwrap();
        let ours = Btf::parse(bytes, &NAMES).unwrap();
        let theirs = btf_rs::Btf::from_bytes(bytes).unwrap();
        let mut composites = 0;
        for id in 1..=ours.len() as u32 {
            let t = theirs.resolve_type_by_id(id).unwrap();
            let (btf_rs::Type::Struct(s) | btf_rs::Type::Union(s)) = &t else {
                assert!(
                    !matches!(ours.get(id).unwrap(), Type::Composite { .. }),
                    "type {id}: a struct here, not for btf-rs"
                );
                continue;
            };
            let Type::Composite { members, union } = ours.get(id).unwrap() else {
                panic!("type {id}: btf-rs has a struct or union, this reader not");
            };
            assert_eq!(union, matches!(t, btf_rs::Type::Union(_)), "type {id}");
            let members = ours.members(&members).unwrap();
            assert_eq!(members.len(), s.members.len(), "type {id}");
            for (m, theirs_m) in members.iter().zip(&s.members) {
                assert_eq!(m.name, theirs.resolve_name(theirs_m).unwrap(), "type {id}");
                assert_eq!(m.bit_offset, theirs_m.bit_offset(), "type {id}.{}", m.name);
                assert_eq!(
                    m.bitfield_size,
                    theirs_m.bitfield_size().unwrap_or(0),
                    "type {id}.{}",
                    m.name
                );
            }
            composites += 1;
        }
        assert!(composites > 1000, "{composites} structs and unions");
        for name in NAMES {
            let mut expected = theirs.resolve_ids_by_name(name).unwrap();
            expected.retain(|&id| {
                matches!(
                    theirs.resolve_type_by_id(id).unwrap(),
                    btf_rs::Type::Struct(_) | btf_rs::Type::Union(_) | btf_rs::Type::Typedef(_)
                )
            });
            expected.sort();
            assert_eq!(ours.named(name).unwrap(), expected.as_slice(), "{name}");
            assert!(!expected.is_empty(), "{name}");
        }
    }

    /// Reads this machine's BTF; every kernel syscost supports has it.
    #[test]
    fn reads_this_kernel() {
        if !std::path::Path::new(VMLINUX).exists() {
            let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
            assert!(!ci, "{VMLINUX} missing, and a test may not skip under CI");
            eprintln!(
                "\n*** SKIPPED reads_this_kernel: {VMLINUX} is missing on this machine ***\n"
            );
            return;
        }
        let l = KernelLayout::read().unwrap();
        assert!(l.task_pid_offset > 0);
        // pid_t pid; pid_t tgid; are declared next to each other.
        assert_eq!(l.task_tgid_offset, l.task_pid_offset + 4);
        assert!(l.task_signal_offset > 0 && l.signal_live_offset > 0);
        // x86_64 pt_regs: r15..orig_ax, ip, then cs at 17 * 8.
        #[cfg(target_arch = "x86_64")]
        {
            let r = l.registers;
            assert_eq!(r.compat_test, [136, 0xffff, 0x23]);
            // r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di: 8 bytes each.
            assert_eq!(r.args, [112, 104, 96, 56, 72, 64]);
            assert_eq!(r.unwind, [128, 152, 32, 128]);
            assert_eq!(r.compat_args, [40, 88, 96, 104, 112, 32]);
        }
        // arm64 pt_regs: regs[31], sp, pc, pstate, then orig_x0.
        #[cfg(target_arch = "aarch64")]
        {
            let r = l.registers;
            assert_eq!(r.compat_test, [264, 0x10, 0x10]);
            assert_eq!(r.args, [272, 8, 16, 24, 32, 40]);
            assert_eq!(r.compat_args, r.args);
            assert_eq!(r.unwind, [256, 248, 29 * 8, 30 * 8]);
        }
        assert!(
            l.task_mm_offset > 0 && l.task_exec_id_offset > 0 && l.file_offsets[0] > 0,
            "{l:?}"
        );
        // Every kernel has one way or the other to tell the switch hook the state.
        assert!(l.switch_state_source().is_some());
        let release = release();
        // One way only: distribution kernels backport features to older versions.
        if let Some(v) = kernel_version(&release) {
            assert!(v < (5, 18) || l.switch_has_prev_state, "{release}");
            assert!(v >= (5, 14) || l.cgroup_walk.is_some(), "{release}");
        }
    }
}
