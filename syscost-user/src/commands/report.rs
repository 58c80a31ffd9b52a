//! `syscost report FILE.json` and `syscost diff BEFORE.json AFTER.json`.

use anyhow::Result;

use crate::{
    cli::{DiffArgs, ReportArgs},
    report::{diff, json},
    syscall_names,
};

pub fn report(args: &ReportArgs) -> Result<i32> {
    args.view.filter()?;
    let profile = json::read(&args.file)?;
    super::print_out(&super::finish(profile, &args.view, None)?);
    Ok(0)
}

/// `syscost diff BEFORE.json AFTER.json`.
pub fn diff(args: &DiffArgs) -> Result<i32> {
    if let Some(unit) = &args.per {
        syscall_names::number(unit)?;
    }
    let before = json::read(&args.before)?;
    let after = json::read(&args.after)?;
    let d = diff::diff(&before, &after, args.per.as_deref(), args.sort)?;
    super::print_out(&if args.json {
        diff::to_json(&d)
    } else {
        diff::render(&d)
    });
    Ok(0)
}
