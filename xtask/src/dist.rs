//! `cargo xtask dist`: the Debian package (cargo-deb) and a release tarball of the same
//! files: the binary with its kernel programs embedded, manual pages, shell completions
//! and the README. `--check` installs the package, runs it, removes it, and checks that
//! nothing of it is left.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::Arch,
    setup::{self, output, run},
};

/// Shells whose completions the package installs, with the file each is saved as.
const COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "syscost.bash"),
    ("zsh", "_syscost"),
    ("fish", "syscost.fish"),
];

/// The package and the tarball of `arch` in target/dist (each architecture's beside
/// the other's: a run replaces only its own), from its release build.
pub fn dist(root: &Path, arch: Arch, check: bool) -> Result<()> {
    let syscost = arch.out_dir(root, "release").join("syscost");
    let dist = root.join("target/dist");
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("syscost-{version}-{}-linux", arch.name());
    let (man, completions) = (dist.join("man"), dist.join("completions"));
    for old in [&man, &completions, &dist.join(&name)] {
        let _ = fs::remove_dir_all(old);
    }
    if let Ok(entries) = fs::read_dir(&dist) {
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            if is_package_of(&file, arch) || file == format!("{name}.tar.gz") {
                fs::remove_file(e.path())?;
            }
        }
    }
    fs::create_dir_all(&completions)?;
    // The binary writes its own pages and completions (another architecture's under
    // qemu's user mode).
    run(arch.command(&syscost).arg("man").arg(&man))?;
    for (shell, file) in COMPLETIONS {
        let o = arch
            .command(&syscost)
            .args(["completions", shell])
            .output()
            .context("cannot run syscost completions")?;
        if !o.status.success() {
            bail!("syscost completions {shell} failed");
        }
        fs::write(completions.join(file), o.stdout)?;
    }

    setup::cargo_deb()?;
    let mut deb_cmd = Command::new("cargo");
    deb_cmd
        .current_dir(root)
        .env("PATH", setup::path_with_cargo_bin())
        .args(["deb", "-p", "syscost-user", "--no-build", "--no-strip"]);
    // cargo-deb takes the binary from target/TRIPLE/release and names the package's
    // architecture after the triple.
    if !arch.is_host() {
        deb_cmd.args(["--target", arch.triple()]);
    }
    run(deb_cmd.arg("-o").arg(&dist))?;
    let deb = package_in(&dist, arch)?
        .with_context(|| format!("cargo deb wrote no {} package", arch.debian()))?;

    let stage = dist.join(&name);
    // The layout of a prefix (/usr/local, ~/.local): bin/, share/man/man1/, and the
    // completions where bash, zsh and fish look under it.
    for dir in [
        "bin",
        "share/man/man1",
        "share/bash-completion/completions",
        "share/zsh/site-functions",
        "share/fish/vendor_completions.d",
    ] {
        fs::create_dir_all(stage.join(dir))?;
    }
    fs::copy(&syscost, stage.join("bin/syscost"))?;
    for page in fs::read_dir(&man)? {
        let page = page?.path();
        fs::copy(
            &page,
            stage.join("share/man/man1").join(page.file_name().unwrap()),
        )?;
    }
    for (from, to) in [
        ("syscost.bash", "share/bash-completion/completions/syscost"),
        ("_syscost", "share/zsh/site-functions/_syscost"),
        (
            "syscost.fish",
            "share/fish/vendor_completions.d/syscost.fish",
        ),
    ] {
        fs::copy(completions.join(from), stage.join(to))?;
    }
    fs::copy(root.join("README.md"), stage.join("README.md"))?;
    // The README's links lead into docs/: the reference goes with it.
    fs::create_dir_all(stage.join("docs"))?;
    for entry in fs::read_dir(root.join("docs"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "md") {
            fs::copy(&path, stage.join("docs").join(path.file_name().unwrap()))?;
        }
    }
    fs::copy(root.join("LICENSE"), stage.join("LICENSE"))?;
    let tarball = dist.join(format!("{name}.tar.gz"));
    run(Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dist)
        .arg(&name))?;
    println!("{}\n{}", deb.display(), tarball.display());
    if check && arch.is_host() {
        install_check(&deb)?;
    } else if check {
        foreign_check(root, arch, &deb, &tarball)?;
    }
    Ok(())
}

/// Whether a file name is a Debian package of `arch` (`syscost_0.1.0-1_arm64.deb`).
fn is_package_of(file: &str, arch: Arch) -> bool {
    file.ends_with(&format!("_{}.deb", arch.debian()))
}

/// The package of `arch` in `dir`, if there is one.
pub fn package_in(dir: &Path, arch: Arch) -> Result<Option<PathBuf>> {
    Ok(fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| is_package_of(&p.to_string_lossy(), arch)))
}

