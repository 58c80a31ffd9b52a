//! The ring of calls sent to userspace (`CALL_RING`, with `KSTACK_OF`): a slow call
//! (`--slow`, at least as slow as its threshold in `SLOW_NS`) or a sample of its stack's
//! calls (`--stacks`, chosen by `by_stack`), or both in one record, with its figures,
//! arguments and stacks. Shared by the two: neither is the other's plumbing.

use crate::{
    Call, by_stack,
    maps::{CALL_RING, KSTACK_OF, config},
    mem::{copy_words, zero_as_words},
    procs::write_comm,
    stats::count,
};
use aya_ebpf::{
    EbpfContext as _,
    bindings::BPF_F_USER_STACK,
    helpers::{
        bpf_get_current_task, bpf_probe_read_kernel, bpf_probe_read_user_buf,
        generated::bpf_get_stack,
    },
    programs::RawTracePointContext,
};
use core::mem::MaybeUninit;
use syscost_common::{
    BlockedStack, CallRecord, KERNEL_STACK_FRAMES, SLOW_STACK_FRAMES, USER_STACK_PAGE, counter,
    key_is_compat, record_flags, stack_counter,
};

/// Sends a call through the ring buffer, a slow call or a sample of its stack's calls or
/// both (`flags`: `record_flags::SLOW`, `STACK_SAMPLE`; `stack_hash` the stack's): its
/// figures, arguments, user stack (its frame-pointer walk, and
/// `config.user_stack_pages` pages of it for userspace to unwind) and kernel stack.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_call(
    ctx: &RawTracePointContext,
    pid_tgid: u64,
    stats_slot: u32,
    call: &Call,
    ret: i64,
    now: u64,
    (flags, wake): (u32, u64),
    stack_hash: u64,
) {
    // 32-bit tasks' stacks are not unwound from a copy: their frame-pointer walk only.
    let pages = if key_is_compat(call.key) {
        0
    } else {
        config!(user_stack_pages)
    };
    // The ring buffer's records have a size known when the program is verified: one
    // function per size.
    let sent = (flags, stack_hash, wake);
    match pages {
        1 => report::<1>(ctx, pid_tgid, stats_slot, call, ret, now, sent),
        2 => report::<2>(ctx, pid_tgid, stats_slot, call, ret, now, sent),
        4 => report::<4>(ctx, pid_tgid, stats_slot, call, ret, now, sent),
        8 => report::<8>(ctx, pid_tgid, stats_slot, call, ret, now, sent),
        _ => report::<0>(ctx, pid_tgid, stats_slot, call, ret, now, sent),
    }
}

#[inline(always)]
fn report<const P: usize>(
    ctx: &RawTracePointContext,
    pid_tgid: u64,
    stats_slot: u32,
    call: &Call,
    ret: i64,
    now: u64,
    (flags, stack_hash, wake): (u32, u64, u64),
) {
    let Call {
        key,
        nr,
        ns,
        off_ns,
        start,
        ..
    } = *call;
    let Some(mut entry) = CALL_RING.reserve::<CallRecord<P>>(0) else {
        if flags & record_flags::SLOW != 0 {
            count(stats_slot, counter::DROPPED_SLOW);
        }
        if flags & record_flags::STACK_SAMPLE != 0 {
            by_stack::count(stack_counter::SAMPLES_DROPPED);
        }
        return;
    };
    let r = entry.as_mut_ptr();
    let regs: *const u8 = ctx.arg(0);
    unsafe {
        let e = &raw mut (*r).event;
        (*e).exit_ns = now;
        (*e).latency_ns = ns;
        (*e).offcpu_ns = off_ns;
        (*e).nr = nr;
        (*e).ret = ret;
        let offsets = if key_is_compat(key) {
            config!(pt_regs_compat_arg_offsets)
        } else {
            config!(pt_regs_arg_offsets)
        };
        for i in 0..6 {
            (*e).args[i] =
                bpf_probe_read_kernel(regs.add(offsets[i] as usize) as *const u64).unwrap_or(0);
        }
        (*e).tgid = (pid_tgid >> 32) as u32;
        (*e).tid = pid_tgid as u32;
        (*e).key = key;
        (*e).slot = stats_slot;
        (*e).kernel_stack_bytes = 0;
        if config!(kstacks_on) != 0
            && let Some(k) = KSTACK_OF.get(pid_tgid as u32)
            && k.enter_ns == start
            && k.bytes > 0
        {
            copy_words(&raw mut (*e).kernel_stack, &raw const k.stack);
            (*e).kernel_stack_bytes = k.bytes as u32;
        }
        write_comm(&raw mut (*e).comm);
        (*e).stack_bytes = bpf_get_stack(
            ctx.as_ptr(),
            (&raw mut (*e).stack).cast(),
            (SLOW_STACK_FRAMES * 8) as u32,
            u64::from(BPF_F_USER_STACK),
        ) as i32;
        let unwind = config!(pt_regs_unwind_offsets);
        for i in 0..4 {
            (*e).user_regs[i] =
                bpf_probe_read_kernel(regs.add(unwind[i] as usize) as *const u64).unwrap_or(0);
        }
        // Whole pages from the one holding the stack pointer: a page that cannot be read
        // (the stack's end) ends the copy.
        let base = (*e).user_regs[1] & !(USER_STACK_PAGE as u64 - 1);
        let mut bytes = 0u32;
        if base != 0 {
            for i in 0..P {
                let from = (base + (i * USER_STACK_PAGE) as u64) as *const u8;
                if bpf_probe_read_user_buf(from, &mut (*r).stack[i]).is_err() {
                    break;
                }
                bytes += USER_STACK_PAGE as u32;
            }
        }
        let task = bpf_get_current_task() as *const u8;
        let mm_offset = config!(task_mm_offset);
        (*e).mm = if mm_offset == 0 {
            0
        } else {
            bpf_probe_read_kernel(task.add(mm_offset as usize) as *const u64).unwrap_or(0)
        };
        let exec_id_offset = config!(task_exec_id_offset);
        (*e).exec_id = if exec_id_offset == 0 {
            0
        } else {
            bpf_probe_read_kernel(task.add(exec_id_offset as usize) as *const u32).unwrap_or(0)
        };
        let (ino, mnt_id) = file_of(task, (*e).args[0]);
        (*e).fd_ino = ino;
        (*e).fd_mnt_id = mnt_id;
        (*e).user_stack_base = base;
        (*e).user_stack_bytes = bytes;
        (*e).flags = if call.switch_in_unseen {
            flags | record_flags::SWITCH_IN_UNSEEN
        } else {
            flags
        };
        (*e).stack_hash = stack_hash;
    }
    entry.submit(wake);
    if flags & record_flags::SLOW != 0 {
        count(stats_slot, counter::SLOW);
    }
    if flags & record_flags::STACK_SAMPLE != 0 {
        by_stack::count(stack_counter::SAMPLES);
    }
}

