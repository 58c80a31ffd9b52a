//! `syscost lab echo-server | echo-load`.

use std::io::Write as _;

use anyhow::Result;

use crate::{
    cli::LabCommand,
    lab::{echo_load, echo_server},
};

pub fn lab(command: &LabCommand) -> Result<i32> {
    match command {
        LabCommand::EchoServer(args) => {
            let stats = echo_server::serve(args, |port| {
                say(&format!(
                    "echo-server: listening on {}:{port} ({:?}{}), pid {}",
                    args.addr.ip(),
                    args.mode,
                    if args.stop_on_short_read {
                        ", stop on short read"
                    } else {
                        ""
                    },
                    std::process::id()
                ));
            })?;
            say(&format!(
                "echo-server: connections={} bytes={}",
                stats.connections, stats.bytes
            ));
            Ok(0)
        }
        LabCommand::EchoLoad(args) => {
            let report = echo_load::run(args)?;
            if !args.quiet {
                println!("echo-load: {report}");
            }
            if let Some(why) = &report.first_error {
                eprintln!(
                    "syscost: {} of {} connections failed; one of them: {why}",
                    report.errors, report.connections
                );
            }
            Ok(if report.errors == 0 { 0 } else { 1 })
        }
    }
}

/// One line to stderr in one write, so the server's own output is a known number of
/// syscalls in its profile (`eprintln!` writes each piece separately).
fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}
