use serde_json::Value;
use syscost_report::{
    profile::{Profile, SCHEMA_VERSION, Target},
    report::json::*,
    syscall_names::SyscallId,
};

use super::Snapshot;

fn sample() -> Profile {
    let mut snap = Snapshot::empty();
    for (ns, errno) in [(120u64, Some(9)), (150, Some(9)), (90_000, None)] {
        snap.record(SyscallId::native(3), ns, errno);
    }
    let target = Target {
        pid: 42,
        comm: "sh".into(),
        command: Some(vec!["sh".into(), "-c".into(), "true".into()]),
        cgroup: None,
    };
    snap.to_profile(target, 5_000_000, true)
        .unwrap()
        .with_features(&syscost_report::profile::Features {
            on: vec!["offcpu", "slow"],
            unavailable: Vec::new(),
        })
}

#[test]
fn round_trip() {
    let p = sample();
    let text = to_string(&p);
    assert_eq!(parse(text.as_bytes()).unwrap(), p);
    let version = format!("\"version\": {SCHEMA_VERSION}");
    for key in [
        version.as_str(),
        "\"errnos\": {",
        "\"EBADF\": 2",
        "\"lo_ns\": 120",
        "\"p99_ns\"",
        "\"command\"",
        "\"features\": [",
    ] {
        assert!(text.contains(key), "{key} in {text}");
    }
}

#[test]
fn reads_version_1_profiles() {
    let mut v: Value = serde_json::from_str(&to_string(&sample())).unwrap();
    let o = v.as_object_mut().unwrap();
    o.insert("version".into(), Value::from(1));
    o.remove("offcpu_tracked");
    for s in o["syscalls"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        for k in [
            "oncpu_ns",
            "offcpu_ns",
            "voluntary_switches",
            "involuntary_switches",
        ] {
            s.remove(k);
        }
    }
    let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
    assert_eq!(p.version, SCHEMA_VERSION);
    assert!(!p.offcpu_tracked);
    let close = &p.syscalls[0];
    assert_eq!((close.oncpu_ns, close.offcpu_ns), (close.total_ns, 0));
}

#[test]
fn reads_version_2_compat_numbers() {
    let mut snap = Snapshot::empty();
    snap.record(SyscallId::compat(64), 300, None);
    let text = to_string(&snap.to_profile(Target::default(), 1, true).unwrap());
    assert!(text.contains("\"nr\": 64,"), "{text}");
    let v2 = text
        .replace(&format!("\"version\": {SCHEMA_VERSION}"), "\"version\": 2")
        .replace("\"nr\": 64,", "\"nr\": 576,");
    let p = parse(v2.as_bytes()).unwrap();
    assert_eq!((p.version, p.syscalls[0].nr), (SCHEMA_VERSION, 64));
}

#[test]
fn file_round_trip() {
    let dir = std::env::temp_dir().join(format!("syscost-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.json");
    write(&sample(), &path, None).unwrap();
    assert_eq!(read(&path).unwrap(), sample());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn err(bytes: &[u8]) -> String {
    format!("{:#}", parse(bytes).unwrap_err())
}

#[test]
fn reads_version_3_profiles() {
    let text =
        to_string(&sample()).replace(&format!("\"version\": {SCHEMA_VERSION}"), "\"version\": 3");
    assert_eq!(parse(text.as_bytes()).unwrap(), sample());
}

/// Version 4 had no list of features: read as none known.
#[test]
fn reads_version_4_profiles() {
    let mut v: Value = serde_json::from_str(&to_string(&sample())).unwrap();
    let o = v.as_object_mut().unwrap();
    o.insert("version".into(), Value::from(4));
    o.remove("features");
    let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
    assert_eq!(p.version, SCHEMA_VERSION);
    assert!(p.features.is_empty());
    assert_eq!(p.syscalls, sample().syscalls);
}

#[test]
fn reads_version_5_profiles() {
    let mut sample = sample();
    sample.switch_ins_unseen = 3;
    let mut v: Value = serde_json::from_str(&to_string(&sample)).unwrap();
    let o = v.as_object_mut().unwrap();
    o.insert("version".into(), Value::from(5));
    assert_eq!(o.remove("switch_ins_unseen"), Some(Value::from(3)));
    let p = parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
    assert_eq!((p.version, p.switch_ins_unseen), (SCHEMA_VERSION, 0));
    assert_eq!(p.syscalls, sample.syscalls);
}

#[test]
fn bad_files_say_what_is_wrong() {
    assert_eq!(err(b""), "empty file, not a syscost profile");
    assert_eq!(err(b"  \n"), "empty file, not a syscost profile");
    let text = to_string(&sample());
    assert!(err(&text.as_bytes()[..text.len() / 2]).starts_with("truncated JSON"));
    assert!(err(b"\x7fELF\x02\x01").starts_with("not a syscost profile: invalid JSON"));
    assert_eq!(
        err(b"{\"a\": 1}"),
        "not a syscost profile: no \"version\" number"
    );
    assert!(
        err(text
            .replace(
                &format!("\"version\": {SCHEMA_VERSION}"),
                &format!("\"version\": {}", SCHEMA_VERSION + 1)
            )
            .as_bytes())
        .contains("newer than this syscost")
    );
    assert!(
        err(text.replace("\"calls\": 3", "\"calls\": 4").as_bytes())
            .starts_with("corrupt profile: syscall close")
    );
    assert!(err(text.replace("\"EBADF\": 2", "\"EBADF\": 1").as_bytes()).contains("errno counts"));
    assert!(
        err(text.replace("\"lo_ns\": 120", "\"lo_ns\": 121").as_bytes())
            .contains("not a syscost bucket")
    );
    assert!(
        err(text.replace("\"calls\"", "\"callz\"").as_bytes())
            .starts_with("not a valid syscost profile")
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// Arbitrary bytes: an error or a profile, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096)) {
        let _ = parse(&bytes);
    }

    /// A real profile with bytes changed or cut: the likelier damage.
    #[test]
    fn damaged_profiles_never_panic(
        edits in proptest::collection::vec((0usize..100_000, proptest::prelude::any::<u8>()), 0..8),
        cut in 0usize..100_000,
    ) {
        let mut bytes = to_string(&sample()).into_bytes();
        for (at, b) in edits {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        if let Ok(p) = parse(&bytes) {
            // Whatever is accepted is written back and read again unchanged.
            proptest::prop_assert_eq!(parse(to_string(&p).as_bytes()).unwrap(), p);
        }
    }
}
