use super::*;

/// A window's tables: each entry's calls since the earlier read, those with none left
/// out with their walks; counters likewise.
#[test]
fn a_window_is_the_later_read_less_the_earlier() {
    let key = |stack, tgid| StackKey {
        stack,
        tgid,
        key: 39,
    };
    let v = |calls, total_ns| StackValue { calls, total_ns };
    let mut earlier = Raw {
        calls: vec![(key(1, 7), v(1000, 5000)), (key(2, 7), v(10, 100))],
        sample_every: 64,
        ..Raw::default()
    };
    earlier.frames.insert(1, vec![0x10]);
    earlier.frames.insert(2, vec![0x20]);
    earlier.counts[stack_counter::CALLS_DROPPED as usize] = 3;
    let mut later = Raw {
        calls: vec![
            (key(1, 7), v(3000, 15000)),
            (key(2, 7), v(10, 100)),
            (key(3, 8), v(5, 50)),
        ],
        ..earlier.clone()
    };
    later.frames.insert(3, vec![0x30]);
    later.counts[stack_counter::CALLS_DROPPED as usize] = 4;
    let d = later.since(&earlier);
    assert_eq!(
        d.calls,
        vec![(key(1, 7), v(2000, 10000)), (key(3, 8), v(5, 50))]
    );
    let mut walks: Vec<_> = d.frames.keys().copied().collect();
    walks.sort();
    assert_eq!(walks, [1, 3]);
    assert_eq!(d.counts[stack_counter::CALLS_DROPPED as usize], 1);
    assert_eq!(d.sample_every, 64);
    assert!(earlier.since(&earlier).calls.is_empty());
    assert!(!later.moved_past_the_bound(&earlier));
    let mut beyond = later.clone();
    beyond.calls.push((key(0, 0), v(7, 70)));
    assert!(beyond.moved_past_the_bound(&earlier));
    assert!(!beyond.moved_past_the_bound(&beyond.clone()));
}

fn frame(addr: u64, f: &str) -> Frame {
    Frame {
        addr,
        function: Some(f.into()),
        ..Frame::default()
    }
}

fn sample(stack: Vec<Frame>) -> SlowCall {
    SlowCall {
        pid: 9,
        comm: "sites".into(),
        syscall: "getppid".into(),
        stack,
        ..SlowCall::default()
    }
}

fn key(stack: u64) -> StackKey {
    StackKey {
        stack,
        tgid: 9,
        key: 110,
    }
}

#[test]
fn split_adds_up_exactly_and_follows_the_weights() {
    assert_eq!(split(6000, &[1, 2, 3]), vec![1000, 2000, 3000]);
    assert_eq!(split(10, &[1, 1, 1]), vec![4, 3, 3]);
    assert_eq!(split(0, &[5, 1]), vec![0, 0]);
    assert_eq!(split(7, &[0, 0]), vec![0, 0]);
    for (total, w) in [
        (1_000_003u64, vec![3u64, 7, 11]),
        (u64::MAX / 2, vec![1, 1]),
    ] {
        assert_eq!(split(total, &w).iter().sum::<u64>(), total);
    }
}

#[test]
fn a_walk_whose_samples_agree_keeps_its_exact_figures() {
    let walk = vec![0x10, 0x30];
    let raw = Raw {
        calls: vec![(
            key(5),
            StackValue {
                calls: 1000,
                total_ns: 9000,
            },
        )],
        frames: HashMap::from([(5, walk.clone())]),
        sample_every: 64,
        ..Raw::default()
    };
    let mut samples = Samples::default();
    // The unwinding reaches the caller the walk skipped (0x20).
    let unwound = vec![
        frame(0x10, "getppid"),
        frame(0x20, "site_a"),
        frame(0x30, "main"),
    ];
    for _ in 0..3 {
        samples.add(key(5), &sample(unwound.clone()));
    }
    let s = assemble(&raw, &samples, |_| None, |_| None);
    assert_eq!(s.stacks.len(), 1);
    let line = &s.stacks[0];
    assert_eq!((line.calls, line.total_ns, line.samples), (1000, 9000, 3));
    assert_eq!(line.frames, unwound);
    assert_eq!(line.frames_from, FramesFrom::Sample);
    assert!(!line.estimated);
    assert_eq!(
        (line.comm.as_str(), line.syscall.as_str()),
        ("sites", "getppid")
    );
    assert_eq!(s.samples, 3);
}

