use std::process::ExitCode;

use clap::{Parser as _, error::ErrorKind};
use syscost_user::{
    cli::{Cli, Command},
    commands,
};

fn main() -> ExitCode {
    // One malloc arena for every thread. A thread's arena of its own grows a page or two
    // at a time, each an mprotect (and the kernel's work on the mapping), and never
    // shrinks back: the exit-record reader and the clock of `top` and `export --top`
    // paid it for every batch of exited processes (913 mprotect calls over 5,000
    // starts; 31 brk calls in the main arena, which grows 128 KiB ahead). syscost's
    // threads seldom allocate at the same moment. Before any thread starts.
    // SAFETY: mallopt only sets a parameter of the allocator.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1)
    };
    // Before anything catches a signal: a command syscost starts gets back what was
    // ignored.
    syscost_user::signals::note_inherited();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    // strace's -ff (a file per process) would reach clap as -f given twice.
    if let Some(ff) = std::env::args()
        .take_while(|a| a != "--")
        .find(|a| a.len() > 2 && a.starts_with("-f") && a[1..].bytes().all(|b| b == b'f'))
    {
        eprintln!(
            "syscost: strace's {ff} writes a file per process; syscost sums the processes of a run (attach --cgroup --per-process and top split by process)"
        );
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
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
        Command::Compare(args) => commands::compare(args),
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

/// The commands that run a command of the user's, after `--`.
const RUNS_A_COMMAND: [&str; 2] = ["run", "compare"];

/// For the mistakes a newcomer makes most, what was wrong and the line to type instead:
/// a command to trace without `--` (`syscost run ls /`, as strace takes it), a command
/// with no target given.
fn what_to_type_instead(e: &clap::Error, argv: &[String]) -> Option<String> {
    let sub = argv.get(1).map(String::as_str).unwrap_or("");
    match e.kind() {
        ErrorKind::UnknownArgument if RUNS_A_COMMAND.contains(&sub) => {
            let Some(clap::error::ContextValue::String(arg)) =
                e.get(clap::error::ContextKind::InvalidArg)
            else {
                return None;
            };
            if arg.starts_with('-') {
                return None;
            }
            // The word clap stopped at, where `--` before it makes a line clap takes
            // (an option's value may be the same word: `run -e sleep sleep 1`).
            let at = (2..argv.len()).filter(|&i| argv[i] == *arg).find(|&i| {
                let mut line = argv[..i].to_vec();
                line.push("--".into());
                line.extend_from_slice(&argv[i..]);
                Cli::try_parse_from(line).is_ok()
            })?;
            let fixed: Vec<String> = std::iter::once("syscost".to_string())
                .chain(argv[1..at].iter().map(|a| shell_word(a)))
                .chain(std::iter::once("--".to_string()))
                .chain(argv[at..].iter().map(|a| shell_word(a)))
                .collect();
            Some(format!(
                "the command to trace goes after `--`: {}",
                fixed.join(" ")
            ))
        }
        // The target missing, not another option's companion (`--kernel-stacks`
        // without `--slow`).
        ErrorKind::MissingRequiredArgument if !missing_pid(e) => None,
        ErrorKind::MissingRequiredArgument if sub == "attach" => Some(
            "attach needs a target: -p PID (a process, its threads; -f its children too) or --cgroup PATH".into(),
        ),
        ErrorKind::MissingRequiredArgument if sub == "export" => Some(
            "export needs a target: -p PID[,PID...], --cgroup PATH, or --top (every process of the machine)".into(),
        ),
        _ => None,
    }
}

/// Whether the arguments clap found missing are the target's (`--pid`).
fn missing_pid(e: &clap::Error) -> bool {
    match e.get(clap::error::ContextKind::InvalidArg) {
        Some(clap::error::ContextValue::Strings(v)) => v.iter().any(|a| a.starts_with("--pid")),
        Some(clap::error::ContextValue::String(a)) => a.starts_with("--pid"),
        _ => false,
    }
}

/// `word` as a shell reads it back: as it is when plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Bad arguments in one line, as every other bad input: clap's message and its tip,
/// without the usage block (`--help` has it); exit status 2. Help and version are
/// printed as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    // One of strace's flags: what syscost does instead.
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(clap::error::ContextValue::String(flag)) =
            e.get(clap::error::ContextKind::InvalidArg)
        && let Some(hint) = syscost_user::strace_flags::hint(flag)
    {
        eprintln!("syscost: strace's {flag} {hint}");
        return ExitCode::from(2);
    }
    let argv: Vec<String> = std::env::args().collect();
    if let Some(line) = what_to_type_instead(&e, &argv) {
        eprintln!("syscost: {line}");
        return ExitCode::from(2);
    }
    let text = e.render().to_string();
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"));
    let first = lines.next().unwrap_or("bad arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    for more in lines {
        // The missing arguments, one a line; tips.
        match more.strip_prefix("tip: ") {
            Some(tip) => {
                line.push_str("; ");
                line.push_str(tip);
            }
            None => {
                if !line.ends_with(':') {
                    line.push(',');
                }
                line.push(' ');
                line.push_str(more);
            }
        }
    }
    eprintln!("syscost: {line} (see --help)");
    ExitCode::from(2)
}
