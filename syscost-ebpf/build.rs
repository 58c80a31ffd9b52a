use which::which;

/// Rebuild when bpf-linker changes: the crate links with it, though cargo cannot see that.
/// Not found, the warning holds only until it is installed: the directories of PATH
/// are watched (cargo would otherwise replay this warning from its cache on every
/// build after `cargo xtask setup` installed it).
fn main() {
    match which("bpf-linker") {
        Ok(path) => println!("cargo:rerun-if-changed={}", path.display()),
        Err(e) => {
            println!("cargo:rerun-if-env-changed=PATH");
            for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
                if dir.is_dir() {
                    println!("cargo:rerun-if-changed={}", dir.display());
                }
            }
            println!("cargo:warning=bpf-linker not found ({e}): run `cargo xtask setup`")
        }
    }
}
