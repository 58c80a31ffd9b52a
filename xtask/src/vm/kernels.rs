//! The kernels of the matrix: Debian's cloud kernels, each pinned by package version and
//! sha256, fetched once from the Debian archive into a cache outside the checkout. Only
//! the package's `vmlinuz` is used: the VM boots an initramfs of its own, no modules.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::setup::{output, run};

/// One kernel of the matrix.
pub struct Kernel {
    /// What `cargo xtask vm-test KERNEL` matches: the version ("5.10") or the release.
    pub version: &'static str,
    /// `uname -r` inside the VM.
    pub release: &'static str,
    /// The package file's path in the archive.
    pub pool_path: &'static str,
    pub sha256: &'static str,
}

/// Oldest first: Debian 11 (bullseye), 12 (bookworm), 13 (trixie).
pub const KERNELS: [Kernel; 3] = [
    Kernel {
        version: "5.10",
        release: "5.10.0-32-cloud-amd64",
        pool_path: "pool/main/l/linux/linux-image-5.10.0-32-cloud-amd64-unsigned_5.10.223-1_amd64.deb",
        sha256: "b1fb8d34c26105a2ba1271a3df868a9eea460657df98c77fd08822ef4908c9db",
    },
    Kernel {
        version: "6.1",
        release: "6.1.0-47-cloud-amd64",
        pool_path: "pool/main/l/linux/linux-image-6.1.0-47-cloud-amd64-unsigned_6.1.170-3_amd64.deb",
        sha256: "554cf5c453f93c86d9af849d98f21826fe9ea3d0eeec6a5c6ed603a5788ff054",
    },
    Kernel {
        version: "6.12",
        release: "6.12.117+deb13-cloud-amd64",
        pool_path: "pool/main/l/linux/linux-image-6.12.117+deb13-cloud-amd64-unsigned_6.12.117-1_amd64.deb",
        sha256: "4113a615a1f1535ed4356ca03d428c74536b00f6ccb58e049a2ffd6a1cb3f1ad",
    },
];

/// Where packages come from: the archive the system's apt uses, else Debian's own.
fn archive() -> String {
    let sources = fs::read_to_string("/etc/apt/sources.list.d/debian.sources").unwrap_or_default();
    archive_in(&sources).unwrap_or_else(|| "http://deb.debian.org/debian".to_string())
}

/// The first `URIs:` of a deb822 sources file that is not the security archive.
pub fn archive_in(sources: &str) -> Option<String> {
    sources
        .lines()
        .filter_map(|l| l.strip_prefix("URIs:"))
        .flat_map(str::split_whitespace)
        .find(|u| !u.contains("security"))
        .map(|u| u.trim_end_matches('/').to_string())
}

/// The kernels `wanted` names (all of them when empty); an unknown name is an error.
pub fn select(wanted: &[String]) -> Result<Vec<&'static Kernel>> {
    if wanted.is_empty() {
        return Ok(KERNELS.iter().collect());
    }
    wanted
        .iter()
        .map(|w| {
            KERNELS
                .iter()
                .find(|k| k.version == w || k.release == w)
                .with_context(|| {
                    let known: Vec<&str> = KERNELS.iter().map(|k| k.version).collect();
                    format!("no kernel '{w}' in the matrix ({})", known.join(", "))
                })
        })
        .collect()
}

/// The cache of packages and kernels: `$XDG_CACHE_HOME/syscost/kernels`.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache")
        });
    base.join("syscost/kernels")
}

impl Kernel {
    /// The kernel image: the package fetched on first use, checked against its sha256
    /// on every use, and the image taken out of it afresh.
    pub fn vmlinuz(&self) -> Result<PathBuf> {
        let dir = cache_dir();
        let image = dir.join(format!("vmlinuz-{}", self.release));
        fs::create_dir_all(&dir)?;
        let file = Path::new(self.pool_path)
            .file_name()
            .context("a pool path without a file name")?;
        let deb = dir.join(file);
        if !deb.exists() || sha256(&deb)? != self.sha256 {
            let url = format!("{}/{}", archive(), self.pool_path);
            eprintln!("vm-test: fetching {url}");
            let partial = deb.with_extension("part");
            run(Command::new("curl")
                .args(["-fsSL", "--retry", "3", "-o"])
                .arg(&partial)
                .arg(&url))?;
            let got = sha256(&partial)?;
            if got != self.sha256 {
                let _ = fs::remove_file(&partial);
                bail!("{url}: sha256 {got}, expected {}", self.sha256);
            }
            fs::rename(&partial, &deb)?;
        }
        let unpacked = dir.join(format!("unpack-{}", self.release));
        let _ = fs::remove_dir_all(&unpacked);
        fs::create_dir_all(&unpacked)?;
        // The package's data, only the image out of it.
        run(Command::new("sh").arg("-c").arg(format!(
            "dpkg-deb --fsys-tarfile '{}' | tar -x -C '{}' './boot/vmlinuz-{}'",
            deb.display(),
            unpacked.display(),
            self.release
        )))?;
        fs::rename(
            unpacked.join(format!("boot/vmlinuz-{}", self.release)),
            &image,
        )?;
        let _ = fs::remove_dir_all(&unpacked);
        Ok(image)
    }
}

fn sha256(path: &Path) -> Result<String> {
    let out = output(Command::new("sha256sum").arg(path))?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_comes_from_the_systems_sources() {
        let sources = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n\
                       URIs: http://mirror.example/debian/\nSuites: bookworm\n\n\
                       Types: deb\nURIs: http://mirror.example/debian-security\n";
        assert_eq!(
            archive_in(sources).as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(archive_in(""), None);
    }

    #[test]
    fn kernels_are_pinned_and_selected_by_version() {
        for k in &KERNELS {
            assert_eq!(k.sha256.len(), 64, "{}", k.release);
            assert!(k.pool_path.contains(k.release), "{}", k.release);
            assert!(k.release.starts_with(k.version), "{}", k.release);
        }
        assert_eq!(select(&[]).unwrap().len(), KERNELS.len());
        assert_eq!(
            select(&["5.10".into()]).unwrap()[0].release,
            "5.10.0-32-cloud-amd64"
        );
        assert!(select(&["4.19".into()]).is_err());
    }
}
