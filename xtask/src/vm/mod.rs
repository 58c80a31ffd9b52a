//! `cargo xtask vm-test [KERNEL...]`: the kernel suite on every kernel of the matrix,
//! each booted in qemu with an initramfs of the test binaries. One line per kernel,
//! `kernel 5.10.0-32-cloud-amd64: N passed, 0 failed`, arm64's under
//! `qemu-system-aarch64 -machine virt`, two VMs at a time; any failure, panic, hang or
//! missing result fails the task, with the consoles' last lines shown.

mod initramfs;
mod kernels;
mod suite;

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{arch::Arch, setup::output};

/// The most one kernel may take, boot to power-off (TCG runs the suite in a few minutes,
/// arm64's beside another VM in about 15).
fn kernel_timeout(arch: Arch) -> Duration {
    Duration::from_secs(if arch.is_host() { 900 } else { 1800 })
}

pub fn vm_test(
    root: &Path,
    wanted: &[String],
    arch: Option<Arch>,
    only: &[String],
    repeat: usize,
) -> Result<()> {
    let kernels = kernels::select(wanted, arch)?;
    let runs = suite::runs(only, repeat)?;
    let started = Instant::now();
    let mut arches: Vec<Arch> = kernels.iter().map(|k| k.arch).collect();
    arches.dedup();
    if arches.iter().any(|a| !a.is_host()) {
        crate::setup::cross_packages()?;
    }
    let vm_dir = root.join("target/vm");
    fs::create_dir_all(&vm_dir)?;
    // Each architecture's tests and archive, built one after the other (a build takes
    // both cores).
    let mut archives = BTreeMap::new();
    for &a in &arches {
        let built = build_tests(root, a)?;
        let archive = vm_dir.join(format!("initramfs-{}.cpio", a.name()));
        fs::write(&archive, initramfs_for(&built, &runs)?.cpio()?)?;
        archives.insert(a, archive);
    }
    let accel = accelerator();
    let expected = runs.iter().map(|(_, t)| t.len() as u64).sum::<u64>();
    // Two emulators at a time (TCG runs each VM on one host thread, and this machine
    // has two cores), taking the kernels in the matrix's order, arm64's first (they
    // take the longest).
    let mut queue: Vec<&kernels::Kernel> = kernels.clone();
    queue.sort_by_key(|k| k.arch.is_host());
    let queue = std::sync::Mutex::new(queue.into_iter());
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    loop {
                        let Some(k) = queue.lock().unwrap().next() else {
                            return Ok(());
                        };
                        if !run_kernel(k, &archives[&k.arch], &vm_dir, accel, expected)? {
                            failed.lock().unwrap().push(k.release);
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a kernel's thread panicked")?;
        }
        Ok(())
    })?;
    let failed = failed.into_inner().unwrap();
    println!(
        "vm-test: {} kernel(s) in {} s (x86_64: {accel}, arm64: tcg; two at a time)",
        kernels.len(),
        started.elapsed().as_secs()
    );
    if !failed.is_empty() {
        bail!("the kernel suite failed on {}", failed.join(", "));
    }
    Ok(())
}

