//! A pprof profile (`syscost flame FILE.pb.gz`): read, and when accepted, drawn as
//! folded stacks.
#![no_main]

use syscost_report::report::{pprof, stacks};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(s) = pprof::decode(data) {
        let _ = stacks::folded(&s, stacks::Weight::Time);
    }
});
