//! pprof's `profile.proto` (proto/, as published with pprof) compiled to prost's types;
//! protox parses it, so no `protoc` is needed.

fn main() {
    println!("cargo:rerun-if-changed=proto/profile.proto");
    let files = protox::compile(["profile.proto"], ["proto"]).expect("proto/profile.proto parses");
    prost_build::Config::new()
        .compile_fds(files)
        .expect("prost generates the profile's types");
}