/// Boots one kernel with its architecture's archive and prints its line (with the
/// consoles' last lines when anything failed). Whether the whole suite passed.
fn run_kernel(
    k: &kernels::Kernel,
    archive: &Path,
    vm_dir: &Path,
    accel: &str,
    expected: u64,
) -> Result<bool> {
    let image = k.vmlinuz()?;
    let t = Instant::now();
    let result = boot(k.arch, &image, archive, vm_dir, k.release, accel)?;
    let secs = t.elapsed().as_secs();
    let passed_all = matches!(&result, Outcome::Finished(r)
        if r.failed == 0 && r.problems.is_empty() && r.passed == expected);
    // One block per kernel: the two architectures' threads print whole reports.
    let mut report = String::new();
    match &result {
        Outcome::Finished(r) if passed_all => {
            report += &format!(
                "kernel {}: {} passed, 0 failed ({secs} s)\n",
                k.release, r.passed
            );
        }
        Outcome::Finished(r) => {
            report += &format!(
                "kernel {}: {} passed, {} failed, {} of the suite's {expected} without a result ({secs} s)\n",
                k.release,
                r.passed,
                r.failed,
                expected.saturating_sub(r.passed + r.failed)
            );
            for p in &r.problems {
                report += &format!("  {p}\n");
            }
        }
        Outcome::Unfinished { why } => {
            report += &format!("kernel {}: no result ({why}, {secs} s)\n", k.release);
        }
    }
    if !passed_all {
        report += &tail(
            "console",
            &vm_dir.join(format!("{}.console", k.release)),
            40,
        );
        if k.arch.is_host() {
            report += &tail("tests", &vm_dir.join(format!("{}.tests", k.release)), 80);
        }
    }
    print!("{report}");
    Ok(passed_all)
}

/// The build of the suite's tests for `arch`, printing cargo's JSON messages: for this
/// machine the one `cargo test` made (every test binary); for another architecture its
/// suite's binaries only, in a target directory of their own (target/cross), so that it
/// may run beside this machine's build and tests (`cargo xtask test` starts it first).
pub fn test_build(root: &Path, arch: Arch) -> Command {
    let mut args = vec![
        "test",
        "--no-run",
        "-p",
        "syscost-user",
        "-p",
        "syscost-engine",
        "--message-format",
        "json-render-diagnostics",
    ];
    let cross_dir = root.join("target/cross");
    let cross_dir = cross_dir.to_str().expect("a UTF-8 checkout path");
    if arch.is_host() {
        args.push("--tests");
    } else {
        for (binary, _) in suite::SUITE {
            args.extend(["--test", binary]);
        }
        args.extend(["--target-dir", cross_dir]);
    }
    // Emulated arm64 runs a debug build (BTF and ELF parsing, the loader, the unwinder,
    // the symbolizer) some 10 times slower than x86_64's: it is optimized there, its
    // debug assertions and overflow checks kept; line tables are all the debug
    // information the tests' backtraces need.
    if arch == Arch::Aarch64 {
        args.extend(["--config", "profile.dev.opt-level=2"]);
        args.extend(["--config", "profile.dev.debug=\"line-tables-only\""]);
    }
    crate::arch::cargo(root, arch, &args)
}

/// The test binaries of syscost-user and syscost-engine by name, and the binaries they
/// start.
struct Built {
    arch: Arch,
    tests: BTreeMap<String, PathBuf>,
    programs: Vec<PathBuf>,
    /// The stack tests' C programs (tests/c/build.sh).
    c_programs: Vec<PathBuf>,
}

/// Builds the integration tests for `arch` (the same debug build `cargo test` makes,
/// cross-built for another architecture) and returns where cargo put them.
fn build_tests(root: &Path, arch: Arch) -> Result<Built> {
    let out = output(test_build(root, arch).stderr(Stdio::inherit()))?;
    let mut built = Built {
        arch,
        tests: BTreeMap::new(),
        programs: Vec::new(),
        c_programs: Vec::new(),
    };
    for line in out.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        let name = msg["target"]["name"].as_str().unwrap_or_default();
        let kinds = msg["target"]["kind"].to_string();
        if msg["profile"]["test"] == true && kinds.contains("\"test\"") {
            built.tests.insert(name.to_string(), PathBuf::from(exe));
        } else if kinds.contains("\"bin\"") {
            built.programs.push(PathBuf::from(exe));
        }
    }
    // The stack tests' C programs, where those tests look for them (the VMs have no
    // compiler): CARGO_TARGET_TMPDIR, beside the test binaries' deps/ directory
    // (target/tmp, or target/TRIPLE/tmp for another architecture).
    let exe = built
        .tests
        .values()
        .next()
        .context("no test binary built")?;
    let c_dir = exe
        .ancestors()
        .nth(3)
        .context("a test binary outside a target directory")?
        .join("tmp/c-workloads");
    let script = root.join("syscost-user/tests/c/build.sh");
    let mut sh = Command::new("sh");
    if !arch.is_host() {
        sh.env("CC", format!("{}gcc", arch.gnu_prefix()));
    }
    let status = sh.arg(&script).arg(&c_dir).status()?;
    if !status.success() {
        bail!("{} failed", script.display());
    }
    for e in fs::read_dir(&c_dir)? {
        let e = e?;
        built.c_programs.push(e.path());
    }
    for (binary, tests) in suite::SUITE {
        let exe = built
            .tests
            .get(*binary)
            .with_context(|| format!("cargo built no test binary '{binary}'"))?;
        let listed = output(arch.command(exe).args(["--list", "--format", "terse"]))?;
        let missing = suite::missing(tests, &listed);
        if !missing.is_empty() {
            bail!(
                "the kernel suite names tests {binary} lacks: {}",
                missing.join(", ")
            );
        }
    }
    Ok(built)
}

