//! A `--web.config.file` (YAML: TLS and basic-auth users).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = syscost_views::metrics::fuzzing::web_config(data);
});
