//! What a traced process chooses for syscost to open, as root, when it names a slow
//! call's stack: its objects' debug links, the files beside its binary, how many
//! distinct objects it maps over a run. None of it may stall syscost, make it open what
//! it should not, or grow it without bound. Needs root; the C programs are
//! tests/c/build.sh's.

mod common;

use std::{os::unix::fs::PermissionsExt as _, path::Path, process::Stdio};

use common::*;
use syscost_user::profile::Profile;

/// Runs `objcopy ARGS` (binutils), failing the test if it fails.
fn objcopy(args: &[&std::ffi::OsStr]) {
    let o = output(std::process::Command::new("objcopy").args(args));
    assert!(o.status.success(), "objcopy {args:?}: {}", stderr(&o));
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {path:?}"
    );
}

/// chain-fp (-O0 -g, frame pointers) copied to `dir/name` with its DWARF split off into
/// `dir/name.debug` and a debug link to it.
fn split_program(dir: &Path, name: &str) -> std::path::PathBuf {
    let bin = dir.join(name);
    let debug = dir.join(format!("{name}.debug"));
    std::fs::copy(c_programs().join("chain-fp"), &bin).unwrap();
    objcopy(&[
        "--only-keep-debug".as_ref(),
        bin.as_os_str(),
        debug.as_os_str(),
    ]);
    objcopy(&[
        "--strip-debug".as_ref(),
        format!("--add-gnu-debuglink={}", debug.display()).as_ref(),
        bin.as_os_str(),
    ]);
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `syscost run --slow 1ms --json FILE -- PROGRAM 3 20000` to its end (the program's
/// three 20 ms sleeps are slow calls); the profile. Waits for syscost's end with the
/// tests' deadline: a syscost that hangs fails the test rather than the suite.
fn three_slow_calls(t: &RootTest, program: &Path, json: &str) -> Profile {
    three_slow_calls_said(t, program, json).0
}

/// [`three_slow_calls`], and what syscost printed on stderr.
fn three_slow_calls_said(t: &RootTest, program: &Path, json: &str) -> (Profile, String) {
    let json = t.path(json);
    let o = output(
        syscost()
            .args(["run", "--slow", "1ms", "--json"])
            .arg(&json)
            .arg("--")
            .arg(program)
            .args(["3", "20000"])
            .stdin(Stdio::null()),
    );
    assert!(o.status.success(), "syscost run: {}", stderr(&o));
    (read_profile(&json), stderr(&o))
}

/// The frames of the program's sleeps that name `chain_inner`, and their locations.
fn inner_frames(p: &Profile, comm: &str) -> Vec<Option<String>> {
    let calls: Vec<_> = p
        .slow_calls
        .iter()
        .filter(|c| c.comm == comm && c.syscall == "clock_nanosleep")
        .collect();
    assert_eq!(calls.len(), 3, "slow calls of {comm}: {}", calls.len());
    calls
        .iter()
        .map(|c| {
            let f = c
                .stack
                .iter()
                .find(|f| f.function.as_deref() == Some("chain_inner"));
            assert!(
                f.is_some(),
                "no chain_inner in {:?}",
                c.stack
                    .iter()
                    .map(|f| f.function.as_deref().or(f.unknown.as_deref()))
                    .collect::<Vec<_>>()
            );
            f.and_then(|f| f.location.clone())
        })
        .collect()
}

/// A binary whose debug link names a FIFO beside it (where a debug file would be), and
/// one whose debug link climbs out of its folder to a valid debug file: syscost neither
/// waits on the first nor follows the second, and names the frames from the binary's own
/// symbols. A debug file where it belongs is still read (the lines come from it).
#[test]
fn debug_links_to_fifos_neither_stall_nor_are_followed() {
    let Some(t) = root_test!() else { return };
    let dir = t.path("bin");
    std::fs::create_dir_all(&dir).unwrap();

    // Its debug file where the link says: followed, its lines read.
    let good = split_program(&dir, "split-good");
    let p = three_slow_calls(&t, &good, "good.json");
    for location in inner_frames(&p, "split-good") {
        assert!(
            location
                .as_deref()
                .is_some_and(|l| l.starts_with("chain.c:")),
            "chain_inner's location from the debug file: {location:?}"
        );
    }

    // The debug file replaced by a FIFO.
    let fifo = split_program(&dir, "split-fifo");
    let debug = dir.join("split-fifo.debug");
    std::fs::remove_file(&debug).unwrap();
    mkfifo(&debug);
    let (p, said) = three_slow_calls_said(&t, &fifo, "fifo.json");
    for location in inner_frames(&p, "split-fifo") {
        assert_eq!(location, None, "a location read from the FIFO");
    }
    // Not even the search waited on it (opened without blocking): a search left at its
    // deadline says so.
    assert!(
        !said.contains("did not end within"),
        "the search waited on the FIFO: {said}"
    );

    // A link that climbs: "../x.de" (7 bytes, shorter than the name objcopy wrote, so
    // the section keeps its size and CRC), to a valid debug file in the folder above
    // (the binary's own, moved there: its CRC the link's), which following the link
    // would read lines from.
    let climb = split_program(&dir, "split-up");
    std::fs::rename(dir.join("split-up.debug"), t.path("x.de")).unwrap();
    let name = b"../x.de";
    let section = t.path("link");
    objcopy(&[
        format!("--dump-section=.gnu_debuglink={}", section.display()).as_ref(),
        climb.as_os_str(),
    ]);
    let mut link = std::fs::read(&section).unwrap();
    assert_eq!(&link[..8], b"split-up", "the link's name as written");
    // "split-up.debug" is 14 bytes: the new name, then NULs up to the CRC's alignment.
    link[..14].fill(0);
    link[..name.len()].copy_from_slice(name);
    std::fs::write(&section, &link).unwrap();
    objcopy(&[
        format!("--update-section=.gnu_debuglink={}", section.display()).as_ref(),
        climb.as_os_str(),
    ]);
    let p = three_slow_calls(&t, &climb, "climb.json");
    for location in inner_frames(&p, "split-up") {
        assert_eq!(location, None, "a location read through the climbing link");
    }
}

/// More distinct objects over a run than syscost keeps open at once (1,024): each
/// program of 1,100 copies of one, run one after the other, has its slow call named;
/// and once the last copy's call is named and syscost has closed what processes gone
/// left (it says so, with the objects still open) and made its symbolizer anew (which
/// held their copies), its open descriptors are far below one per object.
#[test]
fn objects_of_processes_gone_are_closed() {
    let Some(t) = root_test!() else { return };
    let dir = t.path("copies");
    std::fs::create_dir_all(&dir).unwrap();
    const COPIES: usize = 1100;
    for i in 0..COPIES {
        std::fs::copy(c_programs().join("chain"), dir.join(format!("c{i}"))).unwrap();
    }
    let json = t.path("copies.json");
    // The copies one after the other, each one 2 ms sleep, then waiting on its stdin (a
    // pipe from a `head` that passes on one byte of the test's) until the test has seen
    // syscost report its sleep: each is alive when its call is received.
    let script = format!(
        "exec 3<&0; for i in $(seq 0 {}); do head -c1 <&3 | {}/c$i 1 2000 stdin || exit 1; done; exit 0",
        COPIES - 1,
        dir.display()
    );
    let mut child = syscost()
        .args([
            "run",
            "-f",
            "--slow",
            "1ms",
            "-e",
            "clock_nanosleep",
            "--json",
        ])
        .arg(&json)
        .args(["--", "sh", "-c", &script])
        .env("RUST_LOG", "syscost_engine::unwind=debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn_reaped();
    let mut stdin = child.stdin.take().unwrap();
    let mut err = Lines::of(child.stderr.take().unwrap(), "syscost's stderr");
    let mut fds = 0;
    // What syscost said of its objects since the third copy from the end was named (its
    // lines may come before or after the last copy's call): a prune that left at most 8
    // objects open (the last copies' own, libc, the loader), then the symbolizer made
    // anew (it held their copies).
    #[derive(Default)]
    struct Said {
        counting: bool,
        closed: bool,
        renewed: bool,
    }
    let note = |said: &mut Said, l: &str| {
        let open = l
            .split_once(" objects closed, ")
            .and_then(|(_, r)| r.strip_suffix(" open"))
            .and_then(|n| n.parse::<usize>().ok());
        if said.counting && open.is_some_and(|n| n <= 8) {
            said.closed = true;
        } else if said.closed && l.contains("the symbolizer made anew") {
            said.renewed = true;
        }
    };
    let mut said = Said::default();
    for i in 0..COPIES {
        let comm = format!(" c{i}");
        err.until(&format!("the slow call of copy {i}"), |l| {
            note(&mut said, l);
            l.starts_with("slow: clock_nanosleep(") && l.ends_with(&comm)
        });
        if i == COPIES - 3 {
            said.counting = true;
        }
        if i == COPIES - 1 {
            if !said.renewed {
                err.until(
                    "the objects of the copies gone closed, then the symbolizer made anew",
                    |l| {
                        note(&mut said, l);
                        said.renewed
                    },
                );
            }
            fds = std::fs::read_dir(format!("/proc/{}/fd", child.id()))
                .unwrap()
                .count();
        }
        use std::io::Write as _;
        stdin.write_all(b"x").unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    let rest = err.rest();
    let status = child.wait_exit();
    let said: Vec<_> = rest
        .iter()
        .filter(|l| !l.starts_with("slow: ") && !l.starts_with("    "))
        .collect();
    assert!(status.success(), "syscost run: {status}: {said:?}");
    assert!(
        fds < 128,
        "syscost holds {fds} descriptors after {COPIES} distinct objects came and went"
    );
    let p = read_profile(&json);
    let named = p
        .slow_calls
        .iter()
        .filter(|c| c.syscall == "clock_nanosleep" && c.comm.starts_with('c'))
        .filter(|c| {
            c.stack
                .iter()
                .any(|f| f.function.as_deref() == Some("chain_inner"))
        })
        .count();
    let unnamed: Vec<_> = p
        .slow_calls
        .iter()
        .filter(|c| c.syscall == "clock_nanosleep")
        .filter(|c| {
            !c.stack
                .iter()
                .any(|f| f.function.as_deref() == Some("chain_inner"))
        })
        .map(|c| {
            c.stack
                .iter()
                .map(|f| f.function.clone().or(f.unknown.clone()).unwrap_or_default())
                .collect::<Vec<_>>()
        })
        .take(2)
        .collect();
    assert_eq!(
        named, COPIES,
        "copies named (e.g. unnamed: {unnamed:?}; {fds} descriptors at the end)"
    );
}
