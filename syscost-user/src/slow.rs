//! Slow calls (`--slow`): the calls at least as slow as their threshold, sent by the
//! kernel side through a ring buffer (only those; the others are only counted), turned
//! here into records with their arguments, file descriptors and symbolized user stack,
//! and written as lines, into the JSON profile, as a Chrome/Perfetto trace and as folded
//! stacks for a flame graph.

use std::{
    collections::{BTreeMap, VecDeque},
    fmt::Write as _,
    time::Duration,
};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use syscost_common::{KEYS_PER_SLOT, SlowEvent};

use crate::{
    syscall_names,
    syscall_names::SyscallId,
    untrusted::{decode, shown},
};

/// `--slow`: a default threshold and thresholds per syscall.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlowSpec {
    /// For every syscall not named.
    pub default: Option<Duration>,
    /// (name, threshold) of the syscalls named.
    pub per_syscall: Vec<(String, Duration)>,
}

/// A duration with its unit: `250ns`, `50us`, `1.5ms`, `2s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .ok_or_else(|| format!("'{s}' has no unit (ns, us, ms or s)"))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration like 50us or 1ms"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => return Err(format!("unknown unit '{other}' in '{s}' (ns, us, ms or s)")),
    };
    let ns = v * scale;
    if !ns.is_finite() || ns < 0.0 {
        return Err(format!("'{s}' is not a duration"));
    }
    if ns > 3600e9 {
        return Err(format!(
            "{s} is more than an hour: no call would be reported"
        ));
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// `1ms`, `close=50us,read=1ms` or `1ms,close=50us` (clap value parser).
pub fn parse_spec(s: &str) -> Result<SlowSpec, String> {
    let mut spec = SlowSpec::default();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some((name, d)) => {
                let id = syscall_names::number(name).map_err(|e| format!("{e:#}"))?;
                if id.key >= KEYS_PER_SLOT {
                    return Err(format!(
                        "{name}: a threshold of its own only goes to syscall numbers below 1024 (512 for 32-bit ones); the default threshold covers the others"
                    ));
                }
                spec.per_syscall
                    .push((name.to_string(), parse_duration(d)?));
            }
            None => {
                if spec.default.is_some() {
                    return Err(format!("two default thresholds in '{s}'"));
                }
                spec.default = Some(parse_duration(part)?);
            }
        }
    }
    if spec.default.is_none() && spec.per_syscall.is_empty() {
        return Err("--slow needs a threshold, e.g. 1ms or close=50us".to_string());
    }
    Ok(spec)
}

impl SlowSpec {
    /// The threshold of every syscall key, ns (u64::MAX: never reported), and the one of
    /// numbers without a key.
    pub fn thresholds(&self) -> Result<(Vec<u64>, u64)> {
        let default = self.default.map_or(u64::MAX, |d| d.as_nanos() as u64);
        let mut keys = vec![default; KEYS_PER_SLOT as usize];
        for (name, d) in &self.per_syscall {
            let id = syscall_names::number(name)?;
            let mut ids = vec![id];
            // A 64-bit name also names the 32-bit syscall of the same name (a real name:
            // `syscall_0x10` is a number, not a name).
            if !id.is_compat()
                && !name.starts_with("syscall_")
                && let Ok(compat) =
                    syscall_names::number(&format!("{}{name}", syscall_names::COMPAT_PREFIX))
                && compat.key < KEYS_PER_SLOT
            {
                ids.push(compat);
            }
            for id in ids {
                match keys.get_mut(id.key as usize) {
                    Some(k) => *k = d.as_nanos() as u64,
                    None => bail!(
                        "--slow {name}=...: a threshold of its own only goes to syscall numbers below 1024 (512 for 32-bit ones); the default threshold covers the others"
                    ),
                }
            }
        }
        Ok((keys, default))
    }

    /// As the user wrote it, for headers.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .default
            .iter()
            .map(|d| crate::units::human_ns(d.as_nanos() as u64))
            .collect();
        parts.extend(
            self.per_syscall
                .iter()
                .map(|(n, d)| format!("{n}={}", crate::units::human_ns(d.as_nanos() as u64))),
        );
        parts.join(",")
    }
}

