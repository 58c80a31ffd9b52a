//! The program a command starts (`run`, `compare`): found as a shell finds it, or why
//! it cannot be run, in words that say what to type instead.

use std::path::Path;

/// The program `name` names, as `run` and `compare` start it (a path, else looked up in
/// PATH), or what is wrong with it: missing, a directory or another file that is no
/// program, not executable.
pub fn find_program(name: &str) -> anyhow::Result<std::path::PathBuf> {
    if let Ok(p) = which::which(name) {
        return Ok(p);
    }
    if !name.contains('/') {
        // In PATH but not executable, or only here.
        let in_path = std::env::var_os("PATH").map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        });
        if let Some(Some(file)) = in_path {
            return Err(not_a_program(&file.display().to_string()));
        }
        if Path::new(name).is_file() {
            anyhow::bail!(
                "command not found: {name} is not in PATH; give the file here as ./{name}"
            );
        }
        anyhow::bail!("command not found: {name} (not in PATH)");
    }
    Err(not_a_program(name))
}

/// Why the file at `path` cannot be run.
fn not_a_program(path: &str) -> anyhow::Error {
    use std::os::unix::fs::PermissionsExt as _;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                anyhow::anyhow!("cannot run {path}: it is a link to nothing")
            } else {
                anyhow::anyhow!("command not found: no file {path}")
            }
        }
        Err(e) => anyhow::anyhow!("cannot run {path}: {e}"),
        Ok(m) if m.is_dir() => {
            anyhow::anyhow!("cannot run {path}: it is a directory, not a program")
        }
        Ok(m) if !m.is_file() => anyhow::anyhow!("cannot run {path}: it is not a regular file"),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => anyhow::anyhow!(
            "cannot run {path}: it is not executable (mode {:o}): `chmod +x {path}`, or give its interpreter first (sh {path})",
            m.permissions().mode() & 0o7777
        ),
        Ok(_) => anyhow::anyhow!(
            "cannot run {path}: the kernel would not start it (a filesystem mounted noexec?)"
        ),
    }
}
