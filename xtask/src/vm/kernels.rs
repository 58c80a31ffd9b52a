//! The kernels of the matrix: Debian's cloud kernels, each pinned by package version and
//! sha256, fetched once from the Debian archive into a cache outside the checkout. Only
//! the package's `vmlinuz` is used: the VM boots an initramfs of its own, no modules.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::Arch,
    setup::{output, run},
};

/// One kernel of the matrix.
pub struct Kernel {
    pub arch: Arch,
    /// What `cargo xtask vm-test KERNEL` matches: the version ("5.10") or the release.
    pub version: &'static str,
    /// `uname -r` inside the VM.
    pub release: &'static str,
    /// The package file's path in the archive.
    pub pool_path: &'static str,
    pub sha256: &'static str,
    /// Booted when no kernel is named (`cargo xtask test`, CI); the others when named.
    pub default: bool,
}

/// Oldest first, per architecture: Debian 11 (bullseye), 12 (bookworm), 13 (trixie).
pub const KERNELS: [Kernel; 6] = [
    Kernel {
        arch: Arch::X86_64,
        version: "5.10",
        release: "5.10.0-32-cloud-amd64",
        pool_path: "pool/main/l/linux/linux-image-5.10.0-32-cloud-amd64-unsigned_5.10.223-1_amd64.deb",
        default: true,
        sha256: "b1fb8d34c26105a2ba1271a3df868a9eea460657df98c77fd08822ef4908c9db",
    },
    Kernel {
        arch: Arch::X86_64,
        version: "6.1",
        release: "6.1.0-47-cloud-amd64",
        pool_path: "pool/main/l/linux/linux-image-6.1.0-47-cloud-amd64-unsigned_6.1.170-3_amd64.deb",
        default: true,
        sha256: "554cf5c453f93c86d9af849d98f21826fe9ea3d0eeec6a5c6ed603a5788ff054",
    },
    Kernel {
        arch: Arch::X86_64,
        version: "6.12",
        release: "6.12.117+deb13-cloud-amd64",
        pool_path: "pool/main/l/linux/linux-image-6.12.117+deb13-cloud-amd64-unsigned_6.12.117-1_amd64.deb",
        default: true,
        sha256: "4113a615a1f1535ed4356ca03d428c74536b00f6ccb58e049a2ffd6a1cb3f1ad",
    },
    Kernel {
        arch: Arch::Aarch64,
        version: "5.10",
        release: "5.10.0-32-cloud-arm64",
        pool_path: "pool/main/l/linux/linux-image-5.10.0-32-cloud-arm64-unsigned_5.10.223-1_arm64.deb",
        default: false,
        sha256: "08a251b974eed35af81fe63b96732ae3861745bc639dc56c0de67f581475cad7",
    },
    Kernel {
        arch: Arch::Aarch64,
        version: "6.1",
        release: "6.1.0-47-cloud-arm64",
        pool_path: "pool/main/l/linux/linux-image-6.1.0-47-cloud-arm64-unsigned_6.1.170-3_arm64.deb",
        default: false,
        sha256: "dde73c3da16c414fa4f789b75f02c902db045b02c8aed32353ce30e6515e4522",
    },
    Kernel {
        arch: Arch::Aarch64,
        version: "6.12",
        release: "6.12.117+deb13-cloud-arm64",
        pool_path: "pool/main/l/linux/linux-image-6.12.117+deb13-cloud-arm64-unsigned_6.12.117-1_arm64.deb",
        default: true,
        sha256: "e0261b7e2ab499379b8b2c384fc28d9a51f762f40d071c8ed51e05e6e83ba879",
    },
];

/// Debian's static busybox for arm64 (the arm64 VMs' shell; the x86_64 ones use this
/// machine's), pinned like the kernels.
pub const BUSYBOX_ARM64: Package = Package {
    pool_path: "pool/main/b/busybox/busybox-static_1.35.0-4+deb12u1+b1_arm64.deb",
    sha256: "732c9135564fc71337e0e05fb4da4d11e6c28c1834bce3e405e575afef2a52f5",
};

/// A package of the archive, by path and sha256.
pub struct Package {
    pub pool_path: &'static str,
    pub sha256: &'static str,
}

/// Where packages come from: the archive the system's apt uses (its deb822 `.sources`
/// files and one-line `.list` files), and nowhere else.
fn archive() -> Result<String> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
        more.sort();
        files.extend(more);
    }
    let sources: String = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "sources" || e == "list"))
        .filter_map(|f| fs::read_to_string(f).ok())
        .collect::<Vec<_>>()
        // A file's last stanza ends with the file.
        .join("\n\n");
    archive_in(&sources, codename().as_deref()).context(
        "no Debian archive in this system's apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d): the kernel matrix fetches its kernels from the archive apt uses; add one there",
    )
}

