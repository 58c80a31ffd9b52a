//! Saved profiles: JSON in the schema documented in docs/json.md. Reading checks the
//! version and the profile's own arithmetic, so a damaged file is an error that names
//! the file and what is wrong, never a wrong table.

use std::{fs, path::Path};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::Value;

use crate::{
    latency,
    profile::{ProcessTotals, Profile, SCHEMA_VERSION, TOP_SCHEMA, TopDocument},
};

/// The profile as pretty-printed JSON.
pub fn to_string(profile: &Profile) -> String {
    // Exact names, with C1 controls as escapes (see `untrusted::json_safe`).
    let mut s = crate::untrusted::json_safe(
        serde_json::to_string_pretty(profile).expect("a profile always serialises"),
    );
    s.push('\n');
    s
}

/// Writes `profile` to `path` as [`crate::output::write`] writes every file: whole,
/// mode 0600, given to `owner`.
pub fn write(profile: &Profile, path: &Path, owner: Option<crate::output::Owner>) -> Result<()> {
    crate::output::write(path, to_string(profile).as_bytes(), owner)
}

/// Reads a profile written by [`write()`].
pub fn read(path: &Path) -> Result<Profile> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&bytes).map_err(|e| anyhow!("{}: {e:#}", path.display()))
}

/// Parses and validates a profile.
pub fn parse(bytes: &[u8]) -> Result<Profile> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        bail!("empty file, not a syscost profile");
    }
    if super::pprof::looks_like(bytes) {
        bail!(
            "a gzipped file (a pprof profile of calls by stack?), not a JSON profile: `syscost flame FILE -o FILE.svg` and `go tool pprof` read those; a profile is saved with --json FILE"
        );
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        if e.is_eof() {
            anyhow!("truncated JSON ({e})")
        } else {
            anyhow!("not a syscost profile: invalid JSON ({e})")
        }
    })?;
    if value.get("version").is_none() && value.get("schema").is_some() {
        return parse_top(value);
    }
    let version = value
        .get("version")
        .and_then(Value::as_u64)
        .ok_or_else(|| anyhow!("not a syscost profile: no \"version\" number"))?;
    if version > u64::from(SCHEMA_VERSION) {
        bail!(
            "profile schema version {version} is newer than this syscost reads ({SCHEMA_VERSION}): upgrade syscost"
        );
    }
    let mut value = value;
    match version {
        1 => {
            upgrade_from_v1(&mut value);
            upgrade_from_v2(&mut value);
        }
        2 => upgrade_from_v2(&mut value),
        // Versions 4 to 9 only added optional fields (target.cgroup, processes,
        // slow_*; features, unavailable; switch_ins_unseen, switch_in_unseen; stacks;
        // a process row's summed; a frame's mapping).
        3..=8 => {
            if let Some(obj) = value.as_object_mut() {
                obj.insert("version".into(), Value::from(SCHEMA_VERSION));
            }
        }
        v if v == u64::from(SCHEMA_VERSION) => {}
        _ => bail!(
            "profile schema version {version} is not supported (this syscost reads 1 to {SCHEMA_VERSION})"
        ),
    }
    let profile: Profile =
        serde_json::from_value(value).map_err(|e| anyhow!("not a valid syscost profile: {e}"))?;
    validate(&profile)?;
    Ok(profile)
}

/// A `syscost top --json` document, as the profile of every process in it summed
/// (calls, errors and time only; the processes kept).
fn parse_top(value: Value) -> Result<Profile> {
    let schema = value
        .get("schema")
        .and_then(Value::as_u64)
        .ok_or_else(|| anyhow!("not a syscost top file: \"schema\" is not a number"))?;
    if schema > u64::from(TOP_SCHEMA) {
        bail!(
            "top file schema {schema} is newer than this syscost reads ({TOP_SCHEMA}): upgrade syscost"
        );
    }
    if schema == 0 {
        bail!("top file schema 0 is not supported (this syscost reads 1 to {TOP_SCHEMA})");
    }
    // Schema 1 had no `arch` (always x86_64: the default) and no `cgroup`; its first
    // files had no `offcpu_tracked` either (read as not measured).
    let doc: TopDocument =
        serde_json::from_value(value).map_err(|e| anyhow!("not a valid syscost top file: {e}"))?;
    // Names are not checked against this build's tables (as in profiles): a file of
    // another architecture or of a newer kernel's syscalls reads with its names as
    // written.
    check_processes(&doc.processes, "corrupt top file")?;
    if !doc.duration_secs.is_finite() || doc.duration_secs < 0.0 {
        bail!("corrupt top file: duration_secs {}", doc.duration_secs);
    }
    Ok(doc.to_profile())
}

