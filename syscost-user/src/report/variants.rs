//! `syscost diff` of several variants, each one run or several: per syscall, every
//! variant's calls, errors, time and latency with its change against the first (the
//! baseline), each change judged against the noise (see `stats`), the time split into
//! on-CPU and switched out, blocking calls apart, and a conclusion in words. Pure: built
//! from the profiles read.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow, bail};
use serde::Serialize;

use super::{
    diff::{self, DiffSort, ns, num, trim_lines},
    stats::{self, CONFIDENCE, Interval, RankTest},
};
use crate::{
    latency,
    profile::{Profile, SyscallProfile, per_unit},
};

/// One variant: its label, its files and the profiles read from them (its runs).
#[derive(Clone, Debug)]
pub struct Variant {
    pub label: String,
    pub files: Vec<String>,
    pub runs: Vec<Profile>,
}

/// What a change is, against the noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Beyond the noise: the interval leaves out zero, or the rank test's p < 0.05.
    Significant,
    /// Within the noise.
    WithinNoise,
    /// One run on a side, and no histogram test applies: shown without a verdict.
    NotJudged,
}

/// One figure of one variant: the mean over its runs, and each run's value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measure {
    pub mean: f64,
    pub runs: Vec<f64>,
}

impl Measure {
    fn of(runs: Vec<f64>) -> Self {
        Self {
            mean: stats::mean(&runs),
            runs,
        }
    }
}

/// A figure's change against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub change: f64,
    /// In percent of the baseline; `None` when the baseline is 0.
    pub change_pct: Option<f64>,
    /// The interval of `change` from the spread between runs (two runs or more on both
    /// sides), at the family's confidence: the intervals of one figure of one profile
    /// over its syscalls hold together at 95% (Bonferroni); it leaves out zero exactly
    /// when the verdict is `significant`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Latency with one run on a side: the rank test of the two histograms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank_test: Option<RankTest>,
    /// The p-value of "no change" (Welch's test, or the rank test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// `p_value` times the number of syscalls tested for the same figure of the same
    /// profile (Bonferroni), at most 1: the verdict is this below 0.05.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    #[serde(skip)]
    welch: Option<stats::Welch>,
}

impl Change {
    /// The change and its test (Welch's, each side's variance at least its floor); the
    /// verdict waits for the family's adjustment ([`settle`]).
    fn judge(base: &Measure, other: &Measure, floors: (f64, f64)) -> Self {
        let welch = stats::welch(&base.runs, &other.runs, floors.0, floors.1);
        Self {
            p_value: welch.map(|w| w.p_value),
            welch,
            ..Self::untested(base, other)
        }
    }

    /// The change, without a test.
    fn untested(base: &Measure, other: &Measure) -> Self {
        let change = other.mean - base.mean;
        Self {
            change,
            change_pct: (base.mean != 0.0).then(|| 100.0 * change / base.mean),
            interval: None,
            rank_test: None,
            p_value: None,
            p_adjusted: None,
            verdict: Verdict::NotJudged,
            welch: None,
        }
    }

    /// No change to speak of: a side without the call has no latency to compare.
    fn none() -> Self {
        Self {
            change: 0.0,
            change_pct: None,
            ..Self::untested(&Measure::of(Vec::new()), &Measure::of(Vec::new()))
        }
    }

    /// A change that is not "no change", and not within the noise.
    fn worth_saying(&self) -> bool {
        self.change != 0.0 && self.verdict != Verdict::WithinNoise
    }
}

fn of(r: &mut Row, k: usize) -> &mut CellChange {
    r.profiles[k].change.as_mut().expect("not the baseline")
}

/// The verdicts of a family of changes (one figure of one profile, over the syscalls):
/// Bonferroni's adjustment of their p-values, and intervals at the family's confidence.
/// A change without spread on either side (a standard error of zero: the same value in
/// every run, with no floor) is certain, and takes no share of the family.
fn settle(family: Vec<&mut Change>) {
    let certain = |c: &Change| c.welch.is_some_and(|w| w.se == 0.0);
    let m = family
        .iter()
        .filter(|c| c.p_value.is_some() && !certain(c))
        .count();
    for c in family {
        let Some(p) = c.p_value else { continue };
        let (adjusted, confidence) = if certain(c) {
            (p, CONFIDENCE)
        } else {
            (stats::bonferroni(p, m), stats::family_confidence(m))
        };
        c.p_adjusted = Some(adjusted);
        c.interval = c.welch.map(|w| w.interval(confidence));
        c.verdict = if adjusted < 1.0 - CONFIDENCE {
            Verdict::Significant
        } else {
            Verdict::WithinNoise
        };
    }
}

/// One variant's figures of a syscall (or of the total).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub calls: Measure,
    pub errors: Measure,
    pub total_ns: Measure,
    pub oncpu_ns: Measure,
    /// Mean latency of each run that made the call (not divided by `--per`'s unit).
    pub avg_ns: Measure,
    /// Against the baseline (absent for the baseline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<CellChange>,
    /// The fewest calls of any run.
    #[serde(skip)]
    fewest_calls: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellChange {
    pub calls: Change,
    pub errors: Change,
    pub total_ns: Change,
    pub avg_ns: Change,
}

/// One syscall across the variants.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    /// Whether its calls mostly block (switched out more than half their time, over
    /// every run with the on-CPU split); `None` when no profile has the split.
    pub blocking: Option<bool>,
    pub profiles: Vec<Cell>,
}

/// One figure across the variants, with its changes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub value: Measure,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

/// One errno of one syscall across the variants (only those whose count changes).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrnoRow {
    pub syscall: String,
    pub errno: String,
    pub profiles: Vec<Series>,
}

/// One variant's time: on a CPU and switched out; in blocking calls and in the others.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeSplit {
    pub oncpu_ns: Series,
    pub offcpu_ns: Series,
    pub blocking_calls_ns: Series,
    pub other_calls_ns: Series,
}

/// A variant as the comparison names it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantInfo {
    pub label: String,
    pub files: Vec<String>,
    /// `--per`'s unit count of each run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<Measure>,
    /// Whether each of its runs measured the on-CPU split.
    pub oncpu_tracked: bool,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub confidence: f64,
    pub per: Option<String>,
    /// The first is the baseline.
    pub profiles: Vec<VariantInfo>,
    pub rows: Vec<Row>,
    pub total: Row,
    pub errnos: Vec<ErrnoRow>,
    /// Whether every run measured the on-CPU split.
    pub oncpu_tracked: bool,
    /// Whether every run split errors by errno (else `errnos` is empty).
    pub errnos_tracked: bool,
    /// The syscalls counted as blocking (of the runs with the on-CPU split).
    pub blocking: Vec<String>,
    /// Per variant: `null` for one without the on-CPU split; changes where the baseline
    /// has it too.
    pub time: Vec<Option<TimeSplit>>,
    /// One line per variant after the baseline, and a line on its blocking calls.
    pub conclusion: Vec<String>,
}

