//! The raw BTF reader (`/sys/kernel/btf/vmlinux`'s format) and the layout read from it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = syscost_engine::fuzzing::kernel_btf(data);
});
