//! [`SessionHandle`]: what the views and the commands ask of a running session.

use super::sample::Sample;
use super::state::{SessionHandle, Watch};
use super::subscription::{Subscription, Want};

use crate::{locks::lock, wake::Wake};
use anyhow::Result;
use std::{
    sync::{Arc, atomic::Ordering, mpsc},
    time::Duration,
};
use syscost_report::profile::{CallStacks, Features};

impl SessionHandle {
    /// The pod and container the cgroup at `path` is (its Kubernetes labels, where it is
    /// a container's; see [`crate::kube::Directory::labels`]), resolved and remembered by
    /// the engine for every view of the session.
    pub fn pod_labels(&self, path: &str) -> Vec<(&'static str, String)> {
        self.shared.pods.labels(path)
    }

    /// The cgroup v2 path of process `pid` now (`None` when it is gone or has none).
    pub fn cgroup_of(&self, pid: u32) -> Option<String> {
        crate::cgroup::of_process(pid)
    }

    /// Every sample published from now on, in order.
    pub fn subscribe(&self) -> Subscription {
        let (tx, rx) = mpsc::channel();
        let wake = Arc::new(Wake::new());
        lock(&self.shared.subscribers).push((tx, wake.clone()));
        Subscription { rx, wake }
    }

    /// Hands every sample published from now on to `handler`, on the thread that
    /// publishes it (the session's clock, or a caller of [`SessionHandle::sample_now`]),
    /// until it returns false. For a view that keeps a state of its own fed by the
    /// samples: it is fed as time passes, without a clock of its own. `handler` must
    /// not take a sample itself.
    pub fn on_sample(&self, handler: impl Fn(&Arc<Sample>) -> bool + Send + 'static) {
        lock(&self.shared.handlers).push(Box::new(handler));
    }

    /// The latest sample published: every interval, at once when the watched process
    /// exits or an own-cost window closes, and by [`SessionHandle::sample_now`] and
    /// [`SessionHandle::unload`] (after which the final figures stay). The handlers of
    /// [`SessionHandle::on_sample`] have had it by then.
    pub fn latest(&self) -> Arc<Sample> {
        lock(&self.shared.latest).clone()
    }

    /// A sample taken now, published to every subscriber like the clock's (a text
    /// table at its own interval, the end of a view, an exit a view must show at once).
    /// Each reads every map and takes a per-process step: a view that answers clients
    /// (the metrics endpoint) serves [`SessionHandle::latest`] instead.
    pub fn sample_now(&self) -> Result<Arc<Sample>> {
        self.shared.publish()
    }

    pub fn offcpu_tracked(&self) -> bool {
        self.shared.offcpu
    }

    pub fn features(&self) -> &Features {
        &self.shared.features
    }

    /// A view shows syscost's own cost: the session opens the own-cost windows from
    /// now on (BPF run-time statistics for 1 s in every 10; see `sampler::OwnCost`).
    pub fn measure_own_cost(&self) {
        self.shared.own_cost.store(true, Ordering::Release);
        self.shared.wake.set();
    }

    /// Adds `want` to what the samples carry from now on.
    pub fn want(&self, want: Want) {
        self.set_want(want, true);
    }

    /// Whether the samples carry the watched threads' names (the live view's thread
    /// list is shown).
    pub fn want_thread_names(&self, on: bool) {
        self.set_want(Want::THREAD_NAMES, on);
    }

    /// Adds `want` to what the samples carry from now on, or takes it away.
    pub(super) fn set_want(&self, want: Want, on: bool) {
        if on {
            self.shared.wants.fetch_or(want.0, Ordering::AcqRel);
        } else {
            self.shared.wants.fetch_and(!want.0, Ordering::AcqRel);
        }
    }

    /// Whether the samples carry the calls by stack (the live view's callers pane is
    /// shown): each costs a read of the kernel's tables.
    pub fn want_stacks(&self, on: bool) {
        self.set_want(Want::STACKS, on);
    }

    /// Whether the samples carry the kernel's stack tables ([`Want::STACK_TABLES`]): a
    /// window of the metrics endpoint's stacks is open.
    pub fn want_stack_tables(&self, on: bool) {
        self.set_want(Want::STACK_TABLES, on);
    }

    /// The calls by stack of `raw` (a sample's tables, or the difference of two), named
    /// with the samples received so far.
    pub fn assemble_stacks(&self, raw: &crate::by_stack::Raw) -> CallStacks {
        // The processes' cgroups read first: the samples' lock is not held over /proc.
        let cgroups: std::collections::HashMap<u32, Option<String>> = raw
            .calls
            .iter()
            .map(|(k, _)| k.tgid)
            .filter(|&tgid| tgid != 0)
            .collect::<std::collections::HashSet<u32>>()
            .into_iter()
            .map(|tgid| (tgid, crate::cgroup::of_process(tgid)))
            .collect();
        let none = crate::by_stack::Samples::default();
        let samples = self.shared.stack_samples.as_ref().map(|s| lock(s));
        crate::by_stack::assemble(
            raw,
            samples.as_deref().unwrap_or(&none),
            crate::process::comm_of,
            |tgid| cgroups.get(&tgid).cloned().flatten(),
        )
    }

    /// The interval between the clock's samples.
    pub fn interval(&self) -> Duration {
        self.shared.interval
    }

    /// Why there is no own-cost figure and will be none, if so.
    pub fn own_cost_unavailable(&self) -> Option<String> {
        lock(&self.shared.sampler)
            .own_cost()
            .unavailable()
            .map(str::to_string)
    }

    /// Samples describe these threads from now on.
    pub fn watch(&self, watch: Watch) {
        *lock(&self.shared.watch) = watch;
        self.shared.watch_generation.fetch_add(1, Ordering::AcqRel);
        self.shared.wake.set();
    }

    /// `top`'s drill-down: process `tgid`'s calls also get full statistics (in the
    /// drill-down slot) from now on; 0 stops, and the per-process steps start again
    /// from that moment.
    pub fn drill(&self, tgid: u32) -> Result<()> {
        let mut s = lock(&self.shared.sampler);
        s.drill(tgid)?;
        self.shared.drilled.store(tgid != 0, Ordering::Release);
        if tgid == 0 {
            // What happened while drilled is in the totals; the steps start from now.
            s.top_step()?;
        }
        Ok(())
    }

    /// Unloads the programs now (nothing is left to trace), keeping the final figures
    /// for the samples that follow; whether they were still loaded.
    pub fn unload(&self) -> Result<bool> {
        let loaded = {
            let mut s = lock(&self.shared.sampler);
            let loaded = s.loaded();
            s.unload()?;
            loaded
        };
        self.shared.publish()?;
        Ok(loaded)
    }
}