/// One entry of apt's sources: a deb822 stanza or a one-line `deb` entry.
#[derive(Debug, Default)]
struct Source {
    types: Vec<String>,
    uris: Vec<String>,
    suites: Vec<String>,
    components: Vec<String>,
    enabled: bool,
}

/// The entries of apt sources `text`: deb822 stanzas (`Types:`, `URIs:`, `Suites:`,
/// `Components:`, `Enabled:`; separated by blank lines) and one-line entries (`deb
/// [options] URI SUITE COMPONENT...`).
fn sources_in(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    let mut stanza: Option<Source> = None;
    let words = |v: &str| v.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            out.extend(stanza.take());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let one_line = ["deb ", "deb-src "]
            .iter()
            .find_map(|t| line.strip_prefix(t).map(|rest| (t.trim(), rest)));
        if let Some((kind, rest)) = one_line {
            let rest = match rest.trim_start().strip_prefix('[') {
                Some(r) => r.split_once(']').map_or("", |(_, r)| r),
                None => rest,
            };
            let mut w = rest.split_whitespace().map(str::to_string);
            out.push(Source {
                types: vec![kind.to_string()],
                uris: w.next().into_iter().collect(),
                suites: w.next().into_iter().collect(),
                components: w.collect(),
                enabled: true,
            });
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let s = stanza.get_or_insert_with(|| Source {
            enabled: true,
            ..Source::default()
        });
        match key.trim().to_ascii_lowercase().as_str() {
            "types" => s.types = words(value),
            "uris" => s.uris = words(value),
            "suites" => s.suites = words(value),
            "components" => s.components = words(value),
            "enabled" => s.enabled = !value.trim().eq_ignore_ascii_case("no"),
            _ => {}
        }
    }
    out.extend(stanza);
    out
}

/// The Debian archive of apt sources `text`: the first enabled binary (`deb`) source
/// with the `main` component and a suite of this release (`codename`, or
/// `codename-updates` and the like, when the release is known), that is not the
/// security archive.
pub fn archive_in(text: &str, codename: Option<&str>) -> Option<String> {
    let of_release = |suite: &str| {
        codename
            .is_none_or(|c| suite == c || suite.strip_prefix(c).is_some_and(|r| r.starts_with('-')))
    };
    sources_in(text)
        .into_iter()
        .filter(|s| s.enabled && s.types.iter().any(|t| t == "deb"))
        .filter(|s| s.components.iter().any(|c| c == "main"))
        .filter(|s| {
            s.suites
                .iter()
                .any(|x| of_release(x) && !x.contains("security"))
        })
        .flat_map(|s| s.uris)
        .find(|u| !u.contains("security"))
        .map(|u| u.trim_end_matches('/').to_string())
}

/// This system's release codename (`VERSION_CODENAME` of /etc/os-release).
fn codename() -> Option<String> {
    fs::read_to_string("/etc/os-release")
        .ok()?
        .lines()
        .find_map(|l| {
            let v = l.strip_prefix("VERSION_CODENAME=")?.trim_matches('"');
            (!v.is_empty()).then(|| v.to_string())
        })
}

/// The kernels `wanted` names (the default ones when empty: x86_64's three and arm64's
/// 6.12; CI's time leaves arm64's 5.10 and 6.1 to `vm-test --arch aarch64`, which boots
/// all three), of `arch` (both when `None`);
/// a version ("6.1") names each architecture's, a release one kernel; an unknown name
/// is an error.
pub fn select(wanted: &[String], arch: Option<Arch>) -> Result<Vec<&'static Kernel>> {
    let of_arch = |k: &&Kernel| arch.is_none_or(|a| k.arch == a);
    if wanted.is_empty() {
        return Ok(KERNELS
            .iter()
            .filter(of_arch)
            // An architecture asked for alone boots all its kernels.
            .filter(|k| k.default || arch.is_some())
            .collect());
    }
    let mut out = Vec::new();
    for w in wanted {
        let found: Vec<&Kernel> = KERNELS
            .iter()
            .filter(of_arch)
            .filter(|k| k.version == w || k.release == w)
            .collect();
        if found.is_empty() {
            let mut known: Vec<&str> = Vec::new();
            for k in &KERNELS {
                if !known.contains(&k.version) {
                    known.push(k.version);
                }
            }
            bail!("no kernel '{w}' in the matrix ({})", known.join(", "));
        }
        out.extend(found);
    }
    out.sort_by_key(|k| (k.arch, KERNELS.iter().position(|o| o.release == k.release)));
    out.dedup_by_key(|k| k.release);
    Ok(out)
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

