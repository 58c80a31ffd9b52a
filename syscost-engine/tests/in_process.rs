//! The kernel programs driven in-process by the engine, as aya's own integration tests
//! drive theirs: load the tracer, trace this test's own process, make a known number of
//! syscalls and read them back from a session's samples. (The binary's root tests, in
//! syscost-user/tests, drive the `syscost` command.)

use std::{sync::Arc, time::Duration};

use syscost_common::ThreadSlot;
use syscost_engine::{
    sampler::Sampler,
    session::{Session, SessionOptions, Watch},
    tracer::{Tracer, TracerOptions},
};
use syscost_report::profile::Target;
use syscost_test_support::{PATIENCE, root_test, wait_until};

/// The programs loaded (one slot, the on-CPU split) and this process traced.
fn this_process_traced() -> Tracer {
    let mut tracer = Tracer::load(TracerOptions {
        slots: 1,
        offcpu: true,
        ..Default::default()
    })
    .expect("the programs load");
    tracer
        .trace_process(std::process::id())
        .expect("this process is traced");
    tracer
}

/// A session over this process, sampling every `interval`.
fn session_of_this_process(interval: Duration) -> Session {
    let tracer = this_process_traced();
    Session::start(
        Sampler::new(tracer, false),
        None,
        SessionOptions {
            interval,
            watch: Watch::Nothing,
            name_pods: false,
        },
    )
}

/// A subscription's descriptor is readable exactly while a sample waits (the views
/// sleep on it: a sample must wake them, nothing else must), and a session whose clock
/// sleeps for an hour ends at once when it is dropped (its stop wakes the clock).
#[test]
fn a_subscription_wakes_its_reader_at_each_sample_and_a_sleeping_clock_ends_at_once() {
    let Some(_t) = root_test!() else {
        return;
    };
    let session = session_of_this_process(Duration::from_secs(3600));
    let handle = session.handle();
    let sub = handle.subscribe();
    let readable = |until: Option<std::time::Instant>| {
        syscost_engine::wake::wait(&[sub.fd()], until) == vec![true]
    };
    // Nothing published since the subscription (the first sample went out before it,
    // the next is an hour away).
    assert!(sub.try_recv().is_err());
    assert!(
        !readable(Some(std::time::Instant::now())),
        "no sample waits"
    );
    for n in 0..3 {
        let taken = handle.sample_now().expect("a sample");
        assert!(
            readable(Some(std::time::Instant::now() + PATIENCE)),
            "sample {n} did not wake the subscription"
        );
        assert_eq!(sub.try_recv().expect("the sample").seq, taken.seq);
        assert!(sub.try_recv().is_err());
        assert!(
            !readable(Some(std::time::Instant::now())),
            "sample {n} taken"
        );
    }
    // Dropped on a thread of its own, awaited with a deadline: a stop the clock missed
    // would leave it asleep for the hour.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(session);
        let _ = done.send(());
    });
    ended
        .recv_timeout(PATIENCE)
        .expect("the session ended when dropped, its clock asleep for an hour");
    drop(handle);
}

