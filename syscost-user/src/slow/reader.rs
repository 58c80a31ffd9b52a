//! The slow calls' ring buffer read on a thread of its own, each call decoded as it
//! arrives (while its fd and its process's maps are still there) and kept in a
//! [`SlowLog`].

use std::{collections::VecDeque, time::Duration};

use syscost_common::SlowEvent;

use super::decode::Decoder;
use crate::profile::SlowCall;

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
                        eprintln!("{}", crate::report::slow::line(&c));
                    }
                    crate::locks::lock(&l).push(c);
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
        let mut log = crate::locks::lock(&self.log);
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
