//! A call's user stack, unwound and named independently of its process's lifetime: a
//! library of the ring buffer's decoder (`call_ring::decode`), for slow calls (`--slow`) and
//! the samples of calls by stack (`--stacks`) alike.
//!
//! The kernel side sends each slow call (and sample) with its frame-pointer walk, the registers at
//! its exit and a copy of the top of its stack. Here the copy is unwound with the call
//! frame information (`.eh_frame`) of the objects the process has mapped (framehop),
//! which reaches the callers of code built without frame pointers (glibc, every
//! distribution's C and C++); the longer of the two stacks is kept. Frames are named
//! (blazesym) by file offset, from sealed copies of the objects (see `objects`:
//! every file a traced process chooses is hostile). The mappings are read from
//! `/proc/PID/maps` at a process's first slow call and each object is opened then
//! (its debug file looked for too), so a process that exits before its later calls are
//! decoded keeps its names, its files renamed or deleted included. An object stays open
//! while a process that maps it is known and alive, or a call of one waits to be named;
//! then it is closed (its copy freed). A frame that cannot be named says why
//! ([`syscost_report::profile::Frame::unknown`]).
//!
//! By file: the stacks' state here; unwinding (`walk`), naming (`names`); the traced
//! process's mappings and mounts read (`maps`), its objects opened and copied
//! (`objects`) within bounds (`bounded`).

use self::{
    maps::{MapsLine, Mounts, parse_maps},
    objects::DebugLink,
};
use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex, OnceLock, Weak,
        atomic::{AtomicU64, Ordering},
    },
};

mod bounded;
mod limits;
pub(crate) mod maps;
mod names;
pub(crate) mod objects;
#[cfg(test)]
mod tests;
mod walk;

pub use self::{names::*, walk::*};

/// Processes whose mappings are kept (the oldest forgotten first).
const PROCESSES: usize = 4096;

/// Objects open at once: beyond them a new object's frames are not named (and say so).
const OBJECTS: usize = 1024;

/// Objects opened so far: each one's serial, which no later object shares.
static SERIAL: AtomicU64 = AtomicU64::new(0);

struct Known {
    /// Which image of the process: its `mm_struct`'s address and exec count.
    image: (u64, u32),
    /// Read at an exec's exit: only the program and its loader were mapped, so the next
    /// call reads them again (the libraries are mapped by then).
    at_exec: bool,
    process: Arc<Process>,
    /// Found exited at the last prune: forgotten at the next, once the calls it made
    /// before its exit, still in the ring then, have been received.
    gone: bool,
}

/// Keeps what slow calls' stacks need of their processes as the calls arrive (see the
/// module's documentation): the part that must be quick, before a short-lived process
/// is gone; unwinding and naming come after, on another thread ([`Names`]).
pub struct Unwinder {
    processes: HashMap<u32, Known>,
    order: VecDeque<u32>,
    /// By (device, inode) as `/proc/PID/maps` gives them: open while a process or a call
    /// holds them.
    objects: HashMap<(String, u64), Weak<Object>>,
    /// Processes whose mappings were read at an exec's exit, to be read again soon
    /// without waiting for their next call (which may come just before they exit): when,
    /// and how many times so far.
    after_exec: Vec<(u32, (u64, u32), std::time::Instant, u32)>,
    /// When the processes known were last checked for exits.
    pruned: std::time::Instant,
}

/// After an exec the mappings are read again this long after, then 4 and 16 times as
/// long: the loader maps the libraries within a millisecond or so.
const AFTER_EXEC: std::time::Duration = std::time::Duration::from_millis(1);

/// How often the processes known are checked for exits (their objects closed).
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl Default for Unwinder {
    fn default() -> Self {
        raise_open_files_limit();
        Self {
            processes: HashMap::new(),
            order: VecDeque::new(),
            objects: HashMap::new(),
            after_exec: Vec::new(),
            pruned: std::time::Instant::now(),
        }
    }
}

impl Unwinder {
    /// Keeps process `pid`'s mappings for a call (`image`: its address space and exec
    /// count, from the event; `exec`: the call is an exec; `seen`: where the call
    /// returns to): read at its first call, after an exec, and again while it lives when
    /// one of `seen` falls outside them.
    pub fn capture(
        &mut self,
        pid: u32,
        image: (u64, u32),
        exec: bool,
        compat: bool,
        seen: &[u64],
    ) -> Captured {
        let again = self.processes.get(&pid).is_some_and(|k| k.at_exec);
        let mut alive = self.know(pid, image, again);
        if let Some(k) = self.processes.get_mut(&pid) {
            k.at_exec = exec && alive;
        }
        if exec && alive {
            self.after_exec
                .push((pid, image, std::time::Instant::now() + AFTER_EXEC, 0));
        }
        // Only mappings of this address space: after an exec the old ones name nothing.
        let process = |s: &Self| {
            s.processes
                .get(&pid)
                .filter(|k| k.image == image)
                .map(|k| k.process.clone())
        };
        let outside = process(self).is_some_and(|p| {
            seen.iter()
                .any(|&a| a >= 0x1000 && mapping_of(&p, a).is_none())
        });
        if alive && outside {
            alive = self.know(pid, image, true);
        }
        Captured {
            process: process(self),
            alive,
            compat,
        }
    }

