//! OpenTelemetry's published OTLP metrics definitions (proto/, from
//! opentelemetry-proto v1.11.0) compiled to prost's types; protox parses them, so no
//! `protoc` is needed.

fn main() {
    println!("cargo:rerun-if-changed=proto");
    let files = protox::compile(
        ["opentelemetry/proto/collector/metrics/v1/metrics_service.proto"],
        ["proto"],
    )
    .expect("the OTLP definitions parse");
    prost_build::Config::new()
        .compile_fds(files)
        .expect("prost generates the OTLP types");
}
