//! `fork-at`, `exec-at` and `threads-at`: processes and threads made with the ids asked
//! for (clone3's `set_tid`), for the tests of ids beyond the old pid_max.

use crate::{calls::getppid_n, support::*};
use std::io::Write as _;

/// The arguments of clone3(2) up to `set_tid_size` (`CLONE_ARGS_SIZE_VER1`, Linux 5.5):
/// the libc crate does not define the struct for every target.
#[repr(C)]
#[derive(Default)]
pub(crate) struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
}

/// How many ids, up from the one asked for, `fork-at` and `threads-at` try when an id is
/// taken (EEXIST).
pub(crate) const ID_TRIES: i32 = 100;

/// fork(2) as clone3 with the child's pid set to `pid` (`set_tid`; needs CAP_SYS_ADMIN in
/// the pid namespace, and `pid` below its pid_max): 0 in the child, the child's pid in
/// the parent, or the error (EEXIST: the pid is taken).
///
/// # Safety
/// As fork: the child may only call async-signal-safe functions.
pub(crate) unsafe fn fork_at(pid: i32) -> std::io::Result<i32> {
    let ids = [pid as libc::pid_t];
    let args = CloneArgs {
        exit_signal: libc::SIGCHLD as u64,
        set_tid: ids.as_ptr() as u64,
        set_tid_size: 1,
        ..Default::default()
    };
    // SAFETY: a valid clone_args of the size given; without CLONE_VM the child runs on
    // its own copy of this process, stack included, as after fork.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw const args,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

/// Waits for child `pid`; its exit code (128 + the signal that killed it).
pub(crate) fn reap(pid: i32) -> i32 {
    let mut status = 0;
    // SAFETY: waits for a child of this process.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid, "waitpid: {}", std::io::Error::last_os_error());
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

/// `fork-at PID N`: a child at PID (or the next free id up) making N getppid calls;
/// prints child=<its pid> once it is reaped, then waits for a line on stdin.
pub(crate) fn fork_at_mode(args: &[String]) {
    let (first, n) = (arg(args, 1) as i32, arg(args, 2));
    let mut pid = first;
    let child = loop {
        // SAFETY: the child makes raw syscalls only, then _exit.
        match unsafe { fork_at(pid) } {
            Ok(0) => {
                getppid_n(n);
                // SAFETY: ends the child.
                unsafe { libc::_exit(0) };
            }
            Ok(child) => break child,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && pid - first < ID_TRIES => pid += 1,
            Err(e) => panic!("clone3 with set_tid {pid}: {e}"),
        }
    };
    assert_eq!(reap(child), 0, "child {child}");
    println!("child={child}");
    std::io::stdout().flush().unwrap();
    stdin_line();
}

/// `exec-at PID PROG ARGS...`: PROG in a child at exactly PID (exit 3 when PID is
/// taken); prints child=<pid> and exits with the child's status.
pub(crate) fn exec_at_mode(args: &[String]) -> ! {
    let pid = arg(args, 1) as i32;
    let (_argv, ptrs) = c_argv(args.get(2..).unwrap_or_default());
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: the child only calls execve and exit_group.
    match unsafe { fork_at(pid) } {
        Ok(0) => unsafe {
            libc::syscall(libc::SYS_execve, ptrs[0], ptrs.as_ptr(), environ);
            libc::syscall(libc::SYS_exit_group, 127);
            unreachable!()
        },
        Ok(child) => {
            println!("child={child}");
            std::io::stdout().flush().unwrap();
            std::process::exit(reap(child))
        }
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
            eprintln!("syscost-workload: pid {pid} is taken");
            std::process::exit(3)
        }
        Err(e) => panic!("clone3 with set_tid {pid}: {e}"),
    }
}

/// A thread of `threads-at`: the calls it makes, and its ids.
pub(crate) struct AtThread {
    n: u64,
    /// Its tid, written by the kernel at clone3 (CLONE_PARENT_SETTID), set to 0 with a
    /// futex wake once the thread is gone (CLONE_CHILD_CLEARTID).
    alive: std::sync::atomic::AtomicU32,
    /// Its id as the thread itself read it (gettid).
    tid: std::sync::atomic::AtomicU32,
}

/// The body of a `threads-at` thread. It runs on this process's thread pointer (no
/// CLONE_SETTLS), so it makes raw syscalls only and touches no thread-local storage.
extern "C" fn at_thread(arg: *mut libc::c_void) {
    // SAFETY: `arg` is the AtThread that `threads_at_mode` keeps until the thread is gone.
    let t = unsafe { &*(arg as *const AtThread) };
    getppid_n(t.n);
    // SAFETY: gettid cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    t.tid
        .store(tid as u32, std::sync::atomic::Ordering::Release);
}

/// A thread with id `tid` (clone3 with set_tid) running `at_thread(t)` on `stack`, which
/// then exits (SYS_exit); its id, or the error (EEXIST: the id is taken).
///
/// # Safety
/// `stack` (16-byte aligned, a multiple of 16 long) and `t` must outlive the thread.
pub(crate) unsafe fn clone3_thread(
    tid: i32,
    stack: &mut [u8],
    t: &AtThread,
) -> std::io::Result<i32> {
    let ids = [tid as libc::pid_t];
    let alive = t.alive.as_ptr() as u64;
    let args = CloneArgs {
        flags: (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID) as u64,
        child_tid: alive,
        parent_tid: alive,
        stack: stack.as_mut_ptr() as u64,
        stack_size: stack.len() as u64,
        set_tid: ids.as_ptr() as u64,
        set_tid_size: 1,
        ..Default::default()
    };
    let f: extern "C" fn(*mut libc::c_void) = at_thread;
    let arg = (t as *const AtThread).cast_mut().cast::<libc::c_void>();
    let ret: i64;
    // SAFETY: clone3 returns in both threads; the new one, on its own stack, calls
    // f(arg) and exits (exit, 60 on x86_64, 93 on arm64) without returning here. Every
    // register but the result (and rcx, r11 on x86_64) is the same in both.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov rdi, rdx",
            "call r8",
            "mov eax, 60",
            "xor edi, edi",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") &raw const args,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("rdx") arg,
            in("r8") f,
            lateout("rcx") _,
            lateout("r11") _,
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc #0",
            "cbnz x0, 2f",
            "mov x0, x2",
            "blr x3",
            "mov x8, #93",
            "mov x0, #0",
            "svc #0",
            "brk #0",
            "2:",
            inlateout("x0") &raw const args => ret,
            in("x1") std::mem::size_of::<CloneArgs>(),
            in("x2") arg,
            in("x3") f,
            in("x8") libc::SYS_clone3,
        );
    }
    if ret < 0 {
        Err(std::io::Error::from_raw_os_error(-ret as i32))
    } else {
        Ok(ret as i32)
    }
}

