//! The parsers of what the kernel and traced processes hand syscost, reachable from the
//! fuzz targets (`fuzz/`). Not an API: each function takes raw bytes, parses them the
//! way syscost does, and must neither panic nor hang on any input.

/// The kernel layout read from raw BTF (`/sys/kernel/btf/vmlinux`'s format).
pub fn kernel_btf(bytes: &[u8]) -> bool {
    crate::kernel_btf::KernelLayout::from_btf(bytes).is_ok()
}

/// The executable mappings of a `/proc/PID/maps` text: how many.
pub fn maps(text: &[u8]) -> usize {
    crate::unwind::maps::parse_maps(&String::from_utf8_lossy(text)).len()
}

/// A slow-call record as the ring buffer delivers it (a `CallEvent`, then the stack
/// copy), received and named: the record's process is this one (its own pid is put in
/// the event, so that no other process's /proc is read).
pub fn slow_record(bytes: &[u8]) -> Option<usize> {
    use syscost_common::CallEvent;
    let size = std::mem::size_of::<CallEvent>();
    let head = bytes.get(..size)?;
    // SAFETY: `head` holds size_of::<CallEvent>() bytes; CallEvent is plain old data
    // (integers and arrays of them), valid for any bits; read_unaligned copies it.
    let mut e = unsafe { std::ptr::read_unaligned(head.as_ptr().cast::<CallEvent>()) };
    e.tgid = std::process::id();
    e.tid = e.tgid;
    let mut decoder = crate::call_ring::decode::Decoder::default();
    let received = decoder.receive(&e, &bytes[size..]);
    let call = crate::call_ring::decode::Namer::default().name(received);
    Some(call.stack.len())
}
