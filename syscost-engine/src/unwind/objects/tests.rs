use crate::unwind::bounded::Bounded;
use crate::unwind::bounded::READ_BUDGET;
use crate::unwind::objects::open::in_root;
use crate::unwind::objects::open::process_root;

use super::*;
use object::{
    Endianness,
    elf::{self, FileHeader64},
};
use std::{io::Read as _, os::unix::fs::FileExt as _};

/// A file of a process gone before it was opened: the error says the process went,
/// not that the file is missing (it is there, as this test's own mapping shows).
#[test]
fn an_object_of_a_process_gone_says_the_process_went() {
    // Above any pid_max (4,194,304 at most): no process has it, or ever will.
    let gone = 0x7fff_fff0;
    let maps = std::fs::read_to_string("/proc/self/maps").expect("this test's maps");
    let line = crate::unwind::maps::parse_maps(&maps)
        .into_iter()
        .find(|l| l.live_path().is_some())
        .expect("a file this test maps");
    let err = open_mapped(gone, &line, None).expect_err("no process to open it through");
    assert!(
        err.ends_with("the process exited before it was opened"),
        "{err}"
    );
}

#[test]
fn a_debug_link_names_one_file() {
    assert!(plain_name("libc.so.6.debug"));
    for bad in ["", ".", "..", "../../dev/tty", "a/b", "x\0y"] {
        assert!(!plain_name(bad), "{bad:?}");
    }
    let long = "a".repeat(256);
    assert!(!plain_name(&long));
}

#[test]
fn debug_files_are_looked_for_by_build_id_then_beside_the_object() {
    let link = DebugLink {
        build_id: Some(vec![0xab, 0xcd, 0xef]),
        link: Some(("p.debug".into(), 7)),
    };
    let got: Vec<_> = link
        .candidates(Some("/opt/app/bin/p"))
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        got,
        [
            "/usr/lib/debug/.build-id/ab/cdef.debug",
            "/opt/app/bin/p.debug",
            "/opt/app/bin/.debug/p.debug",
            "/usr/lib/debug/opt/app/bin/p.debug",
        ]
    );
    // A deleted object (no path) is found by its build id alone.
    assert_eq!(link.candidates(None).len(), 1);
}

