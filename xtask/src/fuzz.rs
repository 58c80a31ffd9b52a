//! `cargo xtask fuzz`: the fuzz targets of `fuzz/` (cargo-fuzz, libFuzzer, AddressSanitizer)
//! built with the nightly, then each run for a time from its seed corpus (`fuzz/corpus/T`)
//! and what it found before (`fuzz/target/corpus/T`); a crash, a timeout or a memory
//! blow-up fails the task and names the input (under `fuzz/artifacts/T`).

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::setup;

/// The fuzz targets, one per parser of what hostile inputs reach (`fuzz/fuzz_targets/`).
pub const TARGETS: [&str; 7] = [
    "kernel_btf",
    "maps",
    "slow_record",
    "web_config",
    "authorization",
    "profile",
    "pprof",
];

/// One input running longer than this is a hang.
const TIMEOUT_S: u64 = 10;
/// A run growing past this (or one allocation this large) is a blow-up.
const RSS_LIMIT_MB: u64 = 2048;
/// A run still going this long after its time (its corpus read included) is killed: a
/// hang libFuzzer's own alarm did not catch.
const GRACE_S: u64 = 300;

/// Builds every target, then runs `only` (every target when empty) for `seconds` each.
pub fn fuzz(root: &Path, seconds: u64, only: &[String]) -> Result<()> {
    for t in only {
        if !TARGETS.contains(&t.as_str()) {
            bail!("no fuzz target {t} (the targets: {})", TARGETS.join(", "));
        }
    }
    let targets: Vec<&str> = if only.is_empty() {
        TARGETS.to_vec()
    } else {
        TARGETS
            .into_iter()
            .filter(|t| only.iter().any(|o| o == t))
            .collect()
    };
    setup::cargo_fuzz()?;
    let start = Instant::now();
    setup::run(cargo_fuzz(root).arg("build"))?;
    let bin_dir = root
        .join("fuzz/target")
        .join(crate::arch::Arch::host().triple())
        .join("release");
    eprintln!(
        "fuzz: targets built in {:.0} s",
        start.elapsed().as_secs_f64()
    );
    let logs = root.join("fuzz/target/logs");
    fs::create_dir_all(&logs)?;
    let mut failed = Vec::new();
    for t in &targets {
        let work = root.join("fuzz/target/corpus").join(t);
        let artifacts = root.join("fuzz/artifacts").join(t);
        fs::create_dir_all(&work)?;
        fs::create_dir_all(&artifacts)?;
        let before = files(&artifacts)?;
        let log_path = logs.join(format!("{t}.log"));
        let log = fs::File::create(&log_path)
            .with_context(|| format!("cannot write {}", log_path.display()))?;
        eprintln!(
            "fuzz: {t} for {seconds} s (log: {})",
            relative(root, &log_path)
        );
        let started = Instant::now();
        // The binary run directly, not through `cargo fuzz run` (which would build again,
        // and in a tree being edited, from other sources than the other targets').
        // New inputs go to the first corpus folder (outside the repository's files); the
        // seeds are read only.
        let mut child = Command::new(bin_dir.join(t))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-timeout={TIMEOUT_S}"))
            .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
            .arg("-print_final_stats=1")
            .arg(&work)
            .arg(root.join("fuzz/corpus").join(t))
            .env("ASAN_OPTIONS", asan_options())
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot run {}", bin_dir.join(t).display()))?;
        let status = wait_at_most(&mut child, seconds + GRACE_S)?;
        let text = fs::read_to_string(&log_path).unwrap_or_default();
        let runs = stat(&text, "stat::number_of_executed_units:");
        let new: Vec<PathBuf> = files(&artifacts)?.difference(&before).cloned().collect();
        let elapsed = started.elapsed().as_secs_f64();
        if status.is_some_and(|s| s.success()) && new.is_empty() {
            eprintln!(
                "fuzz: {t}: ok, {} runs in {elapsed:.0} s",
                runs.as_deref().unwrap_or("?")
            );
            continue;
        }
        eprintln!("{}", failure_excerpt(&text));
        let how = match status {
            Some(status) => status.to_string(),
            None => format!("killed: still running {GRACE_S} s after its time"),
        };
        eprintln!("fuzz: {t}: FAILED ({how}) after {elapsed:.0} s");
        for f in &new {
            eprintln!(
                "fuzz: {t}: failing input {} (reproduce: {} {0}, or cargo +nightly fuzz run {t} {0})",
                relative(root, f),
                relative(root, &bin_dir.join(t)),
            );
        }
        failed.push(*t);
    }
    if !failed.is_empty() {
        bail!("fuzz targets failed: {}", failed.join(", "));
    }
    Ok(())
}

/// `cargo fuzz` under the nightly at the repository's root, its targets in
/// `fuzz/target/TRIPLE/release` whatever the environment says, with nothing of the
/// stable cargo that runs xtask (its flags would replace cargo-fuzz's own).
fn cargo_fuzz(root: &Path) -> Command {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", "nightly", "cargo", "fuzz"])
        .current_dir(root)
        .env("PATH", setup::path_with_cargo_bin());
    for key in [
        "CARGO",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTUP_TOOLCHAIN",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_ENCODED_RUSTFLAGS",
    ] {
        cmd.env_remove(key);
    }
    cmd
}

/// The child's status, or `None` when it was killed for outliving `seconds`.
fn wait_at_most(child: &mut std::process::Child, seconds: u64) -> Result<Option<ExitStatus>> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The sanitizer's options as cargo-fuzz sets them (ODR checks off: the same symbols
/// come from more than one crate), after any given.
fn asan_options() -> String {
    match std::env::var("ASAN_OPTIONS") {
        Ok(o) if !o.is_empty() => format!("{o}:detect_odr_violation=0"),
        _ => "detect_odr_violation=0".to_string(),
    }
}

fn files(dir: &Path) -> Result<BTreeSet<PathBuf>> {
    Ok(fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect())
}

/// The value libFuzzer's `-print_final_stats` gives `key`.
fn stat(log: &str, key: &str) -> Option<String> {
    log.lines()
        .rev()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim().to_string())
}

/// What a failed run said from its first sign of trouble (the sanitizer's or libFuzzer's
/// report, a panic's message, the stack), or the log's last lines.
fn failure_excerpt(log: &str) -> String {
    const MARKS: [&str; 6] = [
        "==ERROR:",
        "panicked at",
        "ERROR: libFuzzer",
        "ALARM: working on the last Unit",
        "==WARNING:",
        "error:",
    ];
    let lines: Vec<&str> = log.lines().collect();
    let first = lines
        .iter()
        .position(|l| MARKS.iter().any(|m| l.contains(m)))
        .map(|i| i.saturating_sub(3))
        .unwrap_or(lines.len().saturating_sub(100));
    lines[first..].join("\n")
}

fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}
