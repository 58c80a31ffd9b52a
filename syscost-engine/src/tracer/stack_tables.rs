//! Calls by stack (`--stacks`): the tables read at the end, and the windows swapped and
//! drained while the programs run.

use anyhow::{Context as _, Result};
use aya::maps::{Array, HashMap, MapData, PerCpuArray, PerCpuHashMap};
use syscost_common::{
    STACK_SIDE_BIT, StackKey, StackValue, UserStack, config::map_names, stack_identity,
};

use super::{
    GracePeriod, Tracer,
    maps::{self, delete_batch, map_fd},
};

impl Tracer {
    /// `--stacks`' tables as the kernel left them (empty unless loaded with `stacks`):
    /// the calls of each (process, stack, syscall) summed over CPUs, each stack's
    /// frame-pointer walk, and what could not be kept. An entry being updated while it
    /// is copied may trail by one call.
    pub fn stack_tables(&self) -> Result<crate::by_stack::Raw> {
        let mut raw = crate::by_stack::Raw::default();
        if self.stack_sample_every.is_none() {
            return Ok(raw);
        }
        // Both windows: an entry in each is one (process, stack, syscall), summed.
        let calls: PerCpuHashMap<&MapData, StackKey, StackValue> =
            PerCpuHashMap::try_from(self.map(map_names::STACK_CALLS)?)?;
        let mut at: std::collections::HashMap<StackKey, usize> = Default::default();
        for item in calls.iter() {
            let (k, per_cpu) = item.context("cannot read the calls by stack")?;
            let (k, v) = (known_stack(k), sum_stack_cpus(per_cpu.iter()));
            match at.get(&k) {
                Some(&i) => {
                    raw.calls[i].1.calls += v.calls;
                    raw.calls[i].1.total_ns += v.total_ns;
                }
                None => {
                    at.insert(k, raw.calls.len());
                    raw.calls.push((k, v));
                }
            }
        }
        let frames: HashMap<&MapData, u64, UserStack> =
            HashMap::try_from(self.map(map_names::STACK_FRAMES)?)?;
        for item in frames.iter() {
            let (hash, stack) = item.context("cannot read the stacks' frames")?;
            let n = (stack.bytes as usize / 8).min(stack.frames.len());
            raw.frames
                .entry(stack_identity(hash))
                .or_insert_with(|| stack.frames[..n].to_vec());
        }
        let counts: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(self.map(map_names::STACK_COUNTS)?)?;
        for (i, c) in raw.counts.iter_mut().enumerate() {
            *c = counts.get(&(i as u32), 0)?.iter().sum();
        }
        raw.sample_every = self.stack_sample_every.unwrap_or(1);
        Ok(raw)
    }

    /// Swaps `--stacks`' window: from now on the programs count in the other one. The
    /// window closed is drained by [`Tracer::drain_stack_window`] once the returned
    /// wait has returned (no program still counts in it then); the wait takes an RCU
    /// grace period, milliseconds, and needs no lock of the caller's. `None`: no
    /// windows (without `--stacks`, or where the kernel made no wait).
    pub fn swap_stack_window(&mut self) -> Result<Option<(u32, std::sync::Arc<GracePeriod>)>> {
        let Some((open, wait)) = self.stack_window.clone() else {
            return Ok(None);
        };
        let mut side: Array<&mut MapData, u32> = Array::try_from(
            self.ebpf
                .map_mut(map_names::STACK_SIDE)
                .context("STACK_SIDE map missing")?,
        )?;
        side.set(0, 1 - open, 0)
            .context("cannot swap the calls-by-stack window")?;
        self.stack_window = Some((1 - open, wait.clone()));
        Ok(Some((open, wait)))
    }

    /// Reads and deletes the entries and walks of window `closed`, which no program
    /// counts in any more (its wait has returned), and hands back the tables' room. An
    /// entry is handed over only once it is deleted: one that could not be read or
    /// deleted stays, whole, for the next drain of its window. A walk's copy is handed
    /// over whether or not its delete succeeded (a walk is the same wherever it is
    /// kept). What is drained is the caller's to keep ([`crate::by_stack::Drained`]).
    pub fn drain_stack_window(&mut self, closed: u32) -> Result<crate::by_stack::Raw> {
        let mut out = crate::by_stack::Raw::default();
        if self.stack_sample_every.is_none() {
            return Ok(out);
        }
        out.sample_every = self.stack_sample_every.unwrap_or(1);
        let bit = if closed != 0 { STACK_SIDE_BIT } else { 0 };
        let in_closed = |stack: u64| stack & STACK_SIDE_BIT == bit;
        let calls_fd = map_fd(self.map(map_names::STACK_CALLS)?)?;
        let frames_fd = map_fd(self.map(map_names::STACK_FRAMES)?)?;
        let frames: HashMap<&MapData, u64, UserStack> =
            HashMap::try_from(self.map(map_names::STACK_FRAMES)?)?;
        let calls: PerCpuHashMap<&MapData, StackKey, StackValue> =
            PerCpuHashMap::try_from(self.map(map_names::STACK_CALLS)?)?;
        // Nothing below returns early: once an entry is deleted, it is handed over.
        let mut walks = Vec::new();
        for h in frames.keys() {
            match h {
                Ok(h) if in_closed(h) => walks.push(h),
                Ok(_) => {}
                Err(e) => {
                    log::warn!("--stacks: a walk of the closed window was not listed: {e}");
                    break;
                }
            }
        }
        // Only the walks read are deleted: one that could not be read stays.
        walks.retain(|h| match frames.get(h, 0) {
            Ok(stack) => {
                let n = (stack.bytes as usize / 8).min(stack.frames.len());
                out.frames
                    .insert(stack_identity(*h), stack.frames[..n].to_vec());
                true
            }
            Err(_) => false,
        });
        maps::delete_all(frames_fd, &walks);
        let mut keys = Vec::new();
        for k in calls.keys() {
            match k {
                Ok(k) if in_closed(k.stack) => keys.push(k),
                Ok(_) => {}
                Err(e) => {
                    log::warn!("--stacks: an entry of the closed window was not listed: {e}");
                    break;
                }
            }
        }
        let read: Vec<(StackKey, StackValue)> = keys
            .iter()
            .filter_map(|k| Some((*k, sum_stack_cpus(calls.get(k, 0).ok()?.iter()))))
            .collect();
        let keys: Vec<StackKey> = read.iter().map(|(k, _)| *k).collect();
        if delete_batch(calls_fd, &keys).is_ok() {
            out.calls = read.into_iter().map(|(k, v)| (known_stack(k), v)).collect();
        } else {
            // One by one. A key the batch deleted before it stopped is gone (nothing
            // else deletes this window's keys): handed over too.
            for (k, v) in read {
                match maps::delete_elem(calls_fd, &k) {
                    Ok(()) => out.calls.push((known_stack(k), v)),
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                        out.calls.push((known_stack(k), v))
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(out)
    }
}

/// A calls-by-stack key as userspace knows it: its stack without the window's bit.
fn known_stack(k: StackKey) -> StackKey {
    StackKey {
        stack: stack_identity(k.stack),
        ..k
    }
}

/// A calls-by-stack value summed over CPUs.
fn sum_stack_cpus<'a>(per_cpu: impl Iterator<Item = &'a StackValue>) -> StackValue {
    per_cpu.fold(StackValue::default(), |v, c| StackValue {
        calls: v.calls + c.calls,
        total_ns: v.total_ns + c.total_ns,
    })
}
