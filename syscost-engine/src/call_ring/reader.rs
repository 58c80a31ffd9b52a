//! The slow calls' ring buffer read on a thread of its own, each call received as it
//! arrives (while its fd and its process's maps are still there), named on another and
//! kept in a [`SlowLog`].

use std::{collections::VecDeque, time::Duration};

use syscost_common::{CallEvent, StackKey, record_flags};

use super::decode::{Decoder, Namer, Received};
use syscost_report::profile::SlowCall;

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

/// Reads the ring buffer on a thread of its own, receiving each slow call as it arrives
/// (its fd's target and its process's mappings, while they are there), and unwinds and
/// names them on a second thread (symbols can take milliseconds to load, and
/// short-lived processes do not wait): keeps them, and prints them when asked.
pub struct Reader {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
    /// Records received and calls named so far: what the end waits on while it grows.
    progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
    log: std::sync::Arc<std::sync::Mutex<SlowLog>>,
    samples: std::sync::Arc<std::sync::Mutex<crate::by_stack::Samples>>,
}

/// Sets the calling thread's nice value (a thread id is a process id for setpriority).
fn set_nice(nice: i32) {
    // SAFETY: gettid has no arguments; setpriority sets this thread's own value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice);
    }
}

/// What is done with each slow call as soon as it is named (on the naming thread).
pub type EachCall = Box<dyn Fn(&SlowCall) + Send>;

/// Calls received and not yet named, at most (then the ring buffer waits, and what it
/// has no room for is counted as dropped).
const PENDING: usize = 1024;

impl Reader {
    /// Starts reading; `each`: given each slow call once it is named, in the order they
    /// come (a command prints it; the engine prints nothing); `keep`: how many calls to
    /// keep for the end (0 for a service that only prints them). Records that are
    /// samples of `--stacks` are unwound and named the same way and kept apart.
    pub fn spawn(
        mut ring: aya::maps::RingBuf<aya::maps::MapData>,
        each: Option<EachCall>,
        keep: usize,
    ) -> Self {
        use std::sync::{Arc, Mutex, atomic::AtomicBool, atomic::Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(SlowLog::new(keep)));
        let samples = Arc::new(Mutex::new(crate::by_stack::Samples::default()));
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Received, u32, StackKey)>(PENDING);
        let s = stop.clone();
        let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let received = progress.clone();
        let receiver = std::thread::spawn(move || {
            // Above the machine's other work (root may raise it; where it cannot, it
            // stays as it is): a short-lived process's mappings must be read before it
            // exits, and this thread does little else.
            set_nice(-10);
            let mut decoder = Decoder::default();
            let fd = std::os::fd::AsRawFd::as_raw_fd(&ring);
            // When the last record was read: the ring is looked at more often while they
            // come.
            let mut last_record = std::time::Instant::now()
                .checked_sub(BUSY)
                .unwrap_or_else(std::time::Instant::now);
            loop {
                // Read after the stop flag: what was sent before it is drained.
                let stopping = s.load(Ordering::Acquire);
                let mut got = false;
                while let Some(item) = ring.next() {
                    got = true;
                    received.fetch_add(1, Ordering::Relaxed);
                    if item.len() < std::mem::size_of::<CallEvent>() {
                        continue;
                    }
                    // SAFETY: the kernel wrote a whole CallEvent; read_unaligned copies it.
                    let e = unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<CallEvent>()) };
                    // The user stack copy follows it (its pages, if any).
                    let r = decoder.receive(&e, &item[std::mem::size_of::<CallEvent>()..]);
                    drop(item);
                    let key = StackKey {
                        stack: syscost_common::stack_identity(e.stack_hash),
                        tgid: e.tgid,
                        key: e.key,
                    };
                    if tx.send((r, e.flags, key)).is_err() {
                        return;
                    }
                }
                if stopping && !got {
                    return;
                }
                let due = decoder.tick();
                if got {
                    last_record = std::time::Instant::now();
                } else {
                    // Woken as soon as a slow call or a stack's first sample comes: its
                    // process's mappings are read at its first such call, and short-lived
                    // processes exit soon after. A stack's later samples wake nothing:
                    // while records come (within 100 ms), the ring is looked at every
                    // millisecond, so that they never wait long for room; idle, every 10.
                    let mut p = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    let most = if last_record.elapsed() < BUSY { 1 } else { 10 };
                    let wait = due.map_or(most, |d| {
                        d.as_micros().div_ceil(1000).clamp(1, most as u128) as i32
                    });
                    // SAFETY: one pollfd, for the ring buffer's fd, which outlives it.
                    if unsafe { libc::poll(&mut p, 1, wait) } < 0 {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
        });
        let l = log.clone();
        let sampled = samples.clone();
        let named = progress.clone();
        let namer = std::thread::spawn(move || {
            // Niced below the receiving thread: on a busy machine (one CPU) the calls are
            // received first, while their processes live, and named after.
            set_nice(10);
            let mut namer = Namer::default();
            // Ends when the receiver has ended and everything it sent is named; idle for
            // a second, it frees what the symbolizer holds of closed objects.
            loop {
                let (r, flags, key) = match rx.recv_timeout(Duration::from_secs(1)) {
                    Ok(m) => m,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        namer.tidy();
                        continue;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                };
                let c = namer.name(r);
                named.fetch_add(1, Ordering::Relaxed);
                if flags & record_flags::STACK_SAMPLE != 0 {
                    crate::locks::lock(&sampled).add(key, &c);
                }
                if flags & record_flags::SLOW == 0 {
                    continue;
                }
                if let Some(each) = &each {
                    each(&c);
                }
                crate::locks::lock(&l).push(c);
            }
        });
        Self {
            stop,
            handles: vec![receiver, namer],
            progress,
            log,
            samples,
        }
    }

