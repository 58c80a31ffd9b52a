//! `cargo xtask image`: an OCI image archive of syscost, made with no registry and no
//! container engine: the binary from the Debian package `cargo xtask dist` builds, and
//! the libraries it needs from the Debian packages of the versions this machine has
//! installed (fetched from the system's own apt sources), nothing else: no shell, no
//! CA certificates, no package manager. The layer and the archive are written with
//! fixed times, owners and order, so the same inputs give the same digest.

use std::{
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};
use serde_json::json;

use crate::{
    arch::Arch,
    dist,
    setup::{output, run},
};

/// What `cargo xtask image` made.
pub struct Image {
    /// The OCI archive (`podman load -i`, `skopeo copy oci-archive:...`).
    pub archive: PathBuf,
    /// The manifest's digest (`sha256:...`), the image's identity.
    pub digest: String,
    /// The name it loads as.
    pub name: String,
    /// The files of its root, with their sizes.
    pub contents: Vec<(String, u64)>,
}

/// The port the image's default command serves its metrics on.
pub const PORT: u16 = 9464;

/// The image's name once loaded: `localhost/syscost:VERSION` (the DaemonSet's).
pub fn name() -> String {
    format!("localhost/syscost:{}", env!("CARGO_PKG_VERSION"))
}

/// Builds the release binary and the package, then the image from them.
pub fn build_all(root: &Path) -> Result<Image> {
    crate::arch::build(root)?;
    dist::dist(root, crate::arch::Arch::host(), false)?;
    let deb = dist::package_in(&root.join("target/dist"), crate::arch::Arch::host())?
        .context("no package in target/dist")?;
    build(root, &deb, &root.join("target/image"))
}

/// The image of the package `deb` (this machine's architecture), in `out`.
pub fn build(root: &Path, deb: &Path, out: &Path) -> Result<Image> {
    let arch = crate::arch::Arch::host();
    let epoch = source_date_epoch(root)?;
    let work = out.join("work");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work)?;
    let unpacked = work.join("syscost");
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&unpacked))?;
    let binary = unpacked.join("usr/bin/syscost");

    // The libraries the binary names, and its interpreter, as this machine resolves them.
    let (needed, interpreter) = elf_needs(&binary)?;
    let mut wanted: Vec<(String, PathBuf)> = Vec::new();
    for lib in &needed {
        let host_path = resolve_library(lib, arch)?;
        wanted.push((lib.clone(), host_path));
    }
    let rootfs = work.join("rootfs");
    for dir in [
        "usr/bin",
        "proc",
        "sys",
        "dev",
        "tmp",
        "host",
        "etc/syscost",
    ] {
        fs::create_dir_all(rootfs.join(dir))?;
    }
    copy_mode(&binary, &rootfs.join("usr/bin/syscost"), 0o755)?;
    copy_mode(
        &unpacked.join("usr/share/doc/syscost/LICENSE"),
        &rootfs.join("usr/share/doc/syscost/LICENSE"),
        0o644,
    )?;

    // Each library's package at the version installed here, from the apt sources.
    let debs = work.join("debs");
    fs::create_dir_all(&debs)?;
    let mut packages: Vec<(String, String)> = Vec::new();
    let mut files = wanted.clone();
    files.push((interpreter.clone(), PathBuf::from(&interpreter)));
    for (_, host_path) in &files {
        let pkg = owning_package(host_path)?;
        if !packages.iter().any(|(p, _)| *p == pkg) {
            let version =
                output(Command::new("dpkg-query").args(["-W", "-f", "${Version}", &pkg]))?;
            packages.push((pkg, version.trim().to_string()));
        }
    }
    let extracted = work.join("packages");
    for (pkg, version) in &packages {
        download(&debs, pkg, version, &extracted)?;
    }
    for (lib, host_path) in &wanted {
        let from = extracted.join(host_path.strip_prefix("/").unwrap_or(host_path));
        let to = rootfs.join(format!(
            "lib/{}/{lib}",
            arch.gnu_prefix().trim_end_matches('-')
        ));
        copy_resolved(&extracted, &from, &to, 0o644)?;
    }
    let rel = interpreter.trim_start_matches('/');
    copy_resolved(&extracted, &extracted.join(rel), &rootfs.join(rel), 0o755)?;
    // Each package's copyright; a package whose doc folder is a link to another's
    // (libgcc-s1's to gcc-12-base's) has it in that one, at the same version.
    for (pkg, version) in &packages {
        let (name, arch_suffix) = pkg.split_once(':').unwrap_or((pkg, ""));
        let doc = extracted.join(format!("usr/share/doc/{name}"));
        let mut from = name.to_string();
        if let Ok(target) = fs::read_link(&doc) {
            from = target.display().to_string();
            let other = if arch_suffix.is_empty() {
                from.clone()
            } else {
                format!("{from}:{arch_suffix}")
            };
            download(&debs, &other, version, &extracted)?;
        }
        let copyright = format!("usr/share/doc/{from}/copyright");
        copy_mode(&extracted.join(&copyright), &rootfs.join(&copyright), 0o644)?;
    }

    // The layer, then the OCI layout, then its archive.
    let layout = work.join("layout");
    let blobs = layout.join("blobs/sha256");
    fs::create_dir_all(&blobs)?;
    let layer_tar = work.join("layer.tar");
    reproducible_tar(&rootfs, &layer_tar, epoch)?;
    let diff_id = sha256(&layer_tar)?;
    let layer_gz = work.join("layer.tar.gz");
    let gz = Command::new("gzip")
        .args(["-n", "-9", "-c"])
        .arg(&layer_tar)
        .output()
        .context("cannot run gzip")?;
    if !gz.status.success() {
        bail!("gzip failed");
    }
    fs::write(&layer_gz, &gz.stdout)?;
    let layer_digest = sha256(&layer_gz)?;
    fs::rename(&layer_gz, blobs.join(&layer_digest))?;

    let created = output(Command::new("date").args([
        "-u",
        "-d",
        &format!("@{epoch}"),
        "+%Y-%m-%dT%H:%M:%SZ",
    ]))?
    .trim()
    .to_string();
    let version = env!("CARGO_PKG_VERSION");
    let labels = json!({
        "org.opencontainers.image.title": "syscost",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": "MIT OR Apache-2.0",
        "org.opencontainers.image.description": "syscost export: syscall counts, errors and latencies of every process of a node, for Prometheus",
    });
    let config = json!({
        "created": created,
        "architecture": arch.debian(),
        "os": "linux",
        "config": {
            "User": "0:0",
            "Entrypoint": ["/usr/bin/syscost"],
            "Cmd": ["export", "--top", "--metrics-addr", format!("0.0.0.0:{PORT}")],
            "ExposedPorts": { format!("{PORT}/tcp"): {} },
            "Labels": labels,
        },
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{diff_id}")] },
        "history": [{ "created": created, "created_by": "cargo xtask image" }],
    });
    let (config_digest, config_size) = write_blob(&blobs, &config)?;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": format!("sha256:{config_digest}"),
            "size": config_size,
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": format!("sha256:{layer_digest}"),
            "size": fs::metadata(blobs.join(&layer_digest))?.len(),
        }],
        "annotations": labels,
    });
    let (manifest_digest, manifest_size) = write_blob(&blobs, &manifest)?;
    let index = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": format!("sha256:{manifest_digest}"),
            "size": manifest_size,
            "annotations": { "org.opencontainers.image.ref.name": name() },
        }],
    });
    fs::write(layout.join("index.json"), serde_json::to_vec(&index)?)?;
    fs::write(
        layout.join("oci-layout"),
        serde_json::to_vec(&json!({ "imageLayoutVersion": "1.0.0" }))?,
    )?;
    let archive = out.join(format!("syscost-{version}-{}.oci.tar", arch.debian()));
    reproducible_tar(&layout, &archive, epoch)?;

    let mut contents = Vec::new();
    listing(&rootfs, &rootfs, &mut contents)?;
    contents.sort();
    let _ = fs::remove_dir_all(&work);
    Ok(Image {
        archive,
        digest: format!("sha256:{manifest_digest}"),
        name: name(),
        contents,
    })
}

