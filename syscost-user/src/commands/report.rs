//! `syscost report FILE.json`, `syscost diff BEFORE.json AFTER.json`, and the views of a
//! profile's slow calls: `syscost flame` and `syscost trace`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};

use crate::cli::{DiffArgs, FlameArgs, ReportArgs};
use syscost_report::{
    report::{diff, json},
    syscall_names,
};

pub fn report(args: &ReportArgs) -> Result<i32> {
    let sel = args.view.selection()?;
    if let Some(mut stacks) = read_pprof(&args.file)? {
        if args.process.is_some() {
            bail!(
                "--process narrows a file with per-process figures (top --json, --per-process); {} is a pprof profile of calls by stack",
                args.file.display()
            );
        }
        // -e picks the syscalls (its status= and -z/-Z cannot: stacks count no errors).
        if sel.status.is_some() {
            bail!(
                "{} is a pprof profile of calls by stack, which counts no errors: -z, -Z and -e status= do not apply",
                args.file.display()
            );
        }
        stacks.stacks.retain(|s| sel.shows(&s.syscall));
        super::print_out(&syscost_report::report::call_stacks::render(
            &stacks,
            &args.file.display().to_string(),
        ));
        return Ok(0);
    }
    super::note_overhead(&args.view);
    let profile = read(&args.file, args.process.as_ref())?;
    let mut out = super::save_and_render(profile.clone(), &args.view, None, None)?;
    // A top file's rows as `top` prints them at the end (its `dropped` counts
    // process-syscall pairs, as there).
    if profile.features.iter().any(|f| f == "top") {
        let rows: Vec<syscost_report::report::top::ProcessRow> =
            profile.processes.iter().map(Into::into).collect();
        out += "\n";
        out += &syscost_report::report::top::render_totals(
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

/// The calls by stack of `path` when it is a pprof profile (`--stacks FILE.pb.gz`, the
/// endpoint's `/debug/pprof/syscalls`), `None` when it is not one (gzipped).
fn read_pprof(path: &Path) -> Result<Option<syscost_report::profile::CallStacks>> {
    use std::io::Read as _;
    let name = path.display();
    let mut head = [0u8; 2];
    let mut f = std::fs::File::open(path).with_context(|| format!("cannot read {name}"))?;
    let n = f
        .read(&mut head)
        .with_context(|| format!("cannot read {name}"))?;
    if !syscost_report::report::pprof::looks_like(&head[..n]) {
        return Ok(None);
    }
    // Within what the reader unpacks at the most (a bigger gzip is no profile of ours).
    const MAX_FILE: u64 = 64 << 20;
    let mut bytes = head[..n].to_vec();
    f.take(MAX_FILE)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {name}"))?;
    if bytes.len() as u64 > MAX_FILE {
        bail!("{name}: more than 64 MiB: not a profile syscost wrote");
    }
    syscost_report::report::pprof::decode(&bytes)
        .map(Some)
        .map_err(|e| anyhow!("{name}: {e:#}"))
}

/// Leaves the syscalls `-e` does not select out of a profile.
fn select(
    mut p: syscost_report::profile::Profile,
    sel: &syscost_report::strace_filter::Selection,
) -> syscost_report::profile::Profile {
    if !sel.is_all() {
        p.syscalls.retain(|s| sel.shows(&s.name));
    }
    p
}

/// A saved file, narrowed to the processes `--process` picks.
fn read(
    path: &std::path::Path,
    process: Option<&syscost_report::profile::ProcessSelect>,
) -> Result<syscost_report::profile::Profile> {
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

/// `syscost diff BASE PROFILE...`: two profiles before and after, or variants.
pub fn diff(args: &DiffArgs) -> Result<i32> {
    if let Some(unit) = &args.per {
        syscall_names::number(unit)?;
    }
    let sel = syscost_report::strace_filter::parse(&args.syscalls)?;
    if sel.status.is_some() {
        bail!("-e status= is for run, attach and report (-z, -Z); diff compares every call");
    }
    let sides: Vec<Vec<PathBuf>> = std::iter::once(&args.baseline)
        .chain(&args.others)
        .map(|a| side_files(a))
        .collect::<Result<_>>()?;
    if !args.labels.is_empty() {
        if args.labels.len() != sides.len() {
            bail!(
                "{} --label for {} profiles: give one per profile, in order",
                args.labels.len(),
                sides.len()
            );
        }
        if let Some(l) = args.labels.iter().find(|l| l.trim().is_empty()) {
            bail!("--label {l:?}: a label names its profile, it cannot be empty");
        }
        if let Some(l) = args
            .labels
            .iter()
            .enumerate()
            .find(|(i, l)| args.labels[..*i].contains(l))
            .map(|(_, l)| l)
        {
            bail!("--label {l:?} is given twice: each profile needs its own");
        }
    }
    let labelled = !args.labels.is_empty();
    let runs: Vec<usize> = sides.iter().map(Vec::len).collect();
    if args.all && diff::is_pair(&runs, labelled) {
        bail!(
            "--all is for the table of variants (a third profile, several runs on a side, or --label); two profiles show every syscall"
        );
    }
    let labels = if labelled {
        args.labels.clone()
    } else {
        default_labels(&sides)
    };
    let whole = sides
        .into_iter()
        .zip(labels)
        .map(|(files, label)| {
            let runs = files
                .iter()
                .map(|f| read(f, args.process.as_ref()))
                .collect::<Result<_>>()?;
            Ok(diff::Variant {
                label,
                files: files.iter().map(|f| f.display().to_string()).collect(),
                runs,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // -e narrows the rows; --per counts its units over every syscall, the rows -e leaves
    // out included.
    let selected: Vec<diff::Variant> = whole
        .iter()
        .map(|v| diff::Variant {
            label: v.label.clone(),
            files: v.files.clone(),
            runs: v.runs.iter().map(|p| select(p.clone(), &sel)).collect(),
        })
        .collect();
    let compared = diff::compare(&selected, &whole, labelled, args.per.as_deref(), args.sort)?;
    super::print_out(&if args.json {
        compared.to_json()
    } else {
        compared.render(args.all)
    });
    Ok(0)
}

/// The files of one side: the argument itself when it names a file, else its
/// comma-separated parts (none empty, none twice: a run counted twice would fake
/// agreement between runs).
fn side_files(arg: &Path) -> Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = arg.as_os_str().as_bytes();
    if arg.exists() || !bytes.contains(&b',') {
        return Ok(vec![arg.to_path_buf()]);
    }
    let parts: Vec<PathBuf> = bytes
        .split(|&b| b == b',')
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect();
    if parts.iter().any(|p| p.as_os_str().is_empty()) {
        bail!(
            "an empty file name in {:?}: a side is one file, or several comma-separated",
            arg.display().to_string()
        );
    }
    for (i, p) in parts.iter().enumerate() {
        if parts[..i].contains(p) {
            bail!(
                "{} is given twice in {:?}: each run of a side once",
                p.display(),
                arg.display().to_string()
            );
        }
    }
    Ok(parts)
}

/// Labels from the file names: a single file's name without `.json`; of several runs,
/// what their names share up to a separator (`et-plain-1`, `et-plain-2` -> `et-plain`),
/// else the first name and how many more. Labels two sides would share get their
/// position.
fn default_labels(sides: &[Vec<PathBuf>]) -> Vec<String> {
    let stem = |f: &PathBuf| {
        f.file_name()
            .map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().to_string(),
            )
            .trim_end_matches(".json")
            .to_string()
    };
    let mut labels: Vec<String> = sides
        .iter()
        .map(|files| {
            let stems: Vec<String> = files.iter().map(stem).collect();
            if stems.len() == 1 {
                return stems[0].clone();
            }
            let first = &stems[0];
            let shared = stems[1..].iter().fold(first.len(), |n, s| {
                first
                    .char_indices()
                    .zip(s.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map_or(0, |((i, a), _)| (i + a.len_utf8()).min(n))
            });
            // What the names share, less the separator before the run's number.
            let prefix = first[..shared].trim_end_matches(|c: char| "-_. ".contains(c));
            if prefix.is_empty() {
                format!("{first}+{}", stems.len() - 1)
            } else {
                prefix.to_string()
            }
        })
        .collect();
    let copy = labels.clone();
    for (k, l) in labels.iter_mut().enumerate() {
        if copy.iter().filter(|o| *o == l).count() > 1 {
            *l = format!("{l}#{}", k + 1);
        }
    }
    labels
}

/// The slow calls of a saved profile, refusing a profile saved without `--slow`.
fn slow_calls(file: &Path) -> Result<Vec<syscost_report::profile::SlowCall>> {
    let profile = json::read(file)?;
    if profile.slow_threshold.is_none() {
        bail!(
            "{} has no slow calls: save one with --slow DURATION --json FILE",
            file.display()
        );
    }
    Ok(profile.slow_calls)
}

/// `bytes` to `path` (given to the sudo caller, as every file syscost writes), else to
/// stdout.
fn write_out(path: Option<&std::path::Path>, bytes: &[u8]) -> Result<()> {
    use syscost_report::output;
    match path {
        Some(p) => {
            output::check(p)?;
            output::write(p, bytes, output::Owner::invoker())
        }
        None => {
            super::print_out(&String::from_utf8_lossy(bytes));
            Ok(())
        }
    }
}

/// What `flame` draws, and its title: a stacks file (`--stacks FILE`) as it is; a
/// profile's slow calls by time in them, else its calls by stack (`--stacks` with
/// `--json`).
fn flame_input(args: &FlameArgs) -> Result<(String, String)> {
    let name = args.file.file.display();
    if let Some(stacks) = read_pprof(&args.file.file)? {
        return Ok((
            syscost_report::report::call_stacks::folded(&stacks, Default::default()),
            format!("calls by user stack, {name}"),
        ));
    }
    let bytes = std::fs::read(&args.file.file).with_context(|| format!("cannot read {name}"))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!("{name} is neither a profile (JSON), folded stacks nor a pprof profile (gzipped)")
    })?;
    if text.trim().is_empty() {
        bail!("{name} is empty: neither a profile (JSON) nor folded stacks");
    }
    if !text.trim_start().starts_with('{') {
        let bad = text.lines().enumerate().find(|(_, l)| {
            !l.rsplit_once(' ')
                .is_some_and(|(path, v)| !path.is_empty() && v.parse::<u64>().is_ok())
        });
        if let Some((i, line)) = bad {
            bail!(
                "{name} is neither a profile (JSON) nor folded stacks: line {} is not `frames VALUE`: {:?}",
                i + 1,
                line.chars().take(80).collect::<String>()
            );
        }
        // The flame graph sums them: a file whose sum is past u64 is not one syscost
        // wrote.
        let values = text
            .lines()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok());
        if values
            .into_iter()
            .try_fold(0u64, u64::checked_add)
            .is_none()
        {
            bail!(
                "{name}: the values of its stacks add up past u64: not a stacks file syscost wrote"
            );
        }
        return Ok((text, format!("calls by user stack, {name}")));
    }
    let profile = json::read(&args.file.file)?;
    if args.stacks && profile.stacks.is_none() {
        bail!("{name} has no calls by stack: save one with --stacks FILE --json FILE");
    }
    if profile.slow_threshold.is_some() && !args.stacks {
        let folded = syscost_report::report::slow::folded(&profile.slow_calls);
        return Ok((folded, format!("slow calls of {name} (time in us)")));
    }
    match &profile.stacks {
        Some(stacks) => Ok((
            syscost_report::report::call_stacks::folded(stacks, Default::default()),
            format!("calls by user stack of {name}"),
        )),
        None => bail!(
            "{name} has no slow calls nor calls by stack: save one with --slow DURATION or --stacks FILE, and --json FILE"
        ),
    }
}

/// `syscost flame FILE [-o OUT]`: folded stacks, or an SVG flame graph when OUT ends in
/// `.svg`, of a profile's slow calls or calls by stack, or of a stacks file.
pub fn flame(args: &FlameArgs) -> Result<i32> {
    let (folded, title) = flame_input(args)?;
    let args = &args.file;
    let svg = args
        .output
        .as_ref()
        .is_some_and(|p| p.extension().is_some_and(|e| e == "svg"));
    if svg {
        write_out(
            args.output.as_deref(),
            &syscost_report::report::slow::flame_svg(&folded, &title)?,
        )?;
    } else {
        write_out(args.output.as_deref(), folded.as_bytes())?;
    }
    Ok(0)
}

/// `syscost trace FILE.json [-o OUT]`: the slow calls as a Chrome trace-event JSON.
pub fn trace(args: &crate::cli::TraceArgs) -> Result<i32> {
    let name = args.file.display();
    // What else it may be: folded stacks (`--stacks FILE`, `flame`'s output).
    let mut head = [0u8; 64];
    let n = std::fs::File::open(&args.file)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .with_context(|| format!("cannot read {name}"))?;
    if head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_none_or(|&b| b != b'{')
    {
        bail!(
            "{name} is not a profile: `trace` reads one saved with --slow DURATION --json FILE (stacks files and folded stacks are for `syscost flame`)"
        );
    }
    let calls = slow_calls(&args.file)?;
    write_out(
        args.output.as_deref(),
        syscost_report::report::slow::trace_json(&calls)?.as_bytes(),
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sides(args: &[&str]) -> Vec<Vec<PathBuf>> {
        args.iter()
            .map(|a| side_files(Path::new(a)).unwrap())
            .collect()
    }

    fn files(arg: &str) -> Result<Vec<String>> {
        side_files(Path::new(arg)).map(|v| v.iter().map(|p| p.display().to_string()).collect())
    }

    #[test]
    fn labels_come_from_the_file_names() {
        assert_eq!(
            default_labels(&sides(&[
                "docs/diff/et-plain-1.json,docs/diff/et-plain-2.json",
                "lt_1.json,lt_2.json,lt_3.json",
                "after.json",
                "x.json,y.json",
                "v2-1.json,v2-2.json",
            ])),
            ["et-plain", "lt", "after", "x+1", "v2"]
        );
        // Two sides named alike get their position.
        assert_eq!(
            default_labels(&sides(&["a/run.json", "b/run.json", "c.json"])),
            ["run#1", "run#2", "c"]
        );
    }

    #[test]
    fn a_side_is_one_file_or_several() {
        assert_eq!(files("a.json").unwrap(), ["a.json"]);
        assert_eq!(files("a.json,b.json").unwrap(), ["a.json", "b.json"]);
        assert_eq!(
            files("a.json,,b.json").unwrap_err().to_string(),
            "an empty file name in \"a.json,,b.json\": a side is one file, or several comma-separated"
        );
        assert_eq!(
            files("a.json,b.json,a.json").unwrap_err().to_string(),
            "a.json is given twice in \"a.json,b.json,a.json\": each run of a side once"
        );
        // A file whose name holds a comma is that file.
        let dir = std::env::temp_dir().join(format!("syscost-side-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let odd = dir.join("a,b.json");
        std::fs::write(&odd, "{}").unwrap();
        assert_eq!(side_files(&odd).unwrap(), std::slice::from_ref(&odd));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
