//! The kernel's maps as the tracer reads them: mapped arrays, batch deletes, per-CPU
//! sums, and the run-time statistics of the programs.

use std::{
    io,
    mem::size_of,
    os::fd::{AsFd as _, AsRawFd as _},
    ptr::NonNull,
};

use anyhow::{Context as _, Result, anyhow};
use aya::{
    Ebpf,
    maps::{Map, MapData},
    programs::ProgramInfo,
};
use syscost_common::TopValue;

/// A read-only mapping of a BPF_F_MMAPABLE array: reads of it are plain memory reads.
pub(super) struct Mapped {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only shared memory, valid until dropped; readers only load
// from it.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    pub(super) fn new(map: &MapData, bytes: usize) -> Result<Self> {
        let len = bytes.div_ceil(4096) * 4096;
        // SAFETY: maps `len` bytes of the map's fd read-only and shared; the kernel
        // checks the length against the map's size.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.fd().as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error())
                .context("cannot map the statistics for reading");
        }
        Ok(Self {
            ptr: NonNull::new(ptr.cast()).context("mmap returned null")?,
            len,
        })
    }

    /// Element `i` of an array of `T` (`None` beyond the mapping).
    pub(super) fn element<T>(&self, i: usize) -> Option<*const T> {
        let end = (i + 1).checked_mul(size_of::<T>())?;
        (end <= self.len).then(|| {
            unsafe { self.ptr.as_ptr().add(i * size_of::<T>()) }
                .cast_const()
                .cast()
        })
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps what new() mapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// The fd of a loaded map.
pub(super) fn map_fd(map: &Map) -> Result<i32> {
    let data = match map {
        Map::PerCpuHashMap(d) | Map::HashMap(d) | Map::Array(d) | Map::PerCpuArray(d) => d,
        _ => anyhow::bail!("no fd for this kind of map"),
    };
    Ok(data.fd().as_fd().as_raw_fd())
}

/// The bpf syscall: command `cmd` with `attr`, the `union bpf_attr` member it reads;
/// what the kernel returned (a descriptor for the commands that make one).
///
/// # Safety
/// `attr` is the member `cmd` reads, every address in it points at memory of the sizes
/// the command needs (the map's key and value sizes, per possible CPU for a per-CPU
/// value), alive for the call.
unsafe fn bpf<A>(cmd: libc::c_long, attr: &mut A) -> io::Result<libc::c_long> {
    // SAFETY: as the caller promises; the kernel reads at most `size_of::<A>()` bytes.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut A, size_of::<A>() as u32) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `union bpf_attr`'s member for the element commands.
#[repr(C)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// Element command `cmd` on map `fd`, with these key and value addresses (0: none).
///
/// # Safety
/// `key` (and `value` when not 0) point at memory of the map's key and value sizes
/// (one value per possible CPU for a per-CPU map), alive for the call.
unsafe fn elem(cmd: libc::c_long, fd: i32, key: u64, value: u64) -> io::Result<()> {
    let mut attr = ElemAttr {
        map_fd: fd as u32,
        _pad: 0,
        key,
        value,
        flags: 0,
    };
    // SAFETY: as the caller promises.
    unsafe { bpf(cmd, &mut attr) }.map(|_| ())
}

/// `union bpf_attr`'s member for the batch commands.
#[repr(C)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

/// Deletes `keys` from the hash map `fd` in one `BPF_MAP_DELETE_BATCH`.
pub(super) fn delete_batch<K>(fd: i32, keys: &[K]) -> io::Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    const BPF_MAP_DELETE_BATCH: libc::c_long = 27;
    let mut attr = BatchAttr {
        in_batch: 0,
        out_batch: 0,
        keys: keys.as_ptr() as u64,
        values: 0,
        count: keys.len() as u32,
        map_fd: fd as u32,
        elem_flags: 0,
        flags: 0,
    };
    // SAFETY: the attribute points at `keys.len()` keys of the map's key size, alive for
    // the call; the kernel writes only `count` back.
    unsafe { bpf(BPF_MAP_DELETE_BATCH, &mut attr) }?;
    if attr.count as usize == keys.len() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{} of {} keys deleted",
            attr.count,
            keys.len()
        )))
    }
}

/// Deletes `keys` from the hash map `fd`: in one `BPF_MAP_DELETE_BATCH`, or one by one
/// where the batch stops (a key already gone ends it; so does a kernel without the
/// command). Keys that cannot be deleted are left, silently: a caller that must know
/// which were deleted uses [`delete_batch`] and [`delete_elem`] itself.
pub(super) fn delete_all<K>(fd: i32, keys: &[K]) {
    if delete_batch(fd, keys).is_err() {
        for k in keys {
            let _ = delete_elem(fd, k);
        }
    }
}