/// One frame of a user stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    pub addr: u64,
    /// The function, when the symbolizer found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// `file:line`, from DWARF when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The binary or library it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

impl Frame {
    /// Function, else module and address, else the address: exact (for JSON).
    fn raw_label(&self) -> String {
        match (&self.function, &self.module) {
            (Some(f), _) => f.clone(),
            (None, Some(m)) => format!("{m}+{:#x}", self.addr),
            (None, None) => format!("{:#x}", self.addr),
        }
    }

    /// [`Frame::raw_label`] as text outputs print it (the binary's symbols are the
    /// traced program's to choose).
    pub fn label(&self) -> String {
        shown(&self.raw_label()).into_owned()
    }
}

/// One slow call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowCall {
    /// CLOCK_MONOTONIC of the entry and the exit, ns.
    pub start_ns: u64,
    pub end_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub syscall: String,
    pub latency_ns: u64,
    /// Of the latency, switched out (blocked or preempted).
    pub offcpu_ns: u64,
    /// Return value (`-1` with `errno` on error, like strace).
    pub ret: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    pub args: [u64; 6],
    /// What the first argument named when the call was received, for syscalls whose
    /// first argument is a file descriptor (`pipe:[1234]`, `socket:[99]`, a path): read
    /// from /proc after the call, so the descriptor may have changed in between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<String>,
    /// User stack, innermost first.
    pub stack: Vec<Frame>,
    /// With `--kernel-stacks`: the kernel stack where the call last blocked (innermost
    /// first), when it blocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_stack: Vec<Frame>,
}

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

