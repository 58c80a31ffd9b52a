//! Slow-call events as the kernel side sends them, decoded into [`SlowCall`]s: names,
//! errnos, the file descriptor's target, user and kernel frames symbolized (blazesym).

use syscost_common::CallEvent;

use syscost_report::{
    profile::{ARGS_UNKNOWN, Frame, SlowCall},
    syscall_names::{self, SyscallId},
    untrusted::decode,
};

/// Syscalls whose first argument is a file descriptor (`close` is not one of them here:
/// after it, the number names nothing, or something else).
const FD_FIRST: &[&str] = &[
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "fsync",
    "fdatasync",
    "fstat",
    "newfstatat",
    "lseek",
    "ioctl",
    "fcntl",
    "recvfrom",
    "sendto",
    "recvmsg",
    "sendmsg",
    "recvmmsg",
    "sendmmsg",
    "accept",
    "accept4",
    "connect",
    "bind",
    "listen",
    "shutdown",
    "getsockopt",
    "setsockopt",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_ctl",
    "flock",
    "ftruncate",
    "fallocate",
    "getdents64",
    "sendfile",
    "splice",
    "tee",
    "sync_file_range",
    "fstatfs",
    "io_uring_enter",
];

/// Turns ring-buffer events into [`SlowCall`]s in two steps: [`Decoder::receive`] as
/// each arrives (what the process or its fd could take away: its fd's target, its
/// mappings), [`Namer::name`] after (the stack unwound, symbols).
#[derive(Default)]
pub struct Decoder {
    unwinder: crate::unwind::Unwinder,
}