/// Every element of the hash map `fd` (per-CPU when `per_key` > 1: that many values a
/// key, one per possible CPU), read with `BPF_MAP_LOOKUP_BATCH` (Linux 5.6) a few hundred
/// at a time: a handful of syscalls for a whole table, where reading key by key takes
/// two per element. `each` gets every key with its values. An element added or deleted
/// while the table is read may be seen or not; each one seen is whole (read under its
/// bucket's lock). `Err` when the kernel refuses the command (the caller then reads the
/// table key by key).
pub(super) fn lookup_batch<K: Copy + Default, V: Copy + Default>(
    fd: i32,
    per_key: usize,
    mut each: impl FnMut(&K, &[V]),
) -> io::Result<()> {
    const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;
    // Per-CPU values come 8-byte aligned.
    assert!(
        per_key == 1 || size_of::<V>().is_multiple_of(8),
        "a per-CPU value of 8-byte multiples"
    );
    // Elements a call returns at most; a bucket holding more than that (ENOSPC) is read
    // again with room for more, up to `MAX`.
    const FIRST: usize = 512;
    const MAX: usize = 1 << 16;
    let mut room = FIRST;
    let mut keys = vec![K::default(); room];
    let mut values = vec![V::default(); room * per_key];
    // The kernel's position in the table (a bucket number for hash maps): in from the
    // call before, out for the next.
    let mut at = 0u64;
    let mut first = true;
    loop {
        // A position the kernel never writes (its positions are bucket numbers, 4 bytes
        // written into the low ones): still there after a call, the kernel wrote
        // neither it nor the count.
        let mut next = u64::MAX;
        let mut attr = BatchAttr {
            in_batch: if first { 0 } else { &mut at as *mut u64 as u64 },
            out_batch: &mut next as *mut u64 as u64,
            keys: keys.as_mut_ptr() as u64,
            values: values.as_mut_ptr() as u64,
            count: room as u32,
            map_fd: fd as u32,
            elem_flags: 0,
            flags: 0,
        };
        // SAFETY: room for `room` keys of the map's key size and `room` values (each
        // `per_key` values of `V`, the map's value size per possible CPU), and 8 bytes
        // for each position (a hash map's is 4), all alive for the call; the kernel
        // writes at most `count` of each.
        let r = unsafe { bpf(BPF_MAP_LOOKUP_BATCH, &mut attr) };
        let done = match r {
            Ok(_) => false,
            // Past the last bucket from the start: nothing written.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && next == u64::MAX => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => true,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) && room < MAX => {
                room = (room * 4).min(MAX);
                keys.resize(room, K::default());
                values.resize(room * per_key, V::default());
                continue;
            }
            Err(e) => return Err(e),
        };
        let n = (attr.count as usize).min(room);
        for (i, k) in keys[..n].iter().enumerate() {
            each(k, &values[i * per_key..(i + 1) * per_key]);
        }
        if done {
            return Ok(());
        }
        at = next;
        first = false;
    }
}

/// Deletes `key` of the map `fd` (BPF_MAP_DELETE_ELEM).
pub(super) fn delete_elem<K>(fd: i32, key: &K) -> io::Result<()> {
    const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
    // SAFETY: one key of the map's key size, alive for the call.
    unsafe { elem(BPF_MAP_DELETE_ELEM, fd, key as *const K as u64, 0) }
}

/// Reads and deletes `key` of the per-CPU hash map `fd` in one `BPF_MAP_LOOKUP_AND_DELETE_ELEM`
/// (hash maps from Linux 5.14): its values, one per possible CPU, or `None` when the
/// key is not there. `Err` when the kernel refuses the command for this map.
pub(super) fn lookup_and_delete_per_cpu<K, V: Copy + Default>(
    fd: i32,
    key: &K,
    cpus: usize,
) -> io::Result<Option<Vec<V>>> {
    const BPF_MAP_LOOKUP_AND_DELETE_ELEM: libc::c_long = 21;
    // Per-CPU values come 8-byte aligned, one per possible CPU.
    assert!(
        size_of::<V>().is_multiple_of(8),
        "a per-CPU value of 8-byte multiples"
    );
    let mut values = vec![V::default(); cpus];
    // SAFETY: one key of the map's key size and room for one value per possible CPU,
    // both alive for the call.
    let done = unsafe {
        elem(
            BPF_MAP_LOOKUP_AND_DELETE_ELEM,
            fd,
            key as *const K as u64,
            values.as_mut_ptr() as u64,
        )
    };
    match done {
        Ok(()) => Ok(Some(values)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A per-process table value summed over CPUs.
pub(super) fn sum_cpus<'a>(per_cpu: impl Iterator<Item = &'a TopValue>) -> TopValue {
    per_cpu.fold(TopValue::default(), |v, c| TopValue {
        calls: v.calls + c.calls,
        errors: v.errors + c.errors,
        total_ns: v.total_ns + c.total_ns,
        offcpu_ns: v.offcpu_ns + c.offcpu_ns,
    })
}

pub(super) fn map_data<'a>(ebpf: &'a Ebpf, name: &str) -> Result<&'a MapData> {
    match ebpf
        .map(name)
        .with_context(|| format!("{name} map missing"))?
    {
        Map::Array(d) => Ok(d),
        _ => Err(anyhow!("{name} is not an array")),
    }
}

