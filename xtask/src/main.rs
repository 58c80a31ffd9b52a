//! Project tasks: `cargo xtask setup | build | test | demo | bench | soak | dist | fuzz | run`.
//!
//! `setup` makes a fresh machine ready and does nothing on a ready one; every other task
//! runs it first, so nothing is ever installed by hand.

mod arch;
mod bench;
mod dist;
mod fuzz;
mod image;
mod kube;
mod setup;
mod soak;
mod vm;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};
use arch::Arch;
use clap::{Parser, Subcommand};
use setup::run;

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install what building, testing and the benchmark need (nightly rust-src,
    /// bpf-linker, strace, tmux, prometheus, libbpf-tools).
    Setup,
    /// Build the release `syscost` binary (target/release/syscost; for another
    /// architecture target/TRIPLE/release/syscost, cross-built).
    Build {
        /// The architecture to build for (this machine's when not given).
        #[arg(long, value_enum)]
        target: Option<Arch>,
    },
    /// Run the unit and integration tests (the integration tests need root).
    Test {
        /// Extra arguments for `cargo test`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// The echo-server demo with the live view (needs root): set-up, build, run.
    Demo {
        /// Extra arguments for `syscost demo`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Measure what tracing adds per syscall: untraced vs syscost vs strace, side by side.
    Bench {
        /// Interleaved rounds (the medians are reported).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// getppid calls per round and setup (strace gets a twentieth).
        #[arg(long, default_value_t = 2_000_000)]
        calls: u64,
        /// Also measure the candidate programs between the floor and syscost (the filter
        /// as a raw tracepoint and as tp_btf, the clock reads, the clock and a histogram).
        #[arg(long)]
        candidates: bool,
        /// Leave the peers out (strace, syscount, bpftrace): syscost against the floor only.
        #[arg(long)]
        no_peers: bool,
        /// Only what a process start costs under the whole-machine modes.
        #[arg(long)]
        process_starts: bool,
        /// Only what a slow call costs in the kernel (`--slow`), by `--stack-size`.
        #[arg(long)]
        slow_calls: bool,
        /// Only the start-up: `run -- /bin/true` against bare and `strace -c`, and the
        /// time to the tracing line of `attach -p` and of syscount (10 rounds unless
        /// --rounds says otherwise).
        #[arg(long)]
        start_up: bool,
    },
    /// The daemon case over a long run: `export --top` scraped every second by a real
    /// Prometheus and `top --no-tui`, side by side, under process churn (hundreds of
    /// binaries, comms and cgroups); a line a minute per syscost process (RSS, fds, BPF
    /// map occupancy, dropped counts, scrape latency), the RSS slope after the warm-up,
    /// and the table in bench/soak-DATE.txt (root).
    Soak {
        /// Minutes of churn.
        #[arg(long, default_value_t = 60)]
        minutes: u64,
        /// Process starts a second.
        #[arg(long, default_value_t = 300)]
        rate: u32,
        /// Copies of the churn program, each under a name of its own.
        #[arg(long, default_value_t = 400)]
        binaries: u32,
        /// Cgroups the churn is started in.
        #[arg(long, default_value_t = 300)]
        cgroups: u32,
        /// Minutes left out of the RSS slope at the start.
        #[arg(long, default_value_t = 5)]
        warmup: u64,
    },
    /// Boot each kernel of the matrix (Linux 5.10, 6.1, 6.12, on x86_64 and arm64) in
    /// qemu and run the kernel suite of the root tests inside it, as the VM's root; one
    /// line per kernel.
    VmTest {
        /// Kernels to boot (e.g. 5.10 6.12; a version names each architecture's); when
        /// none is given, x86_64's three and arm64's 6.12 (with --arch, all of that
        /// architecture's).
        kernels: Vec<String>,
        /// Only this architecture's kernels (both when not given).
        #[arg(long, value_enum)]
        arch: Option<Arch>,
        /// Only this test of the kernel suite (repeatable; every test when not given).
        #[arg(long = "test", value_name = "NAME")]
        only: Vec<String>,
        /// Run each test this many times in a row in each VM.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
    },
    /// Build the Debian package and a release tarball under target/dist (binary with the
    /// kernel programs, manual pages, completions, README).
    Dist {
        /// Also install the package, run it, remove it and check nothing is left (root);
        /// for another architecture: check the package's architecture, its files against
        /// this machine's package and run its syscost under qemu's user mode.
        #[arg(long)]
        check: bool,
        /// The architecture to package (this machine's when not given).
        #[arg(long, value_enum)]
        target: Option<Arch>,
    },
    /// Build the fuzz targets (fuzz/, cargo-fuzz with the nightly; cargo-fuzz installed
    /// when missing) and run each for a time from its corpus; fails on a crash, a timeout
    /// or a memory blow-up, naming the input.
    Fuzz {
        /// Seconds each target runs.
        #[arg(long, default_value_t = 600)]
        seconds: u64,
        /// The targets to run (every one when none is given): kernel_btf, maps,
        /// slow_record, web_config, authorization, profile.
        targets: Vec<String>,
    },
    /// Build the OCI image archive of syscost (target/image/syscost-VERSION-ARCH.oci.tar):
    /// the package's binary and the libraries it needs, from Debian's packages, with no
    /// registry; the same tree gives the same digest. `podman load -i` loads it.
    Image {
        /// Also check deploy/kubernetes against the schemas, build the image twice to
        /// one digest, and run it by podman with the DaemonSet's privileges (root).
        #[arg(long)]
        check: bool,
    },
    /// Build and run `syscost` with these arguments, e.g. `cargo xtask run -- run -- ls`.
    Run {
        #[arg(last = true)]
        args: Vec<String>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = workspace_root();
    setup::setup()?;
    match cli.task {
        Task::Setup => Ok(()),
        Task::Build { target } => arch::build_for(&root, target.unwrap_or_else(Arch::host)),
        Task::Test { args } => test(&root, &args),
        Task::VmTest {
            kernels,
            arch,
            only,
            repeat,
        } => vm::vm_test(&root, &kernels, arch, &only, repeat),
        Task::Bench {
            rounds,
            calls,
            candidates,
            no_peers,
            process_starts,
            slow_calls,
            start_up,
        } => {
            arch::build(&root)?;
            if start_up {
                return bench::start_up_cost(
                    &root.join("target/release/syscost"),
                    &root.join("target/release/syscost-workload"),
                    rounds.max(10),
                    !no_peers,
                );
            }
            if slow_calls {
                return bench::slow_call_cost(
                    &root.join("target/release/syscost"),
                    &root.join("target/release/syscost-workload"),
                    rounds.max(1),
                );
            }
            if process_starts {
                return bench::process_start_cost(
                    &root.join("target/release/syscost"),
                    &root.join("target/release/syscost-workload"),
                    rounds.max(1),
                    !no_peers,
                );
            }
            bench::bench(&root, rounds.max(1), calls.max(1), candidates, !no_peers)
        }
        Task::Soak {
            minutes,
            rate,
            binaries,
            cgroups,
            warmup,
        } => {
            arch::build(&root)?;
            soak::soak(
                &root,
                &soak::Options {
                    minutes: minutes.max(1),
                    rate: rate.max(1),
                    binaries: binaries.clamp(1, 9_999),
                    cgroups: cgroups.clamp(1, 999),
                    warmup,
                },
            )
        }
        Task::Demo { args } => {
            arch::build(&root)?;
            let status = Command::new(root.join("target/release/syscost"))
                .arg("demo")
                .args(&args)
                .status()
                .context("cannot start target/release/syscost")?;
            std::process::exit(status.code().unwrap_or(1));
        }
        Task::Dist { check, target } => {
            let arch = target.unwrap_or_else(Arch::host);
            arch::build_for(&root, arch)?;
            dist::dist(&root, arch, check)
        }
        Task::Image { check: false } => image::image(&root),
        Task::Image { check: true } => {
            arch::build(&root)?;
            dist::dist(&root, Arch::host(), false)?;
            let deb = dist::package_in(&root.join("target/dist"), Arch::host())?
                .context("no package in target/dist")?;
            kube::check(&root, &deb)
        }
        Task::Fuzz { seconds, targets } => fuzz::fuzz(&root, seconds.max(1), &targets),
        Task::Run { args } => {
            arch::build(&root)?;
            let status = Command::new(root.join("target/release/syscost"))
                .args(&args)
                .status()
                .context("cannot start target/release/syscost")?;
            std::process::exit(status.code().unwrap_or(1));
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn test(root: &Path, extra: &[String]) -> Result<()> {
    // arm64's kernel suite is cross-built meanwhile, at the lowest priority, into a
    // target directory of its own (the matrix later finds it built).
    let mut cross = if extra.is_empty() {
        Some(Background::start(root, Arch::Aarch64)?)
    } else {
        None
    };
    test_crates(root, extra)?;
    // The package: built, installed, run, removed, nothing left (root only; the whole
    // suite only, not a filtered run). Then the kernel matrix.
    if !setup::is_root() && extra.is_empty() && std::env::var_os("CI").is_some_and(|v| v == "true")
    {
        anyhow::bail!(
            "the package and Kubernetes checks need root, and CI=true allows no skipping: run `sudo -E cargo xtask test`"
        );
    }
    if setup::is_root() && extra.is_empty() {
        arch::build(root)?;
        dist::dist(root, Arch::host(), true)?;
        // The Kubernetes deployment: its manifests against the schemas, its image
        // built twice to one digest, and run by podman with the DaemonSet's privileges.
        let deb = dist::package_in(&root.join("target/dist"), Arch::host())?
            .context("no package in target/dist")?;
        kube::check(root, &deb)?;
    }
    if extra.is_empty() {
        // The matrix builds what the background build has not (nothing, once it ends).
        if let Some(mut b) = cross.take() {
            let _ = b.child.wait();
        }
        vm::vm_test(root, &[], None, &[], 1)?;
    }
    Ok(())
}

/// A build running beside the tests (nice 19, its own process group, its output in
/// target/vm/); killed with its group if the tests end first.
struct Background {
    child: std::process::Child,
}

impl Background {
    fn start(root: &Path, arch: Arch) -> Result<Self> {
        setup::cross_packages()?;
        let build = vm::test_build(root, arch);
        let log_dir = root.join("target/vm");
        std::fs::create_dir_all(&log_dir)?;
        let log = std::fs::File::create(log_dir.join(format!("build-{}.log", arch.name())))?;
        let mut cmd = Command::new("nice");
        cmd.args(["-n", "19"])
            .arg(build.get_program())
            .args(build.get_args())
            .current_dir(root)
            .stdout(log.try_clone()?)
            .stderr(log);
        for (k, v) in build.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().context("cannot start the arm64 test build")?;
        Ok(Self { child })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: signals the process group this build leads.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

fn test_crates(root: &Path, extra: &[String]) -> Result<()> {
    if !setup::is_root() {
        eprintln!(
            "\n*** not root: the tests that load BPF programs will be SKIPPED (under CI they fail). Run `sudo -E cargo xtask test`. ***\n"
        );
    }
    // The default members: the eBPF crate builds only for the BPF target.
    run(setup::cargo(root).arg("test").args(extra))?;
    if extra.is_empty() {
        // The crates' documentation, its links checked: a renamed item its docs still
        // name fails here.
        run(setup::cargo(root)
            .args(["doc", "--no-deps", "--lib", "--workspace"])
            .args(["--exclude", "xtask", "--exclude", "syscost-ebpf"])
            .env("RUSTDOCFLAGS", "-D warnings"))?;
    }
    Ok(())
}
