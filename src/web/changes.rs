//! "What changed": the latest judged run of a scenario, its findings that say something (regressions and
//! breached gates first, worst change first, then improvements), with baseline → tonight in their units, the
//! signed change and the chance of a change that large by noise alone. It heads the scenario page and each
//! scenario on the overview, so nobody has to read 27 charts to learn which route regressed.

use std::cmp::Ordering;

use super::WebError;
use crate::analysis::judge::counted_findings;
use crate::model::{Change, Finding, FindingOutcome, Run, RunStatus, VerdictOutcome};
use crate::report::with_unit;
use crate::store::Store;

/// How many of a scenario's newest runs are searched for the latest one with a verdict.
const RUNS_SEARCHED: u32 = 10;

/// One line of the summary.
pub struct ChangeRow {
    /// Step name, or `(all)`.
    pub endpoint: String,
    /// `p95`, `error_rate`, or a gate such as `max_p95_ms`.
    pub metric: String,
    /// The baseline's level with its unit, or empty for a gate.
    pub baseline: String,
    /// Tonight's value with its unit.
    pub tonight: String,
    /// The change from the baseline, none for a gate.
    pub change: Option<Change>,
    /// It rose from zero (an endpoint that never failed), which no ratio says.
    pub from_none: bool,
    /// How likely a change this large is by noise alone (`2e-24`): the finding's p-value, empty when the
    /// figure was not tested (a gate).
    pub chance: String,
    /// Worse (red) or better (green).
    pub worse: bool,
    /// The judge's reason in words: how many sigma, against what.
    pub reason: String,
}

impl ChangeRow {
    /// The change as every output writes it (`+31.9 %`, `×316`, `from none`), empty for a gate.
    #[must_use]
    pub fn delta(&self) -> String {
        match self.change {
            Some(change) => change.to_string(),
            None if self.from_none => "from none".to_owned(),
            None => String::new(),
        }
    }

    /// The exact percentage, for the change's tooltip.
    #[must_use]
    pub fn exact(&self) -> String {
        self.change.map(Change::exact).unwrap_or_default()
    }
}

/// The latest verdict of a scenario, summarised.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub struct Changes {
    pub run: Run,
    /// What the verdict concluded.
    pub outcome: VerdictOutcome,
    /// The findings worth a line, most severe first.
    pub rows: Vec<ChangeRow>,
    /// How many findings ended how, as `check` counts them: `1 regression, 13 unchanged, 2 on too few
    /// requests to judge`.
    pub counted: String,
}

impl Changes {
    /// The latest run of `scenario` that has a verdict, summarised; none when no run was judged yet.
    pub async fn latest(store: &Store, scenario: &str) -> Result<Option<Self>, WebError> {
        for run in store.last_runs(scenario, RUNS_SEARCHED).await? {
            if let Some(verdict) = store.latest_verdict(run.id).await? {
                // One way to count a verdict, the CLI's: a trial read three different counts of one verdict.
                let counted = counted_findings(verdict.outcome, &verdict.findings);
                let counted = counted.split_once(": ").map_or(counted.clone(), |(_, counts)| counts.to_owned());
                let rows = rows(&verdict.findings);
                return Ok(Some(Self { run, outcome: verdict.outcome, rows, counted }));
            }
        }
        Ok(None)
    }

    /// The word beside "Latest verdict": the verdict's own (`inconclusive` for a night measured on a held-back
    /// machine, whose run stays `finished`), except where the run's status says more of the night (a
    /// regression its rerun did not reproduce, one still being confirmed).
    #[must_use]
    pub fn word(&self) -> &'static str {
        match self.run.status {
            RunStatus::Finished | RunStatus::Passed | RunStatus::Regressed => self.outcome.as_str(),
            status => status.as_str(),
        }
    }
}

/// Regressions and breached gates first, then improvements; within each, the largest change first.
pub fn rows(findings: &[Finding]) -> Vec<ChangeRow> {
    let mut shown: Vec<(&Finding, bool)> = findings
        .iter()
        .filter_map(|f| match f.outcome {
            o if o.is_failure() => Some((f, true)),
            FindingOutcome::Improvement => Some((f, false)),
            _ => None,
        })
        .collect();
    shown.sort_by(|(a, a_worse), (b, b_worse)| {
        let size = |f: &Finding| f.delta_pct.map_or(f64::INFINITY, f64::abs);
        b_worse.cmp(a_worse).then_with(|| size(b).partial_cmp(&size(a)).unwrap_or(Ordering::Equal))
    });
    shown
        .into_iter()
        .map(|(f, worse)| ChangeRow {
            endpoint: f.endpoint.clone(),
            metric: f.metric.clone(),
            baseline: f.baseline_value.map(|v| with_unit(&f.metric, v)).unwrap_or_default(),
            tonight: with_unit(&f.metric, f.candidate_value),
            change: f.delta_pct.map(Change::from_pct),
            from_none: f.delta_pct.is_none() && f.baseline_value == Some(0.0) && f.candidate_value > 0.0,
            chance: f.p_value.map(chance).unwrap_or_default(),
            worse,
            reason: f.reason.clone(),
        })
        .collect()
}

/// The one-sided p-value `p`, the chance of a change at least this large by noise alone: `0.0031`, `2e-24`.
/// Shown as a chance, not converted to sigmas: the reason beside it counts sigmas of the judge's own
/// Student-t distance, and two different sigma figures side by side read as a contradiction.
fn chance(p: f64) -> String {
    match p {
        p if p.is_nan() || p >= 0.5 => String::new(),
        p if p <= 0.0 => "< 1e-300".to_owned(),
        p if p < 0.001 => format!("{p:.0e}"),
        p => format!("{p:.4}"),
    }
}

#[cfg(test)]
mod tests {
    use super::chance;

    #[test]
    fn a_p_value_reads_as_a_chance_that_keeps_its_size() {
        assert_eq!(chance(0.003_14), "0.0031");
        assert_eq!(chance(2.2e-24), "2e-24", "tiny p-values keep their size");
        assert_eq!(chance(0.6), "", "no change has no chance to show");
        assert_eq!(chance(0.0), "< 1e-300", "past what a float holds");
    }
}
