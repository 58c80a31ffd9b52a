//! A tracing command's arguments resolved once into a [`Plan`]: which programs the kernel
//! side loads and what they trace (`--slow` merged in), how the session runs (its
//! interval, syscost's own cost, what becomes of slow calls), where the metrics endpoint
//! listens. Every default and bound of these is written once: the interval and the
//! shortest one in the engine's session, the rest below.
//!
//! `run`, `attach`, `export` and `top` go through the same steps, in this order: check
//! (their outputs writable, the plan built, the endpoint bound), load ([`Plan::load`]),
//! trace (the tracer told its process, tree or cgroup), session ([`Plan::start`]),
//! views (the live view, the text tables, the endpoint), wait (until the command, the
//! target or `-d` ends, or a signal: `syscost_engine::signals::Stop`, the one way
//! syscost is told to stop), finish (`Session::finish`: the last figures, the programs
//! unloaded) and render (the table, the JSON).

use std::time::Duration;

use anyhow::Result;
use syscost_engine::{
    session::{INTERVAL, Session, SessionOptions, Watch},
    tracer::{Auto, Tracer, TracerOptions},
    {call_ring::reader::SlowLog, slow::spec::SlowSpec},
};
use syscost_views::metrics::server::{Bound, MAX_CONNECTIONS, MetricsServer};

use crate::cli::{
    AttachArgs, ExportArgs, RunArgs, SlowArgs, StacksArgs, TopArgs, TracingArgs, WebArgs, seconds,
};

/// Pages of user stack a slow call or a stack sample carries unless `--stack-size` says
/// otherwise (16K).
const STACK_PAGES: u32 = 4;

/// The statistics slot of the process `top` drills into (slot 0 holds the machine's
/// per-process figures).
pub const DRILL_SLOT: u32 = 1;

/// What one tracing command does, resolved from its arguments.
pub struct Plan {
    /// The programs' options, `--slow` and `--kernel-stacks` included.
    pub programs: TracerOptions,
    /// `--slow` as given, for the profile's slow calls.
    pub slow: Option<SlowSpec>,
    /// `--stacks`: where the calls by stack go, and how they are written.
    pub stacks_out: Option<StacksOut>,
    pub session: SessionPlan,
    /// The metrics endpoint's socket, bound before anything is loaded (a port taken or a
    /// web configuration that does not read is said before any wait).
    pub listener: Option<Bound>,
}

/// `--stacks FILE`: the file, its format, and what a folded line's value counts.
#[derive(Clone, Debug)]
pub struct StacksOut {
    pub path: std::path::PathBuf,
    pub format: syscost_report::report::call_stacks::Format,
    pub weight: syscost_report::report::call_stacks::Weight,
}

/// How the session runs.
#[derive(Clone, Copy, Debug)]
pub struct SessionPlan {
    /// Between samples (`-i`; [`INTERVAL`] unless told).
    pub interval: Duration,
    /// Measure syscost's own cost (not `--no-run-stats`).
    pub run_stats: bool,
    /// Print each slow call on stderr as it comes (no live view owns the terminal).
    pub echo_slow: bool,
    /// Slow calls kept for the end (0 for a service that only prints them).
    pub keep_slow: usize,
    /// Keep per-process totals since the start (not a service that serves steps).
    pub top_totals: bool,
    /// Name each per-process row's Kubernetes pod and container (`export --top`'s
    /// series carry them).
    pub name_pods: bool,
}

/// The programs each shape of command loads, written once (`doctor` loads the same);
/// [`Plan::new`] adds what the arguments turn off or on.
pub mod programs {
    use super::*;

    /// One process, as `attach -p` traces it (its children too with `-f`).
    pub fn process() -> TracerOptions {
        TracerOptions {
            slots: 1,
            ..Default::default()
        }
    }

    /// One process and its children, as `run` traces its command.
    pub fn command() -> TracerOptions {
        TracerOptions {
            follow_forks: true,
            ..process()
        }
    }

