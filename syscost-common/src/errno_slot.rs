//! Where an error number is counted in the per-syscall errno table. Ordinary errnos
//! (1..=159) have a slot each; the kernel-internal restart codes (ERESTARTSYS = 512 and
//! its neighbours, visible at sys_exit before signal handling rewrites them) have the
//! slots 160..=255; anything else lands in slot 0, "other".

/// Slots per syscall in the errno table: a power of two, so the kernel side can bound
/// the index with a mask the verifier understands.
pub const ERRNO_SLOTS: u32 = 256;
const DIRECT_END: u32 = 160;
const RESTART_BASE: u32 = 512;

/// Slot of a positive errno.
#[inline(always)]
pub const fn errno_slot(errno: u32) -> u32 {
    if errno < DIRECT_END {
        errno
    } else if errno >= RESTART_BASE && errno < RESTART_BASE + (ERRNO_SLOTS - DIRECT_END) {
        errno - RESTART_BASE + DIRECT_END
    } else {
        0
    }
}

/// Errno counted in `slot`, or `None` for slot 0 ("other").
pub const fn errno_of_slot(slot: u32) -> Option<u32> {
    if slot == 0 || slot >= ERRNO_SLOTS {
        None
    } else if slot < DIRECT_END {
        Some(slot)
    } else {
        Some(slot - DIRECT_END + RESTART_BASE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for e in (1..DIRECT_END).chain(512..608) {
            let s = errno_slot(e);
            assert!(s > 0 && s < ERRNO_SLOTS);
            assert_eq!(errno_of_slot(s), Some(e));
        }
    }

    #[test]
    fn out_of_range_is_other() {
        for e in [0, 160, 300, 511, 608, 4095] {
            assert_eq!(errno_slot(e), 0, "{e}");
        }
        assert_eq!(errno_of_slot(0), None);
        assert_eq!(errno_of_slot(ERRNO_SLOTS), None);
    }
}