/// The inode number and mount id of the file descriptor `fd` of `task` names, or (0, 0).
#[inline(always)]
fn file_of(task: *const u8, fd: u64) -> (u64, u32) {
    let o = config!(file_offsets);
    // Not known on this kernel: no file is named.
    if o[0] == 0 {
        return (0, 0);
    }
    let read = |p: *const u8, off: u64| -> u64 {
        if p.is_null() {
            return 0;
        }
        unsafe { bpf_probe_read_kernel(p.add(off as usize) as *const u64).unwrap_or(0) }
    };
    let files = read(task, o[0]) as *const u8;
    let fdt = read(files, o[1]) as *const u8;
    if fdt.is_null() {
        return (0, 0);
    }
    let max_fds =
        unsafe { bpf_probe_read_kernel(fdt.add(o[2] as usize) as *const u32).unwrap_or(0) };
    if fd >= u64::from(max_fds) {
        return (0, 0);
    }
    let table = read(fdt, o[3]) as *const u8;
    if table.is_null() {
        return (0, 0);
    }
    let file = read(unsafe { table.add((fd * 8) as usize) }, 0) as *const u8;
    let inode = read(file, o[4]) as *const u8;
    let ino = read(inode, o[5]);
    // The file's mount: f_path.mnt is the vfsmount inside a struct mount, whose mnt_id
    // sits at o[7] from it (a difference of offsets, wrapping if negative).
    let mnt = read(file, o[6]);
    if mnt == 0 {
        return (0, 0);
    }
    let mnt_id =
        unsafe { bpf_probe_read_kernel(mnt.wrapping_add(o[7]) as *const u32).unwrap_or(0) };
    (ino, mnt_id)
}

/// Copies the current kernel stack into thread `tid`'s `KSTACK_OF` entry.
#[inline(always)]
pub(crate) fn take_kernel_stack(ctx: &RawTracePointContext, tid: u32, enter_ns: u64) {
    let p = match KSTACK_OF.get_ptr_mut(tid) {
        Some(p) => p,
        None => {
            // All integers: zero is a value of it (2 words and the stack's 16).
            let mut empty = MaybeUninit::<BlockedStack>::uninit();
            unsafe { zero_as_words::<_, 18>(empty.as_mut_ptr()) };
            if KSTACK_OF
                .insert(tid, unsafe { empty.assume_init_ref() }, 0)
                .is_err()
            {
                return;
            }
            match KSTACK_OF.get_ptr_mut(tid) {
                Some(p) => p,
                None => return,
            }
        }
    };
    unsafe {
        (*p).bytes = bpf_get_stack(
            ctx.as_ptr(),
            (&raw mut (*p).stack).cast(),
            (KERNEL_STACK_FRAMES * 8) as u32,
            0,
        );
        (*p).enter_ns = enter_ns;
    }
}