    /// `top`: every process (or a cgroup's) with per-process figures, the full
    /// statistics only for the process drilled into.
    pub fn machine(auto: Auto) -> TracerOptions {
        TracerOptions {
            slots: DRILL_SLOT + 1,
            auto,
            per_process: true,
            pool_from_slot: DRILL_SLOT,
            ..Default::default()
        }
    }
}

/// The argument groups a tracing command's plan is made of, declared once in `cli` and
/// flattened into each command: what it leaves out, `--slow`, `--stacks FILE`, the
/// metrics endpoint and its protection, the own cost, `-i`. A command without a group
/// (`top` has no `--slow`) leaves it at its default.
pub struct Groups<'a> {
    pub tracing: &'a TracingArgs,
    pub slow: &'a SlowArgs,
    pub calls_by_stack: &'a StacksArgs,
    /// Where the metrics endpoint listens (`--metrics-addr`).
    pub listen: Option<std::net::SocketAddr>,
    pub web: &'a WebArgs,
    /// Whether syscost measures its own cost (the kernel's BPF run-time statistics, in
    /// windows): `--no-run-stats` says no; `export`, a service, says yes only with
    /// `--run-stats`.
    pub own_cost: bool,
    /// `-i`, when given.
    pub interval: Option<Duration>,
}

static NO_TRACING: std::sync::LazyLock<TracingArgs> =
    std::sync::LazyLock::new(TracingArgs::default);
static NO_SLOW: std::sync::LazyLock<SlowArgs> = std::sync::LazyLock::new(SlowArgs::default);
static NO_STACKS: std::sync::LazyLock<StacksArgs> = std::sync::LazyLock::new(StacksArgs::default);
static NO_WEB: std::sync::LazyLock<WebArgs> = std::sync::LazyLock::new(WebArgs::default);

impl Groups<'static> {
    /// Every group at its default (everything traced, no slow calls or stacks, no
    /// endpoint, the own cost measured) but the interval: the demo's.
    pub fn defaults(interval: Option<Duration>) -> Self {
        Groups {
            tracing: &NO_TRACING,
            slow: &NO_SLOW,
            calls_by_stack: &NO_STACKS,
            listen: None,
            web: &NO_WEB,
            own_cost: true,
            interval,
        }
    }
}

impl RunArgs {
    pub fn groups(&self) -> Groups<'_> {
        Groups {
            tracing: &self.tracing,
            slow: &self.slow_calls,
            calls_by_stack: &self.calls_by_stack,
            listen: self.metrics_addr,
            web: &self.web,
            own_cost: !self.own_cost.no_run_stats,
            interval: None,
        }
    }
}

impl AttachArgs {
    pub fn groups(&self) -> Groups<'_> {
        Groups {
            tracing: &self.tracing,
            slow: &self.slow_calls,
            calls_by_stack: &self.calls_by_stack,
            listen: self.metrics_addr,
            web: &self.web,
            own_cost: !self.own_cost.no_run_stats,
            // strace's -C: the live text, a table each second unless -i says otherwise.
            interval: seconds(self.timing.interval).or(self.live_text.then_some(INTERVAL)),
        }
    }
}

impl ExportArgs {
    pub fn groups(&self) -> Groups<'_> {
        Groups {
            tracing: &self.tracing,
            slow: &self.slow_calls,
            calls_by_stack: &self.calls_by_stack,
            listen: Some(self.metrics_addr),
            web: &self.web,
            own_cost: self.run_stats,
            interval: seconds(self.timing.interval),
        }
    }
}

impl TopArgs {
    pub fn groups(&self) -> Groups<'_> {
        Groups {
            tracing: &self.tracing,
            slow: &NO_SLOW,
            calls_by_stack: &NO_STACKS,
            listen: None,
            web: &NO_WEB,
            own_cost: !self.own_cost.no_run_stats,
            interval: seconds(self.timing.interval),
        }
    }
}

