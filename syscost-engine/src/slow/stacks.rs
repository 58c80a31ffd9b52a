//! A slow call's user stack, unwound and named independently of its process's lifetime.
//!
//! The kernel side sends each slow call with its frame-pointer walk, the registers at
//! its exit and a copy of the top of its stack. Here the copy is unwound with the call
//! frame information (`.eh_frame`) of the objects the process has mapped (framehop),
//! which reaches the callers of code built without frame pointers (glibc, every
//! distribution's C and C++); the longer of the two stacks is kept. Frames are named
//! (blazesym) by file offset, from sealed copies of the objects (see [`super::objects`]:
//! every file a traced process chooses is hostile). The mappings are read from
//! `/proc/PID/maps` at a process's first slow call and each object is opened then
//! (its debug file looked for too), so a process that exits before its later calls are
//! decoded keeps its names, its files renamed or deleted included. An object stays open
//! while a process that maps it is known and alive, or a call of one waits to be named;
//! then it is closed (its copy freed). A frame that cannot be named says why
//! ([`Frame::unknown`]).

use std::{
    collections::{HashMap, VecDeque},
    fs::File,
    ops::{Deref, Range},
    sync::{
        Arc, Mutex, OnceLock, Weak,
        atomic::{AtomicU64, Ordering},
    },
};

use blazesym::symbolize::{Input, Symbolized, Symbolizer, source};
#[cfg(target_arch = "aarch64")]
use framehop::aarch64::{
    CacheAarch64 as Cache, PtrAuthMask, UnwindRegsAarch64, UnwinderAarch64 as ArchUnwinder,
};
#[cfg(target_arch = "x86_64")]
use framehop::x86_64::{CacheX86_64 as Cache, UnwindRegsX86_64, UnwinderX86_64 as ArchUnwinder};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};
use object::{Object as _, ObjectSection as _, ObjectSegment as _};

use super::{
    maps::{MapsLine, Mounts, parse_maps},
    objects::{self, DebugFile, DebugLink, SymbolFile},
};
use syscost_report::{
    profile::{Frame, FrameMapping},
    untrusted::decode,
};

