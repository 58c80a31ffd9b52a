use std::{
    sync::atomic::{Ordering, fence},
    time::{Duration, Instant},
};

use syscost_common::{StatsEntry, ThreadSlot, TopKey, TopValue};
use syscost_report::syscall_names::SyscallId;

use super::{consistent::*, per_process::*, *};

/// Each exited process takes its own pairs out of the copy, by key; a pid queued
/// twice takes them with its first record; the rest of the copy stays.
#[test]
fn exited_processes_take_their_own_pairs() {
    let k = |tgid, key| TopKey { tgid, key };
    let v = |calls| TopValue {
        calls,
        ..Default::default()
    };
    let mut table = vec![
        (k(7, 3), v(1)),
        (k(5, 1), v(2)),
        (k(7, 1), v(3)),
        (k(9, 2), v(4)),
        (k(5, 4), v(5)),
    ];
    let (pairs, ends) = take_exited(&mut table, &[7, 5, 7, 8]);
    assert_eq!(ends, vec![2, 4, 4, 4]);
    assert_eq!(pairs[..2], [(k(7, 1), v(3)), (k(7, 3), v(1))]);
    assert_eq!(pairs[2..4], [(k(5, 1), v(2)), (k(5, 4), v(5))]);
    assert_eq!(pairs.len(), 4, "the pid's second record and 8 have none");
    assert_eq!(table, vec![(k(9, 2), v(4))]);
}

/// The queued exits wait for the refresh unless the table fills, the queue is full
/// or the oldest has waited a second; nothing queued is never due.
#[test]
fn exits_are_counted_early_only_when_the_table_fills_or_they_waited() {
    let soon = Duration::from_millis(100);
    assert!(!settle_due(0, EXITS_WAIT, 16_384, 0), "nothing queued");
    assert!(!settle_due(10, soon, 100, 15_000));
    assert!(
        settle_due(10, soon, 5_000, 15_000),
        "a third of the room taken"
    );
    assert!(!settle_due(10, soon, 4_999, 15_000));
    assert!(settle_due(10, soon, 0, 0), "no room left");
    assert!(settle_due(1, EXITS_WAIT, 0, 15_000), "waited a second");
    assert!(settle_due(EXITS_QUEUED, soon, 0, 15_000), "the queue full");
}
use syscost_common::syscall_key;

/// A writer that updates an entry the way the kernel side does (sequence count odd
/// while the figures change, each figure written on its own) on another thread,
/// without pause, and a reader copying it at the same time: every copy kept is
/// whole (its calls are its histogram's sum, its errors its errno counts, its time
/// `calls` times the step), and the copies only grow.
#[test]
fn copies_made_against_a_racing_writer_are_whole() {
    use std::sync::atomic::AtomicBool;
    const NS: u64 = 1_000;
    struct Shared(std::cell::UnsafeCell<StatsEntry>);
    // SAFETY: the writer writes through volatile stores under the sequence count,
    // the reader reads through copy_consistent: the protocol under test.
    unsafe impl Sync for Shared {}
    let shared = Arc::new(Shared(std::cell::UnsafeCell::new(StatsEntry::ZERO)));
    let stop = Arc::new(AtomicBool::new(false));
    // Reader and writer on CPUs of their own where there are two: a real race, not
    // one thread preempting the other.
    let pin = |cpu: usize| {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
            // SAFETY: a zeroed cpu_set_t with one CPU set, for this thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
        }
    };
    let writer = {
        let (shared, stop) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            pin(1);
            let e = shared.0.get();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                // SAFETY: this thread is the entry's only writer.
                unsafe {
                    let seq = std::ptr::addr_of_mut!((*e).seq);
                    let s = seq.read_volatile();
                    seq.write_volatile(s + 1);
                    fence(Ordering::Release);
                    std::ptr::addr_of_mut!((*e).calls).write_volatile(n);
                    // Spread the figures out so a torn copy is likely to be seen.
                    std::hint::spin_loop();
                    let b = (n % 7) as usize;
                    let h = std::ptr::addr_of_mut!((*e).hist[b]);
                    h.write_volatile(h.read_volatile() + 1);
                    std::ptr::addr_of_mut!((*e).total_ns).write_volatile(n * NS);
                    if n.is_multiple_of(2) {
                        std::ptr::addr_of_mut!((*e).errors).write_volatile(n / 2);
                        std::ptr::addr_of_mut!((*e).errno_counts[0]).write_volatile(n / 2);
                    }
                    fence(Ordering::Release);
                    seq.write_volatile(s + 2);
                }
            }
            n
        })
    };
    pin(0);
    let mut last = HashMap::new();
    let (mut kept, mut same, mut previous) = (0u64, 0u64, 0u64);
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline || kept < 1000 {
        // SAFETY: the entry outlives the reads; it is written only under the count.
        let Some(c) = (unsafe { copy_or_last(&mut last, (0, 0), shared.0.get()) }) else {
            continue;
        };
        let hist: u64 = c.hist.iter().sum();
        assert_eq!(c.seq % 2, 0, "a copy made during an update");
        assert_eq!(hist, c.calls, "torn copy: histogram against calls");
        assert_eq!(c.total_ns, c.calls * NS, "torn copy: time against calls");
        assert_eq!(c.errors, c.calls / 2, "torn copy: errors against calls");
        assert_eq!(
            c.errno_counts[0], c.errors,
            "torn copy: errnos against errors"
        );
        assert!(
            c.calls >= previous,
            "went back from {previous} to {}",
            c.calls
        );
        if c.calls == previous {
            same += 1;
        }
        previous = c.calls;
        kept += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(
        written > 1000 && previous > 0,
        "{written} updates, last copy {previous}"
    );
    // The race was real: the reader saw the figures move between copies.
    assert!(same < kept, "{kept} copies, all the same");
}