/// `threads-at TID K N`: K threads at ids TID and up (an id taken: the next one), N
/// getppid calls and one gettid each; prints tids=<the ids the threads read>.
pub(crate) fn threads_at_mode(args: &[String]) {
    const STACK: usize = 256 << 10;
    let (first, k, n) = (arg(args, 1) as i32, arg(args, 2), arg(args, 3));
    let layout = std::alloc::Layout::from_size_align(STACK, 16).unwrap();
    let threads: Vec<Box<AtThread>> = (0..k)
        .map(|_| {
            Box::new(AtThread {
                n,
                alive: 0.into(),
                tid: 0.into(),
            })
        })
        .collect();
    let mut stacks = Vec::new();
    let mut id = first;
    for t in &threads {
        // SAFETY: a non-zero size; freed below, once every thread is gone.
        let stack = unsafe { std::alloc::alloc(layout) };
        assert!(!stack.is_null(), "no memory for a stack");
        stacks.push(stack);
        // SAFETY: STACK bytes just allocated.
        let stack = unsafe { std::slice::from_raw_parts_mut(stack, STACK) };
        loop {
            // SAFETY: the stack and `t` live until the thread is gone (waited for below).
            match unsafe { clone3_thread(id, stack, t) } {
                Ok(tid) => {
                    id = tid + 1;
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) && id - first < ID_TRIES => {
                    id += 1
                }
                Err(e) => panic!("clone3 of a thread with set_tid {id}: {e}"),
            }
        }
    }
    // Each thread gone: the kernel clears its `alive` and wakes this futex.
    for t in &threads {
        loop {
            let v = t.alive.load(std::sync::atomic::Ordering::Acquire);
            if v == 0 {
                break;
            }
            // SAFETY: waits on a live u32 while it holds `v` (not FUTEX_PRIVATE: the
            // kernel's wake at the thread's exit is a shared one).
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    t.alive.as_ptr(),
                    libc::FUTEX_WAIT,
                    v,
                    std::ptr::null::<libc::timespec>(),
                )
            };
        }
    }
    for stack in stacks {
        // SAFETY: allocated above with `layout`; its thread is gone.
        unsafe { std::alloc::dealloc(stack, layout) };
    }
    let tids: Vec<String> = threads
        .iter()
        .map(|t| t.tid.load(std::sync::atomic::Ordering::Acquire).to_string())
        .collect();
    println!("tids={}", tids.join(","));
}
