//! The subcommands.

pub mod attach;
pub mod demo;
pub mod export;
pub mod lab;
pub mod report;
pub mod run;

use std::path::Path;

use anyhow::Result;

use crate::{
    cli::ViewArgs,
    metrics::{Metrics, Source, server::MetricsServer},
    profile::Profile,
    report::{json, strace_table},
    sampler::SharedSampler,
};

/// Saves the full profile as JSON if asked, then renders the table the view asks for.
fn finish(mut profile: Profile, view: &ViewArgs, json_path: Option<&Path>) -> Result<String> {
    if let Some(path) = json_path {
        json::write(&profile, path)?;
    }
    if let Some(names) = view.filter()? {
        profile.retain_names(&names);
    }
    Ok(strace_table::render(&profile, &view.table()))
}

/// Starts the metrics endpoint for one traced process (slot 0) on `listener` if there
/// is one.
fn serve_metrics(
    listener: Option<std::net::TcpListener>,
    sampler: &SharedSampler,
    pid: u32,
    comm: &str,
) -> Result<Option<MetricsServer>> {
    let Some(listener) = listener else {
        return Ok(None);
    };
    let metrics = Metrics::new(sampler.clone(), vec![Source::new(pid, comm.to_string(), 0)]);
    let server = MetricsServer::start(listener, std::sync::Arc::new(metrics))?;
    eprintln!("syscost: metrics at http://{}/metrics", server.local_addr());
    Ok(Some(server))
}

/// The metrics endpoint's socket, bound before anything is loaded.
fn bind_metrics(addr: Option<std::net::SocketAddr>) -> Result<Option<std::net::TcpListener>> {
    addr.map(MetricsServer::bind).transpose()
}

/// Writes to stdout; a closed stdout (a pipe reader gone, a terminal hung up) is not
/// worth a panic at the end of a profile.
fn print_out(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Writes text that is not a profile table (bench, compare, JSON) to stdout.
pub(crate) fn print_json(text: &str) {
    print_out(text);
}

/// Fails early on options that would only fail at the end of a long profile.
fn check_outputs(view: &ViewArgs, paths: &[Option<&Path>]) -> Result<()> {
    view.filter()?;
    for p in paths.iter().flatten() {
        json::check_writable(p)?;
    }
    Ok(())
}

/// `syscost bench`.
pub fn bench(args: &crate::cli::BenchArgs) -> Result<i32> {
    if let Some(cpu) = args.cpu {
        crate::bench::micro::pin(cpu)?;
    }
    let rows = crate::bench::micro::run(args.reps.max(1))?;
    if args.json {
        print_json(&(serde_json::to_string(&rows)? + "\n"));
    } else {
        print_out(&crate::bench::micro::render(&rows));
    }
    Ok(0)
}

/// `syscost floor`: holds the floor programs attached until stdin reaches its end.
pub fn floor() -> Result<i32> {
    let programs = crate::tracer::Tracer::load_floor()?;
    print_out("floor programs attached\n");
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    drop(programs);
    Ok(0)
}
