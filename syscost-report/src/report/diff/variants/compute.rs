//! The comparison computed from the variants' runs: the cells, each change judged
//! against the noise between runs (Welch) or, for single runs, the spread of the calls
//! (a rank test), one family per figure and profile (Bonferroni).

use std::collections::BTreeSet;

use anyhow::{Result, anyhow, bail};

use super::{super::shared::*, conclusion::*, model::*};
use crate::{
    latency,
    profile::{Profile, SyscallProfile, per_unit},
    report::stats::{self, CONFIDENCE},
};

pub(super) fn of(r: &mut Row, k: usize) -> &mut CellChange {
    r.profiles[k].change.as_mut().expect("not the baseline")
}

/// The verdicts of a family of changes (one figure of one profile, over the syscalls):
/// Bonferroni's adjustment of their p-values, and intervals at the family's confidence.
/// A change without spread on either side (a standard error of zero: the same value in
/// every run, with no floor) is certain, and takes no share of the family.
pub(super) fn settle(family: Vec<&mut Change>) {
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
