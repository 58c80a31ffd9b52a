//! `--stacks`' windows: the kernel's tables swapped and drained once a window has passed.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::state::Sampler;

/// How long a `--stacks` window lasts: the kernel's tables hold what one window's calls
/// made (a second of a busy machine's processes and stacks), not the run's.
pub(super) fn stack_window() -> Duration {
    // The tests' way to make windows short: debug builds only, swapped 20 times a
    // second at the most however short they ask.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("SYSCOST_STACKS_WINDOW_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Duration::from_millis(ms).max(Duration::from_millis(50));
    }
    Duration::from_secs(1)
}

impl Sampler {
    /// `--stacks`' tables now (as read when the programs were unloaded, once they are);
    /// `None` without `--stacks`.
    pub fn stack_tables(&self) -> Result<Option<crate::by_stack::Raw>> {
        if !self.features.on.contains(&"stacks") {
            return Ok(None);
        }
        match &self.tracer {
            Some(t) => t.stack_tables().map(|raw| Some(self.drained.joined(raw))),
            None => Ok(self.final_stack_tables.clone()),
        }
    }

    /// With `--stacks`, once a window has passed: swaps the window the programs count
    /// in (see [`crate::tracer::Tracer::swap_stack_window`]). The caller waits on what is returned, with
    /// this sampler unlocked (an RCU grace period), then calls
    /// [`Sampler::drain_stack_window`]. Call it when [`Sampler::next_due`] says.
    pub fn swap_stack_window(&mut self) -> Option<std::sync::Arc<crate::tracer::GracePeriod>> {
        if !self.features.on.contains(&"stacks")
            || self.stack_window_closed.is_some()
            || self.stack_window_at.elapsed() < stack_window()
        {
            return None;
        }
        self.stack_window_at = Instant::now();
        match self.tracer.as_mut()?.swap_stack_window() {
            Ok(Some((closed, wait))) => {
                self.stack_window_closed = Some(closed);
                Some(wait)
            }
            Ok(None) => None,
            Err(e) => {
                log::warn!("{e:#}");
                None
            }
        }
    }

    /// Drains the window [`Sampler::swap_stack_window`] closed, once its wait has
    /// returned: its entries are kept here, the kernel's tables emptied of them.
    /// `waited`: whether the wait returned (without it, nothing is drained: the window's
    /// entries stay, and the next swap counts in them again).
    pub fn drain_stack_window(&mut self, waited: bool) {
        let Some(closed) = self.stack_window_closed.take() else {
            return;
        };
        let Some(tracer) = self.tracer.as_mut() else {
            return;
        };
        if !waited {
            return;
        }
        match tracer.drain_stack_window(closed) {
            Ok(raw) if !raw.calls.is_empty() || !raw.frames.is_empty() => {
                if log::log_enabled!(log::Level::Debug) {
                    let pids: std::collections::BTreeSet<u32> =
                        raw.calls.iter().map(|(k, _)| k.tgid).collect();
                    let shown: Vec<String> = pids.iter().take(32).map(u32::to_string).collect();
                    log::debug!(
                        "--stacks: window {closed} drained, {} entries and {} walks: pids {}{}",
                        raw.calls.len(),
                        raw.frames.len(),
                        shown.join(" "),
                        if pids.len() > 32 { " ..." } else { "" }
                    );
                }
                self.drained.keep(raw);
            }
            Ok(_) => log::debug!("--stacks: window {closed} drained, empty"),
            Err(e) => log::warn!("cannot drain the calls-by-stack window: {e:#}"),
        }
    }

    /// `--stacks`' tables as read when the programs were unloaded (`None` before, or
    /// without `--stacks`).
    pub fn take_stacks(&mut self) -> Option<crate::by_stack::Raw> {
        self.final_stack_tables.take()
    }
}
