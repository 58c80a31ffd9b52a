use std::process::ExitCode;

use clap::Parser as _;
use syscost_user::{
    cli::{Cli, Command},
    commands,
};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Run(args) => commands::run::run(args),
        Command::Attach(args) => commands::attach::attach(args),
        Command::Top(args) => commands::top::top(args),
        Command::Report(args) => commands::report::report(args),
        Command::Diff(args) => commands::report::diff(args),
        Command::Flame(args) => commands::report::flame(args),
        Command::Trace(args) => commands::report::trace(args),
        Command::Export(args) => commands::export::export(args),
        Command::Bench(args) => commands::bench(args),
        Command::Floor { variant } => commands::floor(variant),
        Command::RefreshCost { pid, refreshes } => commands::refresh_cost(*pid, *refreshes),
        Command::Compare(args) => syscost_user::bench::compare::compare(args),
        Command::Lab(lab) => commands::lab::lab(lab),
        Command::Demo(args) => commands::demo::demo(args),
        Command::Doctor => commands::doctor::doctor(),
        Command::Man { dir } => commands::man_pages(dir),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "syscost", &mut std::io::stdout());
            Ok(0)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("syscost: {e:#}");
            ExitCode::from(1)
        }
    }
}