/// /init, busybox, the suite's test binaries and syscost's binaries at their build
/// paths (the tests find syscost there), and the libraries they load.
fn initramfs_for(built: &Built, runs: &[(&str, Vec<&str>)]) -> Result<initramfs::Tree> {
    let mut t = initramfs::Tree::default();
    if built.arch.is_host() {
        let busybox = Path::new("/bin/busybox");
        if !busybox.exists() {
            bail!("/bin/busybox is missing: install busybox-static");
        }
        t.copy_from_host(busybox)?;
    } else {
        t.file(
            Path::new("/bin/busybox"),
            kernels::BUSYBOX_ARM64.file("./bin/busybox")?,
            true,
        );
    }
    t.symlink("/bin/sh", "busybox");
    for d in [
        "/proc", "/sys", "/dev", "/tmp", "/root", "/run", "/usr/bin", "/sbin",
    ] {
        t.dir(d);
    }
    t.file(
        Path::new("/etc/passwd"),
        b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
            .to_vec(),
        false,
    );
    t.file(
        Path::new("/etc/group"),
        b"root:x:0:\nnogroup:x:65534:\n".to_vec(),
        false,
    );
    let mut binaries: Vec<PathBuf> = built.programs.clone();
    for (binary, _) in suite::SUITE {
        binaries.push(built.tests[*binary].clone());
    }
    binaries.extend(built.c_programs.iter().cloned());
    let mut libraries = Vec::new();
    for b in &binaries {
        // The init mounts these: a binary under one would be hidden.
        if ["/proc", "/sys", "/dev", "/run"]
            .iter()
            .any(|m| b.starts_with(m))
        {
            bail!("{} is under a directory the VM mounts over", b.display());
        }
        let c_program = built.c_programs.contains(b);
        // The C programs keep their debug information (one test reads its lines).
        let data = if c_program {
            fs::read(b)?
        } else {
            stripped(built.arch, b)?
        };
        t.file(b, data, true);
        if built.arch.is_host() {
            // A static binary (one of the C programs; ldd fails on it) loads nothing.
            let ldd = match output(Command::new("ldd").arg(b)) {
                Ok(l) => l,
                Err(_) if c_program => continue,
                Err(e) => return Err(e),
            };
            libraries.extend(initramfs::shared_libraries(&ldd));
        } else {
            for l in cross_libraries(built.arch, b)? {
                libraries.push(l);
            }
        }
    }
    libraries.sort();
    libraries.dedup();
    for l in libraries {
        if built.arch.is_host() {
            t.copy_from_host(&l)?;
        } else {
            // The loader and the libraries in /lib, where the target's loader looks.
            let name = l.file_name().context("a library without a name")?;
            t.file(&Path::new("/lib").join(name), fs::read(&l)?, true);
        }
    }
    t.file(
        Path::new("/init"),
        init_script(built, runs).into_bytes(),
        true,
    );
    Ok(t)
}

