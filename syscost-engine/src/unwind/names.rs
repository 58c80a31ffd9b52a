//! Frames named: the symbolizer, its cache of objects, and what a frame is named.

use super::limits::CLOSED;
use super::walk::{Captured, Holds, Object, StackCopy, mapping_of, unwind};

use super::{maps::parse_maps, objects};
use blazesym::symbolize::{Input, Symbolized, Symbolizer, source};
#[cfg(target_arch = "aarch64")]
use framehop::aarch64::CacheAarch64 as Cache;
#[cfg(target_arch = "x86_64")]
use framehop::x86_64::CacheX86_64 as Cache;
use std::{collections::HashMap, sync::atomic::Ordering};
use syscost_report::{
    profile::{Frame, FrameMapping},
    untrusted::decode,
};

/// Unwinds (framehop) and names (blazesym) captured stacks, from the objects' copies: the
/// slow part, done after.
pub struct Names {
    pub(super) symbolizer: Symbolizer,
    pub(super) cache: Cache,
    /// What each (object, file offset) was named (its function and line, or why none):
    /// slow calls come back from the same places (emptied when it reaches `NAMED`).
    pub(super) named: std::cell::RefCell<HashMap<(u64, u64), Named>>,
    /// syscost's own vDSO (the same image as every process's): where vDSO frames are
    /// named.
    pub(super) own_vdso: Option<u64>,
    /// [`CLOSED`] when the symbolizer was made: it keeps every file it read, so it is
    /// made anew once enough objects have been closed since.
    pub(super) closed_at: u64,
}

/// Objects closed after which the symbolizer is made anew (its caches hold what it read
/// of each: a copy stays in memory while the symbolizer has it).
pub(super) const RENEW_AFTER: u64 = 64;

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
pub(super) fn symbolizer() -> Symbolizer {
    Symbolizer::builder()
        .set_debug_dirs(Some::<&[&std::path::Path]>(&[]))
        .build()
}

impl Names {
    /// The symbolizer made anew: what it held of closed objects' copies is freed.
    pub(super) fn renew(&mut self) {
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

    pub(super) fn name(&self, u: &Captured, addrs: &[u64]) -> Vec<Frame> {
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
    pub(super) fn look_up_object(&self, o: &Object, offset: u64) -> Named {
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

    pub(super) fn look_up(
        &self,
        src: &source::Source,
        input: Input<&[u64]>,
        module: &str,
    ) -> Named {
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
pub(super) const NAMED: usize = 65_536;

/// A code address's name, or why it has none.
#[derive(Clone)]
pub(super) enum Named {
    Found {
        function: String,
        location: Option<String>,
    },
    Not(String),
}

impl Named {
    pub(super) fn fill(self, frame: &mut Frame) {
        match self {
            Named::Found { function, location } => {
                frame.function = Some(function);
                frame.location = location;
            }
            Named::Not(why) => frame.unknown = Some(why),
        }
    }
}
