//! The session's clock: the samples taken and published on its thread, its housekeeping
//! (own-cost windows, the per-process table, `--stacks` windows), the watched threads.

use super::sample::{Sample, ThreadInfo};
use super::state::{Shared, Watch};
use super::subscription::Want;

use crate::{locks::lock, process_table::TopStep};
use anyhow::Result;
use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

impl Shared {
    /// Publishes at a fixed rate (every `interval` from the start, one sample for
    /// intervals missed), at once when the watched process exits or an own-cost window
    /// closes, and keeps the own-cost windows and the per-process table's housekeeping
    /// going in between (a sample reads the table itself, so it is not read twice).
    pub(super) fn run_clock(&self) {
        let mut next = Instant::now() + self.interval;
        // The watch's generation, and whether a sample said its process exited.
        let mut watched = (u64::MAX, false);
        loop {
            // Cleared before the look at `stop`: a stop set after it sets it again.
            self.wake.clear();
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            let generation = self.watch_generation.load(Ordering::Acquire);
            if watched.0 != generation {
                watched = (generation, false);
            }
            // The watched process's pidfd (a copy: `watch` may replace it meanwhile),
            // while no sample has said it exited: it is readable once it has.
            let pidfd = match &*lock(&self.watch) {
                Watch::Process { pidfd, .. } if !watched.1 => pidfd.try_clone().ok(),
                _ => None,
            };
            let exiting = pidfd.as_ref().is_some_and(crate::process::has_exited);
            let now = Instant::now();
            // An own-cost window closed: its figures go out at once, not up to an
            // interval later (the endpoint serves the latest sample).
            let (window_closed, due) = {
                let mut s = lock(&self.sampler);
                let own_cost = self.own_cost.load(Ordering::Acquire);
                let before = s.own_cost().totals();
                if own_cost {
                    s.tick();
                }
                if now < next && !exiting {
                    s.top_tick();
                }
                let swapped = s.swap_stack_window();
                let changed = s.own_cost().totals() != before;
                drop(s);
                // The wait (an RCU grace period) with the sampler unlocked, the drain
                // with it locked.
                if let Some(wait) = swapped {
                    let waited = wait
                        .wait()
                        .map_err(|e| log::warn!("--stacks: cannot wait to drain a window: {e}"))
                        .is_ok();
                    lock(&self.sampler).drain_stack_window(waited);
                }
                (changed, lock(&self.sampler).next_due(own_cost))
            };
            if window_closed
                && now < next
                && !exiting
                && let Err(e) = self.publish()
            {
                log::warn!("cannot take a sample: {e:#}");
            }
            if now >= next || exiting {
                match self.publish_with(true, now >= next) {
                    Ok(_) => watched.1 |= exiting,
                    Err(e) => log::warn!("cannot take a sample: {e:#}"),
                }
                if now >= next {
                    next += self.interval;
                    if next <= now {
                        next = now + self.interval;
                    }
                }
            }
            // Asleep until the next sample or housekeeping is due, the end, a change
            // asked, or the watched process's exit (it is sampled at once).
            let mut until = due.map_or(next, |d| d.min(next));
            let mut fds = vec![self.wake.fd()];
            if !exiting {
                fds.extend(pidfd.as_ref().map(std::os::fd::AsRawFd::as_raw_fd));
            }
            // An exit whose sample failed is sampled again 50 ms later, not sooner
            // (housekeeping waits meanwhile).
            if exiting {
                until = Instant::now() + Duration::from_millis(50);
            }
            crate::wake::wait(&fds, Some(until));
        }
    }

    /// Takes a sample, keeps it as the latest and sends it to every subscriber.
    pub(super) fn publish(&self) -> Result<Arc<Sample>> {
        self.publish_with(true, false)
    }

