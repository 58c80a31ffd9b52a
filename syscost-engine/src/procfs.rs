//! Reads of /proc's small files, shared by the modules that name processes and cgroups.

use std::io::Read as _;

/// Reads a small file of /proc whole, at most 64 KiB: into a page at first, where the
/// default reader, finding no size, probes with reads of 32 bytes (a status file took
/// nine reads).
pub fn read_proc(path: &str) -> std::io::Result<Vec<u8>> {
    const MOST: u64 = 64 * 1024;
    let mut buf = Vec::with_capacity(4096);
    std::fs::File::open(path)?
        .take(MOST + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > MOST {
        return Err(std::io::Error::other(format!("{path}: more than 64 KiB")));
    }
    Ok(buf)
}