/// `cargo xtask image`: builds it and says what it holds.
pub fn image(root: &Path) -> Result<()> {
    let image = build_all(root)?;
    let size = fs::metadata(&image.archive)?.len();
    println!(
        "{} ({:.1} MB), {} as {}",
        image.archive.display(),
        size as f64 / 1e6,
        image.digest,
        image.name
    );
    for (file, bytes) in &image.contents {
        println!("  {bytes:>10}  /{file}");
    }
    println!("load it with: podman load -i {}", image.archive.display());
    Ok(())
}

/// Package `pkg` at `version` from the apt sources, unpacked into `into`.
fn download(debs: &Path, pkg: &str, version: &str, into: &Path) -> Result<()> {
    let before: Vec<PathBuf> = fs::read_dir(debs)?.flatten().map(|e| e.path()).collect();
    let get = |what: &str| {
        run(Command::new("apt-get")
            .current_dir(debs)
            .args(["-o", "APT::Sandbox::User=root", "download", "-q"])
            .arg(what))
    };
    // The version installed here, which the binary was linked and tested against; where
    // the sources have moved past it, theirs (the same package, a later fix).
    if get(&format!("{pkg}={version}")).is_err() {
        eprintln!("image: {pkg} {version} is no longer in the apt sources; taking their version");
        get(pkg).with_context(|| format!("cannot download {pkg} from the apt sources"))?;
    }
    for entry in fs::read_dir(debs)? {
        let path = entry?.path();
        if !before.contains(&path) {
            run(Command::new("dpkg-deb").arg("-x").arg(&path).arg(into))?;
        }
    }
    Ok(())
}