/// An entry whose update never ends (its count stays odd) is read as its last
/// consistent copy; one never copied whole is left out.
#[test]
fn an_entry_that_never_settles_is_read_as_its_last_copy() {
    let mut last = HashMap::new();
    let mut e = StatsEntry {
        calls: 5,
        seq: 2,
        ..StatsEntry::ZERO
    };
    // SAFETY: a local entry.
    unsafe {
        assert_eq!(copy_or_last(&mut last, (1, 3), &e).unwrap().calls, 5);
        e.seq = 3;
        e.calls = 6;
        assert_eq!(copy_or_last(&mut last, (1, 3), &e).unwrap().calls, 5);
        assert!(copy_or_last(&mut last, (0, 0), &e).is_none());
        e.seq = 4;
        assert_eq!(copy_or_last(&mut last, (1, 3), &e).unwrap().calls, 6);
    }
}

#[test]
fn copies_only_between_updates() {
    let mut e = StatsEntry {
        calls: 3,
        ..StatsEntry::ZERO
    };
    assert_eq!(unsafe { copy_consistent(&e) }.unwrap().calls, 3);
    e.seq = 7; // an update in progress, for ever
    assert!(unsafe { copy_consistent(&e) }.is_none());
    e.seq = 8;
    assert_eq!(unsafe { copy_consistent(&e) }.unwrap().seq, 8);
}

#[test]
fn a_thread_inside_a_syscall() {
    let t = ThreadSlot {
        tid: 7,
        key: syscall_key(syscost_common::abi::NATIVE, 0),
        nr: 0,
        enter_ns: 1_000,
        calls: 5,
        ..ThreadSlot::EMPTY
    };
    let s = thread_state(&t, 2_001_000);
    assert_eq!(
        s.in_syscall,
        Some((SyscallId::native(0), Duration::from_millis(2)))
    );
    let idle = thread_state(&ThreadSlot { enter_ns: 0, ..t }, 5);
    assert_eq!((idle.in_syscall, idle.calls), (None, 5));
}

#[test]
fn series_steps_and_reset() {
    let id = SyscallId::native(39);
    let mut snap = Snapshot::empty();
    snap.record(id, 100, None);
    let mut series = Intervals::new(snap.clone());
    snap.record(id, 100, None);
    snap.record(id, 100, None);
    let step = series.next(snap.clone());
    assert_eq!(step.cumulative.syscalls[&id].calls, 3);
    assert_eq!(step.interval.syscalls[&id].calls, 2);
    series.reset();
    snap.record(id, 100, None);
    let step = series.next(snap);
    assert_eq!(step.cumulative.syscalls[&id].calls, 1);
    assert_eq!(step.interval.syscalls[&id].calls, 1);
}
