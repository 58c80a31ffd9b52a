//! A saved profile (`syscost report`, `diff`): read, and when accepted, shown as strace's
//! table with the latency columns.
#![no_main]

use syscost_report::report::{json, strace_table};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(profile) = json::parse(data) {
        let options = strace_table::TableOptions {
            latency: true,
            ..Default::default()
        };
        let _ = strace_table::render(&profile, &options);
    }
});