/// Version 1 had no on-CPU/off-CPU split: all of a syscall's time counts as on-CPU, and
/// the profile says the split was not measured.
fn upgrade_from_v1(value: &mut Value) {
    if let Some(obj) = value.as_object_mut() {
        obj.insert("version".into(), Value::from(SCHEMA_VERSION));
        obj.insert("offcpu_tracked".into(), Value::Bool(false));
        if let Some(calls) = obj.get_mut("syscalls").and_then(Value::as_array_mut) {
            for s in calls.iter_mut().filter_map(Value::as_object_mut) {
                let total = s.get("total_ns").cloned().unwrap_or(Value::from(0));
                s.insert("oncpu_ns".into(), total);
                s.insert("offcpu_ns".into(), Value::from(0));
                s.insert("voluntary_switches".into(), Value::from(0));
                s.insert("involuntary_switches".into(), Value::from(0));
            }
        }
    }
}

/// Version 2 numbered 32-bit (compat) syscalls 512 + their i386 number; version 3 gives
/// the number the program passed, as for every other syscall.
fn upgrade_from_v2(value: &mut Value) {
    if let Some(obj) = value.as_object_mut() {
        obj.insert("version".into(), Value::from(SCHEMA_VERSION));
        if let Some(calls) = obj.get_mut("syscalls").and_then(Value::as_array_mut) {
            for s in calls.iter_mut().filter_map(Value::as_object_mut) {
                let compat = s
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.starts_with(crate::syscall_names::COMPAT_PREFIX));
                if let (true, Some(nr)) = (compat, s.get("nr").and_then(Value::as_u64)) {
                    s.insert("nr".into(), Value::from(nr.saturating_sub(512)));
                }
            }
        }
    }
}

/// The sum of `values`, `None` past u64.
fn checked_sum<'a>(values: impl IntoIterator<Item = &'a u64>) -> Option<u64> {
    values.into_iter().try_fold(0u64, |a, &v| a.checked_add(v))
}

/// The error of a sum past u64: `whose` `field`s (a profile from syscost never has one:
/// every figure counts calls or nanoseconds of one run).
fn overflow(what: &str, whose: &str, field: &str) -> anyhow::Error {
    anyhow!("{what}: the sum of {whose} {field} overflows u64")
}

/// Each process's figures are the sums of its syscalls', and the figures of all the
/// processes together fit in u64, so that every sum made of them (by syscall, by
/// cgroup, of the processes `--process` picks) does. `what` begins each error.
fn check_processes(processes: &[ProcessTotals], what: &str) -> Result<()> {
    let mut all = [0u64; 4];
    let mut count = 0u64;
    for p in processes {
        let bad = |e: &str| anyhow!("{what}: process {}: {e}", p.pid);
        if p.summed > 0 && (p.pid != 0 || !p.exited) {
            return Err(bad("summed is for a row of exited processes (pid 0) only"));
        }
        count = count
            .checked_add(p.summed.max(1))
            .ok_or_else(|| overflow(what, "the processes'", "summed"))?;
        let too_big = || bad("its syscalls' figures overflow");
        let mut sums = [0u64; 4];
        for s in &p.syscalls {
            if s.errors > s.calls {
                return Err(bad(&format!("{}: more errors than calls", s.name)));
            }
            if s.offcpu_ns > s.total_ns {
                return Err(bad(&format!("{}: offcpu_ns above total_ns", s.name)));
            }
            for (sum, v) in sums
                .iter_mut()
                .zip([s.calls, s.errors, s.total_ns, s.offcpu_ns])
            {
                *sum = sum.checked_add(v).ok_or_else(too_big)?;
            }
        }
        let [calls, errors, total, off] = sums;
        if (calls, errors, total) != (p.calls, p.errors, p.total_ns) {
            return Err(bad(
                "calls, errors or total_ns are not the sum of its syscalls'",
            ));
        }
        if p.oncpu_ns != total - off {
            return Err(bad("oncpu_ns is not total_ns less the syscalls' offcpu_ns"));
        }
        for ((a, v), field) in
            all.iter_mut()
                .zip(sums)
                .zip(["calls", "errors", "total_ns", "offcpu_ns"])
        {
            *a = a
                .checked_add(v)
                .ok_or_else(|| overflow(what, "the processes'", field))?;
        }
    }
    Ok(())
}

