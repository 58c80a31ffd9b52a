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
    aya_build::build_ebpf([package], Toolchain::default())
}
