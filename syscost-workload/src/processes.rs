//! The modes that start processes: exec, spawn, fork, churn, a leader's exit, an exec from
//! a thread, a tree of waiting processes.

use crate::{calls::getppid_n, support::*};
use std::io::Write as _;

/// `exec`: see the modes at the top of the crate.
pub(super) fn exec_mode(args: &[String]) {
    let (_argv, ptrs) = c_argv(&args[1..]);
    // The child gets the dispositions `syscost run` gives a command: SIGPIPE at
    // its default (Rust's runtime ignores it here), the rest as inherited. Set
    // here, before the fork: the child makes no call but its execve.
    // SAFETY: one disposition, to its default.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: the child only calls execve and exit_group.
    let pid = unsafe { raw_fork() };
    if pid == 0 {
        unsafe {
            libc::syscall(libc::SYS_execve, ptrs[0], ptrs.as_ptr(), environ);
            libc::syscall(libc::SYS_exit_group, 127);
        }
    }
    assert!(pid > 0, "fork failed: {}", std::io::Error::last_os_error());
    println!("child={pid}");
    std::io::stdout().flush().unwrap();
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    std::process::exit(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    });
}

/// `spawn`: see the modes at the top of the crate.
pub(super) fn spawn_mode(args: &[String]) {
    let (per, cpu) = spawn(arg(args, 1), arg(args, 2) as u32);
    println!("per_process_ns={}", per.as_nanos());
    println!("cpu_per_process_ns={cpu}");
}

/// `tree-waiting`: see the modes at the top of the crate.
pub(super) fn tree_waiting(args: &[String]) {
    let (c, n) = (arg(args, 1), arg(args, 2));
    let (r, w) = pipe();
    let mut pids = Vec::new();
    for _ in 0..c {
        // SAFETY: the child makes raw calls only, then _exit.
        match unsafe { libc::fork() } {
            0 => unsafe {
                let grandchild = libc::fork();
                let mut b = 0u8;
                if libc::read(r, (&mut b as *mut u8).cast(), 1) != 1 {
                    libc::_exit(1);
                }
                getppid_n(n);
                if grandchild > 0 {
                    let mut status = 0;
                    libc::waitpid(grandchild, &mut status, 0);
                }
                libc::_exit(0);
            },
            pid if pid > 0 => pids.push(pid),
            _ => panic!("fork failed: {}", std::io::Error::last_os_error()),
        }
    }
    // Every process of the tree blocked in its read before `ready`.
    let tree = || -> Vec<u32> {
        let mut all: Vec<u32> = pids.iter().map(|&p| p as u32).collect();
        for &p in &pids {
            let children =
                std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
            all.extend(
                children
                    .split_whitespace()
                    .filter_map(|s| s.parse::<u32>().ok()),
            );
        }
        all
    };
    await_state("every process of the tree blocked in its read", || {
        let t = tree();
        let blocked = t
            .iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/syscall")).is_ok_and(|s| in_read(&s))
            })
            .count();
        t.len() == 2 * c as usize && blocked == t.len()
    });
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let go = vec![b'x'; 2 * c as usize];
    // SAFETY: 2c bytes from a valid buffer.
    assert_eq!(
        unsafe { libc::write(w, go.as_ptr().cast(), go.len()) },
        go.len() as isize
    );
    for p in pids {
        let mut status = 0;
        // SAFETY: waits for a child of this process.
        unsafe { libc::waitpid(p, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}

/// `churn`: see the modes at the top of the crate.
pub(super) fn churn_mode(args: &[String]) {
    let (k, n) = (arg(args, 2), arg(args, 3));
    for _ in 0..arg(args, 1) {
        let threads: Vec<_> = (0..k)
            .map(|_| std::thread::spawn(move || getppid_n(n)))
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}

/// `fork`: see the modes at the top of the crate.
pub(super) fn fork_mode(args: &[String]) {
    let n = arg(args, 2);
    let mut children = Vec::new();
    for _ in 0..arg(args, 1) {
        // SAFETY: the child only makes raw syscalls and _exits.
        match unsafe { libc::fork() } {
            0 => {
                getppid_n(n);
                unsafe { libc::_exit(0) };
            }
            pid if pid > 0 => children.push(pid),
            _ => panic!("fork failed: {}", std::io::Error::last_os_error()),
        }
    }
    for pid in children {
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

/// `leader-exit`: see the modes at the top of the crate.
pub(super) fn leader_exit(args: &[String]) {
    let n = arg(args, 1);
    std::thread::spawn(move || {
        // Wait until the leader has gone (its /proc status says zombie).
        await_state("the leader's exit", || {
            std::fs::read_to_string("/proc/self/status")
                .unwrap_or_default()
                .contains("State:\tZ")
        });
        getppid_n(n);
        // SAFETY: ends the whole process.
        unsafe { libc::syscall(libc::SYS_exit_group, 0) };
    });
    // SAFETY: ends the main thread only; the other one goes on.
    unsafe { libc::syscall(libc::SYS_exit, 0) };
}

/// `exec-thread`: see the modes at the top of the crate.
pub(super) fn exec_thread(args: &[String]) {
    let n = arg(args, 1).to_string();
    let t = std::thread::spawn(move || {
        let exe = std::ffi::CString::new("/proc/self/exe").unwrap();
        let argv: Vec<std::ffi::CString> = ["syscost-workload", "getppid", &n]
            .iter()
            .map(|a| std::ffi::CString::new(*a).unwrap())
            .collect();
        let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        // SAFETY: valid path and argv; on success this thread becomes the process.
        unsafe { libc::execv(exe.as_ptr(), ptrs.as_ptr()) };
        panic!("exec failed: {}", std::io::Error::last_os_error());
    });
    t.join().unwrap();
}
