//! The kernel programs driven in-process, as aya's own integration tests drive theirs:
//! load the tracer, trace this test's own process, make a known number of syscalls and
//! read them back from a session's samples. (The other root tests drive the binary.)

mod common;

use std::{sync::Arc, time::Duration};

use common::*;
use syscost_user::{
    profile::Target,
    sampler::Sampler,
    session::{Session, SessionOptions, Watch},
    tracer::{Tracer, TracerOptions},
};

/// A session over this process, sampling every `interval`.
fn session_of_this_process(interval: Duration) -> Session {
    let mut tracer = Tracer::load(TracerOptions {
        slots: 1,
        offcpu: true,
        ..Default::default()
    })
    .expect("the programs load");
    tracer
        .trace_process(std::process::id())
        .expect("this process is traced");
    Session::start(
        Sampler::new(tracer, false),
        None,
        SessionOptions {
            interval,
            watch: Watch::Nothing,
        },
    )
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
    // Long enough for the clock to publish samples of its own too.
    std::thread::sleep(Duration::from_millis(700));
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
    // in order: the very same objects.
    let got_a: Vec<Arc<_>> = a.try_iter().collect();
    let got_b: Vec<Arc<_>> = b.try_iter().collect();
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
    assert_eq!(got_a.last().unwrap().seq, now.seq);
    assert!(Arc::ptr_eq(&handle.latest(), &now));

    // The final figures, after the programs are unloaded, are the same counts.
    let finished = session.finish().expect("finish");
    let p = finished
        .snapshot(0)
        .to_profile(Target::default(), 1, true)
        .unwrap();
    assert_eq!(p.syscall("getppid").unwrap().calls, CALLS);
    assert_eq!(p.syscall("fchdir").unwrap().calls, FAILED);
}

/// The samples' figures only grow, and each sample's interval is a valid profile: what
/// a view computes from two samples.
#[test]
fn samples_only_grow_while_calls_are_made() {
    let Some(_t) = root_test!() else {
        return;
    };
    let session = session_of_this_process(Duration::from_millis(100));
    let handle = session.handle();
    let samples = handle.subscribe();
    let worker = std::thread::spawn(|| {
        for _ in 0..200_000 {
            // SAFETY: no arguments, no effect.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
    });
    worker.join().unwrap();
    handle.sample_now().unwrap();
    let counts: Vec<u64> = samples
        .try_iter()
        .map(|s| {
            s.snapshot(0)
                .to_profile(Target::default(), 1, true)
                .unwrap()
                .syscall("getppid")
                .map_or(0, |g| g.calls)
        })
        .collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(counts.last(), Some(&200_000), "{counts:?}");
    drop(samples);
    session.finish().unwrap();
}