#[test]
fn samples_that_unwind_as_the_walk_are_the_walks_frames() {
    let raw = Raw {
        calls: vec![(
            key(5),
            StackValue {
                calls: 4,
                total_ns: 8,
            },
        )],
        frames: HashMap::from([(5, vec![0x10, 0x30])]),
        ..Raw::default()
    };
    let mut samples = Samples::default();
    samples.add(
        key(5),
        &sample(vec![frame(0x10, "getppid"), frame(0x30, "main")]),
    );
    let s = assemble(&raw, &samples, |_| None, |_| None);
    assert_eq!(s.stacks[0].frames_from, FramesFrom::Walk);
}

#[test]
fn a_sample_that_could_not_be_unwound_is_not_another_caller() {
    let raw = Raw {
        calls: vec![(
            key(5),
            StackValue {
                calls: 300,
                total_ns: 3000,
            },
        )],
        frames: HashMap::from([(5, vec![0x10, 0x30])]),
        ..Raw::default()
    };
    let mut samples = Samples::default();
    let walk = || sample(vec![frame(0x10, "getppid"), frame(0x30, "main")]);
    let unwound = || {
        sample(vec![
            frame(0x10, "getppid"),
            frame(0x20, "site_a"),
            frame(0x30, "main"),
        ])
    };
    for s in [unwound(), walk(), unwound()] {
        samples.add(key(5), &s);
    }
    let s = assemble(&raw, &samples, |_| None, |_| None);
    assert_eq!(s.stacks.len(), 1, "{:?}", s.stacks);
    let line = &s.stacks[0];
    assert_eq!(
        (line.calls, line.total_ns, line.estimated),
        (300, 3000, false)
    );
    assert_eq!(line.frames_from, FramesFrom::Sample);
    assert_eq!(line.frames[1].raw_label(), "site_a");
    // Samples that all failed keep the walk's frames and figures.
    let mut only_walks = Samples::default();
    only_walks.add(key(5), &walk());
    let s = assemble(&raw, &only_walks, |_| None, |_| None);
    assert_eq!(s.stacks[0].frames_from, FramesFrom::Walk);
    assert_eq!(s.stacks[0].calls, 300);
}

#[test]
fn a_walk_shared_by_several_callers_is_split_by_their_samples_and_says_so() {
    let raw = Raw {
        calls: vec![(
            key(5),
            StackValue {
                calls: 6001,
                total_ns: 60_010,
            },
        )],
        frames: HashMap::from([(5, vec![0x10])]),
        counts: [2, 1, 6, 4],
        sample_every: 64,
    };
    let mut samples = Samples::default();
    for (site, n) in [("site_a", 1), ("site_b", 2), ("site_c", 3)] {
        for _ in 0..n {
            samples.add(
                key(5),
                &sample(vec![frame(0x10, "getppid"), frame(0x20 + n, site)]),
            );
        }
    }
    let s = assemble(&raw, &samples, |_| None, |_| None);
    let got: Vec<(String, u64, bool)> = s
        .stacks
        .iter()
        .map(|l| (l.frames[1].raw_label(), l.calls, l.estimated))
        .collect();
    assert_eq!(
        got,
        [
            ("site_c".to_string(), 3001, true),
            ("site_b".to_string(), 2000, true),
            ("site_a".to_string(), 1000, true)
        ]
    );
    assert_eq!(s.stacks.iter().map(|l| l.total_ns).sum::<u64>(), 60_010);
    assert_eq!(
        (s.calls_dropped, s.frames_dropped, s.samples_dropped),
        (2, 1, 4)
    );
}

#[test]
fn a_walk_without_samples_keeps_its_figures_and_says_why_it_is_unnamed() {
    let raw = Raw {
        calls: vec![(
            key(5),
            StackValue {
                calls: 2,
                total_ns: 3,
            },
        )],
        frames: HashMap::from([(5, vec![0x10, 0x30])]),
        ..Raw::default()
    };
    let asked = std::cell::Cell::new(0);
    let s = assemble(
        &raw,
        &Samples::default(),
        |pid| Some(format!("proc{pid}")),
        |pid| {
            asked.set(asked.get() + 1);
            Some(format!("/cg{pid}"))
        },
    );
    assert_eq!(asked.get(), 1, "a cgroup asked once a process");
    // A walk without room and without a sample says so, not "no user stack".
    let lost = Raw {
        calls: vec![(
            key(6),
            StackValue {
                calls: 1,
                total_ns: 1,
            },
        )],
        ..Raw::default()
    };
    let l = assemble(&lost, &Samples::default(), |_| None, |_| None);
    assert_eq!(l.stacks[0].frames[0].raw_label(), "[stack not kept]");
    let line = &s.stacks[0];
    let name = SyscallId::of(110, u64::MAX).name();
    assert_eq!((line.calls, line.comm.as_str()), (2, "proc9"));
    assert_eq!(line.cgroup.as_deref(), Some("/cg9"));
    assert_eq!(line.syscall, name);
    assert_eq!(line.frames.len(), 2);
    assert!(line.frames.iter().all(|f| f.unknown.is_some()));
}

