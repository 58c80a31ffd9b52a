//! `syscost bench`: what a syscall costs on this machine, timed in one process.

use std::{ffi::CStr, time::Instant};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

/// One timed row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    pub name: String,
    pub ns_per_call: f64,
    pub reps: u64,
    /// What the number is made of.
    pub note: String,
}

/// The benchmarks, in order: name, what it is made of, repetitions divisor (open+close
/// runs a tenth as often).
pub const ROWS: [(&str, &str, u64); 7] = [
    ("clock_gettime(MONOTONIC)", "vDSO: no kernel entry", 1),
    ("getpid() raw syscall", "bare user/kernel transition", 1),
    (
        "syscall(SYS_getpid)",
        "same, through libc's generic wrapper",
        1,
    ),
    ("read(/dev/zero, 1 byte)", "+ VFS + copy to user", 1),
    ("write(/dev/null, 1 byte)", "+ VFS", 1),
    ("sched_yield()", "+ scheduler, nothing else runnable", 1),
    (
        "open+close(/dev/null)",
        "path lookup + fd table: two syscalls",
        10,
    ),
];

/// getpid through the `syscall` instruction itself, without libc.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn raw_getpid() -> i64 {
    let ret: i64;
    // SAFETY: getpid takes no arguments; the syscall instruction clobbers rcx and r11.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_getpid => ret,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack)
        );
    }
    ret
}

#[cfg(not(target_arch = "x86_64"))]
fn raw_getpid() -> i64 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() as i64 }
}

fn time(reps: u64, mut f: impl FnMut() -> i64) -> f64 {
    let mut keep = 0i64;
    let t = Instant::now();
    for _ in 0..reps {
        keep = keep.wrapping_add(f());
    }
    let ns = t.elapsed().as_nanos() as f64;
    std::hint::black_box(keep);
    ns / reps.max(1) as f64
}

/// Pins this thread to `cpu`.
pub fn pin(cpu: usize) -> Result<()> {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!(
                "cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

fn open(path: &CStr, flags: i32) -> Result<i32> {
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("open {path:?}"));
    }
    Ok(fd)
}

/// Runs every row with `reps` repetitions (open+close a tenth of them).
pub fn run(reps: u64) -> Result<Vec<BenchRow>> {
    let zero = open(c"/dev/zero", libc::O_RDONLY)?;
    let null = open(c"/dev/null", libc::O_WRONLY)?;
    let mut byte = 0u8;
    let mut rows = Vec::new();
    for (name, note, div) in ROWS {
        let n = (reps / div).max(1);
        // SAFETY (each closure): plain syscalls on fds we own and a valid 1-byte buffer.
        let ns = match name {
            "clock_gettime(MONOTONIC)" => time(n, || {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
                ts.tv_nsec
            }),
            "getpid() raw syscall" => time(n, raw_getpid),
            "syscall(SYS_getpid)" => time(n, || unsafe { libc::syscall(libc::SYS_getpid) }),
            "read(/dev/zero, 1 byte)" => time(n, || unsafe {
                libc::read(zero, (&mut byte as *mut u8).cast(), 1) as i64
            }),
            "write(/dev/null, 1 byte)" => time(n, || unsafe {
                libc::write(null, (&byte as *const u8).cast(), 1) as i64
            }),
            "sched_yield()" => time(n, || unsafe { libc::sched_yield() as i64 }),
            _ => time(n, || unsafe {
                let fd = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                libc::close(fd) as i64
            }),
        };
        rows.push(BenchRow {
            name: name.into(),
            ns_per_call: ns,
            reps: n,
            note: note.into(),
        });
    }
    // SAFETY: fds we own.
    unsafe {
        libc::close(zero);
        libc::close(null);
    }
    Ok(rows)
}

/// The rows as text.
pub fn render(rows: &[BenchRow]) -> String {
    rows.iter()
        .map(|r| format!("{:<26} {:>10.1} ns   {}\n", r.name, r.ns_per_call, r.note))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_every_row_and_formats() {
        let rows = run(200).unwrap();
        assert_eq!(rows.len(), ROWS.len());
        assert_eq!(rows[6].reps, 20);
        for r in &rows {
            assert!(r.ns_per_call > 0.0, "{r:?}");
        }
        // The vDSO call never enters the kernel: it is cheaper than a real syscall.
        let text = render(&[BenchRow {
            name: "getpid() raw syscall".into(),
            ns_per_call: 142.46,
            reps: 1,
            note: "bare".into(),
        }]);
        assert_eq!(text, "getpid() raw syscall            142.5 ns   bare\n");
    }
}
