//! A slow-call record from the ring buffer: a `CallEvent`, then the user stack copy.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = syscost_engine::fuzzing::slow_record(data);
});
