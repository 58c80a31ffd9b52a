//! The per-process table (`top`, `export --top`, `--per-process`): its pairs read,
//! reclaimed, deleted and forgotten, and the names the kernel side keeps for processes.

use anyhow::{Context as _, Result};
use aya::maps::{Array, HashMap, MapData, PerCpuArray, PerCpuHashMap};
use syscost_common::{
    ExitRecord, ProcRecord, TopKey, TopValue, config::map_names, counter, counter_index,
};

use super::{
    Tracer,
    maps::{self, map_fd, sum_cpus},
};

impl Tracer {
    /// The exit records' ring buffer, to be read by one consumer (with `top` only).
    pub fn take_exit_ring(&mut self) -> Result<aya::maps::RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(map_names::EXITS)
            .context("EXITS map missing")?;
        Ok(aya::maps::RingBuf::try_from(map)?)
    }

    /// Deletes `keys` from the per-process table: one syscall for all of them
    /// (BPF_MAP_DELETE_BATCH, Linux 5.6), one each if the kernel refuses it. Keys already
    /// gone are no error.
    pub fn delete_top(&mut self, keys: &[TopKey]) -> Result<()> {
        maps::delete_all(map_fd(self.map(map_names::TOP)?)?, keys);
        Ok(())
    }

    /// The pairs the kernel side has made in the per-process table so far (one
    /// lookup: `counter::TOP_MADE`, summed over CPUs).
    pub fn top_made(&self) -> Result<u64> {
        let counters: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(self.map(map_names::COUNTERS)?)?;
        Ok(counters
            .get(&counter_index(0, counter::TOP_MADE), 0)?
            .iter()
            .sum())
    }

    /// How many (process, syscall) pairs the per-process table holds at most.
    pub fn top_capacity(&self) -> usize {
        self.sizes.top_entries as usize
    }

    /// Hands `keys` of the per-process table (keys of live processes that have been
    /// idle) to userspace: each read and deleted in one operation where the kernel can
    /// (Linux 5.14 on), read then deleted elsewhere; their figures at that moment. The
    /// kernel side makes a key anew at its process's next call of that syscall.
    pub fn reclaim_top(&mut self, keys: &[TopKey]) -> Result<Vec<(TopKey, TopValue)>> {
        let fd = map_fd(self.map(map_names::TOP)?)?;
        let cpus = self.cpus as usize;
        let mut out = Vec::with_capacity(keys.len());
        let mut rest = Vec::new();
        for k in keys {
            match maps::lookup_and_delete_per_cpu::<TopKey, TopValue>(fd, k, cpus) {
                Ok(Some(per_cpu)) => out.push((*k, sum_cpus(per_cpu.iter()))),
                Ok(None) => {}
                Err(_) => rest.push(*k),
            }
        }
        if !rest.is_empty() {
            let mut top: PerCpuHashMap<&mut MapData, TopKey, TopValue> = PerCpuHashMap::try_from(
                self.ebpf
                    .map_mut(map_names::TOP)
                    .context("TOP map missing")?,
            )?;
            for k in rest {
                let Ok(per_cpu) = top.get(&k, 0) else {
                    continue;
                };
                let v = sum_cpus(per_cpu.iter());
                if top.remove(&k).is_ok() {
                    out.push((k, v));
                }
            }
        }
        Ok(out)
    }

    /// The per-process table, summed over CPUs (empty unless loaded with `top`). An
    /// entry being updated while it is copied may trail by one call.
    pub fn top_table(&self) -> Result<Vec<(TopKey, TopValue)>> {
        let mut out = Vec::new();
        // A few syscalls for the whole table where the kernel reads it in batches (5.6 on
        // for hash maps: every kernel syscost supports), two per key otherwise.
        let fd = map_fd(self.map(map_names::TOP)?)?;
        let batch = maps::lookup_batch::<TopKey, TopValue>(fd, self.cpus as usize, |k, v| {
            out.push((*k, sum_cpus(v.iter())))
        });
        if batch.is_ok() {
            return Ok(out);
        }
        out.clear();
        let top: PerCpuHashMap<&MapData, TopKey, TopValue> =
            PerCpuHashMap::try_from(self.map(map_names::TOP)?)?;
        for item in top.iter() {
            let (k, per_cpu) = item.context("cannot read the per-process table")?;
            out.push((k, sum_cpus(per_cpu.iter())));
        }
        Ok(out)
    }

    /// Forgets processes of the per-process table (they have exited and were read).
    pub fn forget_top(&mut self, keys: &[TopKey]) -> Result<()> {
        self.delete_top(keys)?;
        let mut tgids: Vec<u32> = keys.iter().map(|k| k.tgid).collect();
        tgids.sort_unstable();
        tgids.dedup();
        maps::delete_all(map_fd(self.map(map_names::PROC_INFO)?)?, &tgids);
        // A name left in its slot (no room in the exit ring nor in PROC_INFO at its exit):
        // freed, unless the slot is another's by now.
        let mut slots: Array<&mut MapData, ExitRecord> = Array::try_from(
            self.ebpf
                .map_mut(map_names::PROC_NAMES)
                .context("PROC_NAMES map missing")?,
        )?;
        for tgid in tgids {
            let i = syscost_common::name_slot(tgid);
            if slots.get(&i, 0).is_ok_and(|s| s.tgid == tgid) {
                let _ = slots.set(i, ExitRecord::FREE, 0);
            }
        }
        Ok(())
    }

    /// Whether the per-process table is kept.
    pub fn per_process_loaded(&self) -> bool {
        self.per_process
    }

    /// Deletes the kept names of the processes `gone` says are gone.
    pub fn forget_names(&mut self, gone: impl Fn(u32) -> bool) -> Result<()> {
        let map = self.map(map_names::PROC_INFO)?;
        let names: HashMap<&MapData, u32, ProcRecord> = HashMap::try_from(map)?;
        let dead: Vec<u32> = names
            .keys()
            .filter_map(Result::ok)
            .filter(|&p| gone(p))
            .collect();
        maps::delete_all(map_fd(map)?, &dead);
        Ok(())
    }

    /// The name and cgroup id the kernel side kept for a process it traced by itself.
    /// Its `PROC_NAMES` slot when it holds it, else its `PROC_INFO` entry.
    pub fn process_name(&self, tgid: u32) -> Option<(String, u64)> {
        let slots: Array<&MapData, ExitRecord> =
            Array::try_from(self.map(map_names::PROC_NAMES).ok()?).ok()?;
        let n = match slots.get(&syscost_common::name_slot(tgid), 0) {
            Ok(slot) if slot.tgid == tgid && tgid != 0 => slot.info,
            _ => {
                let names: HashMap<&MapData, u32, ProcRecord> =
                    HashMap::try_from(self.map(map_names::PROC_INFO).ok()?).ok()?;
                names.get(&tgid, 0).ok()?
            }
        };
        let end = n.comm.iter().position(|&b| b == 0).unwrap_or(n.comm.len());
        Some((
            syscost_report::untrusted::decode(&n.comm[..end]),
            n.cgroup_id,
        ))
    }
}
