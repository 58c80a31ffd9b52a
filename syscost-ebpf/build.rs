use which::which;

/// Rebuild when bpf-linker changes: the crate links with it, though cargo cannot see that.
fn main() {
    match which("bpf-linker") {
        Ok(path) => println!("cargo:rerun-if-changed={}", path.display()),
        Err(e) => println!("cargo:warning=bpf-linker not found ({e}): run `cargo xtask setup`"),
    }
}
