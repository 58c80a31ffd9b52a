use super::*;
use framehop::ExplicitModuleSectionInfo;

#[test]
fn the_stack_copy_reads_only_what_it_holds() {
    let c = StackCopy {
        ip: 0,
        sp: 0x1000,
        bp: 0,
        lr: 0,
        base: 0x1000,
        bytes: (0..16u8).collect(),
    };
    assert_eq!(
        c.read(0x1000),
        Ok(u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]))
    );
    assert_eq!(
        c.read(0x1008),
        Ok(u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]))
    );
    assert_eq!(c.read(0x1009), Err(()));
    assert_eq!(c.read(0xff8), Err(()));
    assert_eq!(c.read(u64::MAX - 3), Err(()));
}

#[test]
fn an_object_is_placed_by_the_segment_that_holds_the_mapped_offset() {
    let info = UnwindInfo {
        sections: ExplicitModuleSectionInfo::default(),
        bytes: 0,
        // A PIE's text segment (the executable one): file offset 0x1040, address
        // 0x2040.
        loads: vec![(0x1040, 0x3000, 0x2040)],
    };
    // File offset 0x1000 (address 0x2000) mapped at 0x5555_5555_6000: the object's
    // address 0 is at 0x5555_5555_4000.
    assert_eq!(info.bias(0x5555_5555_6000, 0x1000), Some(0x5555_5555_4000));
    assert_eq!(info.bias(0x1000, 0x9000), None);
    // lld's layout: the text starts in the first page, after the read-only segment
    // (0..0x5e4 at 0): file offset 0x5f0 at address 0x15f0. Its mapping starts at
    // file offset 0; placed by the executable segment, not the read-only one.
    let lld = UnwindInfo {
        sections: ExplicitModuleSectionInfo::default(),
        bytes: 0,
        loads: vec![(0x5f0, 0x1000, 0x15f0)],
    };
    let start = 0x7f00_0000_1000;
    let bias = lld.bias(start, 0).unwrap();
    // The text's first byte, at file offset 0x5f0, is at start + 0x5f0.
    assert_eq!(bias + 0x15f0, start + 0x5f0);
}

/// `exists` says what `/proc/PID` says: this process, a zombie (exited, not reaped) and
/// not a reaped child or pid 0 (signal 0 to pid 0 would name our process group).
#[test]
fn a_process_exists_while_proc_shows_it_zombies_included() {
    let proc_has = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(exists(std::process::id()));
    assert!(!exists(0));
    assert!(!exists(u32::MAX));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Exited, left a zombie: waited for without being reaped.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: our own child; WNOWAIT leaves it to be reaped below.
    let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
    assert_eq!(r, 0);
    assert!(proc_has(pid) && exists(pid), "a zombie exists");
    child.wait().unwrap();
    assert!(!proc_has(pid) && !exists(pid), "a reaped child is gone");
}
