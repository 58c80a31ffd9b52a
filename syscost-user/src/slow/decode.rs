//! Slow-call events as the kernel side sends them, decoded into [`SlowCall`]s: names,
//! errnos, the file descriptor's target, user and kernel frames symbolized (blazesym).

use syscost_common::SlowEvent;

use crate::{
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

/// Turns ring-buffer events into [`SlowCall`]s: names, errnos, fds, symbols.
pub struct Decoder {
    symbolizer: blazesym::symbolize::Symbolizer,
}

impl Default for Decoder {
    fn default() -> Self {
        Self {
            symbolizer: blazesym::symbolize::Symbolizer::new(),
        }
    }
}

impl Decoder {
    /// One event.
    pub fn decode(&self, e: &SlowEvent) -> SlowCall {
        let n = (e.kernel_stack_bytes as usize / 8).min(e.kernel_stack.len());
        let kernel = &e.kernel_stack[..n];
        let id = SyscallId::of(e.key, e.nr);
        let syscall = id.name();
        let comm_end = e.comm.iter().position(|&b| b == 0).unwrap_or(e.comm.len());
        let (ret, errno) = if syscost_common::is_error_return(e.ret) {
            (-1, Some(crate::errno_name::errno_name((-e.ret) as u32)))
        } else {
            (e.ret, None)
        };
        let compat = id.is_compat();
        let plain = syscall
            .strip_prefix(syscall_names::COMPAT_PREFIX)
            .unwrap_or(&syscall)
            .to_string();
        let fd = FD_FIRST
            .contains(&plain.as_str())
            .then(|| fd_name(e.tgid, e.args[0] as i32))
            .flatten();
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
        SlowCall {
            start_ns: e.exit_ns.saturating_sub(e.latency_ns),
            end_ns: e.exit_ns,
            pid: e.tgid,
            tid: e.tid,
            comm: decode(&e.comm[..comm_end]),
            syscall,
            latency_ns: e.latency_ns,
            offcpu_ns: e.offcpu_ns,
            ret,
            errno,
            args,
            fd,
            stack: self.symbolize(e.tgid, &frames),
            kernel_stack: self.symbolize_kernel(kernel),
        }
    }

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

    fn symbolize(&self, pid: u32, addrs: &[u64]) -> Vec<Frame> {
        use blazesym::symbolize::{Input, Symbolized, source};
        if addrs.is_empty() {
            return Vec::new();
        }
        let src = source::Source::Process(source::Process::new(blazesym::Pid::from(pid)));
        // Outer frames are return addresses: the call is the instruction before.
        let lookup: Vec<u64> = addrs
            .iter()
            .enumerate()
            .map(|(i, &a)| if i == 0 { a } else { a.saturating_sub(1) })
            .collect();
        let syms = self
            .symbolizer
            .symbolize(&src, Input::AbsAddr(&lookup))
            .unwrap_or_default();
        addrs
            .iter()
            .enumerate()
            .map(|(i, &addr)| match syms.get(i) {
                Some(Symbolized::Sym(s)) => Frame {
                    addr,
                    function: Some(s.name.to_string()),
                    location: s.code_info.as_ref().and_then(|c| {
                        c.line
                            .map(|l| format!("{}:{l}", decode(c.file.as_encoded_bytes())))
                    }),
                    module: s.module.as_ref().map(|m| {
                        let path = m.as_encoded_bytes();
                        let name = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
                        decode(name)
                    }),
                },
                _ => Frame {
                    addr,
                    ..Frame::default()
                },
            })
            .collect()
    }
}

/// What fd `fd` of process `pid` names now.
fn fd_name(pid: u32, fd: i32) -> Option<String> {
    if fd < 0 {
        return None;
    }
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .ok()
        .map(|p| decode(p.as_os_str().as_encoded_bytes()))
}