/// `SYSCOST_TEST_FAULT=late-fd` (debug builds only: the tests'): each call's descriptor
/// `fd` of process `pid` is read only once it no longer holds the file of inode `ino` it
/// held at the call's exit (closed, another file took its number, or the process is
/// gone), polled every 200 us for at most 60 s (then a line on stderr says so): the
/// tests' way to make a descriptor change before it is read, on a machine of any speed.
/// Without the fault, nothing; in a release build, nothing at all.
#[cfg(debug_assertions)]
fn late_fd(pid: u32, fd: u64, ino: u64) {
    static LATE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*LATE.get_or_init(|| std::env::var("SYSCOST_TEST_FAULT").is_ok_and(|v| v == "late-fd"))
        || ino == 0
        || (fd as i64 as i32) < 0
    {
        return;
    }
    let limit = std::time::Duration::from_secs(60);
    let start = std::time::Instant::now();
    while fd_inode(pid, fd) == Some(ino) {
        if start.elapsed() >= limit {
            eprintln!(
                "syscost: SYSCOST_TEST_FAULT=late-fd: descriptor {fd} of process {pid} still held inode {ino} after {} s; read as it is",
                limit.as_secs()
            );
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

#[cfg(not(debug_assertions))]
fn late_fd(_: u32, _: u64, _: u64) {}

/// A slow call received, its stacks not unwound nor named yet.
pub struct Received {
    call: SlowCall,
    process: crate::unwind::Captured,
    fp: Vec<u64>,
    copy: Option<crate::unwind::StackCopy>,
    kernel: Vec<u64>,
}

/// Unwinds and names received calls' stacks.
pub struct Namer {
    symbolizer: blazesym::symbolize::Symbolizer,
    names: crate::unwind::Names,
}

impl Default for Namer {
    fn default() -> Self {
        Self {
            symbolizer: blazesym::symbolize::Symbolizer::new(),
            names: crate::unwind::Names::default(),
        }
    }
}

impl Namer {
    /// Frees what the symbolizer holds of objects closed since (call when idle).
    pub fn tidy(&mut self) {
        self.names.tidy();
    }

    /// The call with its stacks unwound and named.
    pub fn name(&mut self, r: Received) -> SlowCall {
        SlowCall {
            stack: self.names.stack(&r.process, &r.fp, r.copy.as_ref()),
            kernel_stack: self.symbolize_kernel(&r.kernel),
            ..r.call
        }
    }
}

impl Decoder {
    /// Work due without an event (mappings read again after an exec); how long until
    /// the next.
    pub fn tick(&mut self) -> Option<std::time::Duration> {
        self.unwinder.tick()
    }

    /// One event, with the user stack copy that followed it in its record.
    pub fn receive(&mut self, e: &CallEvent, stack_copy: &[u8]) -> Received {
        let n = (e.kernel_stack_bytes as usize / 8).min(e.kernel_stack.len());
        let kernel = e.kernel_stack[..n].to_vec();
        let id = SyscallId::of(e.key, e.nr);
        let syscall = id.name();
        let comm_end = e.comm.iter().position(|&b| b == 0).unwrap_or(e.comm.len());
        let (ret, errno) = if syscost_common::is_error_return(e.ret) {
            (
                -1,
                Some(syscost_report::errno_name::errno_name((-e.ret) as u32)),
            )
        } else {
            (e.ret, None)
        };
        let compat = id.is_compat();
        let plain = syscall
            .strip_prefix(syscall_names::COMPAT_PREFIX)
            .unwrap_or(&syscall)
            .to_string();
        // A sample of `--stacks` that is not a slow call is shown by its stack alone.
        let slow = e.flags & syscost_common::record_flags::SLOW != 0;
        let (fd, fd_unknown) = if slow && FD_FIRST.contains(&plain.as_str()) {
            late_fd(e.tgid, e.args[0], e.fd_ino);
            match fd_name(e.tgid, e.args[0], (e.fd_ino, e.fd_mnt_id)) {
                Ok(name) => (Some(name), None),
                // AT_FDCWD: the arguments are shown as they are.
                Err("not a descriptor") => (None, None),
                Err(why) => (None, Some(why.to_string())),
            }
        } else {
            (None, None)
        };
        // Their registers are the new program's (exec) or the restored context's
        // (sigreturn) by the exit: the arguments are not known.
        let args = if ARGS_UNKNOWN.contains(&plain.as_str()) {
            [0; 6]
        } else if compat {
            // 32-bit calls take the low halves of the registers.
            e.args.map(|a| a & 0xffff_ffff)
        } else {
            e.args
        };
        let frames = if e.stack_bytes > 0 {
            let n = (e.stack_bytes as usize / 8).min(e.stack.len());
            e.stack[..n].to_vec()
        } else {
            Vec::new()
        };
        let copied = (e.user_stack_bytes as usize).min(stack_copy.len());
        let copy = (copied > 0 && !compat).then(|| crate::unwind::StackCopy {
            ip: e.user_regs[0],
            sp: e.user_regs[1],
            bp: e.user_regs[2],
            lr: e.user_regs[3],
            base: e.user_stack_base,
            bytes: stack_copy[..copied].to_vec(),
        });
        let exec = matches!(plain.as_str(), "execve" | "execveat");
        // Where the call returns to: always code of the process (the frame-pointer walk's
        // outer frames may be anything where no frame pointer is kept).
        let seen: Vec<u64> = copy
            .as_ref()
            .map(|c| c.ip)
            .or(frames.first().copied())
            .into_iter()
            .collect();
        let process = self
            .unwinder
            .capture(e.tgid, (e.mm, e.exec_id), exec, compat, &seen);
        let call = SlowCall {
            start_ns: e.exit_ns.saturating_sub(e.latency_ns),
            end_ns: e.exit_ns,
            pid: e.tgid,
            tid: e.tid,
            comm: decode(&e.comm[..comm_end]),
            syscall,
            latency_ns: e.latency_ns,
            offcpu_ns: e.offcpu_ns,
            switch_in_unseen: e.flags & syscost_common::record_flags::SWITCH_IN_UNSEEN != 0,
            ret,
            errno,
            args,
            fd,
            fd_unknown,
            stack: Vec::new(),
            kernel_stack: Vec::new(),
        };
        Received {
            call,
            process,
            fp: frames,
            copy,
            kernel,
        }
    }
}

impl Namer {
    fn symbolize_kernel(&self, addrs: &[u64]) -> Vec<Frame> {
        use blazesym::symbolize::{Input, Symbolized, source};
        if addrs.is_empty() {
            return Vec::new();
        }
        // kallsyms only: a debug vmlinux would take seconds to load on the reader.
        let src = source::Source::Kernel(source::Kernel {
            vmlinux: blazesym::MaybeDefault::None,
            ..source::Kernel::default()
        });
        let syms = self
            .symbolizer
            .symbolize(&src, Input::AbsAddr(addrs))
            .unwrap_or_default();
        addrs
            .iter()
            .enumerate()
            .map(|(i, &addr)| Frame {
                addr,
                function: match syms.get(i) {
                    Some(Symbolized::Sym(s)) => Some(s.name.to_string()),
                    _ => None,
                },
                ..Frame::default()
            })
            // The stack is taken in syscost's own program at the switch: its frames and
            // the tracepoint's plumbing are not where the call blocked.
            .skip_while(|f| {
                f.function
                    .as_deref()
                    .is_some_and(|n| n.starts_with("bpf_prog_") || n.starts_with("bpf_trace_run"))
            })
            .collect()
    }
}

/// What fd `fd` of process `pid` names now, if it is the file (inode, mount id) it named
/// at the call's exit; else why not. The mount id, not the device: stat's device is
/// not the filesystem's own on btrfs subvolumes and some overlays. Nothing here waits on
/// the file's filesystem: the name and the mount id come from procfs, and so does the
/// inode where the kernel's fdinfo gives it; elsewhere (before 5.14) a stat that takes
/// the inode's cached attributes, and none at all on a FUSE filesystem, whose server
/// (any user's process) decides when a stat returns.
fn fd_name(pid: u32, fd: u64, (ino, mnt_id): (u64, u32)) -> Result<String, &'static str> {
    // AT_FDCWD and other negative values are no descriptor.
    if (fd as i64 as i32) < 0 {
        return Err("not a descriptor");
    }
    if ino == 0 {
        return Err("no open file at the call's exit");
    }
    let path = format!("/proc/{pid}/fd/{fd}");
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"));
    let gone = || {
        if std::path::Path::new(&format!("/proc/{pid}/fd")).exists() {
            "closed before it was read"
        } else {
            "the process exited before it was read"
        }
    };
    let (Ok(target), Ok(info)) = (std::fs::read_link(&path), info) else {
        return Err(gone());
    };
    if fdinfo_mnt_id(&info) != Some(mnt_id) {
        return Err("closed and reused for another file before it was read");
    }
    let now = match fdinfo_ino(&info) {
        Some(i) => i,
        None => {
            if crate::unwind::maps::Mounts::of(pid).is_none_or(|m| m.fuse_mount(mnt_id)) {
                return Err("on a FUSE filesystem: not checked");
            }
            fd_inode(pid, fd).ok_or_else(gone)?
        }
    };
    if now != ino {
        return Err("closed and reused for another file before it was read");
    }
    Ok(decode(target.as_os_str().as_encoded_bytes()))
}

/// The inode of fd `fd` of process `pid`, from a stat that does not ask the filesystem
/// (`AT_STATX_DONT_SYNC`: the attributes the kernel has cached).
fn fd_inode(pid: u32, fd: u64) -> Option<u64> {
    use rustix::fs::{AtFlags, CWD, StatxFlags};
    rustix::fs::statx(
        CWD,
        format!("/proc/{pid}/fd/{fd}"),
        AtFlags::STATX_DONT_SYNC,
        StatxFlags::INO,
    )
    .ok()
    .map(|s| s.stx_ino)
}

/// The `ino:` of a /proc/PID/fdinfo/N text (kernels from 5.14).
fn fdinfo_ino(info: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix("ino:"))
        .and_then(|v| v.trim().parse().ok())
}

use crate::unwind::maps::fdinfo_mnt_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_is_named_only_while_it_names_the_same_file() {
        use std::os::unix::fs::MetadataExt as _;
        let f = std::fs::File::open("/proc/self/exe").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f) as u64;
        let ino = f.metadata().unwrap().ino();
        let me = std::process::id();
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
        let mnt = fdinfo_mnt_id(&info).unwrap();
        if let Some(i) = fdinfo_ino(&info) {
            assert_eq!(i, ino, "fdinfo's inode");
        }
        assert_eq!(fd_inode(me, fd), Some(ino));
        let name = fd_name(me, fd, (ino, mnt)).unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(name, decode(exe.as_os_str().as_encoded_bytes()));
        let reused = Err("closed and reused for another file before it was read");
        assert_eq!(fd_name(me, fd, (ino + 1, mnt)), reused);
        assert_eq!(fd_name(me, fd, (ino, mnt + 1)), reused);
        assert_eq!(
            fd_name(me, fd, (0, 0)),
            Err("no open file at the call's exit")
        );
        assert_eq!(
            fd_name(me, (-100i64) as u64, (ino, mnt)),
            Err("not a descriptor")
        );
        // A number no descriptor of this process can have (beyond its limit).
        assert_eq!(
            fd_name(me, 1 << 30, (ino, mnt)),
            Err("closed before it was read")
        );
    }
}
