//! How the programs are set up at load time ([`TracerOptions`], [`Auto`]), and which
//! programs are attached for them, in order.

/// How the programs are set up at load time.
#[derive(Clone, Debug, Default)]
pub struct TracerOptions {
    /// Also trace child processes forked by traced processes (threads are always traced).
    pub follow_forks: bool,
    /// Split each syscall's time into on-CPU and switched-out, with a program on
    /// sched_switch (which runs on every context switch of the machine).
    pub offcpu: bool,
    /// Processes whose statistics are kept apart (slots; 0 counts as 1). Each costs
    /// pool entries, per CPU; the programs and the other tables are shared.
    pub slots: u32,
    /// Processes the programs add by themselves, beyond those given to
    /// [`super::Tracer::trace_process_in`]: none, every process, or a cgroup's (all in slot 0).
    pub auto: Auto,
    /// Keep per-process figures of every traced process (the `TOP` table).
    pub per_process: bool,
    /// Slots below this keep no histograms, only `TOP` figures (`syscost top`: slot 0
    /// is every process not drilled into).
    pub pool_from_slot: u32,
    /// Send calls at least this slow through the `CALL_RING` ring buffer (`--slow`).
    pub slow: Option<crate::slow::spec::SlowThresholds>,
    /// With `slow`: take the kernel stack at each blocking switch inside a call.
    pub kernel_stacks: bool,
    /// With `slow` or `stacks`: pages of user stack each slow call and each stack
    /// sample carries (for unwinding).
    pub stack_pages: u32,
    /// Count every call by its user stack (`--stacks`), a power of two N: 1 in N of each
    /// stack's calls per CPU (and the first) carries its stack for unwinding.
    pub stack_sample_every: Option<u32>,
}

/// What the programs trace by themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Auto {
    #[default]
    Off,
    /// Every process of the machine but syscost.
    All,
    /// Every process of a cgroup v2 and its descendants, those that move in included.
    Cgroup { id: u64, level: u32 },
}

/// The programs syscost attaches, each with its tracepoint, in attach order: the
/// bookkeeping hooks first, so no thread is created or exits unseen once syscalls count.
pub(super) fn programs(offcpu: bool, auto: Auto) -> Vec<(&'static str, &'static str)> {
    let mut p = vec![
        ("syscost_exit", "sched_process_exit"),
        ("syscost_fork", "sched_process_fork"),
        ("syscost_exec", "sched_process_exec"),
    ];
    if matches!(auto, Auto::Cgroup { .. }) {
        p.push(("syscost_cgroup_move", "cgroup_attach_task"));
    }
    if offcpu {
        p.push(("syscost_sched_switch", "sched_switch"));
    }
    p.extend([
        ("syscost_sys_exit", "sys_exit"),
        ("syscost_sys_enter", "sys_enter"),
    ]);
    p
}