/// A folder of the path replaced by a link (a traced process's `mv d d.old; ln -s
/// /dev d` after its debug link was read): the lookup follows it, but nothing that
/// is not a regular file is opened (a device's open may act: a watchdog armed), and
/// a regular file there is opened through the very inode checked.
#[test]
fn a_folder_replaced_by_a_link_opens_no_device_or_fifo() {
    let dir = std::env::temp_dir().join(format!("syscost-in-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
    let fifo = std::ffi::CString::new(dir.join("elsewhere/p.debug").as_os_str().as_encoded_bytes())
        .unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::write(dir.join("elsewhere/q.debug"), b"a regular file").unwrap();
    std::os::unix::fs::symlink("/dev", dir.join("d")).unwrap();
    std::os::unix::fs::symlink(dir.join("elsewhere/q.debug"), dir.join("r")).unwrap();
    std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join("e")).unwrap();
    let root = process_root(std::process::id()).unwrap();
    let mounts = Mounts::of(std::process::id());
    let opened = |path: std::path::PathBuf| {
        in_root(&root, path.to_str().unwrap(), mounts.as_ref()).map(|(f, _, _)| f)
    };
    let device = opened(dir.join("d/null"));
    let fifo = opened(dir.join("e/p.debug"));
    let regular = opened(dir.join("e/q.debug"));
    // A link to a regular file, as the last component: not followed.
    let link = opened(dir.join("r"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(device.unwrap_err(), "not a regular file: not read");
    assert_eq!(fifo.unwrap_err(), "not a regular file: not read");
    assert_eq!(link.unwrap_err(), "not a regular file: not read");
    let mut text = String::new();
    regular.unwrap().read_to_string(&mut text).unwrap();
    assert_eq!(text, "a regular file");
}

/// This test binary's own copy: symbols kept, nothing that names another file, the
/// copy sealed and counted while it lives.
#[test]
fn a_copy_is_sealed_and_names_no_other_file() {
    let exe = File::open("/proc/self/exe").unwrap();
    let copy = symbol_copy(&exe, None).unwrap();
    assert!(copy.bytes > 0);
    verify(&copy.path).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&copy.path)
        .unwrap();
    assert!(f.write_at(b"x", 0).is_err(), "the copy can be written");
    assert!(f.set_len(0).is_err(), "the copy can be truncated");
    assert!(!copy.loads.is_empty());
}

/// An object whose debug link names a file: the copy's link is renamed away.
#[test]
fn a_copy_hides_the_debug_link() {
    let dir = std::env::temp_dir().join(format!("syscost-objects-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (obj, debug) = (dir.join("true"), dir.join("true.debug"));
    std::fs::copy("/bin/true", &obj).unwrap();
    std::fs::write(&debug, b"not even ELF").unwrap();
    let objcopy = |arg: String| {
        std::process::Command::new("objcopy")
            .arg(arg)
            .arg(&obj)
            .status()
            .is_ok_and(|s| s.success())
    };
    // Debian's /bin/true links to its debug file already: replaced by one of ours.
    let ok = objcopy("--remove-section=.gnu_debuglink".into())
        && objcopy(format!("--add-gnu-debuglink={}", debug.display()));
    let link = DebugLink::of(&File::open(&obj).unwrap());
    let copy = symbol_copy(&File::open(&obj).unwrap(), None);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(ok, "objcopy (binutils) failed");
    assert_eq!(link.link.as_ref().map(|l| l.0.as_str()), Some("true.debug"));
    let copy = copy.unwrap();
    let names = sections::<FileHeader64<Endianness>>(
        &Bounded::new(File::open(&copy.path).unwrap(), READ_BUDGET).unwrap(),
    )
    .unwrap();
    assert!(names.iter().any(|(n, _)| n == b"Xgnu_debuglink"), "renamed");
    assert!(!names.iter().any(|(n, _)| n == b".gnu_debuglink"));
}

/// A C program built with compressed DWARF (`-gz=zlib`, as distributions ship debug
/// files): its copy holds the DWARF decompressed, which names a function with its
/// line; a section that decompresses to more than its header claims is left out.
#[test]
fn compressed_dwarf_is_decompressed_within_its_claim() {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
    let dir = std::env::temp_dir().join(format!("syscost-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, bin) = (dir.join("t.c"), dir.join("t"));
    std::fs::write(
        &src,
        "int tripled(int x) { return x * 3; }\nint main(int c, char **v) { return tripled(c); }\n",
    )
    .unwrap();
    let built = std::process::Command::new("gcc")
        .args(["-g", "-O0", "-gz=zlib", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    let bytes = std::fs::read(&bin);
    let copy = symbol_copy(&File::open(&bin).unwrap(), None);
    // The same with .debug_info's claimed size cut to 16 bytes.
    let bomb = dir.join("bomb");
    let mut patched = bytes.as_ref().unwrap().clone();
    let (info_ch, tripled) = {
        let elf = object::File::parse(&patched[..]).unwrap();
        let info = elf.section_by_name(".debug_info").unwrap();
        let (off, _) = info.file_range().unwrap();
        let tripled = elf
            .symbols()
            .find(|s| s.name() == Ok("tripled"))
            .unwrap()
            .address();
        (off as usize, tripled)
    };
    // Elf64_Chdr: ch_type (4), reserved (4), ch_size (8), ch_addralign (8).
    patched[info_ch + 8..info_ch + 16].copy_from_slice(&16u64.to_le_bytes());
    std::fs::write(&bomb, &patched).unwrap();
    let bomb_copy = symbol_copy(&File::open(&bomb).unwrap(), None);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(built, "gcc -gz=zlib failed");
    let copy = copy.unwrap();
    let names = sections::<FileHeader64<Endianness>>(
        &Bounded::new(File::open(&copy.path).unwrap(), READ_BUDGET).unwrap(),
    )
    .unwrap();
    assert!(
        names
            .iter()
            .all(|(_, flags)| flags & u64::from(elf::SHF_COMPRESSED) == 0),
        "a compressed section is left"
    );
    let symbolizer = blazesym::symbolize::Symbolizer::builder()
        .set_debug_dirs(Some::<&[&std::path::Path]>(&[]))
        .build();
    let src =
        blazesym::symbolize::source::Source::Elf(blazesym::symbolize::source::Elf::new(&copy.path));
    let sym = symbolizer
        .symbolize_single(&src, blazesym::symbolize::Input::VirtOffset(tripled))
        .unwrap()
        .into_sym()
        .expect("tripled named");
    assert_eq!(sym.name, "tripled");
    let line = sym.code_info.as_ref().and_then(|c| c.line);
    assert_eq!(line, Some(1), "{:?}", sym.code_info);
    let bomb_copy = bomb_copy.unwrap();
    let names = sections::<FileHeader64<Endianness>>(
        &Bounded::new(File::open(&bomb_copy.path).unwrap(), READ_BUDGET).unwrap(),
    )
    .unwrap();
    assert!(
        names.iter().any(|(n, _)| n == b"Xdebug_info"),
        "the bomb kept"
    );
}
