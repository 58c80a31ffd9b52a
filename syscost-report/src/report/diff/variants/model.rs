//! The comparison of variants as plain data: the variants, each syscall's row with
//! every variant's cells and their changes against the baseline, the errno rows, the
//! time split.

use serde::Serialize;

use crate::{
    profile::Profile,
    report::stats::{self, Interval, RankTest},
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
    pub(super) fn of(runs: Vec<f64>) -> Self {
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
    pub(super) welch: Option<stats::Welch>,
}

impl Change {
    /// The change and its test (Welch's, each side's variance at least its floor); the
    /// verdict waits for the family's adjustment ([`settle`]).
    pub(super) fn judge(base: &Measure, other: &Measure, floors: (f64, f64)) -> Self {
        let welch = stats::welch(&base.runs, &other.runs, floors.0, floors.1);
        Self {
            p_value: welch.map(|w| w.p_value),
            welch,
            ..Self::untested(base, other)
        }
    }

    /// The change, without a test.
    pub(super) fn untested(base: &Measure, other: &Measure) -> Self {
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
    pub(super) fn none() -> Self {
        Self {
            change: 0.0,
            change_pct: None,
            ..Self::untested(&Measure::of(Vec::new()), &Measure::of(Vec::new()))
        }
    }

    /// A change that is not "no change", and not within the noise.
    pub(super) fn worth_saying(&self) -> bool {
        self.change != 0.0 && self.verdict != Verdict::WithinNoise
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
    pub(super) fewest_calls: u64,
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