/// Frames of an unwound stack, at most.
pub const MAX_FRAMES: usize = 64;
/// Processes whose mappings are kept (the oldest forgotten first).
const PROCESSES: usize = 4096;
/// Objects open at once: beyond them a new object's frames are not named (and say so).
const OBJECTS: usize = 1024;
/// A section of unwind information larger than this is not read.
const MAX_UNWIND_SECTION: u64 = 64 << 20;
/// Unwind information held at once, bytes: beyond, a new object is not unwound.
const UNWIND_BUDGET: u64 = 512 << 20;
/// Bytes of unwind information held now.
static UNWIND_BYTES: AtomicU64 = AtomicU64::new(0);
/// Objects closed so far (the symbolizer's caches are made anew after enough of them).
static CLOSED: AtomicU64 = AtomicU64::new(0);
/// Objects opened so far: each one's serial, which no later object shares.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// What the kernel side sent for unwinding: the registers at the exit and the stack copy.
pub struct StackCopy {
    /// The instruction pointer, stack pointer and frame pointer (arm64: pc, sp, x29).
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    /// The link register (arm64's x30; unused on x86_64).
    pub lr: u64,
    /// The copy's first address (a page boundary at or below `sp`).
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl StackCopy {
    fn read(&self, addr: u64) -> Result<u64, ()> {
        let off = addr.checked_sub(self.base).ok_or(())? as usize;
        let word = self
            .bytes
            .get(off..off.checked_add(8).ok_or(())?)
            .ok_or(())?;
        Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
    }
}

/// Section data shared between the processes that map one object.
#[derive(Clone, Default)]
struct Bytes(Arc<[u8]>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A mapped file, open while a process known to map it lives (or a call of one waits).
struct Object {
    /// Unique to this opening: what names are cached by.
    serial: u64,
    file: File,
    /// Its file name (the frames' module).
    name: String,
    /// Its GNU build id, hex (the frames' mapping's).
    build_id: Option<String>,
    /// Read at its first unwind (by the naming thread: the receiving one only opens).
    unwind: OnceLock<Option<UnwindInfo>>,
    /// Its separate debug file, found when it was opened, until it is copied.
    debug_file: Mutex<Option<DebugFile>>,
    /// Its copies for the symbolizer, made at its first naming: its own and its debug
    /// file's.
    symbols: OnceLock<Result<(SymbolFile, Option<SymbolFile>), String>>,
}

impl Object {
    fn unwind(&self) -> Option<&UnwindInfo> {
        self.unwind
            .get_or_init(|| UnwindInfo::read(&self.file))
            .as_ref()
    }

    fn symbols(&self) -> Result<&(SymbolFile, Option<SymbolFile>), &str> {
        self.symbols
            .get_or_init(|| {
                let own = objects::symbol_copy(&self.file, None)?;
                let debug = crate::locks::lock(&self.debug_file).take().and_then(|d| {
                    match objects::symbol_copy(&d.file, Some(&d.check)) {
                        Ok(copy) => Some(copy),
                        Err(e) => {
                            log::debug!("{}: debug file not used: {e}", self.name);
                            None
                        }
                    }
                });
                Ok((own, debug))
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        CLOSED.fetch_add(1, Ordering::Relaxed);
    }
}

/// What framehop needs of an object, and its executable loadable segments (file offset,
/// file size, address) to place it.
struct UnwindInfo {
    sections: ExplicitModuleSectionInfo<Bytes>,
    loads: Vec<(u64, u64, u64)>,
    /// Bytes of its sections (counted in [`UNWIND_BYTES`] while it lives).
    bytes: u64,
}

impl Drop for UnwindInfo {
    fn drop(&mut self) {
        UNWIND_BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl UnwindInfo {
    fn read(file: &File) -> Option<Self> {
        // Read where needed (headers, the unwind sections), not the whole file; a section
        // is read only when its size is within bounds and the budget has room for it.
        let cache = super::bounded::Bounded::new(
            file.try_clone().ok()?,
            super::bounded::READ_BUDGET + 2 * MAX_UNWIND_SECTION,
        )
        .ok()?;
        let elf = object::File::parse(&cache).ok()?;
        let mut bytes = 0u64;
        let mut section = |name: &str| {
            elf.section_by_name(name).and_then(|s| {
                let size = s.size();
                if size > MAX_UNWIND_SECTION
                    || UNWIND_BYTES
                        .load(Ordering::Relaxed)
                        .saturating_add(bytes + size)
                        > UNWIND_BUDGET
                {
                    return None;
                }
                let data = s.data().ok()?;
                bytes += data.len() as u64;
                Some((
                    s.address()..s.address().saturating_add(size),
                    Bytes(Arc::from(data)),
                ))
            })
        };
        let (eh_frame_svma, eh_frame) = section(".eh_frame").unzip();
        let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr").unzip();
        // Its bytes only serve Mach-O: the range is enough here.
        let text_svma = elf
            .section_by_name(".text")
            .map(|s| s.address()..s.address().saturating_add(s.size()));
        let got_svma = elf
            .section_by_name(".got")
            .map(|s| s.address()..s.address().saturating_add(s.size()));
        eh_frame.as_ref()?;
        // Only the executable ones: the mappings placed are the executable ones, and a
        // layout may start one inside the previous segment's last page (lld's).
        let loads = elf
            .segments()
            .filter(|s| {
                matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0)
            })
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        UNWIND_BYTES.fetch_add(bytes, Ordering::Relaxed);
        Some(Self {
            sections: ExplicitModuleSectionInfo {
                base_svma: 0,
                text_svma,
                got_svma,
                eh_frame_svma,
                eh_frame,
                eh_frame_hdr_svma,
                eh_frame_hdr,
                ..Default::default()
            },
            loads,
            bytes,
        })
    }

    /// The object's load bias in a process where file offset `offset` is mapped at
    /// `start` (an executable mapping).
    fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        let &(p_offset, _, p_vaddr) = self.loads.iter().find(|&&(off, size, _)| {
            (off & !(syscost_common::USER_STACK_PAGE as u64 - 1)) <= offset
                && offset < off.saturating_add(size)
        })?;
        Some(
            start
                .wrapping_sub(offset)
                .wrapping_sub(p_vaddr.wrapping_sub(p_offset)),
        )
    }
}

/// What one mapping holds.
#[derive(Clone)]
enum Holds {
    File(Arc<Object>),
    Vdso,
    /// Memory of no file (JIT code, or an anonymous mapping).
    Anonymous,
    /// A file that could not be opened: why.
    Unopened(String),
}

#[derive(Clone)]
struct Mapping {
    range: Range<u64>,
    offset: u64,
    holds: Holds,
}

/// A process's mappings as read at its first slow call (again when a frame fell outside
/// them while it lived), and its unwinder (made at its first unwind).
pub struct Process {
    mappings: Vec<Mapping>,
    unwinder: OnceLock<ArchUnwinder<Bytes>>,
}

impl Process {
    /// An unwinder over the objects it maps that have call frame information.
    fn unwinder(&self) -> &ArchUnwinder<Bytes> {
        self.unwinder.get_or_init(|| {
            let mut unwinder = ArchUnwinder::new();
            let mut added: Vec<*const Object> = Vec::new();
            for m in &self.mappings {
                let Holds::File(o) = &m.holds else { continue };
                if added.contains(&Arc::as_ptr(o)) {
                    continue;
                }
                added.push(Arc::as_ptr(o));
                let Some(info) = o.unwind() else { continue };
                let Some(bias) = info.bias(m.range.start, m.offset) else {
                    continue;
                };
                let span = self
                    .mappings
                    .iter()
                    .filter(|n| matches!(&n.holds, Holds::File(p) if Arc::ptr_eq(p, o)))
                    .fold(m.range.clone(), |r, n| {
                        r.start.min(n.range.start)..r.end.max(n.range.end)
                    });
                unwinder.add_module(Module::new(
                    o.name.clone(),
                    span,
                    bias,
                    info.sections.clone(),
                ));
            }
            unwinder
        })
    }
}

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

/// What was kept of a process as its call arrived, for its stack to be unwound and
/// named later (see [`Names`]).
pub struct Captured {
    /// The process's mappings (none: it was gone before its first slow call was read).
    process: Option<Arc<Process>>,
    /// Whether it still lived when its call arrived.
    alive: bool,
    /// A 32-bit call: its vDSO is not syscost's (64-bit) one.
    compat: bool,
}

/// Keeps what slow calls' stacks need of their processes as the calls arrive (see the
/// module's documentation): the part that must be quick, before a short-lived process
/// is gone; unwinding and naming come after, on another thread ([`Names`]).
pub struct Stacks {
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

impl Default for Stacks {
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

impl Stacks {
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
            return std::path::Path::new(&format!("/proc/{pid}")).exists();
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

/// Unwinds (framehop) and names (blazesym) captured stacks, from the objects' copies: the
/// slow part, done after.
pub struct Names {
    symbolizer: Symbolizer,
    cache: Cache,
    /// What each (object, file offset) was named (its function and line, or why none):
    /// slow calls come back from the same places (emptied when it reaches `NAMED`).
    named: std::cell::RefCell<HashMap<(u64, u64), Named>>,
    /// syscost's own vDSO (the same image as every process's): where vDSO frames are
    /// named.
    own_vdso: Option<u64>,
    /// [`CLOSED`] when the symbolizer was made: it keeps every file it read, so it is
    /// made anew once enough objects have been closed since.
    closed_at: u64,
}

/// Objects closed after which the symbolizer is made anew (its caches hold what it read
/// of each: a copy stays in memory while the symbolizer has it).
const RENEW_AFTER: u64 = 64;

impl Default for Names {
    fn default() -> Self {
        let own_vdso = std::fs::read_to_string("/proc/self/maps")
            .ok()
            .and_then(|m| {
                parse_maps(&m)
                    .into_iter()
                    .find(|l| l.path == "[vdso]")
                    .map(|l| l.range.start)
            });
        Self {
            symbolizer: symbolizer(),
            cache: Cache::new(),
            named: Default::default(),
            own_vdso,
            closed_at: CLOSED.load(Ordering::Relaxed),
        }
    }
}

/// A symbolizer that reads only what syscost hands it: no debug directories of its own.
fn symbolizer() -> Symbolizer {
    Symbolizer::builder()
        .set_debug_dirs(Some::<&[&std::path::Path]>(&[]))
        .build()
}

impl Names {
    /// The symbolizer made anew: what it held of closed objects' copies is freed.
    fn renew(&mut self) {
        log::debug!(
            "slow calls: the symbolizer made anew, {} objects closed since the last",
            CLOSED
                .load(Ordering::Relaxed)
                .saturating_sub(self.closed_at)
        );
        self.closed_at = CLOSED.load(Ordering::Relaxed);
        self.symbolizer = symbolizer();
        self.named.borrow_mut().clear();
        objects::release_freed();
    }

    /// Call when no call waits to be named: the symbolizer is made anew if objects were
    /// closed since it was made, so that their copies do not stay in its caches.
    pub fn tidy(&mut self) {
        if CLOSED.load(Ordering::Relaxed) > self.closed_at || objects::freed_bytes() > 0 {
            self.renew();
        }
    }

    /// A captured call's stack: the longer of the frame-pointer walk `fp` (innermost
    /// first) and the unwind of `copy`, named where it can be, each unnamed frame saying
    /// why. A fault in the unwinder or the symbolizer (a file crafted to break them)
    /// costs that call its names, not the naming thread.
    pub fn stack(&mut self, u: &Captured, fp: &[u64], copy: Option<&StackCopy>) -> Vec<Frame> {
        if CLOSED
            .load(Ordering::Relaxed)
            .saturating_sub(self.closed_at)
            >= RENEW_AFTER
            || objects::freed_bytes() > objects::SYMBOL_BUDGET / 4
        {
            self.renew();
        }
        let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let dwarf = match (copy, &u.process) {
                (Some(c), Some(p)) => unwind(p, &mut self.cache, c),
                _ => Vec::new(),
            };
            let addrs = if dwarf.len() >= fp.len() {
                &dwarf[..]
            } else {
                fp
            };
            self.name(u, addrs)
        }));
        attempt.unwrap_or_else(|_| {
            // What the unwinder or symbolizer held may be inconsistent: made anew.
            self.renew();
            self.cache = Cache::new();
            fp.iter()
                .map(|&addr| Frame {
                    addr,
                    unknown: Some("naming failed on this stack's objects".into()),
                    ..Frame::default()
                })
                .collect()
        })
    }

    fn name(&self, u: &Captured, addrs: &[u64]) -> Vec<Frame> {
        addrs
            .iter()
            .enumerate()
            .map(|(i, &addr)| {
                // Return addresses are looked up at the call before them.
                let lookup = if i == 0 { addr } else { addr.saturating_sub(1) };
                let mut frame = Frame {
                    addr,
                    ..Frame::default()
                };
                let Some(p) = &u.process else {
                    frame.unknown = Some("process exited before its mappings were read".into());
                    return frame;
                };
                let Some(m) = mapping_of(p, lookup) else {
                    frame.unknown = Some(if u.alive {
                        "in no mapping of the process".into()
                    } else {
                        "in none of the mappings read while the process lived (it exited \
                         before they were read again)"
                            .into()
                    });
                    return frame;
                };
                match &m.holds {
                    Holds::File(o) => {
                        frame.module = Some(o.name.clone());
                        frame.mapping = Some(FrameMapping {
                            start: m.range.start,
                            limit: m.range.end,
                            offset: m.offset,
                            build_id: o.build_id.clone(),
                        });
                        let offset = (lookup - m.range.start).wrapping_add(m.offset);
                        let key = (o.serial, offset);
                        let known = self.named.borrow().get(&key).cloned();
                        let named = known.unwrap_or_else(|| {
                            let n = self.look_up_object(o, offset);
                            let mut cache = self.named.borrow_mut();
                            if cache.len() >= NAMED {
                                cache.clear();
                            }
                            cache.insert(key, n.clone());
                            n
                        });
                        named.fill(&mut frame);
                    }
                    Holds::Vdso => {
                        frame.module = Some("[vdso]".into());
                        frame.mapping = Some(FrameMapping {
                            start: m.range.start,
                            limit: m.range.end,
                            offset: m.offset,
                            build_id: None,
                        });
                        match self.own_vdso {
                            _ if u.compat => {
                                frame.unknown = Some("in a 32-bit vDSO".into());
                            }
                            Some(own) => {
                                let at = lookup - m.range.start + own;
                                let src = source::Source::Process(source::Process::new(
                                    blazesym::Pid::Slf,
                                ));
                                self.look_up(&src, Input::AbsAddr(&[at]), "[vdso]")
                                    .fill(&mut frame);
                            }
                            None => frame.unknown = Some("syscost has no vDSO to read".into()),
                        }
                    }
                    Holds::Anonymous => {
                        frame.unknown = Some("in memory of no file (JIT code?)".into());
                    }
                    Holds::Unopened(why) => frame.unknown = Some(why.clone()),
                }
                frame
            })
            .collect()
    }

    /// File offset `offset` of object `o` named from its debug file where it has one
    /// that names it, else from its own copy.
    fn look_up_object(&self, o: &Object, offset: u64) -> Named {
        let (own, debug) = match o.symbols() {
            Ok(s) => s,
            Err(why) => return Named::Not(format!("cannot read {}: {why}", o.name)),
        };
        if let Some(debug) = debug
            && let Some(addr) = own.address_of(offset)
        {
            let src = source::Source::Elf(source::Elf::new(&debug.path));
            if let found @ Named::Found { .. } =
                self.look_up(&src, Input::VirtOffset(&[addr]), &o.name)
            {
                return found;
            }
        }
        let src = source::Source::Elf(source::Elf::new(&own.path));
        self.look_up(&src, Input::FileOffset(&[offset]), &o.name)
    }

    fn look_up(&self, src: &source::Source, input: Input<&[u64]>, module: &str) -> Named {
        match self.symbolizer.symbolize(src, input) {
            Ok(mut s) => match s.pop() {
                Some(Symbolized::Sym(s)) => Named::Found {
                    function: s.name.to_string(),
                    location: s.code_info.as_ref().and_then(|c| {
                        c.line
                            .map(|l| format!("{}:{l}", decode(c.file.as_encoded_bytes())))
                    }),
                },
                _ => Named::Not(format!("no symbol for it in {module}")),
            },
            Err(e) => Named::Not(format!("cannot read {module}: {e}")),
        }
    }
}

/// Names kept, at most.
const NAMED: usize = 65_536;

/// A code address's name, or why it has none.
#[derive(Clone)]
enum Named {
    Found {
        function: String,
        location: Option<String>,
    },
    Not(String),
}

impl Named {
    fn fill(self, frame: &mut Frame) {
        match self {
            Named::Found { function, location } => {
                frame.function = Some(function);
                frame.location = location;
            }
            Named::Not(why) => frame.unknown = Some(why),
        }
    }
}

fn mapping_of(p: &Process, addr: u64) -> Option<&Mapping> {
    let i = p.mappings.partition_point(|m| m.range.start <= addr);
    let m = p.mappings.get(i.checked_sub(1)?)?;
    m.range.contains(&addr).then_some(m)
}

/// The copy unwound by call frame information (frame pointers where an address has
/// none), innermost first.
fn unwind(p: &Process, cache: &mut Cache, c: &StackCopy) -> Vec<u64> {
    let mut read = |addr| c.read(addr);
    #[cfg(target_arch = "x86_64")]
    let regs = UnwindRegsX86_64::new(c.ip, c.sp, c.bp);
    // Return addresses may carry a pointer authentication code above the 48 bits of a
    // user address.
    #[cfg(target_arch = "aarch64")]
    let regs =
        UnwindRegsAarch64::new_with_ptr_auth_mask(PtrAuthMask(u64::MAX >> 16), c.lr, c.sp, c.bp);
    let mut it = p.unwinder().iter_frames(c.ip, regs, cache, &mut read);
    let mut out = Vec::new();
    while out.len() < MAX_FRAMES {
        match it.next() {
            // Below the first page: not code (the stack's end, e.g. argc at an exec's
            // entry point).
            Ok(Some(f)) if f.address() >= 0x1000 => out.push(f.address()),
            _ => break,
        }
    }
    out
}

/// Objects stay open (and their copies for the symbolizer): the soft limit on open files
/// is raised to the hard one.
fn raise_open_files_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write one rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_copy_reads_only_what_it_holds() {
        let c = StackCopy {
            ip: 0,
            sp: 0x1000,
            bp: 0,
            lr: 0,
            base: 0x1000,
            bytes: (0..16u8).collect(),
        };
        assert_eq!(
            c.read(0x1000),
            Ok(u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]))
        );
        assert_eq!(
            c.read(0x1008),
            Ok(u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]))
        );
        assert_eq!(c.read(0x1009), Err(()));
        assert_eq!(c.read(0xff8), Err(()));
        assert_eq!(c.read(u64::MAX - 3), Err(()));
    }

    #[test]
    fn an_object_is_placed_by_the_segment_that_holds_the_mapped_offset() {
        let info = UnwindInfo {
            sections: ExplicitModuleSectionInfo::default(),
            bytes: 0,
            // A PIE's text segment (the executable one): file offset 0x1040, address
            // 0x2040.
            loads: vec![(0x1040, 0x3000, 0x2040)],
        };
        // File offset 0x1000 (address 0x2000) mapped at 0x5555_5555_6000: the object's
        // address 0 is at 0x5555_5555_4000.
        assert_eq!(info.bias(0x5555_5555_6000, 0x1000), Some(0x5555_5555_4000));
        assert_eq!(info.bias(0x1000, 0x9000), None);
        // lld's layout: the text starts in the first page, after the read-only segment
        // (0..0x5e4 at 0): file offset 0x5f0 at address 0x15f0. Its mapping starts at
        // file offset 0; placed by the executable segment, not the read-only one.
        let lld = UnwindInfo {
            sections: ExplicitModuleSectionInfo::default(),
            bytes: 0,
            loads: vec![(0x5f0, 0x1000, 0x15f0)],
        };
        let start = 0x7f00_0000_1000;
        let bias = lld.bias(start, 0).unwrap();
        // The text's first byte, at file offset 0x5f0, is at start + 0x5f0.
        assert_eq!(bias + 0x15f0, start + 0x5f0);
    }
}
