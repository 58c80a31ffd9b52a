//! The traced set: processes added to and taken out of `PROCS` (and its overflow map).

use anyhow::{Context as _, Result};
use aya::maps::{Array, HashMap, MapData};
use syscost_common::{ProcSlot, abi, config::map_names, proc_value};

use super::Tracer;

impl Tracer {
    /// Starts tracing every thread of process `tgid`, those it creates later included,
    /// in the first slot.
    pub fn trace_process(&mut self, tgid: u32) -> Result<()> {
        self.trace_process_in(tgid, 0)
    }

    /// Starts tracing process `tgid` with statistics of its own in `slot`: its direct
    /// slot in PROCS when free, else the overflow map (and the direct slot is flagged).
    pub fn trace_process_in(&mut self, tgid: u32, slot: u32) -> Result<()> {
        anyhow::ensure!(
            slot < self.slots,
            "slot {slot} beyond the {} loaded",
            self.slots
        );
        let value = proc_value::new(slot, abi::UNKNOWN);
        let index = tgid & (self.sizes.proc_slots - 1);
        let mut procs = self.procs()?;
        let current = procs.get(&index, 0)?;
        if current.tgid == 0 || current.tgid == tgid {
            procs.set(
                index,
                ProcSlot {
                    tgid,
                    value: value | (current.value & ProcSlot::OVERFLOW),
                },
                0,
            )?;
            return Ok(());
        }
        let mut overflow = self.procs_overflow()?;
        overflow
            .insert(tgid, value, 0)
            .with_context(|| format!("no room to trace process {tgid}"))?;
        let mut procs = self.procs()?;
        procs.set(
            index,
            ProcSlot {
                value: current.value | ProcSlot::OVERFLOW,
                ..current
            },
            0,
        )?;
        Ok(())
    }

    fn procs(&mut self) -> Result<Array<&mut MapData, ProcSlot>> {
        Ok(Array::try_from(
            self.ebpf
                .map_mut(map_names::PROCS)
                .context("PROCS map missing")?,
        )?)
    }

    fn procs_overflow(&mut self) -> Result<HashMap<&mut MapData, u32, u32>> {
        Ok(HashMap::try_from(
            self.ebpf
                .map_mut(map_names::PROCS_OVERFLOW)
                .context("PROCS_OVERFLOW map missing")?,
        )?)
    }

    /// Takes process `tgid` out of the traced set, as the exit hook does: for a process
    /// added that turned out to have exited before it was (its exit hook ran first).
    pub fn untrace_process(&mut self, tgid: u32) -> Result<()> {
        let index = tgid & (self.sizes.proc_slots - 1);
        let mut procs = self.procs()?;
        let current = procs.get(&index, 0)?;
        if current.tgid == tgid {
            procs.set(
                index,
                ProcSlot {
                    tgid: 0,
                    value: current.value & ProcSlot::OVERFLOW,
                },
                0,
            )?;
            return Ok(());
        }
        let mut overflow = self.procs_overflow()?;
        let _ = overflow.remove(&tgid);
        Ok(())
    }
}