impl Package {
    /// The package file in the cache: fetched on first use, checked against its sha256
    /// on every use.
    pub fn fetch(&self) -> Result<PathBuf> {
        let dir = cache_dir();
        fs::create_dir_all(&dir)?;
        let file = Path::new(self.pool_path)
            .file_name()
            .context("a pool path without a file name")?;
        let deb = dir.join(file);
        if !deb.exists() || sha256(&deb)? != self.sha256 {
            let url = format!("{}/{}", archive()?, self.pool_path);
            eprintln!("vm-test: fetching {url}");
            let partial = deb.with_extension("part");
            run(Command::new("curl")
                .args([
                    "-fsSL",
                    "--retry",
                    "3",
                    "--connect-timeout",
                    "30",
                    "--max-time",
                    "1800",
                    "-o",
                ])
                .arg(&partial)
                .arg(&url))?;
            let got = sha256(&partial)?;
            if got != self.sha256 {
                let _ = fs::remove_file(&partial);
                bail!("{url}: sha256 {got}, expected {}", self.sha256);
            }
            fs::rename(&partial, &deb)?;
        }
        Ok(deb)
    }

    /// One file of the package's data (`./bin/busybox`), its bytes.
    pub fn file(&self, member: &str) -> Result<Vec<u8>> {
        let deb = self.fetch()?;
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "dpkg-deb --fsys-tarfile '{}' | tar -xO '{member}'",
                deb.display()
            ))
            .output()?;
        if !o.status.success() || o.stdout.is_empty() {
            bail!("{}: no {member}", deb.display());
        }
        Ok(o.stdout)
    }
}

impl Kernel {
    /// The kernel image: the package fetched on first use, checked against its sha256
    /// on every use, and the image taken out of it afresh.
    pub fn vmlinuz(&self) -> Result<PathBuf> {
        let dir = cache_dir();
        let image = dir.join(format!("vmlinuz-{}", self.release));
        let deb = Package {
            pool_path: self.pool_path,
            sha256: self.sha256,
        }
        .fetch()?;
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
        let sources = "Types: deb\n# URIs: http://old.example/debian\n\
                       URIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n\
                       Components: main\n\n\
                       Types: deb\nURIs: http://mirror.example/debian-security\n\
                       Suites: bookworm-security\nComponents: main\n";
        let found = |text: &str, codename| archive_in(text, codename);
        assert_eq!(
            found(sources, Some("bookworm")).as_deref(),
            Some("http://mirror.example/debian")
        );
        let list = "# deb http://old.example/debian bookworm main\n\
                    deb http://mirror.example/debian-security bookworm-security main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main\n";
        assert_eq!(
            found(list, Some("bookworm")).as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(found("", None), None);
        assert_eq!(
            found("deb-src http://mirror.example/debian bookworm main", None),
            None
        );
        // A third party's repository (its own component, or another release's suite),
        // a source turned off and a source-only stanza are passed over.
        let mixed = "deb [arch=amd64] http://vendor.example/linux/debian bookworm stable\n\
                     deb http://other.example/debian trixie main\n\n\
                     Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\n\
                     Components: main\nEnabled: no\n\n\
                     Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\
                     Components: main\n\n\
                     Types: deb deb-src\nURIs: http://mirror.example/debian\n\
                     Suites: bookworm\nComponents: main contrib\n";
        assert_eq!(
            found(mixed, Some("bookworm")).as_deref(),
            Some("http://mirror.example/debian")
        );
        // Without a known release, any suite with `main` will do.
        assert_eq!(
            found("deb http://other.example/debian trixie main", None).as_deref(),
            Some("http://other.example/debian")
        );
    }

    #[test]
    fn kernels_are_pinned_and_selected_by_version() {
        for k in &KERNELS {
            assert_eq!(k.sha256.len(), 64, "{}", k.release);
            assert!(k.pool_path.contains(k.release), "{}", k.release);
            assert!(k.release.starts_with(k.version), "{}", k.release);
            assert!(
                k.release.ends_with(k.arch.debian())
                    && k.pool_path.ends_with(&format!("_{}.deb", k.arch.debian())),
                "{}",
                k.release
            );
        }
        assert_eq!(select(&[], None).unwrap().len(), KERNELS.len() - 2);
        let releases = |w: &[&str], a| -> Vec<&str> {
            let w: Vec<String> = w.iter().map(|s| s.to_string()).collect();
            select(&w, a).unwrap().iter().map(|k| k.release).collect()
        };
        assert_eq!(
            releases(&["5.10"], None),
            ["5.10.0-32-cloud-amd64", "5.10.0-32-cloud-arm64"]
        );
        assert_eq!(
            releases(&["6.12", "5.10"], Some(Arch::Aarch64)),
            ["5.10.0-32-cloud-arm64", "6.12.117+deb13-cloud-arm64"]
        );
        assert_eq!(releases(&["6.1.0-47-cloud-amd64"], None).len(), 1);
        assert_eq!(select(&[], Some(Arch::X86_64)).unwrap().len(), 3);
        assert_eq!(select(&[], Some(Arch::Aarch64)).unwrap().len(), 3);
        assert!(select(&["4.19".into()], None).is_err());
        assert!(
            BUSYBOX_ARM64.pool_path.ends_with("_arm64.deb") && BUSYBOX_ARM64.sha256.len() == 64
        );
    }
}
