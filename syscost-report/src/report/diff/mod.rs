//! `syscost diff`: profiles compared. Two single profiles keep the before/after shape
//! (`pair`); more profiles, several runs a side, or labels make the table of variants
//! (`variants`), which judges each change against the noise. What both shapes share
//! (the sort order, number formats, which syscalls block, the latency tests of single
//! runs) is `shared`: neither shape leans on the other.

pub mod pair;
mod shared;
pub mod variants;

pub use shared::{DiffSort, LatencyLine, blocking_syscalls, render_latency_tests};

use anyhow::Result;

use crate::profile::Profile;
pub use variants::Variant;

/// A comparison in the shape its profiles call for.
pub enum Compared {
    /// Two single profiles, unlabelled: before and after.
    Pair(pair::Diff),
    /// Any other: the table of variants.
    Variants(variants::Comparison),
}

/// Whether sides of these many runs each, labelled or not, are compared as the
/// before/after pair (two single profiles without labels) rather than as variants.
pub fn is_pair(runs_per_side: &[usize], labelled: bool) -> bool {
    !labelled && runs_per_side == [1, 1]
}

/// Compares `variants` (the first is the baseline): two single profiles without labels
/// as a before/after pair, anything else as the table of variants. `whole`: the same
/// variants with every syscall, where `--per` counts its units (`variants` may have
/// rows left out).
pub fn compare(
    variants: &[Variant],
    whole: &[Variant],
    labelled: bool,
    per: Option<&str>,
    sort: DiffSort,
) -> Result<Compared> {
    let single = |v: &[Variant]| -> Option<(Profile, Profile)> {
        let runs: Vec<usize> = v.iter().map(|v| v.runs.len()).collect();
        match v {
            [a, b] if is_pair(&runs, labelled) => Some((a.runs[0].clone(), b.runs[0].clone())),
            _ => None,
        }
    };
    match (single(variants), single(whole)) {
        (Some((before, after)), Some(whole)) => Ok(Compared::Pair(pair::diff_counting_units_in(
            &before,
            &after,
            per,
            (&whole.0, &whole.1),
            sort,
        )?)),
        _ => Ok(Compared::Variants(variants::compare_counting_units_in(
            variants, whole, per, sort,
        )?)),
    }
}

impl Compared {
    /// As text (`all`: every row of the variants' table, the small ones too).
    pub fn render(&self, all: bool) -> String {
        match self {
            Compared::Pair(d) => pair::render(d),
            Compared::Variants(c) => variants::render(c, all),
        }
    }

    /// As JSON.
    pub fn to_json(&self) -> String {
        match self {
            Compared::Pair(d) => pair::to_json(d),
            Compared::Variants(c) => variants::to_json(c),
        }
    }
}