/// The syscalls of `names` that block: switched out more than half their time over
/// `runs` together (the runs with the on-CPU split).
pub fn blocking_syscalls<'a>(
    names: &BTreeSet<&str>,
    runs: impl Iterator<Item = &'a Profile> + Clone,
) -> Vec<String> {
    names
        .iter()
        .filter(|&&name| {
            let (off, total) = runs
                .clone()
                .filter_map(|p| p.syscall(name))
                .fold((0u128, 0u128), |(o, t), s| {
                    (o + s.offcpu_ns as u128, t + s.total_ns as u128)
                });
            total > 0 && 2 * off > total
        })
        .map(|s| s.to_string())
        .collect()
}

/// Compares the variants: the first is the baseline.
pub fn compare(variants: &[Variant], per: Option<&str>, sort: DiffSort) -> Result<Comparison> {
    compare_counting_units_in(variants, variants, per, sort)
}

/// The same, `per`'s units counted in `units_in`'s runs (the whole profiles, when `-e`
/// left the unit's row out of `variants`).
pub fn compare_counting_units_in(
    variants: &[Variant],
    units_in: &[Variant],
    per: Option<&str>,
    sort: DiffSort,
) -> Result<Comparison> {
    if variants.len() < 2 {
        bail!("diff needs two profiles or more");
    }
    let arch = &variants[0].runs[0].arch;
    for v in variants {
        for (p, f) in v.runs.iter().zip(&v.files) {
            if &p.arch != arch {
                bail!(
                    "the profiles come from different architectures ({arch} and {}, {f}): their syscall tables differ, so syscost does not compare them",
                    p.arch
                );
            }
        }
    }
    // Each run's unit count.
    let units: Vec<Vec<f64>> = units_in
        .iter()
        .map(|v| {
            v.runs
                .iter()
                .zip(&v.files)
                .map(|(p, f)| match per {
                    None => Ok(1.0),
                    Some(unit) => per_unit(p, unit).map(|u| u.units as f64).ok_or_else(|| {
                        anyhow!("{f} has no successful {unit} calls to normalise by")
                    }),
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    let runs = || variants.iter().flat_map(|v| &v.runs);
    let tracked: Vec<bool> = variants
        .iter()
        .map(|v| v.runs.iter().all(|p| p.offcpu_tracked))
        .collect();
    let errnos_tracked = runs().all(|p| !p.totals_only);
    let names: BTreeSet<&str> = runs()
        .flat_map(|p| &p.syscalls)
        .map(|s| s.name.as_str())
        .collect();
    let single = |k: usize| variants[0].runs.len() == 1 || variants[k].runs.len() == 1;

    // One figure of every run of variant `k`, divided by the run's unit.
    let per_run = |k: usize, f: &dyn Fn(&Profile) -> f64| -> Measure {
        Measure::of(
            variants[k]
                .runs
                .iter()
                .zip(&units[k])
                .map(|(p, u)| f(p) / u)
                .collect(),
        )
    };
    // A count's variance between runs is at least its Poisson spread (its mean), so
    // that the same small count in every run is not taken as certain: per unit, the
    // mean over the unit.
    let count_floors = |k: usize, base: &Measure, other: &Measure| {
        let u = |k: usize| stats::mean(&units[k]).max(1.0);
        (base.mean / u(0), other.mean / u(k))
    };
    let series = |f: &dyn Fn(&Profile) -> f64, count: bool| -> Vec<Series> {
        let values: Vec<Measure> = (0..variants.len()).map(|k| per_run(k, f)).collect();
        values
            .iter()
            .enumerate()
            .map(|(k, v)| Series {
                value: v.clone(),
                change: (k > 0).then(|| {
                    let floors = if count {
                        count_floors(k, &values[0], v)
                    } else {
                        (0.0, 0.0)
                    };
                    Change::judge(&values[0], v, floors)
                }),
            })
            .collect()
    };

    let blocking = blocking_syscalls(
        &names,
        variants
            .iter()
            .zip(&tracked)
            .filter(|(_, t)| **t)
            .flat_map(|(v, _)| &v.runs),
    );
    let any_tracked = tracked.iter().any(|t| *t);
    let is_blocking = |name: &str| any_tracked.then(|| blocking.iter().any(|b| b == name));

    let hist = |p: &Profile, name: &str| -> Result<Option<Vec<u64>>> {
        if p.totals_only {
            return Ok(None);
        }
        match p.syscall(name) {
            Some(s) => latency::to_dense(&s.histogram).map(Some),
            None => Ok(Some(vec![0; syscost_common::HISTOGRAM_BUCKETS])),
        }
    };
    // A variant's histogram of `name`, its runs pooled; `None` without histograms.
    let pooled = |k: usize, name: &str| -> Result<Option<Vec<u64>>> {
        let mut sum = vec![0u64; syscost_common::HISTOGRAM_BUCKETS];
        for p in &variants[k].runs {
            let Some(h) = hist(p, name)? else {
                return Ok(None);
            };
            for (s, c) in sum.iter_mut().zip(h) {
                *s = s
                    .checked_add(c)
                    .ok_or_else(|| anyhow!("{name}: the runs' histograms overflow"))?;
            }
        }
        Ok(Some(sum))
    };

    let row = |name: &str, pick: &dyn Fn(&Profile) -> Vec<&SyscallProfile>| -> Result<Row> {
        let sum = |f: fn(&SyscallProfile) -> u64| {
            move |p: &Profile| pick(p).into_iter().map(f).sum::<u64>() as f64
        };
        let mut cells: Vec<Cell> = (0..variants.len())
            .map(|k| Cell {
                calls: per_run(k, &sum(|s| s.calls)),
                errors: per_run(k, &sum(|s| s.errors)),
                total_ns: per_run(k, &sum(|s| s.total_ns)),
                oncpu_ns: per_run(k, &sum(|s| s.oncpu_ns)),
                avg_ns: Measure::of(
                    variants[k]
                        .runs
                        .iter()
                        .filter_map(|p| {
                            let (c, t) = pick(p)
                                .iter()
                                .fold((0u64, 0u64), |(c, t), s| (c + s.calls, t + s.total_ns));
                            (c > 0).then(|| t as f64 / c as f64)
                        })
                        .collect(),
                ),
                change: None,
                fewest_calls: variants[k]
                    .runs
                    .iter()
                    .map(|p| pick(p).iter().map(|s| s.calls).sum::<u64>())
                    .min()
                    .unwrap_or(0),
            })
            .collect();
        let is_total = name == "total";
        for k in 1..cells.len() {
            let (b, o) = (&cells[0], &cells[k]);
            let avg = if b.avg_ns.runs.is_empty() || o.avg_ns.runs.is_empty() {
                Change::none()
            } else if single(k) {
                // One run on a side: the calls of the two histograms as samples.
                let mut avg = Change::untested(&b.avg_ns, &o.avg_ns);
                if !is_total
                    && let (Some(hb), Some(ho)) = (pooled(0, name)?, pooled(k, name)?)
                    && let Some(r) = stats::rank_test(&hb, &ho)
                {
                    avg.p_value = Some(r.p_value);
                    avg.rank_test = Some(r);
                }
                avg
            } else if is_total
                || (b.fewest_calls >= stats::MIN_RANK_CALLS
                    && o.fewest_calls >= stats::MIN_RANK_CALLS)
            {
                Change::judge(&b.avg_ns, &o.avg_ns, (0.0, 0.0))
            } else {
                // The mean of a handful of calls a run is no figure to judge.
                Change::untested(&b.avg_ns, &o.avg_ns)
            };
            let change = CellChange {
                calls: Change::judge(&b.calls, &o.calls, count_floors(k, &b.calls, &o.calls)),
                errors: Change::judge(&b.errors, &o.errors, count_floors(k, &b.errors, &o.errors)),
                total_ns: Change::judge(&b.total_ns, &o.total_ns, (0.0, 0.0)),
                avg_ns: avg,
            };
            cells[k].change = Some(change);
        }
        Ok(Row {
            name: name.to_string(),
            blocking: if is_total { None } else { is_blocking(name) },
            profiles: cells,
        })
    };

    let mut rows = names
        .iter()
        .map(|&name| row(name, &|p: &Profile| p.syscall(name).into_iter().collect()))
        .collect::<Result<Vec<_>>>()?;
    let largest =
        |r: &Row, f: &dyn Fn(&Cell) -> f64| r.profiles.iter().map(f).fold(0.0f64, f64::max);
    let key = |r: &Row| -> f64 {
        match sort {
            DiffSort::Change => largest(r, &|c| {
                c.change.as_ref().map_or(0.0, |c| c.calls.change.abs())
            }),
            DiffSort::Calls => largest(r, &|c| c.calls.mean),
            DiffSort::Time => largest(r, &|c| c.total_ns.mean),
            DiffSort::Errors => largest(r, &|c| c.errors.mean),
            DiffSort::Name => 0.0,
        }
    };
    if sort != DiffSort::Name {
        rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
    }
    let mut total = row("total", &|p: &Profile| p.syscalls.iter().collect())?;
    for k in 1..variants.len() {
        for table in [&mut rows, std::slice::from_mut(&mut total)] {
            settle(table.iter_mut().map(|r| &mut of(r, k).calls).collect());
            settle(table.iter_mut().map(|r| &mut of(r, k).errors).collect());
            settle(table.iter_mut().map(|r| &mut of(r, k).total_ns).collect());
            settle(table.iter_mut().map(|r| &mut of(r, k).avg_ns).collect());
        }
    }

    let mut errnos = Vec::new();
    if errnos_tracked {
        let pairs: BTreeSet<(&str, &str)> = runs()
            .flat_map(|p| &p.syscalls)
            .flat_map(|s| s.errnos.keys().map(|e| (s.name.as_str(), e.as_str())))
            .collect();
        for (name, errno) in pairs {
            let profiles = series(
                &|p: &Profile| {
                    p.syscall(name)
                        .and_then(|s| s.errnos.get(errno))
                        .copied()
                        .unwrap_or(0) as f64
                },
                true,
            );
            if profiles
                .iter()
                .any(|s| s.change.as_ref().is_some_and(|c| c.change != 0.0))
            {
                errnos.push(ErrnoRow {
                    syscall: name.to_string(),
                    errno: errno.to_string(),
                    profiles,
                });
            }
        }
        let biggest = |r: &ErrnoRow| {
            r.profiles
                .iter()
                .filter_map(|s| s.change.as_ref())
                .map(|c| c.change.abs())
                .fold(0.0, f64::max)
        };
        errnos.sort_by(|a, b| biggest(b).total_cmp(&biggest(a)));
        for k in 1..variants.len() {
            settle(
                errnos
                    .iter_mut()
                    .filter_map(|e| e.profiles[k].change.as_mut())
                    .collect(),
            );
        }
    }

    let in_calls = |want: bool| {
        let blocking = &blocking;
        move |p: &Profile| {
            p.syscalls
                .iter()
                .filter(|s| blocking.contains(&s.name) == want)
                .map(|s| s.total_ns)
                .sum::<u64>() as f64
        }
    };
    let mut split = [
        series(
            &|p| p.syscalls.iter().map(|s| s.oncpu_ns).sum::<u64>() as f64,
            false,
        ),
        series(
            &|p| p.syscalls.iter().map(|s| s.offcpu_ns).sum::<u64>() as f64,
            false,
        ),
        series(&in_calls(true), false),
        series(&in_calls(false), false),
    ];
    for s in &mut split {
        for (k, v) in s.iter_mut().enumerate() {
            // Changes where both have the split; each a family of one: four views of
            // one total, not four syscalls.
            if !(tracked[0] && tracked[k]) {
                v.change = None;
            }
            if let Some(c) = v.change.as_mut() {
                settle(vec![c]);
            }
        }
    }
    let time = (0..variants.len())
        .map(|k| {
            tracked[k].then(|| TimeSplit {
                oncpu_ns: split[0][k].clone(),
                offcpu_ns: split[1][k].clone(),
                blocking_calls_ns: split[2][k].clone(),
                other_calls_ns: split[3][k].clone(),
            })
        })
        .collect();

    let mut c = Comparison {
        confidence: CONFIDENCE,
        per: per.map(str::to_string),
        profiles: variants
            .iter()
            .enumerate()
            .map(|(k, v)| VariantInfo {
                label: v.label.clone(),
                files: v.files.clone(),
                units: per.map(|_| Measure::of(units[k].clone())),
                oncpu_tracked: tracked[k],
            })
            .collect(),
        rows,
        total,
        errnos,
        oncpu_tracked: tracked.iter().all(|t| *t),
        errnos_tracked,
        blocking: if any_tracked { blocking } else { Vec::new() },
        time,
        conclusion: Vec::new(),
    };
    c.conclusion = (1..variants.len())
        .flat_map(|k| conclusion(&c, k))
        .collect();
    Ok(c)
}

fn pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p.abs() >= 1000.0 => format!("{p:+.0}%"),
        // What is left of a count is not rounded away: -99.98%, not -100.0%.
        Some(p) if p > -100.0 && p <= -99.95 => format!("{p:+.2}%"),
        Some(p) => format!("{p:+.1}%"),
        None => "new".into(),
    }
}

/// A change in a few words: "-32.7%", "new", "gone".
fn moved(base: f64, c: &Change) -> String {
    if base != 0.0 && base + c.change == 0.0 {
        "gone".into()
    } else {
        pct(c.change_pct)
    }
}

/// Variant `k`'s conclusion against the baseline: one line, and one on blocking time.
fn conclusion(c: &Comparison, k: usize) -> Vec<String> {
    let per = c.per.is_some();
    let label = &c.profiles[k].label;
    fn change_of(r: &Row, k: usize) -> &CellChange {
        r.profiles[k].change.as_ref().expect("not the baseline")
    }
    let mut parts = Vec::new();

    let (b, o) = (&c.total.profiles[0], &c.total.profiles[k]);
    let t = change_of(&c.total, k);
    let mut calls = if t.calls.change == 0.0 {
        format!("syscalls unchanged ({})", num(b.calls.mean, per))
    } else if t.calls.verdict == Verdict::WithinNoise {
        format!(
            "syscalls within the noise ({} -> {})",
            num(b.calls.mean, per),
            num(o.calls.mean, per)
        )
    } else {
        format!(
            "syscalls {} ({} -> {})",
            pct(t.calls.change_pct),
            num(b.calls.mean, per),
            num(o.calls.mean, per)
        )
    };
    let mut by_calls: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| change_of(r, k).calls.worth_saying())
        .collect();
    by_calls.sort_by(|x, y| {
        change_of(y, k)
            .calls
            .change
            .abs()
            .total_cmp(&change_of(x, k).calls.change.abs())
    });
    for r in by_calls.iter().take(3) {
        calls += &format!(
            ", {} {}",
            r.name,
            moved(r.profiles[0].calls.mean, &change_of(r, k).calls)
        );
    }
    parts.push(calls);

    if t.errors.worth_saying() {
        let mut errors = format!(
            "errors {} ({} -> {})",
            moved(b.errors.mean, &t.errors),
            num(b.errors.mean, per),
            num(o.errors.mean, per)
        );
        let mut said: Vec<&ErrnoRow> = c
            .errnos
            .iter()
            .filter(|e| {
                e.profiles[k]
                    .change
                    .as_ref()
                    .is_some_and(Change::worth_saying)
            })
            .collect();
        let size = |e: &ErrnoRow| {
            e.profiles[k]
                .change
                .as_ref()
                .map_or(0.0, |c| c.change.abs())
        };
        said.sort_by(|x, y| size(y).total_cmp(&size(x)));
        let shifts: Vec<String> = said
            .into_iter()
            .take(2)
            .map(|e| {
                format!(
                    "{} {} {} -> {}",
                    e.syscall,
                    e.errno,
                    num(e.profiles[0].value.mean, per),
                    num(e.profiles[k].value.mean, per)
                )
            })
            .collect();
        if !shifts.is_empty() {
            errors += &format!(": {}", shifts.join(", "));
        }
        parts.push(errors);
    }

    // Latency: a rank test's verdict is of the distribution, so its median shift is
    // what is said; else the mean's change.
    let shift = |r: &Row| -> (f64, String) {
        let a = &change_of(r, k).avg_ns;
        match &a.rank_test {
            Some(t) if t.median_before_ns > 0.0 => {
                let p = 100.0 * t.median_shift_ns() / t.median_before_ns;
                (
                    p,
                    format!(
                        "{} median {} ({} -> {})",
                        r.name,
                        pct(Some(p)),
                        ns(t.median_before_ns),
                        ns(t.median_after_ns)
                    ),
                )
            }
            _ => (
                a.change_pct.unwrap_or(0.0),
                format!(
                    "{} {} ({} -> {})",
                    r.name,
                    pct(a.change_pct),
                    ns(r.profiles[0].avg_ns.mean),
                    ns(r.profiles[k].avg_ns.mean)
                ),
            ),
        }
    };
    let mut slower: Vec<(f64, String)> = c
        .rows
        .iter()
        .filter(|r| r.blocking != Some(true))
        .filter(|r| change_of(r, k).avg_ns.verdict == Verdict::Significant)
        .map(shift)
        .collect();
    slower.sort_by(|x, y| y.0.abs().total_cmp(&x.0.abs()));
    if !slower.is_empty() {
        let l: Vec<String> = slower.into_iter().take(3).map(|(_, s)| s).collect();
        parts.push(format!("latency {}", l.join(", ")));
    }

    let mut lines = Vec::new();
    match (&c.time[0], &c.time[k]) {
        (Some(base), Some(split)) => {
            let other = split
                .other_calls_ns
                .change
                .as_ref()
                .expect("not the baseline");
            let worked_more = other.worth_saying() && other.change > 0.0;
            if other.worth_saying() {
                parts.push(format!(
                    "time in non-blocking calls {} ({} -> {})",
                    pct(other.change_pct),
                    ns(base.other_calls_ns.value.mean),
                    ns(split.other_calls_ns.value.mean)
                ));
            }
            let blocked = split
                .blocking_calls_ns
                .change
                .as_ref()
                .expect("not the baseline");
            lines.push(format!("{label}: {}", parts.join("; ")));
            if blocked.worth_saying() {
                let why = match (blocked.change > 0.0, worked_more) {
                    (true, false) => "the process waited longer, it did not work longer",
                    (true, true) => "the process waited longer (and worked longer: above)",
                    (false, _) => "the process waited less",
                };
                lines.push(format!(
                    "  time in blocking calls ({}) {} ({} -> {}): {why}",
                    c.blocking.join(", "),
                    pct(blocked.change_pct),
                    ns(base.blocking_calls_ns.value.mean),
                    ns(split.blocking_calls_ns.value.mean)
                ));
            }
        }
        _ => {
            if t.total_ns.worth_saying() {
                parts.push(format!(
                    "time {} ({} -> {}), not split into blocking and other calls (a profile without the on-CPU split)",
                    pct(t.total_ns.change_pct),
                    ns(b.total_ns.mean),
                    ns(o.total_ns.mean)
                ));
            }
            lines.push(format!("{label}: {}", parts.join("; ")));
        }
    }
    lines
}

fn mark(c: Option<&Change>) -> &'static str {
    match c.map(|c| c.verdict) {
        Some(Verdict::Significant) => "*",
        Some(Verdict::WithinNoise) => "~",
        _ => "",
    }
}

