//! Names of error numbers, from the `syscalls` crate's errno table.

use syscalls::Errno;
use syscost_common::errno_of_slot;

/// Name of errno slot `slot` of the kernel's errno table ("EBADF"); slot 0 holds the
/// errnos without a slot of their own and is called "EOTHER".
pub fn slot_name(slot: u32) -> String {
    match errno_of_slot(slot) {
        Some(e) => errno_name(e),
        None => "EOTHER".to_string(),
    }
}

/// Name of a positive errno, or `E<number>` when the table has none.
pub fn errno_name(errno: u32) -> String {
    match Errno::new(errno as i32).name() {
        Some(n) => n.to_string(),
        None => format!("E{errno}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscost_common::errno_slot;

    #[test]
    fn names() {
        assert_eq!(errno_name(9), "EBADF");
        assert_eq!(errno_name(11), "EAGAIN");
        assert_eq!(errno_name(512), "ERESTARTSYS");
        assert_eq!(slot_name(errno_slot(2)), "ENOENT");
        assert_eq!(slot_name(errno_slot(516)), "ERESTART_RESTARTBLOCK");
        assert_eq!(slot_name(0), "EOTHER");
        assert_eq!(errno_name(150), "E150");
    }
}
