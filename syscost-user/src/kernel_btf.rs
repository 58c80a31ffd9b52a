//! Facts about the running kernel read from its BTF (/sys/kernel/btf/vmlinux): where
//! `pid`, `tgid` and `signal` sit in `struct task_struct` and `live` in `struct
//! signal_struct` (the fork and exit hooks read them), the registers of a call in
//! `struct pt_regs` (this architecture's), and
//! what differs between kernels: whether sched_switch passes `prev_state`, and where a
//! task's cgroup ancestry is kept. Features are probed here, not inferred from versions.

use anyhow::{Context as _, Result, anyhow, bail};
use btf_rs::{Btf, Type};

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

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
    /// `FILE_OFFSETS` in the kernel side.
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
    /// and the value under the mask in 32-bit code (`COMPAT_TEST` in the kernel side).
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
    /// Reads the running kernel's BTF.
    pub fn read() -> Result<Self> {
        let btf = Btf::from_file(VMLINUX).with_context(|| {
            format!(
                "cannot read {VMLINUX}: syscost needs a kernel built with CONFIG_DEBUG_INFO_BTF"
            )
        })?;
        Ok(Self {
            task_pid_offset: member_offset(&btf, "task_struct", "pid")?,
            task_tgid_offset: member_offset(&btf, "task_struct", "tgid")?,
            task_signal_offset: member_offset(&btf, "task_struct", "signal")?,
            // Both only serve --slow's details: a kernel without them is not refused
            // (0: the kernel side reads nothing).
            task_mm_offset: member_offset(&btf, "task_struct", "mm").unwrap_or(0),
            task_exec_id_offset: member_offset(&btf, "task_struct", "self_exec_id").unwrap_or(0),
            file_offsets: (|| -> Result<[u64; 8]> {
                Ok([
                    member_offset(&btf, "task_struct", "files")?,
                    member_offset(&btf, "files_struct", "fdt")?,
                    member_offset(&btf, "fdtable", "max_fds")?,
                    member_offset(&btf, "fdtable", "fd")?,
                    member_offset(&btf, "file", "f_inode")?,
                    member_offset(&btf, "inode", "i_ino")?,
                    member_offset(&btf, "file", "f_path")? + member_offset(&btf, "path", "mnt")?,
                    member_offset(&btf, "mount", "mnt_id")?
                        .wrapping_sub(member_offset(&btf, "mount", "mnt")?),
                ])
            })()
            .unwrap_or([0; 8]),
            signal_live_offset: member_offset(&btf, "signal_struct", "live")?,
            registers: Registers::read(&btf)?,
            switch_has_prev_state: tracepoint_args(&btf, "sched_switch")? >= 4,
            task_state_offset: member_offset(&btf, "task_struct", "__state")
                .or_else(|_| member_offset(&btf, "task_struct", "state"))
                .ok(),
            cgroup_walk: (|| {
                Ok::<_, anyhow::Error>(CgroupWalk {
                    task_cgroups: member_offset(&btf, "task_struct", "cgroups")?,
                    css_set_dfl_cgrp: member_offset(&btf, "css_set", "dfl_cgrp")?,
                    cgroup_level: member_offset(&btf, "cgroup", "level")?,
                    cgroup_ancestor_ids: member_offset(&btf, "cgroup", "ancestor_ids")?,
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
    for t in btf.resolve_types_by_name(&typedef)? {
        let mut t = t;
        // typedef -> pointer -> function prototype.
        for _ in 0..4 {
            t = match t {
                Type::FuncProto(f) => return Ok(f.parameters.len().saturating_sub(1)),
                Type::Typedef(x) => btf.resolve_chained_type(&x)?,
                Type::Ptr(x) => btf.resolve_chained_type(&x)?,
                _ => break,
            };
        }
    }
    bail!("kernel BTF has no prototype {typedef}")
}

/// The oldest kernel syscost supports: the oldest the kernel matrix (`cargo xtask
/// vm-test`) passes. It needs BPF_F_MMAPABLE arrays, `bpf_probe_read_kernel` and the
/// BPF ring buffer (5.8), and per-CPU hash elements zeroed when reused (5.10).
pub const KERNEL_FLOOR: (u32, u32) = (5, 10);

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
    if v < KERNEL_FLOOR {
        bail!(
            "syscost needs Linux {}.{} or later; this kernel is {rel}",
            KERNEL_FLOOR.0,
            KERNEL_FLOOR.1
        );
    }
    Ok(())
}

/// Byte offset of `member` in `struct name`.
fn member_offset(btf: &Btf, name: &str, member: &str) -> Result<u64> {
    for t in btf.resolve_types_by_name(name)? {
        if let Type::Struct(s) = t
            && let Some(bits) = find_member(btf, &s, member)?
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
fn find_member(btf: &Btf, s: &btf_rs::Struct, member: &str) -> Result<Option<u64>> {
    for m in &s.members {
        let name = btf.resolve_name(m)?;
        if name == member {
            if m.bitfield_size().unwrap_or(0) != 0 {
                bail!("{member} is a bitfield");
            }
            return Ok(Some(u64::from(m.bit_offset())));
        }
        if name.is_empty() {
            let inner = match btf.resolve_chained_type(m)? {
                Type::Struct(x) | Type::Union(x) => find_member(btf, &x, member)?,
                _ => None,
            };
            if let Some(bits) = inner {
                return Ok(Some(u64::from(m.bit_offset()) + bits));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

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