/// The shared libraries another architecture's binary loads, with its loader: its
/// NEEDED entries and theirs, from the cross C library's folder (the libraries it
/// finds beside itself, as libchainlib.so, are shipped with it).
fn cross_libraries(arch: Arch, binary: &Path) -> Result<Vec<PathBuf>> {
    let readelf = format!("{}readelf", arch.gnu_prefix());
    let lib = arch.sysroot_lib();
    let mut out = Vec::new();
    let mut todo = vec![binary.to_path_buf()];
    while let Some(b) = todo.pop() {
        let dynamic = output(Command::new(&readelf).arg("-d").arg(&b))?;
        let headers = output(Command::new(&readelf).arg("-l").arg(&b))?;
        // [Requesting program interpreter: /lib/ld-linux-aarch64.so.1]
        if let Some(interp) = headers.lines().find_map(|l| {
            l.split_once("interpreter: ")
                .map(|(_, r)| r.trim_end_matches(']'))
        }) {
            let name = Path::new(interp)
                .file_name()
                .context("an empty interpreter")?;
            let p = lib.join(name);
            if !out.contains(&p) {
                out.push(p);
            }
        }
        for l in dynamic.lines().filter(|l| l.contains("(NEEDED)")) {
            // 0x...1 (NEEDED)  Shared library: [libc.so.6]
            let Some(name) = l.split('[').nth(1).map(|n| n.trim_end_matches(']')) else {
                continue;
            };
            let p = lib.join(name);
            if !p.exists() {
                if binary.parent().is_some_and(|d| d.join(name).exists()) {
                    continue;
                }
                bail!("{} needs {name}, not in {}", b.display(), lib.display());
            }
            if !out.contains(&p) {
                out.push(p.clone());
                todo.push(p);
            }
        }
    }
    Ok(out)
}

/// A binary without its debug sections (the symbol table stays: slow-call stacks are
/// symbolized from it), to keep the initramfs small.
fn stripped(arch: Arch, binary: &Path) -> Result<Vec<u8>> {
    let tmp = std::env::temp_dir().join(format!(
        "syscost-vm-{}-{}",
        std::process::id(),
        binary.file_name().unwrap_or_default().to_string_lossy()
    ));
    let objcopy = if arch.is_host() {
        "objcopy".to_string()
    } else {
        format!("{}objcopy", arch.gnu_prefix())
    };
    let ok = Command::new(objcopy)
        .arg("--strip-debug")
        .arg(binary)
        .arg(&tmp)
        .status()
        .is_ok_and(|s| s.success());
    let data = if ok {
        fs::read(&tmp)?
    } else {
        fs::read(binary)?
    };
    let _ = fs::remove_file(&tmp);
    Ok(data)
}

/// The VM's init: mounts what syscost and the tests use, runs each test binary of the
/// suite on the tests' serial port (x86_64: the second; arm64's virt machine has one,
/// shared with the kernel's messages), and powers off.
fn init_script(built: &Built, runs: &[(&str, Vec<&str>)]) -> String {
    const SECOND_PORT: &str = "exec 3>/dev/ttyS1";
    let init = include_str!("init.sh");
    assert!(init.contains(SECOND_PORT));
    let mut s = if built.arch.is_host() {
        init.to_string()
    } else {
        init.replacen(SECOND_PORT, "exec 3>/dev/ttyAMA0", 1)
    };
    for (binary, tests) in runs {
        s.push_str(&format!(
            "run_suite {binary} {} {}\n",
            built.tests[*binary].display(),
            tests.join(" ")
        ));
    }
    // On the shared port the kernel is kept quiet while the tests write (its lines
    // would break theirs); its log follows them, where a splat fails the kernel.
    if !built.arch.is_host() {
        s.push_str("dmesg >&3\n");
    }
    s.push_str("finish\n");
    s
}

/// KVM when this machine has it working, TCG otherwise.
fn accelerator() -> &'static str {
    let cpu = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let virt = cpu
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    let kvm = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    if virt && kvm { "kvm" } else { "tcg" }
}

