//! Slow calls (`SLOW`, `SLOW_NS`, `KSTACK_OF`): the calls at least as slow as their
//! threshold, with their arguments and stacks, through a ring buffer.

use super::*;

/// Sends a slow call through the ring buffer: its figures, arguments and user stack.
#[inline(always)]
pub(crate) fn report_slow(
    ctx: &RawTracePointContext,
    pid_tgid: u64,
    stats_slot: u32,
    call: &Call,
    ret: i64,
    now: u64,
) {
    let Call {
        key,
        nr,
        ns,
        off_ns,
        start,
        ..
    } = *call;
    let Some(mut entry) = SLOW.reserve::<SlowEvent>(0) else {
        count(stats_slot, counter::DROPPED_SLOW);
        return;
    };
    let e = entry.as_mut_ptr();
    let regs: *const u8 = ctx.arg(0);
    unsafe {
        (*e).exit_ns = now;
        (*e).latency_ns = ns;
        (*e).offcpu_ns = off_ns;
        (*e).nr = nr;
        (*e).ret = ret;
        let offsets = if key_is_compat(key) {
            PT_REGS_COMPAT_ARG_OFFSETS.load()
        } else {
            PT_REGS_ARG_OFFSETS.load()
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
        if KSTACKS_ON.load() != 0
            && let Some(k) = KSTACK_OF.get(pid_tgid as u32)
            && k.enter_ns == start
            && k.bytes > 0
        {
            (*e).kernel_stack = k.stack;
            (*e).kernel_stack_bytes = k.bytes as u32;
        }
        (*e).comm = bpf_get_current_comm().unwrap_or([0; 16]);
        (*e).stack_bytes = bpf_get_stack(
            ctx.as_ptr(),
            (&raw mut (*e).stack).cast(),
            (SLOW_STACK_FRAMES * 8) as u32,
            u64::from(BPF_F_USER_STACK),
        ) as i32;
    }
    entry.submit(0);
    count(stats_slot, counter::SLOW);
}

/// Copies the current kernel stack into thread `tid`'s `KSTACK_OF` entry.
#[inline(always)]
pub(crate) fn take_kernel_stack(ctx: &RawTracePointContext, tid: u32, enter_ns: u64) {
    let p = match KSTACK_OF.get_ptr_mut(tid) {
        Some(p) => p,
        None => {
            let empty = BlockedStack {
                enter_ns: 0,
                bytes: 0,
                stack: [0; KERNEL_STACK_FRAMES],
            };
            if KSTACK_OF.insert(tid, empty, 0).is_err() {
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