/// SOURCE_DATE_EPOCH when set, else the time of the commit built.
fn source_date_epoch(root: &Path) -> Result<u64> {
    if let Ok(s) = std::env::var("SOURCE_DATE_EPOCH") {
        return s
            .trim()
            .parse()
            .context("SOURCE_DATE_EPOCH is not a number");
    }
    output(
        Command::new("git")
            .current_dir(root)
            .args(["log", "-1", "--format=%ct"]),
    )?
    .trim()
    .parse()
    .context("cannot read the commit's time")
}

/// The NEEDED libraries of an ELF file and its interpreter (`readelf`).
fn elf_needs(binary: &Path) -> Result<(Vec<String>, String)> {
    let dynamic = output(Command::new("readelf").arg("-d").arg(binary))?;
    let needed = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next().map(str::to_string))
        .collect();
    let headers = output(Command::new("readelf").arg("-l").arg(binary))?;
    let interpreter = headers
        .lines()
        .find_map(|l| {
            l.split("Requesting program interpreter: ")
                .nth(1)?
                .split(']')
                .next()
                .map(str::to_string)
        })
        .context("the binary names no interpreter")?;
    Ok((needed, interpreter))
}

/// Where this machine keeps library `lib` of `arch`.
fn resolve_library(lib: &str, arch: Arch) -> Result<PathBuf> {
    for dir in ["/lib", "/usr/lib"] {
        let p = Path::new(dir)
            .join(arch.gnu_prefix().trim_end_matches('-'))
            .join(lib);
        if p.exists() {
            return Ok(p);
        }
    }
    bail!(
        "{lib} is not in /lib/{0} or /usr/lib/{0}",
        arch.gnu_prefix().trim_end_matches('-')
    )
}

/// The package that owns `path` (`dpkg -S`), as `name:arch`; the /usr-merged path
/// tried too.
fn owning_package(path: &Path) -> Result<String> {
    let mut tries = vec![path.to_path_buf()];
    if let Ok(rest) = path.strip_prefix("/usr") {
        tries.push(Path::new("/").join(rest));
    } else {
        tries.push(Path::new("/usr").join(path.strip_prefix("/").unwrap_or(path)));
    }
    for p in tries {
        if let Ok(o) = Command::new("dpkg").arg("-S").arg(&p).output()
            && o.status.success()
        {
            let text = String::from_utf8_lossy(&o.stdout);
            if let Some(pkg) = text.lines().next().and_then(|l| l.split(": ").next()) {
                return Ok(pkg.to_string());
            }
        }
    }
    bail!("no package owns {}", path.display())
}

fn copy_mode(from: &Path, to: &Path, mode: u32) -> Result<()> {
    if let Some(dir) = to.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::copy(from, to).with_context(|| format!("cannot copy {}", from.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Copies `from`, a file of the tree at `tree` (links resolved inside the tree, as the
/// package made them), to `to`.
fn copy_resolved(tree: &Path, from: &Path, to: &Path, mode: u32) -> Result<()> {
    let mut at = from.to_path_buf();
    for _ in 0..8 {
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs::read_link(&at)?;
                at = if target.is_absolute() {
                    tree.join(target.strip_prefix("/").unwrap_or(&target))
                } else {
                    at.parent().unwrap_or(tree).join(target)
                };
            }
            Ok(_) => return copy_mode(&at, to, mode),
            Err(e) => {
                // A /usr-merged package keeps it under usr/.
                let rel = at.strip_prefix(tree).unwrap_or(&at).to_path_buf();
                let merged = tree.join("usr").join(&rel);
                if !rel.starts_with("usr") && fs::symlink_metadata(&merged).is_ok() {
                    at = merged;
                    continue;
                }
                return Err(e).with_context(|| format!("no {} in the packages", at.display()));
            }
        }
    }
    bail!("too many links from {}", from.display())
}

/// A tar of `dir`'s contents that depends on nothing but them: names sorted, one time,
/// owner root, no access or change times.
fn reproducible_tar(dir: &Path, to: &Path, epoch: u64) -> Result<()> {
    run(Command::new("tar")
        .arg("--sort=name")
        .arg(format!("--mtime=@{epoch}"))
        .args([
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "--format=posix",
            "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
            "-cf",
        ])
        .arg(to)
        .arg("-C")
        .arg(dir)
        .arg("."))
}

fn sha256(file: &Path) -> Result<String> {
    let o = output(Command::new("sha256sum").arg(file))?;
    o.split_whitespace()
        .next()
        .map(str::to_string)
        .context("sha256sum printed nothing")
}

/// Writes a JSON blob under its digest; its digest and size.
fn write_blob(blobs: &Path, value: &serde_json::Value) -> Result<(String, usize)> {
    let bytes = serde_json::to_vec(value)?;
    let tmp = blobs.join("new");
    fs::write(&tmp, &bytes)?;
    let digest = sha256(&tmp)?;
    fs::rename(&tmp, blobs.join(&digest))?;
    Ok((digest, bytes.len()))
}

fn listing(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>) -> Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        let m = e.metadata()?;
        if m.is_dir() {
            listing(base, &e.path(), out)?;
        } else {
            let rel = e.path().strip_prefix(base)?.display().to_string();
            out.push((rel, m.len()));
        }
    }
    Ok(())
}