    /// Reads again the mappings of the processes that exec'd, when due (see
    /// `after_exec`), and forgets the processes that have exited (closing the objects
    /// only they mapped); how long until the next is due.
    pub fn tick(&mut self) -> Option<std::time::Duration> {
        let now = std::time::Instant::now();
        if now.duration_since(self.pruned) >= PRUNE_EVERY {
            self.pruned = now;
            self.prune();
        }
        let due: Vec<_> = self
            .after_exec
            .iter()
            .filter(|e| e.2 <= now)
            .cloned()
            .collect();
        self.after_exec.retain(|e| e.2 > now);
        for (pid, image, _, tries) in due {
            // Only while the mappings kept are still the exec's (a later call has not read
            // them again).
            if self
                .processes
                .get(&pid)
                .is_none_or(|k| k.image != image || !k.at_exec)
            {
                continue;
            }
            let alive = self.know(pid, image, true);
            // Still the loader's alone, perhaps: marked so, and again later.
            if let Some(k) = self.processes.get_mut(&pid) {
                k.at_exec = alive;
            }
            if alive && tries < 2 {
                let wait = AFTER_EXEC * 4u32.pow(tries + 1);
                self.after_exec.push((pid, image, now + wait, tries + 1));
            }
        }
        self.after_exec
            .iter()
            .map(|e| e.2.saturating_duration_since(now))
            .min()
    }

    /// Forgets the processes found exited at the previous prune (a call received in
    /// between still finds its mappings): an object no process (and no call waiting to
    /// be named) holds any more is closed.
    fn prune(&mut self) {
        let mut gone = Vec::new();
        for (pid, k) in &mut self.processes {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                if k.gone {
                    gone.push(*pid);
                }
                k.gone = true;
            }
        }
        for pid in &gone {
            self.processes.remove(pid);
        }
        if !gone.is_empty() {
            self.order.retain(|p| self.processes.contains_key(p));
        }
        let before = self.objects.len();
        self.objects.retain(|_, o| o.strong_count() > 0);
        if self.objects.len() < before {
            log::debug!(
                "slow calls: {} objects closed, {} open",
                before - self.objects.len(),
                self.objects.len()
            );
        }
    }

    /// How many objects are open now (held by a process known or a call).
    pub fn objects_open(&self) -> usize {
        self.objects
            .values()
            .filter(|o| o.strong_count() > 0)
            .count()
    }

    /// Makes sure `pid`'s mappings are known (read now if not, or if `again`, or if the
    /// process has exec'd since: a new image); false when the process is gone.
    fn know(&mut self, pid: u32, image: (u64, u32), again: bool) -> bool {
        let known = self.processes.get(&pid).map(|k| k.image);
        if known == Some(image) && !again {
            return exists(pid);
        }
        let Ok(text) = std::fs::read(format!("/proc/{pid}/maps")) else {
            return false;
        };
        let lines = parse_maps(&String::from_utf8_lossy(&text));
        if lines.is_empty() {
            // A zombie: its mappings are gone.
            return false;
        }
        // The process's mounts, read once, when an object is new.
        let mut mounts: Option<Option<Arc<Mounts>>> = None;
        let mut mappings = Vec::with_capacity(lines.len());
        for l in lines {
            let holds = if l.path == "[vdso]" {
                Holds::Vdso
            } else if l.inode == 0 {
                Holds::Anonymous
            } else {
                self.object(pid, &l, &mut mounts)
            };
            mappings.push(Mapping {
                range: l.range,
                offset: l.offset,
                holds,
            });
        }
        let known = Known {
            image,
            at_exec: false,
            process: Arc::new(Process {
                mappings,
                unwinder: OnceLock::new(),
            }),
            gone: false,
        };
        if self.processes.insert(pid, known).is_none() {
            self.order.push_back(pid);
            if self.order.len() > PROCESSES
                && let Some(old) = self.order.pop_front()
            {
                self.processes.remove(&old);
            }
        }
        true
    }

    /// The object a file mapping holds: opened once (see [`objects::open_mapped`]) and
    /// shared while held, its debug file looked for as it is opened (the process's root
    /// is there only while it lives).
    fn object(
        &mut self,
        pid: u32,
        l: &MapsLine,
        mounts: &mut Option<Option<Arc<Mounts>>>,
    ) -> Holds {
        let key = (l.dev.clone(), l.inode);
        if let Some(o) = self.objects.get(&key).and_then(Weak::upgrade) {
            return Holds::File(o);
        }
        if self.objects.len() >= OBJECTS {
            self.objects.retain(|_, o| o.strong_count() > 0);
            if self.objects.len() >= OBJECTS {
                return Holds::Unopened(format!("more than {OBJECTS} objects open"));
            }
        }
        let mounts = mounts
            .get_or_insert_with(|| Mounts::of(pid).map(Arc::new))
            .clone();
        let file = match objects::open_mapped(pid, l, mounts.as_deref()) {
            Ok(f) => f,
            Err(why) => return Holds::Unopened(why),
        };
        let link = DebugLink::of(&file);
        let build_id = link
            .build_id
            .as_ref()
            .map(|id| id.iter().map(|b| format!("{b:02x}")).collect());
        let debug_file = if link == DebugLink::default() {
            None
        } else {
            objects::process_root(pid).ok().and_then(|root| {
                objects::find_debug_file(root, l.live_path().map(str::to_string), link, mounts)
            })
        };
        let name = l
            .path
            .trim_end_matches(" (deleted)")
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let o = Arc::new(Object {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            file,
            name,
            build_id,
            unwind: OnceLock::new(),
            debug_file: Mutex::new(debug_file),
            symbols: OnceLock::new(),
        });
        self.objects.insert(key, Arc::downgrade(&o));
        Holds::File(o)
    }
}

/// Whether process `pid` exists, a zombie too (as `/proc/PID` does): signal 0, checked
/// with no path looked up and nothing allocated, at every call of a known process.
fn exists(pid: u32) -> bool {
    // 0 and negative values name process groups, not a process.
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p == 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only checks that the process exists. Only
    // ESRCH says it does not: a refusal (EPERM, or EACCES from a security module) is of
    // a process that is there.
    let sent = unsafe { libc::kill(p, 0) } == 0;
    sent || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