/// Syscalls whose arguments cannot be read at their exit.
const ARGS_UNKNOWN: &[&str] = &["execve", "execveat", "rt_sigreturn", "sigreturn"];

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
        let (ret, errno) = if (-4095..0).contains(&e.ret) {
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

/// The slow calls received so far, at most `cap` (the oldest dropped first, counted).
#[derive(Debug)]
pub struct SlowLog {
    pub calls: VecDeque<SlowCall>,
    cap: usize,
    /// Calls received but no longer kept (more than `cap`).
    pub evicted: u64,
}

impl SlowLog {
    pub const CAP: usize = 100_000;

    pub fn new(cap: usize) -> Self {
        Self {
            calls: VecDeque::new(),
            cap,
            evicted: 0,
        }
    }

    pub fn push(&mut self, c: SlowCall) {
        if self.cap == 0 {
            self.evicted += 1;
            return;
        }
        if self.calls.len() == self.cap {
            self.calls.pop_front();
            self.evicted += 1;
        }
        self.calls.push_back(c);
    }
}

/// Reads the ring buffer on a thread of its own: decodes each slow call as it arrives
/// (so its fd and its process's maps are still there), keeps it, and prints it when
/// asked.
pub struct Reader {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    log: std::sync::Arc<std::sync::Mutex<SlowLog>>,
}

impl Reader {
    /// Starts reading; `echo`: print each call's line to stderr; `keep`: how many calls
    /// to keep for the end (0 for a service that only prints them).
    pub fn spawn(
        mut ring: aya::maps::RingBuf<aya::maps::MapData>,
        echo: bool,
        keep: usize,
    ) -> Self {
        use std::sync::{Arc, Mutex, atomic::AtomicBool, atomic::Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(SlowLog::new(keep)));
        let (s, l) = (stop.clone(), log.clone());
        let handle = std::thread::spawn(move || {
            let decoder = Decoder::default();
            loop {
                // Read after the stop flag: what was sent before it is drained.
                let stopping = s.load(Ordering::Acquire);
                let mut got = false;
                while let Some(item) = ring.next() {
                    got = true;
                    if item.len() < std::mem::size_of::<SlowEvent>() {
                        continue;
                    }
                    // SAFETY: the kernel wrote a whole SlowEvent; read_unaligned copies it.
                    let e = unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<SlowEvent>()) };
                    drop(item);
                    let c = decoder.decode(&e);
                    if echo {
                        eprintln!("{}", line(&c));
                    }
                    l.lock().unwrap_or_else(|e| e.into_inner()).push(c);
                }
                if stopping && !got {
                    return;
                }
                if !got {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        Self {
            stop,
            handle: Some(handle),
            log,
        }
    }

    /// The log the calls go into, for a view to read while they come.
    pub fn log(&self) -> std::sync::Arc<std::sync::Mutex<SlowLog>> {
        self.log.clone()
    }

    /// Drains what is left (call it once the programs are unloaded) and returns every
    /// call kept, and how many were received but not kept.
    pub fn finish(mut self) -> (Vec<SlowCall>, u64) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let evicted = log.evicted;
        (std::mem::take(&mut log.calls).into(), evicted)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// One line per call (and its frames, indented), as `--no-tui` prints them.
pub fn line(c: &SlowCall) -> String {
    let mut s = format!(
        "slow: {}({}) = {}{} in {} ({} switched out) tid {} {}",
        c.syscall,
        args_text(c),
        c.ret,
        c.errno
            .as_deref()
            .map(|e| format!(" {e}"))
            .unwrap_or_default(),
        crate::units::human_ns(c.latency_ns),
        crate::units::human_ns(c.offcpu_ns),
        c.tid,
        shown(&c.comm),
    );
    for f in &c.stack {
        let _ = write!(
            s,
            "\n    {:#x} {}{}",
            f.addr,
            f.label(),
            f.location
                .as_deref()
                .map(|l| format!(" ({})", shown(l)))
                .unwrap_or_default()
        );
    }
    if !c.kernel_stack.is_empty() {
        let names: Vec<String> = c.kernel_stack.iter().take(8).map(Frame::label).collect();
        let _ = write!(s, "\n    blocked in: {}", names.join(" <- "));
    }
    s
}

fn args_text(c: &SlowCall) -> String {
    let plain = c
        .syscall
        .strip_prefix(syscall_names::COMPAT_PREFIX)
        .unwrap_or(&c.syscall);
    if ARGS_UNKNOWN.contains(&plain) {
        return "...".to_string();
    }
    match &c.fd {
        Some(name) => format!("{}<{}>, ...", c.args[0] as i64, shown(name)),
        None => format!("{:#x}, {:#x}, {:#x}, ...", c.args[0], c.args[1], c.args[2]),
    }
}

/// The calls as a Chrome trace-event JSON (what ui.perfetto.dev and chrome://tracing
/// open): a track per thread, a slice per call with its figures as args.
pub fn trace_json(calls: &[SlowCall]) -> Result<String> {
    let mut events = Vec::new();
    let mut named = BTreeMap::new();
    for c in calls {
        named
            .entry((c.pid, c.tid))
            .or_insert_with(|| c.comm.clone());
        let frames: Vec<String> = c.stack.iter().map(Frame::raw_label).collect();
        events.push(serde_json::json!({
            "name": c.syscall,
            "cat": "syscall",
            "ph": "X",
            "ts": c.start_ns as f64 / 1e3,
            "dur": c.latency_ns as f64 / 1e3,
            "pid": c.pid,
            "tid": c.tid,
            "args": {
                "ret": c.ret,
                "errno": c.errno,
                "fd": c.fd,
                "offcpu_us": c.offcpu_ns as f64 / 1e3,
                "args": c.args.iter().map(|a| format!("{a:#x}")).collect::<Vec<_>>(),
                "stack": frames,
                "kernel_stack": c.kernel_stack.iter().map(Frame::raw_label).collect::<Vec<_>>(),
            }
        }));
    }
    for ((pid, tid), comm) in named {
        events.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
            "args": { "name": format!("{comm} ({tid})") }
        }));
    }
    Ok(
        crate::untrusted::json_safe(serde_json::to_string(&serde_json::json!({
            "traceEvents": events,
            "displayTimeUnit": "ms",
        }))?)
            + "\n",
    )
}

/// Folded stacks (`comm;outer;...;inner;syscall latency_us`), one line per distinct
/// stack, weighted by time in the call: what `inferno-flamegraph` and `flamegraph.pl`
/// take. Names as text outputs print them, `;` (the separator) as `:`.
pub fn folded(calls: &[SlowCall]) -> String {
    let mut weights: BTreeMap<String, u64> = BTreeMap::new();
    for c in calls {
        let mut path = vec![shown(&c.comm).replace(';', ":")];
        path.extend(c.stack.iter().rev().map(|f| f.label().replace(';', ":")));
        path.push(c.syscall.clone());
        *weights.entry(path.join(";")).or_default() += (c.latency_ns / 1000).max(1);
    }
    weights
        .into_iter()
        .map(|(k, v)| format!("{k} {v}\n"))
        .collect()
}

/// A flame graph (SVG) of the folded stacks, by time in slow calls (microseconds).
pub fn flame_svg(folded: &str, title: &str) -> Result<Vec<u8>> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "us".to_string();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)
        .context("cannot draw the flame graph")?;
    if out.is_empty() {
        bail!("no stacks to draw");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_specs() {
        assert_eq!(parse_duration("50us"), Ok(Duration::from_micros(50)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0ns"), Ok(Duration::ZERO));
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(parse_duration("5h").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("2s").is_ok());
        assert!(parse_duration("7200s").is_err());
        let s = parse_spec("1ms,close=50us").unwrap();
        assert_eq!(s.default, Some(Duration::from_millis(1)));
        assert_eq!(
            s.per_syscall,
            vec![("close".to_string(), Duration::from_micros(50))]
        );
        let (keys, big) = s.thresholds().unwrap();
        assert_eq!(keys[3], 50_000, "close is 3");
        assert_eq!(keys[0], 1_000_000);
        assert_eq!(big, 1_000_000);
        let only = parse_spec("read=1ms").unwrap();
        let (keys, big) = only.thresholds().unwrap();
        assert_eq!((keys[0], keys[1], big), (1_000_000, u64::MAX, u64::MAX));
        assert!(parse_spec("clsoe=1ms").unwrap_err().contains("close"));
        assert!(parse_spec("1ms,2ms").is_err());
        assert!(
            parse_spec("syscall_0x1388=1ms")
                .unwrap_err()
                .contains("below 1024")
        );
        assert_eq!(parse_duration("5µs"), Ok(Duration::from_micros(5)));
        // A 64-bit name covers the 32-bit syscall of the same name too.
        let (keys, _) = parse_spec("read=1ms").unwrap().thresholds().unwrap();
        let compat_read = syscall_names::number("i386:read").unwrap().key as usize;
        assert_eq!(keys[compat_read], 1_000_000);
        // A number is not a name: `syscall_0x10` is 64-bit 16 only, not i386 16.
        let (keys, _) = parse_spec("syscall_0x10=1ms")
            .unwrap()
            .thresholds()
            .unwrap();
        let i386_16 = syscall_names::number("i386:lchown").unwrap();
        assert_eq!(
            (keys[16], keys[i386_16.key as usize]),
            (1_000_000, u64::MAX)
        );
        assert!(parse_spec(",").is_err());
        assert_eq!(s.describe(), "1.00ms,close=50.0us");
    }

    fn call(syscall: &str, tid: u32, ns: u64, frames: &[&str]) -> SlowCall {
        SlowCall {
            start_ns: 1_000_000,
            end_ns: 1_000_000 + ns,
            pid: 7,
            tid,
            comm: "app".into(),
            syscall: syscall.into(),
            latency_ns: ns,
            offcpu_ns: ns / 2,
            ret: 1,
            stack: frames
                .iter()
                .enumerate()
                .map(|(i, f)| Frame {
                    addr: 0x1000 + i as u64,
                    function: Some(f.to_string()),
                    ..Frame::default()
                })
                .collect(),
            ..SlowCall::default()
        }
    }

    #[test]
    fn folded_trace_and_flame() {
        let calls = [
            call("nanosleep", 7, 2_000_000, &["sleepy", "main"]),
            call("nanosleep", 7, 3_000_000, &["sleepy", "main"]),
            call("read", 8, 20_000_000, &["reader", "main"]),
        ];
        let f = folded(&calls);
        assert_eq!(
            f, "app;main;reader;read 20000\napp;main;sleepy;nanosleep 5000\n",
            "outermost first, weighted by microseconds"
        );
        let t: serde_json::Value = serde_json::from_str(&trace_json(&calls).unwrap()).unwrap();
        let ev = t["traceEvents"].as_array().unwrap();
        let slices: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 3);
        assert_eq!(slices[2]["dur"], 20_000.0);
        assert_eq!(slices[0]["args"]["stack"][0], "sleepy");
        assert_eq!(
            ev.iter().filter(|e| e["ph"] == "M").count(),
            2,
            "a name per thread"
        );
        let svg = String::from_utf8(flame_svg(&f, "slow calls").unwrap()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("sleepy"), "{svg}");
        let l = line(&calls[2]);
        assert!(l.starts_with("slow: read("), "{l}");
        assert!(
            l.contains("in 20.0ms (10.0ms switched out) tid 8 app"),
            "{l}"
        );
        assert!(l.contains("\n    0x1000 reader"), "{l}");
    }

    /// Names a traced process chose reach no output raw: text outputs escape them, the
    /// SVG stays well-formed XML with no element of theirs, the trace keeps them exactly.
    #[test]
    fn hostile_names_are_escaped_in_every_output() {
        let comm = "\u{1b}]0;PWNED\u{7}x";
        let mut c = call(
            "read",
            9,
            5_000_000,
            &["evil<script>alert(1)</script>", "m\u{9b}2J"],
        );
        c.comm = comm.into();
        c.fd = Some(crate::untrusted::decode(b"/tmp/\x1b[31mred\xff"));
        c.stack[0].location = Some("/src/\u{1b}[2J.rs:3".into());
        let clean = |text: &str| {
            text.chars()
                .all(|ch| !ch.is_control() || ch == '\n' || ch == '\t')
        };
        let l = line(&c);
        assert!(clean(&l), "{l:?}");
        assert!(l.contains("tid 9 \\33]0;PWNED\\7x"), "{l}");
        assert!(l.contains("</tmp/\\33[31mred\\xff>"), "{l}");
        assert!(
            l.contains("m\\u{9b}2J") && l.contains("/src/\\33[2J.rs:3"),
            "{l}"
        );
        let f = folded(std::slice::from_ref(&c));
        assert!(clean(&f) && f.contains("\\33]0:PWNED"), "{f:?}");
        let svg = String::from_utf8(flame_svg(&f, "slow calls").unwrap()).unwrap();
        assert!(
            clean(&svg.replace('\r', "")),
            "control characters in the SVG"
        );
        let mut reader = quick_xml::Reader::from_str(&svg);
        let mut elements = Vec::new();
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)) => {
                    elements.push(String::from_utf8_lossy(e.name().as_ref()).into_owned())
                }
                Ok(_) => {}
                Err(e) => panic!("the SVG is not well-formed XML: {e}"),
            }
        }
        assert!(
            !elements
                .iter()
                .any(|e| e == "script" && svg.contains("alert(1)</script"))
        );
        assert!(
            svg.contains("evil&lt;script&gt;"),
            "the name is there, escaped"
        );
        let t: serde_json::Value =
            serde_json::from_str(&trace_json(&[c.clone()]).unwrap()).unwrap();
        let ev = t["traceEvents"].as_array().unwrap();
        assert_eq!(ev[0]["args"]["stack"][0], "evil<script>alert(1)</script>");
        assert_eq!(ev[1]["args"]["name"], format!("{comm} (9)"));
    }

    #[test]
    fn a_log_keeps_the_newest() {
        let mut log = SlowLog::new(2);
        for i in 0..5 {
            log.push(call("read", i, 1, &[]));
        }
        assert_eq!(log.calls.len(), 2);
        assert_eq!(log.evicted, 3);
        assert_eq!(log.calls[0].tid, 3);
    }
}