/// Past the bound of walks, the walk of an entry kept one by one is still kept; a
/// walk no kept entry uses is not.
#[test]
fn a_kept_entry_keeps_its_walk_past_the_bound() {
    let mut r = Drained::default();
    let mut raw = Raw::default();
    for i in 0..DRAINED_KEYS as u64 {
        raw.frames.insert((i << 2) | 1, vec![i]);
    }
    r.keep(raw);
    let (used, unused) = ((u64::MAX << 2) | 1, (u64::MAX << 3) | 1);
    let mut raw = Raw::default();
    raw.calls.push((
        StackKey {
            stack: used,
            tgid: 9,
            key: 110,
        },
        StackValue {
            calls: 1,
            total_ns: 5,
        },
    ));
    raw.frames.insert(used, vec![0x10]);
    raw.frames.insert(unused, vec![0x20]);
    r.keep(raw);
    let j = r.joined(Raw::default());
    assert_eq!(j.frames.get(&used), Some(&vec![0x10]));
    assert!(!j.frames.contains_key(&unused));
}

/// Entries drained are joined with the kernel's at the end, summed where one came
/// back (a later window, or a pid taken again), and beyond the bound summed per
/// syscall under no stack: every call counted once.
#[test]
fn drained_entries_are_joined_and_bounded() {
    let value = |calls| StackValue {
        calls,
        total_ns: calls * 10,
    };
    let mut r = Drained::default();
    let mut raw = Raw::default();
    raw.calls.push((key(5), value(3)));
    raw.frames.insert(5, vec![0x10, 0x20]);
    r.keep(raw);
    let mut now = Raw::default();
    now.calls.push((key(5), value(4)));
    now.calls.push((key(6), value(1)));
    let j = r.joined(now);
    let got: HashMap<u64, u64> = j.calls.iter().map(|(k, v)| (k.stack, v.calls)).collect();
    assert_eq!(got, HashMap::from([(5, 7), (6, 1)]));
    assert_eq!(j.frames.get(&5), Some(&vec![0x10, 0x20]));
    // Beyond the bound: one entry per syscall, no stack, no process.
    let mut r = Drained::default();
    let mut raw = Raw::default();
    for i in 0..(DRAINED_KEYS as u64 + 100) {
        raw.calls.push((
            StackKey {
                stack: i | 1,
                tgid: 1 + (i % 7) as u32,
                key: 110,
            },
            value(2),
        ));
    }
    r.keep(raw);
    assert_eq!(r.len(), DRAINED_KEYS + 1);
    let j = r.joined(Raw::default());
    let total: u64 = j.calls.iter().map(|(_, v)| v.calls).sum();
    assert_eq!(total, 2 * (DRAINED_KEYS as u64 + 100));
    let other = j.calls.iter().find(|(k, _)| k.tgid == 0).unwrap();
    assert_eq!((other.0.stack, other.1.calls), (0, 200));
    // Full: the kernel's entry of a stack past the bound joins its earlier windows
    // there, not a line of its own with only its last window; a kept one is summed.
    let late = StackKey {
        stack: (DRAINED_KEYS as u64 + 50) | 1,
        tgid: 3,
        key: 110,
    };
    let kept = StackKey {
        stack: 1,
        tgid: 1,
        key: 110,
    };
    let mut now = Raw::default();
    now.calls.push((late, value(5)));
    now.calls.push((kept, value(1)));
    let j2 = r.joined(now);
    assert!(j2.calls.iter().all(|(k, _)| *k != late));
    let past = j2.calls.iter().find(|(k, _)| k.tgid == 0).unwrap();
    assert_eq!(past.1.calls, 205);
    let one = j2.calls.iter().find(|(k, _)| *k == kept).unwrap();
    assert_eq!(one.1.calls, 3);
    assert_eq!(
        j2.calls.iter().map(|(_, v)| v.calls).sum::<u64>(),
        2 * (DRAINED_KEYS as u64 + 100) + 6
    );
    let named = assemble(&j, &Samples::default(), |_| None, |_| None);
    assert!(
        named
            .stacks
            .iter()
            .any(|s| s.comm == format!("(past {DRAINED_KEYS} entries)") && s.calls == 200)
    );
}