enum Outcome {
    Finished(initramfs_results::Results),
    Unfinished { why: String },
}

mod initramfs_results {
    /// What the test binaries said on the VM's second serial port.
    #[derive(Debug, Default, PartialEq, Eq)]
    pub struct Results {
        pub passed: u64,
        pub failed: u64,
        /// Failed tests and binaries that did not finish, one line each.
        pub problems: Vec<String>,
        /// The init's last line was written.
        pub done: bool,
    }

    /// Reads the log: libtest's result lines, its FAILED lines, and the init's own
    /// `syscost-vm: BINARY exit N` and `syscost-vm: done` lines.
    pub fn parse(log: &str) -> Results {
        let mut r = Results::default();
        let mut summarised = false;
        for line in log.lines() {
            let line = line.trim_end_matches('\r');
            if let Some(rest) = line.strip_prefix("test result: ") {
                summarised = true;
                for part in rest.split(';') {
                    let mut w = part.split_whitespace().rev();
                    let (what, n) = (w.next(), w.next().and_then(|n| n.parse::<u64>().ok()));
                    match (what, n) {
                        (Some("passed"), Some(n)) => r.passed += n,
                        (Some("failed"), Some(n)) => r.failed += n,
                        _ => {}
                    }
                }
            } else if let Some(t) = line.strip_prefix("test ")
                && let Some(name) = t.strip_suffix(" ... FAILED")
            {
                r.problems.push(format!("FAILED {name}"));
            } else if let Some(rest) = line.strip_prefix("syscost-vm: ") {
                if rest == "done" {
                    r.done = true;
                } else if let Some((binary, code)) = rest.split_once(" exit ") {
                    if code != "0" && !summarised {
                        r.problems.push(format!(
                            "{binary} ended with status {code} before its result"
                        ));
                    }
                    summarised = false;
                }
            }
        }
        r
    }
}

/// Boots `image` with the initramfs and waits for it to power off.
fn boot(
    arch: Arch,
    image: &Path,
    archive: &Path,
    dir: &Path,
    release: &str,
    accel: &str,
) -> Result<Outcome> {
    let console = dir.join(format!("{release}.console"));
    // arm64's virt machine has one serial port: the tests write beside the kernel.
    let tests = if arch.is_host() {
        dir.join(format!("{release}.tests"))
    } else {
        console.clone()
    };
    let _ = fs::remove_file(&console);
    let _ = fs::remove_file(&tests);
    let mut cmd = Command::new(arch.qemu_system());
    match (arch, accel) {
        (Arch::X86_64, "kvm") => cmd.args(["-accel", "kvm", "-cpu", "host"]),
        // Never -cpu host without KVM; "max" gives TCG's full feature set (rdrand too;
        // on arm64 AArch32 at EL0, which the compat test runs).
        (Arch::X86_64, _) => cmd.args(["-accel", "tcg,thread=single", "-cpu", "max"]),
        // pauth-impdef: pointer authentication (which the kernel signs every return
        // address with) by qemu's cheap algorithm, not QARMA: boots 5 times faster.
        (Arch::Aarch64, _) => {
            cmd.args(["-accel", "tcg,thread=single", "-cpu", "max,pauth-impdef=on"])
        }
    };
    let tty = match arch {
        Arch::X86_64 => "ttyS0",
        Arch::Aarch64 => {
            cmd.args(["-machine", "virt"]);
            "ttyAMA0"
        }
    };
    cmd.args(["-m", "2048", "-smp", "2", "-nodefaults", "-display", "none"])
        .args(["-monitor", "none", "-no-reboot", "-kernel"])
        .arg(image)
        .arg("-initrd")
        .arg(archive)
        // loglevel=5: warnings reach the console, where a splat fails the kernel (arm64's
        // shared port: 1, and the log is printed after the tests).
        .arg("-append")
        .arg(format!(
            "console={tty} panic=-1 loglevel={} random.trust_cpu=on",
            if arch.is_host() { 5 } else { 1 }
        ))
        .arg("-serial")
        .arg(format!("file:{}", console.display()));
    if arch.is_host() {
        cmd.arg("-serial").arg(format!("file:{}", tests.display()));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", arch.qemu_system()))?;
    let deadline = Instant::now() + kernel_timeout(arch);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let log = fs::read_to_string(&tests).unwrap_or_default();
    let r = initramfs_results::parse(&log);
    let console_text = fs::read_to_string(&console).unwrap_or_default();
    Ok(match status {
        None => Outcome::Unfinished {
            why: format!("still running after {} s", kernel_timeout(arch).as_secs()),
        },
        Some(_) if console_text.contains("Kernel panic") => Outcome::Unfinished {
            why: "kernel panic".to_string(),
        },
        Some(_) if let Some(splat) = kernel_splat(&console_text) => Outcome::Unfinished {
            why: format!("the kernel complained: {splat}"),
        },
        Some(s) if !r.done => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            Outcome::Unfinished {
                why: format!("the VM stopped ({s}) before the suite ended {}", err.trim()),
            }
        }
        Some(_) => Outcome::Finished(r),
    })
}