/// getppid and fchdir(-1) are made by nothing else in this process (the test harness,
/// the session's clock): their counts are exactly the test's.
#[test]
fn a_session_counts_this_process_exactly_and_every_subscriber_sees_the_same_samples() {
    let Some(_t) = root_test!() else {
        return;
    };
    const CALLS: u64 = 20_000;
    const FAILED: u64 = 3_000;
    let session = session_of_this_process(Duration::from_millis(200));
    let handle = session.handle();
    let (a, b) = (handle.subscribe(), handle.subscribe());
    for _ in 0..CALLS {
        // SAFETY: no arguments, no effect.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    for _ in 0..FAILED {
        // SAFETY: -1 is no descriptor: EBADF, no effect.
        unsafe { libc::fchdir(-1) };
    }
    // Two of the clock's own samples first (every 200 ms), so that the subscribers have
    // seen the clock's samples and the one taken now; `b` keeps its copies unread.
    let mut clock = Vec::new();
    while clock.len() < 2 {
        clock.push(
            a.recv_timeout(PATIENCE)
                .expect("a sample from the session's clock"),
        );
    }
    let now = handle.sample_now().expect("a sample");
    let p = now
        .snapshot(0)
        .to_profile(Target::default(), 1, true)
        .unwrap();
    let getppid = p.syscall("getppid").expect("getppid counted");
    assert_eq!(getppid.calls, CALLS);
    assert_eq!(getppid.errors, 0);
    // Plausible latencies: a getppid takes well under a millisecond, never 0.
    assert!(
        getppid.min_ns > 0 && getppid.avg_ns < 1_000_000,
        "{getppid:?}"
    );
    assert!(getppid.min_ns <= getppid.p50_ns && getppid.p50_ns <= getppid.max_ns);
    let fchdir = p.syscall("fchdir").expect("fchdir counted");
    assert_eq!((fchdir.calls, fchdir.errors), (FAILED, FAILED));
    assert_eq!(fchdir.errnos.get("EBADF"), Some(&FAILED));

    // Both subscribers received the same samples, the clock's and the one taken now,
    // in order: the very same objects (the clock may have published more since).
    // `b`'s samples wait unread: its descriptor says so (the live views and top's text
    // mode sleep on it).
    assert_eq!(
        syscost_engine::wake::wait(&[b.fd()], Some(std::time::Instant::now() + PATIENCE)),
        vec![true],
        "a subscription with samples waiting is readable"
    );
    let upto = |rx: &syscost_engine::session::Subscription| {
        let mut got = Vec::new();
        while let Ok(s) = rx.recv_timeout(PATIENCE) {
            let last = s.seq == now.seq;
            got.push(s);
            if last {
                return got;
            }
        }
        panic!("sample {} never came", now.seq);
    };
    let mut got_a = clock;
    got_a.extend(upto(&a));
    let got_b = upto(&b);
    assert!(
        got_a.len() >= 3,
        "the clock published: {} samples",
        got_a.len()
    );
    assert_eq!(got_a.len(), got_b.len());
    for (x, y) in got_a.iter().zip(&got_b) {
        assert!(Arc::ptr_eq(x, y), "sample {} and {}", x.seq, y.seq);
    }
    assert!(got_a.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert!(handle.latest().seq >= now.seq);

    // The final figures, after the programs are unloaded, are the same counts.
    let finished = session.finish().expect("finish");
    let p = finished
        .snapshot(0)
        .to_profile(Target::default(), 1, true)
        .unwrap();
    assert_eq!(p.syscall("getppid").unwrap().calls, CALLS);
    assert_eq!(p.syscall("fchdir").unwrap().calls, FAILED);
}

/// Samples taken as calls are made: their counts only grow, each is exact once the
/// calls before it returned, and the interval between two (what a view shows) is a
/// valid profile of exactly the calls made in it.
#[test]
fn samples_grow_exactly_and_their_intervals_are_valid_profiles() {
    let Some(_t) = root_test!() else {
        return;
    };
    const ROUNDS: u64 = 4;
    const CALLS: u64 = 50_000;
    const FAILED: u64 = 1_000;
    // A long interval: every sample here is taken by the test.
    let session = session_of_this_process(Duration::from_secs(3600));
    let handle = session.handle();
    let mut previous = handle.sample_now().unwrap().snapshot(0);
    for round in 1..=ROUNDS {
        for _ in 0..CALLS {
            // SAFETY: no arguments, no effect.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
        for _ in 0..FAILED {
            // SAFETY: -1 is no descriptor: EBADF, no effect.
            unsafe { libc::fchdir(-1) };
        }
        let now = handle.sample_now().unwrap().snapshot(0);
        let cumulative = now.to_profile(Target::default(), 1, true).unwrap();
        assert_eq!(cumulative.syscall("getppid").unwrap().calls, round * CALLS);
        assert_eq!(cumulative.syscall("fchdir").unwrap().errors, round * FAILED);
        let interval = now
            .since(&previous)
            .to_profile(Target::default(), 1, true)
            .unwrap();
        for s in &interval.syscalls {
            let in_hist: u64 = s.histogram.iter().map(|b| b.count).sum();
            assert_eq!(in_hist, s.calls, "{}: histogram against calls", s.name);
            let in_errnos: u64 = s.errnos.values().sum();
            assert_eq!(in_errnos, s.errors, "{}: errnos against errors", s.name);
            assert!(
                s.errors <= s.calls && s.oncpu_ns + s.offcpu_ns == s.total_ns,
                "{s:?}"
            );
        }
        assert_eq!(interval.syscall("getppid").unwrap().calls, CALLS);
        let fchdir = interval.syscall("fchdir").unwrap();
        assert_eq!(
            (fchdir.calls, fchdir.errnos.get("EBADF")),
            (FAILED, Some(&FAILED))
        );
        previous = now;
    }
    session.finish().unwrap();
}

/// A thread seen leaving the CPU inside a call, whose return the kernel does not report
/// (as 6.18 does for some switches out of the idle task): the call's time from that
/// switch-out counts as switched out, and the call is counted, never shown on a CPU.
/// The kernel's silence is made here by taking the sched_switch program out while the
/// thread is blocked.
#[test]
fn a_return_to_the_cpu_that_is_not_seen_is_counted_and_never_on_cpu() {
    let Some(_t) = root_test!() else {
        return;
    };
    let mut tracer = this_process_traced();
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (r, w) = (fds[0], fds[1]);
    let (tx, rx) = std::sync::mpsc::channel();
    // readv: no other thread of the test process makes one.
    let reader = std::thread::spawn(move || {
        // SAFETY: gettid has no arguments.
        tx.send(unsafe { libc::gettid() } as u32).unwrap();
        let mut byte = 0u8;
        let iov = libc::iovec {
            iov_base: (&raw mut byte).cast(),
            iov_len: 1,
        };
        // SAFETY: one iovec of one byte, alive for the call.
        unsafe { libc::readv(r, &iov, 1) }
    });
    let tid = rx.recv().unwrap();
    // Blocked, not preempted on its way there: the switch-out seen was a voluntary one.
    let switched_out = wait_until(
        "the reader blocked inside its readv",
        PATIENCE,
        Duration::from_millis(1),
        || match tracer.thread(tid) {
            Some(t)
                if t.nr == libc::SYS_readv as u64
                    && t.enter_ns != 0
                    && t.off_since_ns != 0
                    && t.voluntary & !ThreadSlot::SWITCH_IN_UNSEEN != 0 =>
            {
                Ok(t.off_since_ns)
            }
            t => Err(format!(": its slot {t:?}")),
        },
    );
    tracer.detach_sched_switch().unwrap();
    let written = syscost_engine::sampler::monotonic_ns();
    // SAFETY: one byte from a live buffer.
    assert_eq!(unsafe { libc::write(w, [7u8].as_ptr().cast(), 1) }, 1);
    assert_eq!(reader.join().unwrap(), 1);
    let mut sampler = Sampler::new(tracer, false);
    let snapshot = sampler.snapshot(0).unwrap();
    let p = snapshot.to_profile(Target::default(), 1, true).unwrap();
    let readv = p.syscall("readv").expect("readv counted");
    assert_eq!((readv.calls, readv.voluntary_switches), (1, 1), "{readv:?}");
    // Away at least from the switch-out seen to the write that woke it, at most the
    // whole call.
    assert!(
        readv.offcpu_ns >= written - switched_out && readv.offcpu_ns <= readv.total_ns,
        "readv: {} ns switched out of {} ns; the write came {} ns after its switch-out",
        readv.offcpu_ns,
        readv.total_ns,
        written - switched_out
    );
    // At least the reader's: the other tests of this binary run threads of this process
    // too, and one of them switched out inside a call as the program left is as unseen.
    assert!(p.switch_ins_unseen >= 1, "{}", p.switch_ins_unseen);
    sampler.unload().unwrap();
    // SAFETY: both ends are ours and closed once.
    unsafe {
        libc::close(r);
        libc::close(w);
    }
}

/// The wake-ups of the ring buffer that carries slow calls and stack samples. A stack's
/// later sample is sent without one (an interrupt is dear on a virtual machine); the
/// kernel wakes a reader by itself only for a record that finds the ring empty, so a
/// slow call sent while a quiet sample waits unread must force its wake-up, or a
/// reader asleep on the ring sleeps on. The reader here is an edge-triggered epoll:
/// an event only at a wake-up. This thread alone, on one CPU, makes the calls, each
/// from one place (a stack's entries are per CPU and per place).
#[test]
fn a_slow_call_wakes_the_reader_past_a_quiet_stack_sample() {
    let Some(_t) = root_test!() else {
        return;
    };
    // One CPU, the one it runs on (a cpuset may leave out CPU 0): a stack's first call
    // on another CPU would be a first sample (it wakes).
    // SAFETY: a cpu_set_t made empty, then this CPU of it set, for this thread.
    unsafe {
        let cpu = libc::sched_getcpu();
        assert!(cpu >= 0, "sched_getcpu");
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
    let slow = syscost_engine::slow::spec::parse_spec("clock_nanosleep=1ms")
        .unwrap()
        .thresholds()
        .unwrap();
    let mut tracer = Tracer::load(TracerOptions {
        slots: 1,
        offcpu: true,
        slow: Some(slow),
        stack_sample_every: Some(256),
        ..Default::default()
    })
    .expect("the programs load");
    let mut ring = tracer.take_call_ring().unwrap();
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(epoll >= 0);
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLET) as u32,
        u64: 0,
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&ring);
    // SAFETY: a valid epoll fd, the ring's fd and a live event.
    assert_eq!(
        unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut ev) },
        0
    );
    tracer
        .trace_process(std::process::id())
        .expect("this process is traced");
    #[derive(Clone, Copy)]
    enum Step {
        /// Waits for a wake-up, at most this long (ms): how many came.
        Wait(i32),
        Getppid,
        /// clock_nanosleep, this long (ns).
        Sleep(u64),
        /// Reads every record waiting: their flags.
        Drain,
    }
    // Each place's first call is a first sample (it wakes); the ring drained and the
    // edge taken, 256 getppid more from the same place: the 257th of its calls is a
    // sample, a quiet one; then a slow call from a place already sampled (no sample):
    // its wake-up must come although the quiet sample waits unread.
    let mut steps = vec![
        Step::Wait(0),
        Step::Getppid,
        Step::Sleep(0),
        Step::Drain,
        Step::Wait(0),
    ];
    steps.extend(std::iter::repeat_n(Step::Getppid, 256));
    steps.extend([
        Step::Wait(0),
        Step::Sleep(2_000_000),
        Step::Wait(PATIENCE.as_millis() as i32),
        Step::Drain,
    ]);
    // One loop makes every call, so that each kind comes from one place.
    let (mut woken, mut drained) = (Vec::new(), Vec::new());
    for s in steps {
        match s {
            Step::Wait(ms) => {
                let mut out = [libc::epoll_event { events: 0, u64: 0 }];
                // SAFETY: one event's room.
                woken.push(unsafe { libc::epoll_wait(epoll, out.as_mut_ptr(), 1, ms) });
            }
            Step::Getppid => {
                // SAFETY: no arguments.
                unsafe { libc::getppid() };
            }
            Step::Sleep(ns) => {
                let t = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: ns as libc::c_long,
                };
                // SAFETY: a live timespec, no remainder asked.
                unsafe {
                    libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &t, std::ptr::null_mut())
                };
            }
            Step::Drain => {
                let mut flags = Vec::new();
                while let Some(item) = ring.next() {
                    // SAFETY: the kernel wrote a whole CallEvent at the record's start.
                    let e: syscost_common::CallEvent =
                        unsafe { std::ptr::read_unaligned(item.as_ptr().cast()) };
                    flags.push(e.flags);
                }
                drained.push(flags);
            }
        }
    }
    use syscost_common::record_flags::{SLOW, STACK_SAMPLE};
    // Every message shows the whole run: wake-ups per wait, flags per drain.
    let run = format!("wake-ups {woken:?}, records drained {drained:?}");
    assert!(!drained[0].is_empty(), "no first sample was sent: {run}");
    assert_eq!(
        woken[3], 1,
        "no wake-up within {PATIENCE:?} for the slow call behind a quiet sample: {run}"
    );
    assert_eq!(woken[2], 0, "the quiet sample woke the reader: {run}");
    assert_eq!(
        drained[1],
        vec![STACK_SAMPLE, SLOW],
        "the records after the first: the quiet sample, then the slow call: {run}"
    );
    // SAFETY: our epoll fd.
    unsafe { libc::close(epoll) };
}