/// The files of a package (`dpkg-deb -c`) or a tarball (`tar -tzf`), by path; the
/// tarball's top folder (which names the architecture) taken off.
fn listing(archive: &Path) -> Result<Vec<String>> {
    let deb = archive.extension().is_some_and(|e| e == "deb");
    let text = if deb {
        output(Command::new("dpkg-deb").arg("-c").arg(archive))?
    } else {
        output(Command::new("tar").arg("-tzf").arg(archive))?
    };
    let mut files: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let path = if deb { l.split_whitespace().last()? } else { l };
            let path = path.trim_start_matches("./");
            let path = if deb {
                path
            } else {
                path.split_once('/').map_or("", |(_, rest)| rest)
            };
            (!path.is_empty() && !path.ends_with('/')).then(|| path.to_string())
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Another architecture's package, which this machine cannot install: its control
/// names the architecture, its syscost is that architecture's and runs (qemu's user
/// mode), and the package and the tarball hold the same files as this machine's (built
/// first when missing).
fn foreign_check(root: &Path, arch: Arch, deb: &Path, tarball: &Path) -> Result<()> {
    let field = output(
        Command::new("dpkg-deb")
            .args(["-f"])
            .arg(deb)
            .arg("Architecture"),
    )?;
    if field != arch.debian() {
        bail!(
            "{}: Architecture {field}, expected {}",
            deb.display(),
            arch.debian()
        );
    }
    let syscost = arch.out_dir(root, "release").join("syscost");
    let elf = fs::read(&syscost)?;
    // e_machine at byte 18: EM_X86_64 62, EM_AARCH64 183.
    let machine = elf.get(18..20).map(|m| u16::from_le_bytes([m[0], m[1]]));
    let expected = match arch {
        Arch::X86_64 => 62,
        Arch::Aarch64 => 183,
    };
    if machine != Some(expected) {
        bail!(
            "{}: e_machine {machine:?}, not {}",
            syscost.display(),
            arch.name()
        );
    }
    let version = output(arch.command(&syscost).arg("--version"))?;
    if !version.starts_with("syscost ") {
        bail!("{} --version printed {version:?}", syscost.display());
    }
    let host = crate::arch::Arch::host();
    let dist_dir = root.join("target/dist");
    let version_no = env!("CARGO_PKG_VERSION");
    let host_tarball = dist_dir.join(format!("syscost-{version_no}-{}-linux.tar.gz", host.name()));
    let host_deb = package_in(&dist_dir, host)?;
    let (host_deb, host_tarball) = match host_deb {
        Some(d) if host_tarball.exists() => (d, host_tarball),
        _ => {
            crate::arch::build(root)?;
            dist(root, host, false)?;
            return foreign_check(root, arch, deb, tarball);
        }
    };
    for (mine, theirs) in [(deb, &host_deb), (tarball, &host_tarball)] {
        let (a, b) = (listing(mine)?, listing(theirs)?);
        if a != b {
            bail!(
                "{} and {} hold different files: {:?} against {:?}",
                mine.display(),
                theirs.display(),
                a.iter().filter(|f| !b.contains(f)).collect::<Vec<_>>(),
                b.iter().filter(|f| !a.contains(f)).collect::<Vec<_>>()
            );
        }
    }
    println!(
        "dist --check: {} package (Architecture {field}, {} files, the same as {}'s), {version} under qemu-{}",
        arch.name(),
        listing(deb)?.len(),
        host.name(),
        arch.name()
    );
    Ok(())
}

/// Files the package installs that exist outside any package, which dpkg would
/// overwrite without a word (and the purge then delete).
fn unowned_destinations(deb: &Path) -> Result<Vec<PathBuf>> {
    let listing = output(Command::new("dpkg-deb").arg("-c").arg(deb))?;
    Ok(listing
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| PathBuf::from(p.trim_start_matches('.')))
        .filter(|p| p.is_file())
        .filter(|p| {
            !Command::new("dpkg")
                .args(["-S"])
                .arg(p)
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect())
}

/// Installs the package, runs the installed syscost, removes the package and checks that
/// none of its files is left. A syscost package already installed is left alone (the
/// check is skipped, loudly); under CI it is an error.
fn install_check(deb: &Path) -> Result<()> {
    if !setup::is_root() {
        bail!("dist --check installs the package: run it as root");
    }
    if Command::new("dpkg")
        .args(["-s", "syscost"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let msg = "a syscost package is installed on this machine: the package check leaves it alone (remove it with dpkg --purge syscost to run the check)";
        if std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false")) {
            bail!("{msg}");
        }
        eprintln!("\n*** SKIPPED package check: {msg} ***\n");
        return Ok(());
    }
    let stray = unowned_destinations(deb)?;
    if !stray.is_empty() {
        bail!("files the package would overwrite exist outside any package: {stray:?}");
    }
    // Whatever happens once dpkg starts, the package is purged again.
    let result = (|| -> Result<Vec<PathBuf>> {
        run(Command::new("dpkg").arg("-i").arg(deb))?;
        let files: Vec<PathBuf> = output(Command::new("dpkg").args(["-L", "syscost"]))?
            .lines()
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .collect();
        for needed in [
            "/usr/bin/syscost",
            "/usr/share/bash-completion/completions/syscost",
            "/usr/share/zsh/vendor-completions/_syscost",
            "/usr/share/fish/vendor_completions.d/syscost.fish",
            "/usr/share/doc/syscost/LICENSE",
            "/usr/share/doc/syscost/copyright",
            "/usr/share/doc/syscost/grafana/syscost.json",
            "/etc/default/syscost",
        ] {
            if !files.iter().any(|f| f == Path::new(needed)) {
                bail!("the package does not install {needed}");
            }
        }
        service_check(&files)?;
        for page in ["syscost.1", "syscost-run.1", "syscost-doctor.1"] {
            if !files
                .iter()
                .any(|f| f.starts_with("/usr/share/man/man1") && f.to_string_lossy().contains(page))
            {
                bail!("the package installs no {page} manual page");
            }
        }
        // /usr/bin is on PATH, and the package's syscost there profiles a command.
        let path = std::env::var("PATH").unwrap_or_default();
        if !std::env::split_paths(&path).any(|p| p == Path::new("/usr/bin")) {
            bail!("/usr/bin is not on PATH");
        }
        let o = Command::new("/usr/bin/syscost")
            .args(["run", "--", "true"])
            .output()?;
        if !o.status.success() || !String::from_utf8_lossy(&o.stderr).contains("execve") {
            bail!(
                "the installed syscost run -- true failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        println!(
            "dist --check: installed {} files, syscost run -- true works",
            files.len()
        );
        Ok(files)
    })();
    let purged = run(Command::new("dpkg").args(["--purge", "syscost"]));
    let files = result?;
    purged?;
    let left: Vec<&PathBuf> = files.iter().filter(|f| f.exists()).collect();
    if !left.is_empty() {
        bail!("files left after dpkg --purge: {left:?}");
    }
    println!("dist --check: removed, nothing left");
    Ok(())
}

/// The installed service: not enabled, its unit as systemd reads it (`systemd-analyze
/// verify`), its sandbox's exposure at most 4.0 of 10 (`systemd-analyze security`), and
/// its command, with the options of /etc/default/syscost, working as a user of no
/// privilege with the unit's capabilities only, as systemd would start it. (The test
/// machines do not run systemd as their init: the unit is checked, not started.)
fn service_check(files: &[PathBuf]) -> Result<()> {
    let enabled: Vec<String> =
        output(Command::new("find").args(["/etc/systemd/system", "-name", "syscost.service"]))?
            .lines()
            .map(str::to_string)
            .collect();
    if !enabled.is_empty() {
        bail!("the package enabled its service: {enabled:?}");
    }
    // Where cargo-deb puts units (/usr/lib/systemd/system, /lib/... before).
    let unit = files
        .iter()
        .find(|f| f.ends_with("systemd/system/syscost.service"))
        .context("the package installs no systemd/system/syscost.service")?;
    let unit = unit.to_str().context("a unit path of UTF-8")?;
    let analyze = |args: &[&str]| -> Result<String> {
        let o = Command::new("systemd-analyze")
            .args(args)
            .arg(unit)
            .output()
            .context("cannot run systemd-analyze (Debian's systemd package)")?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if !o.status.success() {
            bail!("systemd-analyze {} {unit}: {text}", args.join(" "));
        }
        Ok(text)
    };
    let verified = analyze(&["verify"])?;
    if verified.lines().any(|l| l.contains("syscost.service")) {
        bail!("systemd-analyze verify {unit}: {verified}");
    }
    let security = analyze(&["security", "--offline=true", "--threshold=40"])?;
    let exposure = security
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_default()
        .trim()
        .to_string();

    // The unit's command and capabilities, run as it would run them.
    let text = fs::read_to_string(unit)?;
    let setting = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(str::to_string)
            .with_context(|| format!("{unit} has no {key}="))
    };
    let exec = setting("ExecStart")?;
    let caps = setting("AmbientCapabilities")?;
    if setting("CapabilityBoundingSet")? != caps {
        bail!("{unit}: the bounding set is not the ambient capabilities");
    }
    let caps: Vec<String> = caps
        .split_whitespace()
        .map(|c| format!("+{}", c.trim_start_matches("CAP_").to_lowercase()))
        .collect();
    let caps = format!("-all,{}", caps.join(","));
    let script = format!(
        ". /etc/default/syscost && {{ ulimit -l unlimited 2>/dev/null; exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --inh-caps={caps} --ambient-caps={caps} --bounding-set={caps} -- {exec} -d 0.5; }}"
    );
    let o = Command::new("sh")
        .args(["-c", &script])
        .output()
        .context("cannot run the service's command")?;
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() || !err.contains("syscost: serving the syscalls of every process") {
        bail!("the service's command ({exec}, capabilities {caps}) failed: {err}");
    }
    println!(
        "dist --check: service not enabled; unit verified; {exposure}; its command works with {caps} as nobody"
    );
    Ok(())
}
