//! An `Authorization` header's value, as a scraper sends it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = syscost_views::metrics::fuzzing::authorization(data);
});
