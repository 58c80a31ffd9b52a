//! The architectures syscost is built for: this machine's (x86_64) and arm64, built
//! here with a cross toolchain (the nightly's standard library source, `-Z build-std`,
//! Debian's aarch64 cross compiler and C library).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// A target of `build`, `dist` and the kernel matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Arch {
    #[value(name = "x86_64", alias = "amd64")]
    X86_64,
    #[value(name = "aarch64", alias = "arm64")]
    Aarch64,
}

impl Arch {
    /// Every architecture, this machine's first.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The Rust target triple.
    pub fn triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-gnu",
            Arch::Aarch64 => "aarch64-unknown-linux-gnu",
        }
    }

    /// The name Rust and `uname -m` give it.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// Debian's name of it (packages, kernels).
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }

    /// Whether it is the architecture of this machine (no cross build).
    pub fn is_host(self) -> bool {
        self.name() == std::env::consts::ARCH
    }

    /// Where cargo puts the target's build of `profile` ("release", "debug").
    pub fn out_dir(self, root: &Path, profile: &str) -> PathBuf {
        if self.is_host() {
            root.join("target").join(profile)
        } else {
            root.join("target").join(self.triple()).join(profile)
        }
    }

    /// The cross tools' prefix (`aarch64-linux-gnu-gcc`, `-objcopy`, `-readelf`).
    pub fn gnu_prefix(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-linux-gnu-",
            Arch::Aarch64 => "aarch64-linux-gnu-",
        }
    }

    /// Where the target's C libraries are on this machine (Debian's cross packages).
    pub fn sysroot_lib(self) -> PathBuf {
        if self.is_host() {
            PathBuf::from(format!("/lib/{}-linux-gnu", self.name()))
        } else {
            PathBuf::from(format!("/usr/{}-linux-gnu/lib", self.name()))
        }
    }

    /// `qemu-system-*` for this architecture.
    pub fn qemu_system(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86_64",
            Arch::Aarch64 => "qemu-system-aarch64",
        }
    }

    /// Runs one of its programs here: directly on this machine's architecture, through
    /// qemu's user mode (with the cross C library) for the other.
    pub fn command(self, program: &Path) -> Command {
        if self.is_host() {
            return Command::new(program);
        }
        let mut cmd = Command::new(format!("qemu-{}", self.name()));
        cmd.arg("-L")
            .arg(format!("/usr/{}-linux-gnu", self.name()))
            .arg(program);
        cmd
    }
}

/// `cargo` building for `arch`: the workspace's toolchain for this machine; for another
/// architecture the nightly, with the standard library built from source for it and
/// the cross compiler as linker and C compiler. `args` go before the target's flags.
pub fn cargo(root: &Path, arch: Arch, args: &[&str]) -> Command {
    if arch.is_host() {
        let mut cmd = crate::setup::cargo(root);
        cmd.args(args);
        return cmd;
    }
    let mut cmd = Command::new("rustup");
    cmd.current_dir(root)
        .env("PATH", crate::setup::path_with_cargo_bin())
        // The stable toolchain's cargo exports these; the nightly's must find its own.
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .args(["run", "nightly", "cargo"])
        .args(args)
        .args(["-Z", "build-std=std,panic_abort", "--target", arch.triple()]);
    let triple_env = arch.triple().replace('-', "_");
    let gcc = format!("{}gcc", arch.gnu_prefix());
    cmd.env(
        format!("CARGO_TARGET_{}_LINKER", triple_env.to_uppercase()),
        &gcc,
    )
    .env(format!("CC_{triple_env}"), &gcc)
    .env(
        format!("AR_{triple_env}"),
        format!("{}ar", arch.gnu_prefix()),
    );
    cmd
}

impl Arch {
    /// This machine's architecture.
    pub fn host() -> Arch {
        Arch::ALL
            .into_iter()
            .find(|a| a.is_host())
            .expect("syscost builds on x86_64 and aarch64 only")
    }
}

/// This machine's release binaries.
pub fn build(root: &Path) -> anyhow::Result<()> {
    crate::setup::run(crate::setup::cargo(root).args([
        "build",
        "--release",
        "-p",
        "syscost-user",
        "--bins",
    ]))
}

/// The release binaries for `arch` (cross-built for another architecture, after the
/// cross packages are installed).
pub fn build_for(root: &Path, arch: Arch) -> anyhow::Result<()> {
    if arch.is_host() {
        return build(root);
    }
    crate::setup::cross_packages()?;
    crate::setup::run(&mut cargo(
        root,
        arch,
        &["build", "--release", "-p", "syscost-user", "--bins"],
    ))?;
    println!(
        "{}",
        arch.out_dir(root, "release").join("syscost").display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert_eq!(Arch::Aarch64.triple(), "aarch64-unknown-linux-gnu");
        assert_eq!(Arch::Aarch64.debian(), "arm64");
        assert!(Arch::X86_64.is_host() != Arch::Aarch64.is_host());
        let root = Path::new("/r");
        let host = Arch::ALL.into_iter().find(|a| a.is_host()).unwrap();
        assert_eq!(
            host.out_dir(root, "release"),
            Path::new("/r/target/release")
        );
        let other = Arch::ALL.into_iter().find(|a| !a.is_host()).unwrap();
        assert_eq!(
            other.out_dir(root, "debug"),
            Path::new("/r/target").join(other.triple()).join("debug")
        );
    }

    #[test]
    fn a_cross_build_uses_the_nightly_and_the_cross_linker() {
        let cmd = cargo(Path::new("/r"), Arch::Aarch64, &["build", "--release"]);
        if !Arch::Aarch64.is_host() {
            let args: Vec<String> = cmd
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            assert_eq!(
                args,
                [
                    "run",
                    "nightly",
                    "cargo",
                    "build",
                    "--release",
                    "-Z",
                    "build-std=std,panic_abort",
                    "--target",
                    "aarch64-unknown-linux-gnu"
                ]
            );
            assert!(cmd.get_envs().any(|(k, v)| {
                k == "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER"
                    && v == Some("aarch64-linux-gnu-gcc".as_ref())
            }));
        }
    }
}
