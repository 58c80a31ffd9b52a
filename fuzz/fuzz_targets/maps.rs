//! A `/proc/PID/maps` text, as a traced process's mappings make it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = syscost_engine::fuzzing::maps(data);
});