/// Number of possible CPUs (per-CPU maps and the pool have one region each).
pub fn possible_cpus() -> Result<u32> {
    aya::util::nr_cpus()
        .map(|n| n as u32)
        .map_err(|(what, e)| anyhow!("cannot read the possible CPUs ({what}): {e}"))
}

/// Run time (ns) and run count of these programs, summed.
pub(super) fn run_totals(programs: impl Iterator<Item = ProgramInfo>) -> (u64, u64) {
    programs.fold((0, 0), |(t, c), i| {
        (t + i.run_time().as_nanos() as u64, c + i.run_count())
    })
}

/// BPF run-time statistics, on while this value lives (the kernel turns them off when
/// its fd closes, so the machine's setting is never left changed). They add two clock
/// reads to every program run on the machine, so only the live view turns them on.
pub struct RunTimeStats {
    _fd: std::os::fd::OwnedFd,
}

impl RunTimeStats {
    pub fn enable() -> Result<Self> {
        let fd = aya::sys::enable_stats(aya::sys::Stats::RunTime)
            .context("cannot enable BPF run-time statistics")?;
        Ok(Self { _fd: fd })
    }
}

/// A wait until no BPF program still runs that began before it: an update of an array
/// of maps, which the kernel returns from only after an RCU grace period (so that
/// userspace knows every program that could be running uses the new value; Linux 4.20
/// on). The array is syscost's own and no program reads it: it exists for the wait. A
/// tracepoint's program runs whole inside an RCU read-side section, so once the wait
/// returns, a value it read before (`STACK_SIDE`) is no longer in use by any of them.
pub struct GracePeriod {
    outer: std::os::fd::OwnedFd,
    inner: std::os::fd::OwnedFd,
}

impl GracePeriod {
    pub(super) fn new() -> io::Result<Self> {
        const BPF_MAP_TYPE_ARRAY: u32 = 2;
        const BPF_MAP_TYPE_ARRAY_OF_MAPS: u32 = 12;
        let inner = create_map(BPF_MAP_TYPE_ARRAY, 4, 4, 1, None)?;
        let outer = create_map(
            BPF_MAP_TYPE_ARRAY_OF_MAPS,
            4,
            4,
            1,
            Some(inner.as_raw_fd() as u32),
        )?;
        Ok(Self { outer, inner })
    }

    /// Returns once every program that began before the call has ended.
    pub fn wait(&self) -> io::Result<()> {
        let key = 0u32;
        let value = self.inner.as_raw_fd() as u32;
        update_elem(self.outer.as_raw_fd(), &key, &value)
    }
}

/// `union bpf_attr`'s member for BPF_MAP_CREATE up to `btf_vmlinux_value_type_id` (the
/// last field of Linux 5.10's, whose size it is; later kernels take it as a prefix and
/// zero the rest): every byte a field, none padding, so every byte the kernel reads is
/// one set here (a nonzero `map_ifindex` would ask for a device's map).
#[repr(C)]
#[derive(Default)]
struct CreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
    map_ifindex: u32,
    btf_fd: u32,
    btf_key_type_id: u32,
    btf_value_type_id: u32,
    btf_vmlinux_value_type_id: u32,
}

const _: () = assert!(size_of::<CreateAttr>() == 64, "no padding in CreateAttr");

/// A map made by BPF_MAP_CREATE, named `syscost_wait`.
fn create_map(
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    inner: Option<u32>,
) -> io::Result<std::os::fd::OwnedFd> {
    const BPF_MAP_CREATE: libc::c_long = 0;
    let mut map_name = [0u8; 16];
    map_name[..12].copy_from_slice(b"syscost_wait");
    let mut attr = CreateAttr {
        map_type,
        key_size,
        value_size,
        max_entries,
        inner_map_fd: inner.unwrap_or(0),
        map_name,
        ..Default::default()
    };
    // SAFETY: the attribute is a bpf_attr prefix with every byte set, alive for the
    // call; the kernel reads it and returns a new descriptor.
    let fd = unsafe { bpf(BPF_MAP_CREATE, &mut attr) }?;
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) })
}

/// BPF_MAP_UPDATE_ELEM of one key and value.
fn update_elem<K, V>(fd: i32, key: &K, value: &V) -> io::Result<()> {
    const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
    // SAFETY: a key and a value of the map's sizes, alive for the call; the kernel only
    // reads them.
    unsafe {
        elem(
            BPF_MAP_UPDATE_ELEM,
            fd,
            key as *const K as u64,
            value as *const V as u64,
        )
    }
}
