//! Profiles the unit tests share: a syscall's figures with a consistent histogram, and
//! a server-like profile (what the echo server looks like under load).

use std::collections::BTreeMap;

use syscost_common::{TopKey, TopValue};

use crate::{
    latency::Bucket,
    profile::{Profile, SCHEMA_VERSION, SyscallProfile, Target},
};

/// A syscall's figures: `calls` at `avg_ns` on average, nine tenths in the bucket of
/// the average and a tenth in that of five times it; `errors` of them EAGAIN.
pub fn syscall(name: &str, nr: u64, calls: u64, errors: u64, avg_ns: u64) -> SyscallProfile {
    let mut errnos = BTreeMap::new();
    if errors > 0 {
        errnos.insert("EAGAIN".to_string(), errors);
    }
    let lo = syscost_common::latency_bucket::bucket_lower(syscost_common::bucket_index(avg_ns));
    SyscallProfile {
        name: name.into(),
        nr,
        calls,
        errors,
        errnos,
        total_ns: avg_ns * calls,
        // A server's syscalls: epoll_wait mostly blocked, the rest on the CPU.
        oncpu_ns: if name == "epoll_wait" {
            avg_ns * calls / 10
        } else {
            avg_ns * calls
        },
        offcpu_ns: if name == "epoll_wait" {
            avg_ns * calls - avg_ns * calls / 10
        } else {
            0
        },
        voluntary_switches: if name == "epoll_wait" { calls } else { 0 },
        involuntary_switches: 0,
        avg_ns,
        min_ns: avg_ns / 2,
        max_ns: avg_ns * 20,
        p50_ns: avg_ns,
        p90_ns: avg_ns * 2,
        p99_ns: avg_ns * 5,
        histogram: vec![
            Bucket {
                lo_ns: lo,
                hi_ns: syscost_common::latency_bucket::bucket_upper(syscost_common::bucket_index(
                    avg_ns,
                )),
                count: calls - calls / 10,
            },
            Bucket {
                lo_ns: syscost_common::latency_bucket::bucket_lower(syscost_common::bucket_index(
                    avg_ns * 5,
                )),
                hi_ns: syscost_common::latency_bucket::bucket_upper(syscost_common::bucket_index(
                    avg_ns * 5,
                )),
                count: calls / 10,
            },
        ],
    }
}

/// A server-like profile: what the echo server looks like under load.
pub fn server_profile(scale: u64) -> Profile {
    Profile {
        processes: Vec::new(),
        slow_threshold: None,
        slow_calls: Vec::new(),
        stacks: None,
        slow_dropped: 0,
        features: Vec::new(),
        unavailable: Vec::new(),
        totals_only: false,
        version: SCHEMA_VERSION,
        arch: "x86_64".into(),
        target: Target {
            pid: 4242,
            comm: "echo-server".into(),
            command: None,
            cgroup: None,
        },
        duration_ns: 10_000_000_000,
        offcpu_tracked: true,
        unpaired: 1,
        switch_ins_unseen: 0,
        dropped: 0,
        syscalls: vec![
            syscall("read", 0, 2000 * scale, 1000 * scale, 1_800),
            syscall("write", 1, 1000 * scale, 0, 4_100),
            syscall("close", 3, 1000 * scale, 0, 6_300),
            syscall("epoll_wait", 232, 1500 * scale, 0, 2_200),
            syscall("epoll_ctl", 233, 2000 * scale, 0, 900),
            syscall("accept4", 288, 1000 * scale, 0, 3_000),
        ],
    }
}

/// A profile of `rows` and nothing else: no target, one second, the on-CPU split
/// measured.
pub fn profile_of(rows: Vec<SyscallProfile>) -> Profile {
    Profile {
        target: Target::default(),
        duration_ns: 1_000_000_000,
        unpaired: 0,
        syscalls: rows,
        ..server_profile(0)
    }
}

/// A per-process table's figures.
pub fn top_value(calls: u64, errors: u64, ns: u64, off: u64) -> TopValue {
    TopValue {
        calls,
        errors,
        total_ns: ns,
        offcpu_ns: off,
    }
}

/// A per-process table's key.
pub fn top_key(tgid: u32, key: u32) -> TopKey {
    TopKey { tgid, key }
}