/// The benchmark's limit of a latency design counting calls by stack (`syscost floor
/// minimal-stacks`, the row `--stacks` is held against) counts each call of a loop once:
/// some stack has exactly the loop's calls (which frames tell stacks apart is the
/// walk's, `--stacks`' own, held by the stacks tests' call sites).
#[test]
fn the_benchmarks_stack_limit_counts_a_loops_calls_exactly() {
    let Some(_t) = root_test!() else {
        return;
    };
    const CALLS: u64 = 1000;
    let ebpf = syscost_engine::tracer::probes::load_floor("minimal-stacks")
        .expect("the candidate loads and attaches");
    for _ in 0..CALLS {
        // SAFETY: no arguments.
        unsafe { libc::getppid() };
    }
    let map = ebpf
        .map("MINIMAL_STACK_CALLS")
        .expect("the candidate's stack counts");
    let map = aya::maps::PerCpuHashMap::<_, u64, u64>::try_from(map).unwrap();
    // Every stack of the machine's calls since the attach, each summed over the CPUs.
    let counts: Vec<u64> = map.iter().map(|kv| kv.unwrap().1.iter().sum()).collect();
    assert!(
        counts.contains(&CALLS),
        "no stack counted the loop's {CALLS} calls: {counts:?}"
    );
}