/// The comparison as text: the variants, the table, the time split, the errno
/// changes, the latency tests of single runs and the conclusion.
pub fn render(c: &Comparison, all: bool) -> String {
    let per = c.per.is_some();
    let w = c
        .profiles
        .iter()
        .map(|p| p.label.chars().count())
        .max()
        .unwrap_or(0)
        .max("profile".len());
    // Rows of under 0.1% of the calls and of the time in every profile, with no change
    // marked and no count change unjudged, named on one line unless `all`.
    let said = |ch: &Change| {
        ch.verdict == Verdict::Significant || (ch.verdict == Verdict::NotJudged && ch.change != 0.0)
    };
    let minor = |r: &Row| {
        r.profiles
            .iter()
            .zip(&c.total.profiles)
            .all(|(cell, total)| {
                cell.calls.mean * 1000.0 < total.calls.mean
                    && cell.total_ns.mean * 1000.0 < total.total_ns.mean
            })
            && r.profiles
                .iter()
                .filter_map(|p| p.change.as_ref())
                .all(|ch| {
                    !said(&ch.calls)
                        && !said(&ch.errors)
                        && ch.total_ns.verdict != Verdict::Significant
                        && ch.avg_ns.verdict != Verdict::Significant
                })
    };
    let nw = c
        .rows
        .iter()
        .filter(|r| all || !minor(r))
        .map(|r| r.name.chars().count())
        .chain(c.errnos.iter().map(|e| e.syscall.len() + 1 + e.errno.len()))
        .max()
        .unwrap_or(0)
        .max(16);
    let mut out = String::new();
    out.push_str("profiles (the first is the baseline):\n");
    for p in &c.profiles {
        let runs = p.files.len();
        let units = match (&c.per, &p.units) {
            (Some(unit), Some(u)) => format!(", {} successful {unit} a run", num(u.mean, false)),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {:<w$}  {runs} run{}{units}: {}\n",
            p.label,
            if runs == 1 { "" } else { "s" },
            p.files.join(" ")
        ));
    }
    if let Some(unit) = &c.per {
        out.push_str(&format!(
            "\ncalls, errors and time per successful {unit} call of each run\n"
        ));
    }
    out.push('\n');
    let head = format!(
        "{:<nw$} {:<w$} {:>11} {:>8} {:1} {:>9} {:>8} {:1} {:>9} {:>8} {:1} {:>8} {:>8} {:1}\n",
        "syscall",
        "profile",
        "calls",
        "change",
        "",
        "errors",
        "change",
        "",
        "time",
        "change",
        "",
        "avg",
        "change",
        ""
    );
    out.push_str(&head);
    let dashes = format!(
        "{} {} {} {} - {} {} - {} {} - {} {} -\n",
        "-".repeat(nw),
        "-".repeat(w),
        "-".repeat(11),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(8),
        "-".repeat(8),
        "-".repeat(8)
    );
    out.push_str(&dashes);
    let row = |out: &mut String, r: &Row| {
        for (k, cell) in r.profiles.iter().enumerate() {
            let ch = cell.change.as_ref();
            let p = |c: Option<&Change>, base: f64| match c {
                Some(c) if base == 0.0 && c.change == 0.0 => String::new(),
                Some(c) => pct(c.change_pct),
                None => String::new(),
            };
            let b = &r.profiles[0];
            let avg = if cell.avg_ns.runs.is_empty() {
                "-".to_string()
            } else {
                ns(cell.avg_ns.mean)
            };
            out.push_str(&format!(
                "{:<nw$} {:<w$} {:>11} {:>8} {:1} {:>9} {:>8} {:1} {:>9} {:>8} {:1} {:>8} {:>8} {:1}\n",
                if k == 0 { r.name.as_str() } else { "" },
                c.profiles[k].label,
                num(cell.calls.mean, per),
                p(ch.map(|c| &c.calls), b.calls.mean),
                mark(ch.map(|c| &c.calls)),
                num(cell.errors.mean, per),
                p(ch.map(|c| &c.errors), b.errors.mean),
                mark(ch.map(|c| &c.errors).filter(|_| b.errors.mean + cell.errors.mean > 0.0)),
                ns(cell.total_ns.mean),
                p(ch.map(|c| &c.total_ns), b.total_ns.mean),
                mark(ch.map(|c| &c.total_ns)),
                avg,
                if b.avg_ns.runs.is_empty() { String::new() } else { p(ch.map(|c| &c.avg_ns), b.avg_ns.mean) },
                mark(ch.map(|c| &c.avg_ns)),
            ));
        }
    };
    let mut folded = Vec::new();
    for r in &c.rows {
        if !all && minor(r) {
            folded.push(r.name.as_str());
        } else {
            row(&mut out, r);
        }
    }
    out.push_str(&dashes);
    row(&mut out, &c.total);
    if !folded.is_empty() {
        out.push_str(&format!(
            "({} more, each under 0.1% of the calls and of the time, no change marked: {}; --all shows them)\n",
            folded.len(),
            folded.join(", ")
        ));
    }
    out.push_str(&format!(
        "\n* beyond the noise: p < {:.2} from the spread between runs (Welch's t), or for latency with one run on\n  a side from a rank test of the two histograms (of the whole distribution: its median shift below),\n  adjusted for the number of syscalls compared (Bonferroni)\n~ within the noise; no mark: not judged (counts of one run on a side, latency of fewer than 20 calls a run)\n",
        1.0 - c.confidence
    ));

    // A figure per row, its profiles under it (those given: a profile without the
    // on-CPU split has no time split), each with its change and mark.
    let series_table =
        |out: &mut String, title: &str, rows: &[(String, Vec<(usize, &Series)>)], time: bool| {
            out.push_str(&format!(
                "\n{:<nw$} {:<w$} {:>11} {:>8}\n",
                title,
                "profile",
                if time { "time" } else { "count" },
                "change"
            ));
            for (name, s) in rows {
                let base = s.first().map_or(0.0, |(_, v)| v.value.mean);
                for (i, (k, v)) in s.iter().enumerate() {
                    let value = if time {
                        ns(v.value.mean)
                    } else {
                        num(v.value.mean, per)
                    };
                    let change = v.change.as_ref();
                    out.push_str(&format!(
                        "{:<nw$} {:<w$} {:>11} {:>8} {}\n",
                        if i == 0 { name.as_str() } else { "" },
                        c.profiles[*k].label,
                        value,
                        change.map_or(String::new(), |ch| moved(base, ch)),
                        mark(change)
                    ));
                }
            }
        };
    if c.time.iter().any(Option::is_some) {
        let col = |f: fn(&TimeSplit) -> &Series| {
            c.time
                .iter()
                .enumerate()
                .filter_map(|(k, t)| t.as_ref().map(|t| (k, f(t))))
                .collect::<Vec<_>>()
        };
        let figures = [
            ("on-CPU".to_string(), col(|t| &t.oncpu_ns)),
            ("switched out".to_string(), col(|t| &t.offcpu_ns)),
            ("blocking calls".to_string(), col(|t| &t.blocking_calls_ns)),
            ("other calls".to_string(), col(|t| &t.other_calls_ns)),
        ];
        series_table(&mut out, "time", &figures, true);
        out.push_str(&format!(
            "blocking calls: switched out more than half their time, over the runs with the on-CPU split: {}\n",
            if c.blocking.is_empty() {
                "none".to_string()
            } else {
                c.blocking.join(", ")
            }
        ));
    }
    let untracked: Vec<&str> = c
        .profiles
        .iter()
        .filter(|p| !p.oncpu_tracked)
        .map(|p| p.label.as_str())
        .collect();
    if !untracked.is_empty() {
        out.push_str(&format!(
            "\non-CPU split not tracked in {} (a profile without it): its time is not split, nor compared by it\n",
            untracked.join(", ")
        ));
    }
    if !c.errnos_tracked {
        out.push_str("\nerrno changes not known: a profile has errors per syscall only (a top file, or --process)\n");
    } else if !c.errnos.is_empty() {
        let rows: Vec<(String, Vec<(usize, &Series)>)> = c
            .errnos
            .iter()
            .map(|e| {
                (
                    format!("{} {}", e.syscall, e.errno),
                    e.profiles.iter().enumerate().collect(),
                )
            })
            .collect();
        series_table(&mut out, "errno", &rows, false);
    }
    let mut tests = Vec::new();
    for k in 1..c.profiles.len() {
        for r in &c.rows {
            let avg = &r.profiles[k]
                .change
                .as_ref()
                .expect("not the baseline")
                .avg_ns;
            if let (Some(test), Some(p_adjusted)) = (&avg.rank_test, avg.p_adjusted) {
                tests.push(LatencyLine {
                    syscall: &r.name,
                    variant: k,
                    test,
                    p_adjusted,
                });
            }
        }
    }
    if !tests.is_empty() {
        out.push('\n');
        let label = |k: usize| c.profiles[k].label.clone();
        out.push_str(&render_latency_tests(&tests, Some(&label)));
    }
    out.push_str(&format!("\nconclusion, against {}:\n", c.profiles[0].label));
    if single_runs(c) {
        out.push_str("  (one run on a side: its counts are shown without a verdict; give each variant several runs, comma-separated, for one)\n");
    }
    for l in &c.conclusion {
        out.push_str(&format!("  {l}\n"));
    }
    trim_lines(out)
}