    /// [`Shared::publish`]; `step`: take the per-process step into it; `due`: an
    /// interval ended ([`Sample::due`]).
    pub(super) fn publish_with(&self, step: bool, due: bool) -> Result<Arc<Sample>> {
        let mut seq = lock(&self.publishing);
        let wants = self.wants.load(Ordering::Acquire);
        let (tids, exited) = match &*lock(&self.watch) {
            Watch::Nothing => (Vec::new(), false),
            Watch::Process { pid, pidfd } => (task_ids(*pid), crate::process::has_exited(pidfd)),
            Watch::Cgroup(dir) => (cgroup_threads(dir), false),
        };
        let (
            snapshots,
            states,
            own_cost,
            own_cost_totals,
            top,
            raw_stacks,
            top_reclaimed,
            top_pairs,
            unloaded,
        ) = {
            let mut s = lock(&self.sampler);
            let snapshots = s.snapshots()?;
            let raw_stacks = if wants & (Want::STACKS.0 | Want::STACK_TABLES.0) != 0 {
                s.stack_tables()?
            } else {
                None
            };
            let top = if step && s.loaded() && !self.drilled.load(Ordering::Acquire) {
                s.top_step()?
            } else {
                TopStep::default()
            };
            (
                snapshots,
                s.threads(&tids),
                s.own_cost().reading(),
                s.own_cost().totals(),
                top,
                raw_stacks,
                s.top_reclaimed(),
                s.top_pairs(),
                !s.loaded(),
            )
        };
        let names = wants & Want::THREAD_NAMES.0 != 0;
        let threads = states
            .into_iter()
            .map(|state| ThreadInfo {
                comm: if names {
                    crate::process::comm_of(state.tid).unwrap_or_default()
                } else {
                    String::new()
                },
                state,
            })
            .collect();
        let slow_wanted = wants & Want::SLOW_CALLS.0 != 0;
        let slow = self.slow_log.as_ref().filter(|_| slow_wanted).map(|log| {
            let log = lock(log);
            (
                log.calls.iter().rev().take(200).cloned().collect(),
                log.calls.len() as u64 + log.evicted,
            )
        });
        let stacks = raw_stacks
            .as_ref()
            .filter(|_| wants & Want::STACKS.0 != 0)
            .map(|raw| {
                let none = crate::by_stack::Samples::default();
                let samples = self.stack_samples.as_ref().map(|s| lock(s));
                // The live view's pane names no cgroup: no /proc read per sample for it.
                Arc::new(crate::by_stack::assemble(
                    raw,
                    samples.as_deref().unwrap_or(&none),
                    crate::process::comm_of,
                    |_| None,
                ))
            });
        let stack_tables = raw_stacks
            .filter(|_| wants & Want::STACK_TABLES.0 != 0)
            .map(Arc::new);
        *seq += 1;
        let since = lock(&self.latest).taken;
        let sample = Arc::new(Sample {
            seq: *seq,
            taken: Instant::now(),
            since,
            snapshots,
            threads,
            thread_count: tids.len(),
            exited,
            due,
            own_cost,
            own_cost_totals,
            top_reclaimed,
            top_pairs,
            top,
            slow,
            stacks,
            stack_tables,
            unloaded,
        });
        // The handlers first: a view that reads the latest sample (the metrics endpoint)
        // then finds what they keep fed with it at least.
        lock(&self.handlers).retain(|h| h(&sample));
        *lock(&self.latest) = sample.clone();
        lock(&self.subscribers).retain(|(tx, wake)| {
            let sent = tx.send(sample.clone()).is_ok();
            if sent {
                wake.set();
            }
            sent
        });
        Ok(sample)
    }
}

/// The threads of process `pid` now.
pub(super) fn task_ids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The threads of a cgroup and its descendants.
pub(super) fn cgroup_threads(dir: &std::path::Path) -> Vec<u32> {
    let mut tids: Vec<u32> = std::fs::read_to_string(dir.join("cgroup.threads"))
        .map(|s| s.lines().filter_map(|l| l.parse().ok()).collect())
        .unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                tids.extend(cgroup_threads(&e.path()));
            }
        }
    }
    tids
}