    /// The log the calls go into, for a view to read while they come.
    pub fn log(&self) -> std::sync::Arc<std::sync::Mutex<SlowLog>> {
        self.log.clone()
    }

    /// `--stacks`' samples received so far, for a view to join with the tables.
    pub fn samples(&self) -> std::sync::Arc<std::sync::Mutex<crate::by_stack::Samples>> {
        self.samples.clone()
    }

    /// Drains what is left (call it once the programs are unloaded) and returns every
    /// call kept, and how many were received but not kept.
    pub fn into_calls(self) -> (Vec<SlowCall>, u64) {
        self.into_parts().0
    }

    /// [`Reader::into_calls`], and the samples of `--stacks` received.
    pub fn into_parts(mut self) -> ((Vec<SlowCall>, u64), crate::by_stack::Samples) {
        self.end();
        let mut log = crate::locks::lock(&self.log);
        let evicted = log.evicted;
        let samples = std::mem::take(&mut *crate::locks::lock(&self.samples));
        ((std::mem::take(&mut log.calls).into(), evicted), samples)
    }
}

impl Reader {
    /// Tells both threads to end and waits for them while they make progress: the
    /// receiver drains the ring, the namer names what it was sent. Should neither
    /// receive nor name anything for [`STALLED`] (a file or a filesystem that stalls
    /// them), they are left behind (they end with syscost) and the calls not named yet
    /// are missing from the end's figures, which a line on stderr says.
    fn end(&mut self) {
        use std::sync::atomic::Ordering;
        self.stop.store(true, Ordering::Release);
        let mut seen = (
            self.progress.load(Ordering::Relaxed),
            std::time::Instant::now(),
        );
        while self.handles.iter().any(|h| !h.is_finished()) {
            let now = self.progress.load(Ordering::Relaxed);
            if now != seen.0 {
                seen = (now, std::time::Instant::now());
            } else if seen.1.elapsed() >= STALLED {
                eprintln!(
                    "syscost: the slow-call reader made no progress for {} s: left behind, the calls it had not named are missing",
                    STALLED.as_secs()
                );
                self.handles.clear();
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// How long after its last record the reader keeps looking at the ring every
/// millisecond (then every 10): a stack's later samples wake nothing.
const BUSY: Duration = Duration::from_millis(100);

/// How long the end waits for the reader's threads while they neither receive nor name
/// anything.
const STALLED: Duration = Duration::from_secs(30);

impl Drop for Reader {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tid: u32) -> SlowCall {
        SlowCall {
            tid,
            syscall: "read".into(),
            ..SlowCall::default()
        }
    }

    #[test]
    fn a_log_keeps_the_newest() {
        let mut log = SlowLog::new(2);
        for i in 0..5 {
            log.push(call(i));
        }
        assert_eq!(log.calls.len(), 2);
        assert_eq!(log.evicted, 3);
        assert_eq!(log.calls[0].tid, 3);
    }
}
