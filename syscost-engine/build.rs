use anyhow::{Context as _, anyhow};
use aya_build::Toolchain;

/// Builds the kernel programs (syscost-ebpf) with the nightly toolchain and bpf-linker;
/// the object is embedded in the `syscost` binary with `include_bytes_aligned!`.
fn main() -> anyhow::Result<()> {
    let cargo_metadata::Metadata { packages, .. } = cargo_metadata::MetadataCommand::new()
        .no_deps()
        .exec()
        .context("MetadataCommand::exec")?;
    let ebpf = packages
        .into_iter()
        .find(|p| p.name.as_str() == "syscost-ebpf")
        .ok_or_else(|| anyhow!("syscost-ebpf package not found"))?;
    let root_dir = ebpf
        .manifest_path
        .parent()
        .ok_or_else(|| anyhow!("no parent for {}", ebpf.manifest_path))?;
    let package = aya_build::Package {
        name: ebpf.name.as_str(),
        root_dir: root_dir.as_str(),
        ..Default::default()
    };
    // The inner cargo's progress lines ("Compiling ...", "Finished ...") would be
    // relayed as `warning:` lines of this package; its warnings and errors still are.
    // SAFETY: the build script has started no thread yet.
    unsafe { std::env::set_var("CARGO_TERM_QUIET", "true") };
    aya_build::build_ebpf([package], Toolchain::default())?;
    version_facts()
}

/// The commit (`git rev-parse`, "unknown" outside a clone) and a build id of the kernel
/// programs (FNV-1a of the object), for `syscost --version`.
fn version_facts() -> anyhow::Result<()> {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SYSCOST_GIT_COMMIT={commit}");
    // Where git keeps HEAD and the branches (a worktree's HEAD is not under .git/).
    for path in ["HEAD", "refs/heads", "packed-refs"] {
        let found = std::process::Command::new("git")
            .args(["rev-parse", "--path-format=absolute", "--git-path", path])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(p) = found.filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let out = std::env::var("OUT_DIR").context("OUT_DIR")?;
    let object = std::fs::read(std::path::Path::new(&out).join("syscost"))
        .context("the kernel programs' object")?;
    let hash = object.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    println!("cargo:rustc-env=SYSCOST_EBPF_BUILD_ID={hash:016x}");
    Ok(())
}