/// The first line of a kernel warning, oops or BUG in the console, if there is one: the
/// tests may pass while a hook makes the kernel complain.
fn kernel_splat(console: &str) -> Option<String> {
    const MARKS: [&str; 5] = [
        "------------[ cut here ]------------",
        "WARNING: CPU:",
        "BUG: ",
        "Oops:",
        "general protection fault",
    ];
    let lines: Vec<&str> = console.lines().collect();
    let at = lines
        .iter()
        .position(|l| MARKS.iter().any(|m| l.contains(m)))?;
    // The line that names it follows the "cut here" marker.
    let named = lines[at..]
        .iter()
        .find(|l| !l.contains("cut here"))
        .unwrap_or(&lines[at]);
    Some(named.trim().to_string())
}

/// The last `lines` lines of a file, under a heading.
fn tail(what: &str, path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    let mut out = format!(
        "--- last {} lines of the {what} ({}):\n",
        all.len() - from,
        path.display()
    );
    for l in &all[from..] {
        out += l;
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::initramfs_results::parse;

    #[test]
    fn results_sum_over_binaries_and_name_failures() {
        let log = "syscost-vm: kernel 5.10.0-32-cloud-amd64\n\
                   running 2 tests\ntest a ... ok\ntest b ... FAILED\n\
                   test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 30 filtered out; finished in 2.01s\n\
                   syscost-vm: engine exit 101\n\
                   running 1 test\ntest c ... ok\n\
                   test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.5s\n\r\n\
                   syscost-vm: slow exit 0\n\
                   syscost-vm: done\n";
        let r = parse(log);
        assert_eq!((r.passed, r.failed, r.done), (2, 1, true));
        assert_eq!(r.problems, ["FAILED b"]);
    }

    #[test]
    fn a_kernel_warning_in_the_console_is_found() {
        let console = "[    1.0] Run /init as init process\n\
                       [    9.1] ------------[ cut here ]------------\n\
                       [    9.1] WARNING: CPU: 1 PID: 80 at kernel/bpf/core.c:2200 bpf_x+0x10\n\
                       [    9.2] Call Trace:\n";
        assert_eq!(
            super::kernel_splat(console).as_deref(),
            Some("[    9.1] WARNING: CPU: 1 PID: 80 at kernel/bpf/core.c:2200 bpf_x+0x10")
        );
        assert_eq!(
            super::kernel_splat(
                "[    1.0] Run /init as init process\n[    2.0] reboot: Power down\n"
            ),
            None
        );
    }

    #[test]
    fn a_binary_that_dies_without_a_result_is_a_problem() {
        let log = "running 1 test\ntest a ... \nsyscost-vm: scope exit 139\n";
        let r = parse(log);
        assert_eq!((r.passed, r.failed, r.done), (0, 0, false));
        assert_eq!(
            r.problems,
            ["scope ended with status 139 before its result"]
        );
    }
}
