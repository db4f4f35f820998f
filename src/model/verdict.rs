//! Verdicts: what the judge concluded about a run, and one finding per endpoint × metric.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Interval, RunId};

/// What a check concluded about a run. Stored and serialized as its lowercase name (`regressed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictOutcome {
    /// No regression and no gate breached.
    Passed,
    /// At least one regression or breached gate.
    Regressed,
    /// Not enough valid baseline runs to tell (and no gate breached).
    Inconclusive,
}

impl VerdictOutcome {
    /// The stored and displayed name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Regressed => "regressed",
            Self::Inconclusive => "inconclusive",
        }
    }
}

impl std::fmt::Display for VerdictOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for VerdictOutcome {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        [Self::Passed, Self::Regressed, Self::Inconclusive]
            .into_iter()
            .find(|o| o.as_str() == name)
            .ok_or_else(|| format!("unknown verdict outcome `{name}`"))
    }
}

/// A judgement to store: the outcome and one finding per endpoint × metric.
#[derive(Debug, Clone)]
pub struct NewVerdict {
    /// The baseline spec as given.
    pub baseline_spec: String,
    /// The runs that formed the baseline.
    pub baseline_run_ids: Vec<RunId>,
    /// Passed, regressed or inconclusive.
    pub outcome: VerdictOutcome,
    /// One line for humans.
    pub summary: String,
    /// When the judgement was made.
    pub created_at: DateTime<Utc>,
    /// The lines of the verdict.
    pub findings: Vec<Finding>,
}

/// A stored judgement.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub id: i64,
    pub run_id: RunId,
    /// The baseline spec as given.
    pub baseline_spec: String,
    /// The runs that formed the baseline.
    pub baseline_run_ids: Vec<RunId>,
    /// Passed, regressed or inconclusive.
    pub outcome: VerdictOutcome,
    /// One line for humans.
    pub summary: String,
    /// When the judgement was made.
    pub created_at: DateTime<Utc>,
    /// The lines of the verdict.
    pub findings: Vec<Finding>,
}

/// One endpoint × metric line of a verdict.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Step name, or [`OVERALL_ENDPOINT`](super::OVERALL_ENDPOINT).
    pub endpoint: String,
    /// `p95`, `error_rate`, … or an absolute gate such as `max_p75_ms`.
    pub metric: String,
    /// What the judge made of the figure.
    pub outcome: FindingOutcome,
    /// The baseline's level, when there is one.
    pub baseline_value: Option<f64>,
    pub candidate_value: f64,
    /// Change from the baseline, percent.
    pub delta_pct: Option<f64>,
    /// The threshold the candidate was held to.
    pub limit: Option<f64>,
    /// Tonight's 95 % interval of the figure, in its unit, when the figure has one.
    pub interval: Option<Interval>,
    /// The chance of a change at least this large by noise alone, when the figure was tested.
    pub p_value: Option<f64>,
    /// Why, in words.
    pub reason: String,
}

/// What the judge made of one endpoint × metric figure. Stored and serialized as its snake-case name
/// (`gate_breached`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingOutcome {
    /// Worse than the baseline by more than noise and the minimum effect.
    Regression,
    /// Better than the baseline by more than noise and the minimum effect.
    Improvement,
    /// Within the baseline's noise or below the minimum effect.
    NoChange,
    /// Too little history to tell.
    Inconclusive,
    /// Worse, but measured on a held-back machine and no worse than the rest of the run went through: not
    /// blamed on the build (`analysis::contention`).
    Excused,
    /// Worse in a confirmation rerun but not in the night's first run of the same build: seen once, so not
    /// blamed on the build (`pipeline::confirm`).
    Unconfirmed,
    /// The figure rests on too few requests to be judged.
    TooFew,
    /// Over an absolute limit.
    GateBreached,
    /// Within an absolute limit.
    GatePassed,
}

impl FindingOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Regression,
        Self::Improvement,
        Self::NoChange,
        Self::Inconclusive,
        Self::Excused,
        Self::Unconfirmed,
        Self::TooFew,
        Self::GateBreached,
        Self::GatePassed,
    ];

    /// The stored name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Improvement => "improvement",
            Self::NoChange => "no_change",
            Self::Inconclusive => "inconclusive",
            Self::Excused => "excused",
            Self::Unconfirmed => "unconfirmed",
            Self::TooFew => "too_few",
            Self::GateBreached => "gate_breached",
            Self::GatePassed => "gate_passed",
        }
    }

    /// Whether the finding fails the run: a regression, or an absolute gate breached. The one place this is
    /// decided (the trend queries say the same in SQL: `outcome in ('regression', 'gate_breached')`).
    #[must_use]
    pub const fn is_failure(self) -> bool {
        matches!(self, Self::Regression | Self::GateBreached)
    }

    /// Whether the judge compared the figure with its baseline and said something of it (a change, none, or a
    /// change it excused or did not see twice): the figure was judged, whatever its request count.
    #[must_use]
    pub const fn was_judged(self) -> bool {
        matches!(self, Self::Regression | Self::Improvement | Self::NoChange | Self::Excused | Self::Unconfirmed)
    }
}

impl std::fmt::Display for FindingOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FindingOutcome {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|o| o.as_str() == text).ok_or_else(|| format!("unknown finding outcome `{text}`"))
    }
}

/// A scenario's newest nights, newest first, that the gate did not judge one after another because their
/// machine was held back (`Store::held_back_in_a_row`): an inconclusive night is no free pass, and a streak of
/// them means nothing is watching.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldBackNights(pub Vec<RunId>);

impl HeldBackNights {
    /// Two nights make a streak worth telling; one is the odd busy night.
    const WORTH_TELLING: usize = 2;

    /// The streak, when it is worth telling and ends at `run` (at the newest judged night when `None`).
    #[must_use]
    pub fn told_at(self, run: Option<RunId>) -> Option<Self> {
        let ends_there = run.is_none_or(|run| self.0.first() == Some(&run));
        (self.0.len() >= Self::WORTH_TELLING && ends_there).then_some(self)
    }

    /// `for 2 nights in a row (runs #8, #9): each time its machine was held back (…), so a regression on those
    /// nights went unjudged`.
    #[must_use]
    pub fn describe(&self) -> String {
        let runs: Vec<String> = self.0.iter().rev().map(|id| format!("#{id}")).collect();
        format!(
            "for {} nights in a row (runs {}): each time its machine was held back (busier with other work, its \
             host taking CPU time, or slower in itself), so a regression on those nights went unjudged",
            self.0.len(),
            runs.join(", ")
        )
    }
}