fn single_runs(c: &Comparison) -> bool {
    c.profiles.iter().any(|p| p.files.len() < 2)
}

/// A rank test to print: the syscall, the variant, the test and its p adjusted over
/// the syscalls compared.
pub struct LatencyLine<'a> {
    pub syscall: &'a str,
    pub variant: usize,
    pub test: &'a RankTest,
    pub p_adjusted: f64,
}

impl LatencyLine<'_> {
    fn significant(&self) -> bool {
        self.p_adjusted < 1.0 - CONFIDENCE
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// The latency tests of single runs: those beyond the spread of the calls one per
/// line, the others named on one line per variant.
/// The latency tests of single runs: those beyond the spread of the calls one per
/// line, largest shift first, the others named on one line per profile. `label` names
/// the profiles of a table of variants (`None`: before and after).
pub fn render_latency_tests(
    tests: &[LatencyLine],
    label: Option<&dyn Fn(usize) -> String>,
) -> String {
    let mut out = String::from(
        "latency, one run on a side: each call a sample, the two histograms compared by a rank test\n",
    );
    let (base, other) = if label.is_some() {
        ("base med", "median")
    } else {
        ("before", "after")
    };
    let w = tests
        .iter()
        .map(|t| label.map_or(0, |l| l(t.variant).chars().count()))
        .max()
        .unwrap_or(0)
        .max(if label.is_some() { "profile".len() } else { 0 });
    let nw = tests
        .iter()
        .map(|t| t.syscall.len())
        .max()
        .unwrap_or(0)
        .max(16);
    let profile = |k: usize| label.map_or(String::new(), |l| l(k));
    if tests.iter().any(LatencyLine::significant) {
        out.push_str(&format!(
            "{:<nw$} {:<w$} {:>10} {:>10} {:>8} {:>7} {:>7}\n",
            "syscall",
            if label.is_some() { "profile" } else { "" },
            base,
            other,
            "shift",
            "longer",
            "p"
        ));
    }
    let mut variants: Vec<usize> = tests.iter().map(|t| t.variant).collect();
    variants.dedup();
    let shift = |t: &LatencyLine| {
        let r = t.test;
        (r.median_before_ns > 0.0).then(|| 100.0 * r.median_shift_ns() / r.median_before_ns)
    };
    for k in variants {
        let mut within = Vec::new();
        let mut shown: Vec<&LatencyLine> = Vec::new();
        for t in tests.iter().filter(|t| t.variant == k) {
            if t.significant() {
                shown.push(t);
            } else {
                within.push(t.syscall);
            }
        }
        let size = |t: &LatencyLine| shift(t).map_or(f64::INFINITY, f64::abs);
        shown.sort_by(|a, b| size(b).total_cmp(&size(a)));
        for t in shown {
            let r = t.test;
            out.push_str(&format!(
                "{:<nw$} {:<w$} {:>10} {:>10} {:>8} {:>6.0}% {:>7}\n",
                t.syscall,
                profile(k),
                ns(r.median_before_ns),
                ns(r.median_after_ns),
                shift(t).map_or(String::new(), |s| format!("{s:+.1}%")),
                100.0 * r.prob_longer,
                p_value(t.p_adjusted)
            ));
        }
        if !within.is_empty() {
            let who = label.map_or(String::new(), |l| format!("{}: ", l(k)));
            out.push_str(&format!(
                "{who}within the spread of the calls (adjusted p >= {:.2}): {}\n",
                1.0 - CONFIDENCE,
                within.join(", ")
            ));
        }
    }
    out.push_str(&format!(
        "(medians interpolated within their buckets; longer: the chance that a call {} took longer\nthan one {}; p adjusted for the number of syscalls compared, Bonferroni)\n",
        if label.is_some() { "of the profile" } else { "after" },
        if label.is_some() { "of the baseline" } else { "before" },
    ));
    out
}

/// The comparison as JSON.
pub fn to_json(c: &Comparison) -> String {
    diff::pretty_json(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{profile_of, syscall};

    /// A run of the echo-server shape: `reads` reads (`eagain` of them failing) at
    /// `read_ns`, 1,000 accept4, epoll_wait mostly blocked for `wait_ns` each.
    fn run(reads: u64, eagain: u64, read_ns: u64, wait_ns: u64) -> Profile {
        profile_of(vec![
            syscall("read", 0, reads, eagain, read_ns),
            syscall("accept4", 288, 1_000, 0, 3_000),
            syscall("epoll_wait", 232, 1_000, 0, wait_ns),
        ])
    }

    fn variant(label: &str, runs: Vec<Profile>) -> Variant {
        Variant {
            label: label.into(),
            files: (1..=runs.len())
                .map(|i| format!("{label}-{i}.json"))
                .collect(),
            runs,
        }
    }

    fn cell<'a>(c: &'a Comparison, name: &str, k: usize) -> &'a CellChange {
        c.rows.iter().find(|r| r.name == name).unwrap().profiles[k]
            .change
            .as_ref()
            .unwrap()
    }

    /// Three runs a side: reads that vary by a few calls between runs are within the
    /// noise, a third fewer reads and no EAGAIN are not; a latency 10% higher with
    /// runs 30% apart is within the noise, one 50% higher with runs 5% apart is not.
    fn three_variants() -> Comparison {
        let base = variant(
            "plain",
            vec![
                run(3_000, 1_000, 1_000, 20_000),
                run(3_010, 1_010, 1_050, 21_000),
                run(2_990, 990, 950, 19_000),
            ],
        );
        let short = variant(
            "short",
            vec![
                run(2_000, 0, 1_500, 40_000),
                run(2_000, 0, 1_510, 41_000),
                run(2_000, 0, 1_490, 39_000),
            ],
        );
        let noise = variant(
            "noise",
            vec![
                run(2_998, 1_004, 1_300, 20_000),
                run(2_995, 995, 1_000, 20_500),
                run(3_001, 1_001, 1_000, 19_500),
            ],
        );
        compare(&[base, short, noise], None, DiffSort::Change).unwrap()
    }

    #[test]
    fn changes_are_judged_against_the_spread_between_runs() {
        let c = three_variants();
        let read = cell(&c, "read", 1);
        assert_eq!(read.calls.verdict, Verdict::Significant);
        assert_eq!(read.calls.change, -1_000.0);
        assert_eq!(read.errors.verdict, Verdict::Significant);
        assert_eq!(read.avg_ns.verdict, Verdict::Significant);
        let i = read.calls.interval.unwrap();
        assert!(i.lo < -1_000.0 && i.hi > -1_000.0 && i.hi < 0.0, "{i:?}");
        let read = cell(&c, "read", 2);
        assert_eq!(read.calls.verdict, Verdict::WithinNoise);
        assert!(read.calls.interval.unwrap().holds_zero());
        // 1,100 ns against 1,000 ns, runs 1,000-1,300 apart.
        assert_eq!(read.avg_ns.verdict, Verdict::WithinNoise);
        assert!((read.avg_ns.change_pct.unwrap() - 10.0).abs() < 0.1);
        // accept4 is the same in every run: exactly no change, within the noise.
        let accept = cell(&c, "accept4", 1);
        assert_eq!(accept.calls.change, 0.0);
        assert_eq!(accept.calls.verdict, Verdict::WithinNoise);
        // Bonferroni: the adjusted p is at least the raw one.
        for r in &c.rows {
            let ch = r.profiles[1].change.as_ref().unwrap();
            assert!(ch.avg_ns.p_adjusted.unwrap() >= ch.avg_ns.p_value.unwrap());
        }
        assert_eq!(c.blocking, ["epoll_wait"]);
        assert_eq!(
            c.rows.iter().map(|r| r.blocking).collect::<Vec<_>>(),
            [Some(false), Some(false), Some(true)]
        );
    }

    /// A count the same in every run is judged by its Poisson spread: 0 calls against 1
    /// in each of three runs is within the noise, 10,000 against 5,000 is not; the same
    /// counts in every run of both sides are no change.
    #[test]
    fn a_count_the_same_in_every_run_is_judged_by_its_poisson_spread() {
        let with = |accepts: u64, rare: u64| {
            let mut p = run(3_000, 0, 1_000, 20_000);
            p.syscalls.retain(|s| s.name != "accept4");
            p.syscalls.push(syscall("accept4", 288, accepts, 0, 3_000));
            if rare > 0 {
                p.syscalls.push(syscall("brk", 12, rare, 0, 500));
            }
            p
        };
        let c = compare(
            &[
                variant("a", vec![with(10_000, 0), with(10_000, 0), with(10_000, 0)]),
                variant("b", vec![with(5_000, 1), with(5_000, 1), with(5_000, 1)]),
            ],
            None,
            DiffSort::Change,
        )
        .unwrap();
        assert_eq!(cell(&c, "accept4", 1).calls.verdict, Verdict::Significant);
        let brk = &cell(&c, "brk", 1).calls;
        assert_eq!(brk.verdict, Verdict::WithinNoise, "{brk:?}");
        assert!(brk.p_value.unwrap() > 0.2, "{brk:?}");
        let read = &cell(&c, "read", 1).calls;
        assert_eq!((read.change, read.p_value), (0.0, Some(1.0)));
        assert_eq!(read.verdict, Verdict::WithinNoise);
    }

    #[test]
    fn the_conclusion_names_what_changed_and_leaves_the_noise_out() {
        let c = three_variants();
        assert_eq!(
            c.conclusion,
            [
                "short: syscalls -20.0% (5000 -> 4000), read -33.3%; errors gone (1000 -> 0): read EAGAIN 1000 -> 0; latency read +50.0% (1.00us -> 1.50us)",
                "  time in blocking calls (epoll_wait) +100.0% (20.0ms -> 40.0ms): the process waited longer, it did not work longer",
                "noise: syscalls within the noise (5000 -> 4998)",
            ]
        );
        let text = render(&c, false);
        assert!(
            text.contains("\nconclusion, against plain:\n  short: syscalls -20.0%"),
            "{text}"
        );
        assert!(!text.contains("one run on a side: its counts"), "{text}");
        // The table: the baseline's row bare, the others with a change and a mark.
        assert!(
            text.contains(
                "read             plain          3000                 1000               3.00ms              1.00us\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "                 short          2000   -33.3% *         0  -100.0% *    3.00ms    -0.0% ~   1.50us   +50.0% *\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\nread EAGAIN      plain          1000\n"),
            "{text}"
        );
        assert!(
            text.contains("\n                 short             0     gone *\n"),
            "{text}"
        );
    }

    /// One run a side: counts get no verdict (no mark), latency is judged from the
    /// two histograms, and the note says so.
    #[test]
    fn one_run_a_side_judges_latency_by_the_histograms() {
        let c = compare(
            &[
                variant("a", vec![run(3_000, 1_000, 1_000, 20_000)]),
                variant("b", vec![run(2_000, 0, 2_000, 20_000)]),
                variant("c", vec![run(3_000, 1_000, 1_000, 20_000)]),
            ],
            None,
            DiffSort::Name,
        )
        .unwrap();
        let read = cell(&c, "read", 1);
        assert_eq!(read.calls.verdict, Verdict::NotJudged);
        assert!(read.calls.interval.is_none());
        assert_eq!(read.avg_ns.verdict, Verdict::Significant);
        let t = read.avg_ns.rank_test.unwrap();
        assert!(t.prob_longer > 0.9, "{t:?}");
        // The same histogram: within the spread of the calls.
        assert_eq!(cell(&c, "read", 2).avg_ns.verdict, Verdict::WithinNoise);
        let text = render(&c, false);
        assert!(
            text.contains("  (one run on a side: its counts are shown without a verdict"),
            "{text}"
        );
        assert!(text.contains("\nlatency, one run on a side:"), "{text}");
        assert!(
            text.contains("c: within the spread of the calls (adjusted p >= 0.05): accept4, epoll_wait, read\n"),
            "{text}"
        );
        // Counts without a verdict still make the conclusion.
        assert!(
            c.conclusion[0].starts_with("b: syscalls -20.0% (5000 -> 4000), read -33.3%"),
            "{:?}",
            c.conclusion
        );
    }

    #[test]
    fn per_unit_divides_each_run_by_its_own_units() {
        let base = variant(
            "a",
            vec![
                run(3_000, 1_000, 1_000, 20_000),
                run(6_000, 2_000, 1_000, 20_000),
            ],
        );
        let mut doubled = run(6_000, 2_000, 1_000, 20_000);
        for s in &mut doubled.syscalls {
            if s.name == "accept4" {
                s.calls = 2_000;
            }
        }
        // Twice the reads of the first run, for twice the connections.
        let other = variant("b", vec![run(3_000, 1_000, 1_000, 20_000), doubled]);
        let c = compare(&[base, other], Some("accept4"), DiffSort::Name).unwrap();
        let read = &c.rows.iter().find(|r| r.name == "read").unwrap().profiles;
        assert_eq!(read[0].calls.runs, [3.0, 6.0]);
        assert_eq!(read[1].calls.runs, [3.0, 3.0]);
        assert_eq!(
            c.profiles[1].units.as_ref().unwrap().runs,
            [1_000.0, 2_000.0]
        );
        let e = compare(
            &[
                variant("a", vec![run(1, 0, 1, 1)]),
                variant("b", vec![profile_of(vec![])]),
            ],
            Some("accept4"),
            DiffSort::Name,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "b-1.json has no successful accept4 calls to normalise by"
        );
    }

    #[test]
    fn small_rows_are_folded_unless_all() {
        let mut with_brk = run(3_000, 1_000, 1_000, 20_000);
        with_brk.syscalls.push(syscall("brk", 12, 2, 0, 500));
        let c = compare(
            &[
                variant("a", vec![with_brk.clone()]),
                variant("b", vec![with_brk]),
            ],
            None,
            DiffSort::Change,
        )
        .unwrap();
        let text = render(&c, false);
        assert!(
            text.contains("(1 more, each under 0.1% of the calls and of the time, no change marked: brk; --all shows them)\n"),
            "{text}"
        );
        assert!(!text.contains("\nbrk "), "{text}");
        assert!(render(&c, true).contains("\nbrk "));
        // A small row whose calls change is shown.
        let mut more = run(3_000, 1_000, 1_000, 20_000);
        more.syscalls.push(syscall("brk", 12, 3, 0, 500));
        let mut less = run(3_000, 1_000, 1_000, 20_000);
        less.syscalls.push(syscall("brk", 12, 2, 0, 500));
        let c = compare(
            &[variant("a", vec![less]), variant("b", vec![more])],
            None,
            DiffSort::Change,
        )
        .unwrap();
        assert!(render(&c, false).contains("\nbrk "));
    }

    #[test]
    fn without_the_on_cpu_split_blocking_calls_are_not_told_apart() {
        let mut old = run(3_000, 1_000, 1_000, 20_000);
        old.offcpu_tracked = false;
        let c = compare(
            &[
                variant("a", vec![old]),
                variant("b", vec![run(3_000, 1_000, 1_000, 40_000)]),
            ],
            None,
            DiffSort::Change,
        )
        .unwrap();
        // Blocking calls are known from the profile with the split; the time split and
        // its changes need both.
        assert_eq!(c.blocking, ["epoll_wait"]);
        assert!(c.time[0].is_none() && c.time[1].is_some());
        assert!(c.time[1].as_ref().unwrap().oncpu_ns.change.is_none());
        assert!(!c.oncpu_tracked && !c.profiles[0].oncpu_tracked && c.profiles[1].oncpu_tracked);
        assert!(
            c.conclusion[0]
                == "b: syscalls unchanged (5000); time +76.9% (26.0ms -> 46.0ms), not split into blocking and other calls (a profile without the on-CPU split)",
            "{:?}",
            c.conclusion
        );
        let text = render(&c, false);
        assert!(
            text.contains("\non-CPU split not tracked in a (a profile without it): its time is not split, nor compared by it\n"),
            "{text}"
        );
        assert!(text.contains("\non-CPU           b "), "{text}");
    }

    #[test]
    fn architectures_and_errnos_are_checked() {
        let mut arm = run(1, 0, 1, 1);
        arm.arch = "aarch64".into();
        let e = compare(
            &[
                variant("a", vec![run(1, 0, 1, 1)]),
                variant("b", vec![run(1, 0, 1, 1), arm]),
            ],
            None,
            DiffSort::Change,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "the profiles come from different architectures (x86_64 and aarch64, b-2.json)"
            ),
            "{e}"
        );
        let mut top = run(3_000, 1_000, 1_000, 20_000);
        top.totals_only = true;
        let c = compare(
            &[
                variant("a", vec![run(3_000, 1_000, 1_000, 20_000)]),
                variant("b", vec![top]),
            ],
            None,
            DiffSort::Change,
        )
        .unwrap();
        assert!(!c.errnos_tracked && c.errnos.is_empty());
        // No histograms on a side: no rank test.
        assert!(cell(&c, "read", 1).avg_ns.rank_test.is_none());
        assert!(render(&c, false).contains("\nerrno changes not known"));
    }

    #[test]
    fn json_of_the_variants() {
        let c = three_variants();
        let v: serde_json::Value = serde_json::from_str(&to_json(&c)).unwrap();
        assert_eq!(v["confidence"], 0.95);
        assert_eq!(v["profiles"][1]["label"], "short");
        assert_eq!(v["profiles"][1]["files"][2], "short-3.json");
        let read = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "read")
            .unwrap();
        assert_eq!(read["blocking"], false);
        assert_eq!(read["profiles"][0]["calls"]["runs"][1], 3010.0);
        assert!(read["profiles"][0].get("change").is_none());
        assert_eq!(
            read["profiles"][1]["change"]["calls"]["verdict"],
            "significant"
        );
        assert_eq!(
            read["profiles"][2]["change"]["calls"]["verdict"],
            "within_noise"
        );
        assert!(read["profiles"][1]["change"]["calls"]["interval"]["lo"].is_number());
        assert!(read["profiles"][1]["change"]["avg_ns"]["p_adjusted"].is_number());
        assert_eq!(v["errnos"][0]["errno"], "EAGAIN");
        assert_eq!(v["blocking"][0], "epoll_wait");
        assert!(v["time"][1]["blocking_calls_ns"]["change"]["change_pct"].is_number());
        assert_eq!(v["conclusion"].as_array().unwrap().len(), 3);
    }
}