impl Plan {
    /// The plan of `programs` with a command's argument groups: a sample every `-i` (or
    /// [`INTERVAL`]), its own cost measured as asked, slow calls printed and kept,
    /// per-process totals kept.
    pub fn new(programs: TracerOptions, args: Groups) -> Result<Self> {
        let Groups {
            tracing,
            slow,
            calls_by_stack: stacks,
            listen,
            web,
            own_cost,
            interval,
        } = args;
        if web.web_config.is_some() && listen.is_none() {
            anyhow::bail!(
                "--web.config.file protects the metrics endpoint: give --metrics-addr too"
            );
        }
        if web.metrics_max_connections.is_some() && listen.is_none() {
            anyhow::bail!(
                "--metrics-max-connections bounds the metrics endpoint: give --metrics-addr too"
            );
        }
        if let Some(path) = &stacks.stacks
            && stacks.stacks_value.is_some()
            && stacks
                .stacks_format
                .unwrap_or_else(|| syscost_report::report::call_stacks::Format::of(path))
                == syscost_report::report::call_stacks::Format::Pprof
        {
            anyhow::bail!(
                "--stacks-value chooses what a folded stacks file counts: a pprof profile ({}) holds both the calls and the time",
                path.display()
            );
        }
        if slow.stack_size.is_some() && slow.slow.is_none() && stacks.stacks.is_none() {
            anyhow::bail!("--stack-size goes with --slow or --stacks: the stacks it is for");
        }
        Ok(Self {
            programs: TracerOptions {
                offcpu: !tracing.no_offcpu,
                slow: slow.slow.as_ref().map(SlowSpec::thresholds).transpose()?,
                kernel_stacks: slow.kernel_stacks,
                stack_pages: slow.stack_size.unwrap_or(STACK_PAGES),
                stack_sample_every: (stacks.stacks.as_ref().map(|_| stacks.stacks_sample))
                    .or(programs.stack_sample_every),
                ..programs
            },
            slow: slow.slow.clone(),
            stacks_out: stacks.stacks.clone().map(|path| StacksOut {
                format: stacks
                    .stacks_format
                    .unwrap_or_else(|| syscost_report::report::call_stacks::Format::of(&path)),
                weight: stacks.stacks_value.unwrap_or_default(),
                path,
            }),
            session: SessionPlan {
                interval: interval.unwrap_or(INTERVAL),
                run_stats: own_cost,
                echo_slow: true,
                keep_slow: SlowLog::CAP,
                top_totals: true,
                name_pods: false,
            },
            listener: listen
                .map(|addr| {
                    MetricsServer::bind(
                        addr,
                        web.web_config.as_deref(),
                        web.metrics_max_connections
                            .map_or(MAX_CONNECTIONS, |n| n as usize),
                    )
                })
                .transpose()?,
        })
    }

    /// A live view owns the terminal: slow calls are kept for it and the end, not
    /// printed as they come.
    pub fn live(mut self, live: bool) -> Self {
        self.session.echo_slow = !live;
        self
    }

    /// A service (`export`): it runs for days, its slow calls are lines of its log and
    /// none is kept; `totals`: whether per-process totals since the start are kept.
    pub fn service(mut self, totals: bool) -> Self {
        self.session.keep_slow = 0;
        self.session.top_totals = totals;
        self
    }

    /// Whether the programs count calls by stack (`--stacks`, or `top --stacks`).
    pub fn counts_stacks(&self) -> bool {
        self.programs.stack_sample_every.is_some()
    }

    /// Whether slow calls are reported (`--slow`).
    pub fn reports_slow(&self) -> bool {
        self.slow.is_some()
    }

    /// Loads the programs, and says once which default measurements this kernel cannot
    /// offer.
    pub fn load(&self) -> Result<Tracer> {
        let tracer = Tracer::load(self.programs.clone())?;
        for why in &tracer.features().unavailable {
            eprintln!("syscost: this kernel: {why}");
        }
        Ok(tracer)
    }

