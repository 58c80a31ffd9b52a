//! Names of error numbers, from the `syscalls` crate's errno table.

use syscalls::Errno;

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

    #[test]
    fn names() {
        assert_eq!(errno_name(9), "EBADF");
        assert_eq!(errno_name(11), "EAGAIN");
        assert_eq!(errno_name(512), "ERESTARTSYS");
        assert_eq!(errno_name(516), "ERESTART_RESTARTBLOCK");
        assert_eq!(errno_name(150), "E150");
    }
}