/// The checks a profile written by syscost always passes, in checked arithmetic: its
/// figures agree with each other, and every sum a view makes of them (the total of the
/// rows, a syscall's processes, the stacks, the slow calls) fits in u64.
fn validate(p: &Profile) -> Result<()> {
    const WHAT: &str = "corrupt profile";
    let mut names = std::collections::BTreeSet::new();
    let mut sums = [0u64; 3];
    for s in &p.syscalls {
        let bad = |what: &str| anyhow!("{WHAT}: syscall {}: {what}", s.name);
        if !names.insert(s.name.as_str()) {
            return Err(bad("its row is given twice"));
        }
        let dense = latency::to_dense(&s.histogram).map_err(|e| bad(&e.to_string()))?;
        let in_hist =
            checked_sum(&dense).ok_or_else(|| bad("the histogram's counts overflow u64"))?;
        if in_hist != s.calls {
            return Err(bad(&format!(
                "histogram holds {in_hist} calls, calls says {}",
                s.calls
            )));
        }
        let in_errnos =
            checked_sum(s.errnos.values()).ok_or_else(|| bad("the errno counts overflow u64"))?;
        if in_errnos != s.errors || s.errors > s.calls {
            return Err(bad(&format!(
                "errors {} do not match the errno counts ({in_errnos}) or calls",
                s.errors
            )));
        }
        if s.oncpu_ns.checked_add(s.offcpu_ns) != Some(s.total_ns) {
            return Err(bad("oncpu_ns + offcpu_ns is not total_ns"));
        }
        if s.calls > 0 && s.avg_ns != s.total_ns / s.calls {
            return Err(bad("avg_ns is not total_ns / calls"));
        }
        if s.min_ns > s.max_ns || s.p50_ns > s.p90_ns || s.p90_ns > s.p99_ns {
            return Err(bad("latencies out of order"));
        }
        // oncpu_ns and offcpu_ns are parts of total_ns: their sums fit when its does.
        for ((sum, v), field) in sums
            .iter_mut()
            .zip([s.calls, s.errors, s.total_ns])
            .zip(["calls", "errors", "total_ns"])
        {
            *sum = sum
                .checked_add(v)
                .ok_or_else(|| overflow(WHAT, "the syscalls'", field))?;
        }
    }
    check_processes(&p.processes, WHAT)?;
    if let Some(stacks) = &p.stacks {
        checked_sum(stacks.stacks.iter().map(|s| &s.calls))
            .ok_or_else(|| overflow(WHAT, "the stacks'", "calls"))?;
        checked_sum(stacks.stacks.iter().map(|s| &s.total_ns))
            .ok_or_else(|| overflow(WHAT, "the stacks'", "total_ns"))?;
    }
    checked_sum(p.slow_calls.iter().map(|c| &c.latency_ns))
        .ok_or_else(|| overflow(WHAT, "the slow calls'", "latency_ns"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        format!("{:#}", parse(bytes).unwrap_err())
    }

    fn top_doc() -> crate::profile::TopDocument {
        use crate::profile::{ProcessSyscall, ProcessTotals};
        let proc_ = |pid: u32, comm: &str, getppid: u64, closes: u64| ProcessTotals {
            pid,
            comm: comm.into(),
            cgroup: "/a".into(),
            exited: true,
            threads: 1,
            summed: 0,
            calls: getppid + closes,
            errors: closes,
            total_ns: getppid * 100 + closes * 1000,
            oncpu_ns: getppid * 100 + closes * 1000 - 300,
            syscalls: vec![
                ProcessSyscall {
                    name: "getppid".into(),
                    calls: getppid,
                    errors: 0,
                    total_ns: getppid * 100,
                    offcpu_ns: 0,
                },
                ProcessSyscall {
                    name: "close".into(),
                    calls: closes,
                    errors: closes,
                    total_ns: closes * 1000,
                    offcpu_ns: 300,
                },
            ],
        };
        crate::profile::TopDocument {
            schema: TOP_SCHEMA,
            arch: "x86_64".into(),
            cgroup: Some("/a".into()),
            duration_secs: 2.5,
            offcpu_tracked: true,
            dropped: 3,
            switch_ins_unseen: 0,
            processes: vec![
                proc_(10, "a", 100, 4),
                proc_(11, "b", 50, 2),
                proc_(12, "a", 7, 1),
            ],
        }
    }

    /// `top --json` files read as the sum of their processes, each kept.
    #[test]
    fn reads_top_files() {
        let text = serde_json::to_string(&top_doc()).unwrap();
        let p = parse(text.as_bytes()).unwrap();
        assert!(p.totals_only);
        assert_eq!(
            (p.dropped, p.duration_ns, p.processes.len()),
            (3, 2_500_000_000, 3)
        );
        assert_eq!(p.target.cgroup.as_deref(), Some("/a"));
        let close = p.syscall("close").unwrap();
        assert_eq!((close.calls, close.errors, close.total_ns), (7, 7, 7000));
        assert_eq!(
            (close.oncpu_ns, close.offcpu_ns, close.avg_ns),
            (6100, 900, 1000)
        );
        assert_eq!(close.nr, 3);
        assert_eq!(p.syscall("getppid").unwrap().calls, 157);
        // By command name: both `a`s; by pid: one.
        let sel = crate::profile::ProcessSelect::parse("a").unwrap();
        let a = p.of_processes(Some(&sel)).unwrap();
        assert_eq!(a.syscall("getppid").unwrap().calls, 107);
        assert_eq!(a.target.pid, 0, "two processes: no one pid");
        let sel = crate::profile::ProcessSelect::parse("11").unwrap();
        let b = p.of_processes(Some(&sel)).unwrap();
        assert_eq!((b.target.pid, b.target.comm.as_str()), (11, "b"));
        assert_eq!(b.totals(), (52, 2, 7000));
        let sel = crate::profile::ProcessSelect::parse("nobody").unwrap();
        assert_eq!(
            format!("{:#}", p.of_processes(Some(&sel)).unwrap_err()),
            "no process matches --process nobody (of 3 processes)"
        );
        // Schema 1: no arch (x86_64), no cgroup.
        let mut v = serde_json::to_value(top_doc()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.insert("schema".into(), Value::from(1));
        o.remove("arch");
        o.remove("cgroup");
        let p1 = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
        assert_eq!(
            (p1.arch.as_str(), p1.target.cgroup.as_deref()),
            ("x86_64", None)
        );
        assert_eq!(p1.syscalls, p.syscalls);
    }

    #[test]
    fn refuses_damaged_or_newer_top_files() {
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = serde_json::to_value(top_doc()).unwrap();
            f(&mut v);
            err(serde_json::to_string(&v).unwrap().as_bytes())
        };
        assert_eq!(
            with(&|v| v["schema"] = Value::from(TOP_SCHEMA + 1)),
            format!(
                "top file schema {} is newer than this syscost reads ({TOP_SCHEMA}): upgrade syscost",
                TOP_SCHEMA + 1
            )
        );
        assert_eq!(
            with(&|v| v["processes"][1]["calls"] = Value::from(1)),
            "corrupt top file: process 11: calls, errors or total_ns are not the sum of its syscalls'"
        );
        assert_eq!(
            with(&|v| v["processes"][0]["oncpu_ns"] = Value::from(1)),
            "corrupt top file: process 10: oncpu_ns is not total_ns less the syscalls' offcpu_ns"
        );
        assert_eq!(
            with(&|v| v["processes"][0]["syscalls"][1]["offcpu_ns"] = Value::from(5000)),
            "corrupt top file: process 10: close: offcpu_ns above total_ns"
        );
        let huge = |v: &mut Value| {
            v["processes"][0]["syscalls"][0]["calls"] = Value::from(u64::MAX);
            v["processes"][0]["syscalls"][1]["calls"] = Value::from(u64::MAX);
        };
        assert_eq!(
            with(&huge),
            "corrupt top file: process 10: its syscalls' figures overflow"
        );
        assert!(
            with(&|v| v["processes"][0]["syscalls"][0]["errors"] = Value::from(1000))
                .contains("getppid: more errors than calls"),
        );
        assert!(
            with(&|v| v["extra"] = Value::from(1))
                .starts_with("not a valid syscost top file: unknown field `extra`")
        );
        // `summed`: rows of exited processes (pid 0) only, and their count within u64
        // (it was summed unchecked by the table's header).
        assert_eq!(
            with(&|v| v["processes"][1]["summed"] = Value::from(2)),
            "corrupt top file: process 11: summed is for a row of exited processes (pid 0) only"
        );
        let folded = |v: &mut Value| {
            for i in 0..2 {
                v["processes"][i]["pid"] = Value::from(0);
                v["processes"][i]["summed"] = Value::from(1u64 << 63);
            }
        };
        assert!(with(&folded).contains("summed"), "{}", with(&folded));
        let mut v = serde_json::to_value(top_doc()).unwrap();
        v["processes"][0]["pid"] = Value::from(0);
        v["processes"][0]["summed"] = Value::from(u64::MAX - 3);
        let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
        let table = crate::report::strace_table::render(&p, &Default::default());
        assert!(
            table.contains("summed over 18446744073709551614 processes"),
            "{table}"
        );
    }

    /// Two rows of 2^63 + 5 calls, each consistent (averages, histograms, errors), whose
    /// sum wraps: once read, the table printed a % time of 4789968651641484.00 above a
    /// total of 28 calls (and a debug build panicked).
    #[test]
    fn sums_past_u64_are_refused_naming_the_field() {
        use crate::fixtures::{profile_of, syscall};
        let huge = (1u64 << 63) + 5;
        let p = profile_of(vec![
            syscall("read", 0, huge, 0, 1),
            syscall("write", 1, huge, 0, 1),
            syscall("close", 3, 18, 0, 1),
        ]);
        // Each row alone is a valid profile.
        for row in &p.syscalls {
            let one = profile_of(vec![row.clone()]);
            assert_eq!(parse(to_string(&one).as_bytes()).unwrap(), one);
        }
        assert_eq!(
            err(to_string(&p).as_bytes()),
            "corrupt profile: the sum of the syscalls' calls overflows u64"
        );
        // Time alone.
        let timed = |name: &str, nr: u64| {
            let mut s = syscall(name, nr, 1, 0, 1);
            (s.total_ns, s.oncpu_ns, s.avg_ns) =
                (u64::MAX / 3 * 2, u64::MAX / 3 * 2, u64::MAX / 3 * 2);
            s
        };
        let t = profile_of(vec![timed("read", 0), timed("write", 1)]);
        assert_eq!(
            err(to_string(&t).as_bytes()),
            "corrupt profile: the sum of the syscalls' total_ns overflows u64"
        );
        // A row given twice would be counted twice in the total, once in a diff's row.
        let twice = profile_of(vec![
            syscall("read", 0, 2, 0, 5),
            syscall("read", 0, 2, 0, 5),
        ]);
        assert_eq!(
            err(to_string(&twice).as_bytes()),
            "corrupt profile: syscall read: its row is given twice"
        );
    }

    /// The sums made of a profile's processes, stacks and slow calls, and of a top
    /// file's processes (summed by syscall when read), fit in u64 or the file is refused.
    #[test]
    fn parts_whose_sums_overflow_are_refused() {
        use crate::profile::{CallStack, CallStacks, ProcessSyscall, SlowCall};
        let half = u64::MAX / 2 + 1;
        let process = |pid: u32| {
            let s = ProcessSyscall {
                name: "read".into(),
                calls: half,
                errors: 0,
                total_ns: 1,
                offcpu_ns: 0,
            };
            ProcessTotals {
                pid,
                comm: "a".into(),
                calls: half,
                total_ns: 1,
                oncpu_ns: 1,
                syscalls: vec![s],
                ..ProcessTotals::default()
            }
        };
        let mut p = crate::fixtures::profile_of(vec![]);
        p.processes = vec![process(1)];
        assert!(parse(to_string(&p).as_bytes()).is_ok());
        p.processes.push(process(2));
        assert_eq!(
            err(to_string(&p).as_bytes()),
            "corrupt profile: the sum of the processes' calls overflows u64"
        );
        let mut doc = top_doc();
        doc.processes = vec![process(1), process(2)];
        assert_eq!(
            err(serde_json::to_string(&doc).unwrap().as_bytes()),
            "corrupt top file: the sum of the processes' calls overflows u64"
        );
        let mut p = crate::fixtures::profile_of(vec![]);
        let stack = CallStack {
            total_ns: half,
            ..CallStack::default()
        };
        p.stacks = Some(CallStacks {
            stacks: vec![stack.clone(), stack],
            ..CallStacks::default()
        });
        assert_eq!(
            err(to_string(&p).as_bytes()),
            "corrupt profile: the sum of the stacks' total_ns overflows u64"
        );
        let mut p = crate::fixtures::profile_of(vec![]);
        let call = SlowCall {
            latency_ns: half,
            ..SlowCall::default()
        };
        p.slow_threshold = Some("1ms".into());
        p.slow_calls = vec![call.clone(), call];
        assert_eq!(
            err(to_string(&p).as_bytes()),
            "corrupt profile: the sum of the slow calls' latency_ns overflows u64"
        );
    }
}