    /// The session of the loaded (and told what to trace) `tracer`: the slow-call reader
    /// when its programs report slow calls, the sampler, the clock; samples describe
    /// `watch`.
    pub fn start(&self, mut tracer: Tracer, watch: Watch) -> Result<Session> {
        let s = self.session;
        let on = &tracer.features().on;
        let reader = if on.contains(&"slow") || on.contains(&"stacks") {
            Some(syscost_engine::call_ring::reader::Reader::spawn(
                tracer.take_call_ring()?,
                s.echo_slow
                    .then(|| -> syscost_engine::call_ring::reader::EachCall {
                        Box::new(|c| eprintln!("{}", syscost_report::report::slow::line(c)))
                    }),
                s.keep_slow,
            ))
        } else {
            None
        };
        // The session takes every per-process step (each sample carries one), exit
        // records read before its first sample included.
        let mut sampler = syscost_engine::sampler::Sampler::new(tracer, s.run_stats).with_steps();
        if !s.top_totals {
            sampler = sampler.without_top_totals();
        }
        Ok(Session::start(
            sampler,
            reader,
            SessionOptions {
                interval: s.interval,
                watch,
                name_pods: s.name_pods,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command's groups with `--stacks` alone given.
    fn with_stacks(stacks: &StacksArgs) -> Groups<'_> {
        Groups {
            tracing: &TracingArgs { no_offcpu: false },
            slow: &NO_SLOW,
            calls_by_stack: stacks,
            listen: None,
            web: &NO_WEB,
            own_cost: true,
            interval: None,
        }
    }

    /// What the command's programs ask for stays when no argument says otherwise
    /// (`top --stacks` asks through its programs, without a stacks file).
    #[test]
    fn the_programs_stacks_stay_without_a_stacks_file() {
        let plan = |programs: TracerOptions, stacks: &StacksArgs| {
            Plan::new(programs, with_stacks(stacks)).expect("a plan")
        };
        let top = TracerOptions {
            stack_sample_every: Some(syscost_engine::by_stack::SAMPLE_EVERY),
            ..programs::machine(Auto::All)
        };
        assert_eq!(
            plan(top, &StacksArgs::default())
                .programs
                .stack_sample_every,
            Some(syscost_engine::by_stack::SAMPLE_EVERY)
        );
        let file = StacksArgs {
            stacks: Some("x.folded".into()),
            stacks_sample: 16,
            ..StacksArgs::default()
        };
        assert_eq!(
            plan(programs::command(), &file).programs.stack_sample_every,
            Some(16)
        );
        assert_eq!(
            plan(programs::command(), &StacksArgs::default())
                .programs
                .stack_sample_every,
            None
        );
    }

    /// The stacks file's format comes from its name unless told; what a folded line
    /// counts is refused for a pprof profile, which holds both.
    #[test]
    fn the_stacks_format_follows_the_name_and_refuses_a_value_it_has_no_use_for() {
        use syscost_report::report::call_stacks::{Format, Weight};
        let plan = |stacks: &StacksArgs| Plan::new(programs::command(), with_stacks(stacks));
        let args = |file: &str, format, value| StacksArgs {
            stacks: Some(file.into()),
            stacks_format: format,
            stacks_value: value,
            stacks_sample: 16,
        };
        let format = |a: &StacksArgs| plan(a).expect("a plan").stacks_out.unwrap().format;
        assert_eq!(format(&args("x.pb.gz", None, None)), Format::Pprof);
        assert_eq!(format(&args("x.pprof", None, None)), Format::Pprof);
        assert_eq!(format(&args("x.folded", None, None)), Format::Folded);
        assert_eq!(format(&args("x", Some(Format::Pprof), None)), Format::Pprof);
        assert_eq!(
            format(&args("x.pb.gz", Some(Format::Folded), Some(Weight::Time))),
            Format::Folded
        );
        let err = plan(&args("x.pb.gz", None, Some(Weight::Time)))
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("holds both the calls and the time"), "{err}");
    }
}
