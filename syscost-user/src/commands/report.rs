//! `syscost report FILE.json`: the table of a saved profile.

use anyhow::Result;

use crate::{cli::ReportArgs, report::json};

pub fn report(args: &ReportArgs) -> Result<i32> {
    args.view.filter()?;
    let profile = json::read(&args.file)?;
    super::print_out(&super::finish(profile, &args.view, None)?);
    Ok(0)
}
