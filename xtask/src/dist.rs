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

use crate::setup::{self, output, run};

/// Shells whose completions the package installs, with the file each is saved as.
const COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "syscost.bash"),
    ("zsh", "_syscost"),
    ("fish", "syscost.fish"),
];

pub fn dist(root: &Path, check: bool) -> Result<()> {
    let syscost = root.join("target/release/syscost");
    let dist = root.join("target/dist");
    let _ = fs::remove_dir_all(&dist);
    let (man, completions) = (dist.join("man"), dist.join("completions"));
    fs::create_dir_all(&completions)?;
    run(Command::new(&syscost).arg("man").arg(&man))?;
    for (shell, file) in COMPLETIONS {
        let o = Command::new(&syscost)
            .args(["completions", shell])
            .output()
            .context("cannot run syscost completions")?;
        if !o.status.success() {
            bail!("syscost completions {shell} failed");
        }
        fs::write(completions.join(file), o.stdout)?;
    }

    setup::cargo_deb()?;
    run(Command::new("cargo")
        .current_dir(root)
        .env("PATH", setup::path_with_cargo_bin())
        .args([
            "deb",
            "-p",
            "syscost-user",
            "--no-build",
            "--no-strip",
            "-o",
        ])
        .arg(&dist))?;
    let deb = fs::read_dir(&dist)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("cargo deb wrote no package")?;

    let version = env!("CARGO_PKG_VERSION");
    let name = format!("syscost-{version}-{}-linux", std::env::consts::ARCH);
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
    if check {
        install_check(&deb)?;
    }
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
        ] {
            if !files.iter().any(|f| f == Path::new(needed)) {
                bail!("the package does not install {needed}");
            }
        }
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
