//! A pprof profile (`syscost flame FILE.pb.gz`): read, and when accepted, drawn as
//! folded stacks.
#![no_main]

use syscost_report::report::{call_stacks, pprof};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(s) = pprof::decode(data) {
        let _ = call_stacks::folded(&s, call_stacks::Weight::Time);
    }
});
