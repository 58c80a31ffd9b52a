//! `cargo xtask setup`: what a fresh machine lacks, installed once.
//!
//! - the nightly toolchain's rust-src (the kernel programs are built with
//!   `-Z build-std=core` for bpfel-unknown-none);
//! - bpf-linker, built against the nightly's own libLLVM (no system LLVM is needed);
//! - strace (for the side-by-side comparisons), tmux (for the terminal UI tests) and
//!   prometheus (a real scraper for the metrics endpoint's test; the package's service is
//!   not started here, the test runs its own server on loopback) and libbpf-tools (its
//!   `syscount`, the peer `cargo xtask bench` measures against), bpftool and bpftrace
//!   (the bench's programs' run time, and the peer of `--stacks`) and linux-perf
//!   (`syscost compare`'s `perf trace` column), golang-go, protobuf-compiler and
//!   python3-protobuf (the two readers of the pprof profiles' test), from apt;
//! - for the kernel matrix (`cargo xtask vm-test`): qemu-system-x86, busybox-static and
//!   binutils from apt (the kernels themselves are fetched by the task);
//! - gcc and libc6-dev, for the C programs of the slow-call stack tests.

use std::{
    env,
    ffi::OsString,
    fs,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

/// bpf-linker release known to build against the nightly's LLVM 22.
const BPF_LINKER: &str = "bpf-linker@0.13.0";
const BPF_LINKER_LLVM_FEATURE: &str = "llvm-22";
/// Debian packages the tests and the benchmark use, each with the command it provides
/// (or, for a library, a file of it).
const APT_PACKAGES: [(&str, &str); 15] = [
    ("strace", "strace"),
    ("tmux", "tmux"),
    ("prometheus", "prometheus"),
    ("libbpf-tools", "syscount"),
    // `cargo xtask bench`: the kernel programs' run time (bpftool) and the peer of
    // `--stacks` (bpftrace's `@[ustack] = count()`).
    ("bpftool", "bpftool"),
    ("bpftrace", "bpftrace"),
    // `syscost compare`'s `perf trace -s` column (the README's table has it).
    ("linux-perf", "perf"),
    // The kernel matrix: qemu boots the kernels, busybox is the VM's shell and tools,
    // objcopy strips the test binaries put in its initramfs.
    ("qemu-system-x86", "qemu-system-x86_64"),
    ("busybox-static", "busybox"),
    ("binutils", "objcopy"),
    // The pprof profiles' readers in the stacks tests: `go tool pprof`, and Python's
    // protobuf over profile.proto compiled by protoc.
    ("golang-go", "go"),
    ("protobuf-compiler", "protoc"),
    (
        "python3-protobuf",
        "/usr/lib/python3/dist-packages/google/protobuf/__init__.py",
    ),
    // The slow-call stack tests build C programs, one of them static.
    ("gcc", "gcc"),
    ("libc6-dev", "/usr/lib/x86_64-linux-gnu/libc.a"),
];

pub fn setup() -> Result<()> {
    nightly_rust_src()?;
    bpf_linker()?;
    apt_packages()?;
    Ok(())
}

/// cargo-deb, for `cargo xtask dist`: installed once, like bpf-linker.
pub fn cargo_deb() -> Result<()> {
    if cargo_home().join("bin/cargo-deb").exists() || has_command("cargo-deb") {
        return Ok(());
    }
    eprintln!("setup: installing cargo-deb (for the Debian package)");
    run(
        Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(env::temp_dir())
            .args(["install", "cargo-deb@3.8.0", "--locked"]),
    )
}

/// The cargo-fuzz release `cargo xtask fuzz` drives (it builds with rustc 1.95).
const CARGO_FUZZ: &str = "cargo-fuzz@0.13.2";

/// cargo-fuzz, for `cargo xtask fuzz`: installed once into `$CARGO_HOME/bin` (built with
/// the stable toolchain; it drives the nightly itself), and again when another version
/// is found there.
pub fn cargo_fuzz() -> Result<()> {
    let (_, version) = CARGO_FUZZ.split_once('@').expect("name@version");
    let bin = cargo_home().join("bin/cargo-fuzz");
    let installed = output(Command::new(&bin).arg("--version")).unwrap_or_default();
    if installed.split_whitespace().any(|w| w == version) {
        return Ok(());
    }
    eprintln!("setup: installing {CARGO_FUZZ} (for the fuzz targets, about 2 minutes)");
    run(
        Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(env::temp_dir())
            .args(["install", CARGO_FUZZ, "--locked", "--force", "--root"])
            .arg(cargo_home()),
    )
}

pub fn is_root() -> bool {
    // Read through /proc: xtask needs no libc dependency for one uid.
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|u| u.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn cargo_home() -> PathBuf {
    env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cargo"))
}

fn home() -> PathBuf {
    env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// PATH with `$CARGO_HOME/bin` in front, where bpf-linker is installed.
pub fn path_with_cargo_bin() -> OsString {
    let mut paths = vec![cargo_home().join("bin")];
    paths.extend(env::split_paths(&env::var_os("PATH").unwrap_or_default()));
    env::join_paths(paths).expect("PATH entries have no ':'")
}

fn quiet_ok(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` and returns its standard output, trimmed; failing unless it succeeds.
pub fn output(cmd: &mut Command) -> Result<String> {
    let o = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !o.status.success() {
        bail!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Runs `cmd`, failing unless it succeeds.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

fn nightly_sysroot() -> Result<PathBuf> {
    if !quiet_ok(Command::new("rustup").args(["run", "nightly", "rustc", "--version"])) {
        eprintln!("setup: installing the nightly toolchain");
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    Ok(PathBuf::from(output(
        Command::new("rustup").args(["run", "nightly", "rustc", "--print", "sysroot"]),
    )?))
}

fn nightly_rust_src() -> Result<()> {
    let sysroot = nightly_sysroot()?;
    if sysroot.join("lib/rustlib/src/rust/library/core").exists() {
        return Ok(());
    }
    eprintln!("setup: adding rust-src to the nightly toolchain");
    run(Command::new("rustup").args(["component", "add", "rust-src", "--toolchain", "nightly"]))
}

fn bpf_linker_works() -> bool {
    let bin = cargo_home().join("bin/bpf-linker");
    let cmd = if bin.exists() {
        bin
    } else {
        PathBuf::from("bpf-linker")
    };
    quiet_ok(Command::new(cmd).arg("--version"))
}

/// Builds bpf-linker against the nightly's libLLVM (it finds the library through a
/// runpath into a folder of symlinks, so a new nightly only needs a rebuild).
fn bpf_linker() -> Result<()> {
    if bpf_linker_works() {
        return Ok(());
    }
    eprintln!("setup: building {BPF_LINKER} against the nightly's LLVM (about 2 minutes)");
    let sysroot = nightly_sysroot()?;
    let libllvm = fs::read_dir(sysroot.join("lib"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("libLLVM.so."))
        .context("the nightly toolchain ships no libLLVM.so.*")?;
    let prefix = home().join(".local/share/syscost/rust-llvm");
    let lib = prefix.join("lib");
    fs::create_dir_all(&lib)?;
    for name in ["libLLVM.so", libllvm.as_str()] {
        let link = lib.join(name);
        let _ = fs::remove_file(&link);
        symlink(sysroot.join("lib").join(&libllvm), &link)
            .with_context(|| format!("cannot link {}", link.display()))?;
    }
    run(Command::new("cargo")
        .args([
            "install",
            BPF_LINKER,
            "--locked",
            "--force",
            "--no-default-features",
        ])
        .args(["--features", BPF_LINKER_LLVM_FEATURE, "--root"])
        .arg(cargo_home())
        .env("LLVM_PREFIX", &prefix)
        .current_dir(env::temp_dir()))?;
    if !bpf_linker_works() {
        bail!("bpf-linker was built but does not run");
    }
    Ok(())
}

fn has_command(name: &str) -> bool {
    if name.starts_with('/') {
        return Path::new(name).exists();
    }
    env::split_paths(&env::var_os("PATH").unwrap_or_default()).any(|p| is_executable(&p.join(name)))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What `cargo xtask test` needs for the Kubernetes checks (kube.rs): podman with runc
/// and its network, kubectl (`kubectl kustomize` works offline), and
/// kubernetes-validate (the schemas of Kubernetes 1.25-1.37) with PyYAML from PyPI.
const KUBE_PACKAGES: [(&str, &str); 5] = [
    ("podman", "podman"),
    ("runc", "/usr/sbin/runc"),
    ("netavark", "/usr/lib/podman/netavark"),
    ("containernetworking-plugins", "/usr/lib/cni/bridge"),
    ("kubernetes-client", "kubectl"),
];

/// The kubernetes-validate release the manifests are checked with.
const KUBERNETES_VALIDATE: &str = "kubernetes-validate==1.37.0";

pub fn kube_tools() -> Result<()> {
    install_missing(&KUBE_PACKAGES)?;
    let have = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--version"])
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout).trim()
                    == KUBERNETES_VALIDATE.rsplit('=').next().unwrap_or("")
        });
    if !have {
        eprintln!("setup: installing {KUBERNETES_VALIDATE} from PyPI");
        // A Python that its distribution manages (PEP 668) refuses a plain install;
        // this one package and its few dependencies go beside its own.
        run(Command::new("python3").args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--break-system-packages",
            KUBERNETES_VALIDATE,
        ]))?;
    }
    Ok(())
}

/// What building for arm64 and its kernel matrix need beyond the rest: the cross
/// compiler and C library, qemu's user mode (the arm64 `syscost` writes its own manual
/// pages and completions for the package) and the arm64 machine emulator.
const CROSS_PACKAGES: [(&str, &str); 4] = [
    ("gcc-aarch64-linux-gnu", "aarch64-linux-gnu-gcc"),
    (
        "libc6-dev-arm64-cross",
        "/usr/aarch64-linux-gnu/lib/libc.so",
    ),
    ("qemu-user", "qemu-aarch64"),
    ("qemu-system-arm", "qemu-system-aarch64"),
];

/// The packages of `CROSS_PACKAGES`, installed when missing (by the tasks that build for
/// arm64: `build --target aarch64`, `dist --target aarch64`, the arm64 kernel matrix).
pub fn cross_packages() -> Result<()> {
    install_missing(&CROSS_PACKAGES)
}

fn apt_packages() -> Result<()> {
    install_missing(&APT_PACKAGES)
}

fn install_missing(packages: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|(_, command)| !has_command(command))
        .map(|(package, _)| package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        eprintln!(
            "setup: missing {}; install them with: sudo apt-get install -y {}",
            missing.join(", "),
            missing.join(" ")
        );
        return Ok(());
    }
    eprintln!("setup: installing {} from apt", missing.join(", "));
    run(Command::new("apt-get").args(["update", "-q"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// `cargo` with bpf-linker's folder first on PATH.
pub fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root).env("PATH", path_with_cargo_bin());
    cmd
}
