//! `syscost report FILE.json`, `syscost diff BEFORE.json AFTER.json`, and the views of a
//! profile's slow calls: `syscost flame` and `syscost trace`.

use anyhow::{Context as _, Result, bail};

use crate::{
    cli::{DiffArgs, ReportArgs, SlowViewArgs},
    report::{diff, json},
    syscall_names,
};

pub fn report(args: &ReportArgs) -> Result<i32> {
    args.view.filter()?;
    let profile = read(&args.file, args.process.as_ref())?;
    let mut out = super::finish(profile.clone(), &args.view, None)?;
    // A top file's rows as `top` prints them at the end (its `dropped` counts
    // process-syscall pairs, as there).
    if profile.features.iter().any(|f| f == "top") {
        let rows: Vec<crate::process_table::ProcessRow> =
            profile.processes.iter().map(Into::into).collect();
        out += "\n";
        out += &super::top::render_totals(
            "by process",
            &rows,
            profile.duration_ns as f64 / 1e9,
            crate::cli::TopSort::Time,
            0,
            profile.dropped,
            profile.offcpu_tracked,
        );
    }
    super::print_out(&out);
    Ok(0)
}

/// A saved file, narrowed to the processes `--process` picks.
fn read(
    path: &std::path::Path,
    process: Option<&crate::profile::ProcessSelect>,
) -> Result<crate::profile::Profile> {
    let profile = json::read(path)?;
    match process {
        None => Ok(profile),
        Some(_) if profile.processes.is_empty() => bail!(
            "{} has no per-process figures (--process reads files of `top --json` or --per-process)",
            path.display()
        ),
        Some(sel) => profile
            .of_processes(Some(sel))
            .map_err(|e| anyhow::anyhow!("{}: {e:#}", path.display())),
    }
}

/// `syscost diff BEFORE.json AFTER.json`.
pub fn diff(args: &DiffArgs) -> Result<i32> {
    if let Some(unit) = &args.per {
        syscall_names::number(unit)?;
    }
    let before = read(&args.before, args.process.as_ref())?;
    let after = read(&args.after, args.process.as_ref())?;
    let d = diff::diff(&before, &after, args.per.as_deref(), args.sort)?;
    super::print_out(&if args.json {
        diff::to_json(&d)
    } else {
        diff::render(&d)
    });
    Ok(0)
}

/// The slow calls of a saved profile, refusing a profile saved without `--slow`.
fn slow_calls(args: &SlowViewArgs) -> Result<Vec<crate::profile::SlowCall>> {
    let profile = json::read(&args.file)?;
    if profile.slow_threshold.is_none() {
        bail!(
            "{} has no slow calls: save one with --slow DURATION --json FILE",
            args.file.display()
        );
    }
    Ok(profile.slow_calls)
}

fn write_out(path: Option<&std::path::Path>, bytes: &[u8]) -> Result<()> {
    match path {
        Some(p) => {
            std::fs::write(p, bytes).with_context(|| format!("cannot write {}", p.display()))
        }
        None => {
            super::print_out(&String::from_utf8_lossy(bytes));
            Ok(())
        }
    }
}

/// `syscost flame FILE.json [-o OUT]`: folded stacks, or an SVG flame graph when OUT
/// ends in `.svg`.
pub fn flame(args: &SlowViewArgs) -> Result<i32> {
    let calls = slow_calls(args)?;
    let folded = crate::report::slow::folded(&calls);
    let svg = args
        .output
        .as_ref()
        .is_some_and(|p| p.extension().is_some_and(|e| e == "svg"));
    if svg {
        let title = format!("slow calls of {} (time in us)", args.file.display());
        write_out(
            args.output.as_deref(),
            &crate::report::slow::flame_svg(&folded, &title)?,
        )?;
    } else {
        write_out(args.output.as_deref(), folded.as_bytes())?;
    }
    Ok(0)
}

/// `syscost trace FILE.json [-o OUT]`: the slow calls as a Chrome trace-event JSON.
pub fn trace(args: &SlowViewArgs) -> Result<i32> {
    let calls = slow_calls(args)?;
    write_out(
        args.output.as_deref(),
        crate::report::slow::trace_json(&calls)?.as_bytes(),
    )?;
    Ok(0)
}
