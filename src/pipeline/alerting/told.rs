//! What an open regression episode has told the team: the figures of every night that regressed since it
//! opened, each as first told. A recovery is judged against all of them (a route that regressed on the third
//! night of an episode must be judged again before the episode can pass), and a later regressed night that
//! names a figure none of them named is news to tell (`regression_widened`): a second route slowing during a
//! week-long episode would otherwise go unheard until the first one recovers.

use super::kind;
use crate::analysis::capacity::CAPACITY_METRIC;
use crate::model::{Finding, FindingOutcome, Metric, RunId, RunStatus, TelemetryMetric};
use crate::report::CheckReport;
use crate::store::{Store, StoreError};

/// The scenario's unresolved regression episode and what its nights have said.
pub(super) struct Told {
    /// The episode's id.
    pub episode: i64,
    /// The run that opened it.
    pub opened: RunId,
    /// Each figure that regressed or breached a gate on a night of the episode, with that night's run and
    /// finding: the first night that named it.
    pub figures: Vec<(RunId, Finding)>,
}

impl Told {
    /// The figures that regressed (not a breached gate), as the recovery judges them.
    fn regressions(&self) -> impl Iterator<Item = &(RunId, Finding)> {
        self.figures.iter().filter(|(_, f)| f.outcome == FindingOutcome::Regression)
    }

    /// The capacity's fall as first told, with its night, when a night of the episode told one.
    pub fn capacity_fell(&self) -> Option<(RunId, &Finding)> {
        self.regressions().find(|(_, f)| f.metric == CAPACITY_METRIC).map(|(run, f)| (*run, f))
    }

    /// Tonight's failing figures whose endpoint no night of the episode named with a change of their kind (a
    /// route's p50 beside its p95 already told is the same slowdown; its failures beginning are news).
    pub fn news<'a>(&self, report: &'a CheckReport) -> Vec<&'a Finding> {
        report
            .findings
            .iter()
            .filter(|now| now.outcome.is_failure())
            .filter(|now| {
                !self.figures.iter().any(|(_, then)| {
                    then.endpoint == now.endpoint && change_kind(&then.metric) == change_kind(&now.metric)
                })
            })
            .collect()
    }
}

/// What kind of change a figure names: a route's response times (any percentile, or a gate on one) are one
/// slowdown; its failures, its throughput, the capacity and each server series are each their own.
fn change_kind(metric: &str) -> &str {
    let in_ms = metric.parse::<Metric>().is_ok_and(|m| m.unit() == "ms") || metric.ends_with("_ms");
    if in_ms {
        "response time"
    } else if metric == Metric::ErrorRate.as_str() || metric == "max_error_rate_pct" {
        "failures"
    } else {
        metric
    }
}

/// Whether two findings are of the same endpoint's same metric.
fn same_figure(a: &Finding, b: &Finding) -> bool {
    a.endpoint == b.endpoint && a.metric == b.metric
}

/// The scenario's unresolved regression episode and the figures its nights before `before` told; `None`
/// without such an episode.
pub(super) async fn told(store: &Store, scenario: &str, before: RunId) -> Result<Option<Told>, StoreError> {
    let episodes = store.unresolved_episodes(scenario).await?;
    let Some((episode, opened)) =
        episodes.iter().filter(|e| e.kind == kind::REGRESSION).find_map(|e| Some((e.id, e.opened_run_id?)))
    else {
        return Ok(None);
    };
    let mut nights = store.regressed_runs_between(scenario, opened, before).await?;
    // The opening night counts even when a later `check` of it judged otherwise: it is what was told.
    if !nights.contains(&opened) {
        nights.insert(0, opened);
    }
    let mut figures: Vec<(RunId, Finding)> = Vec::new();
    for night in nights {
        let night = told_run(store, night).await?;
        // The runner's verdict, the one alerted: a later `check` of the night may have named another baseline.
        let Some(verdict) = store.first_verdict(night).await? else { continue };
        for finding in verdict.findings.into_iter().filter(|f| f.outcome.is_failure()) {
            if !figures.iter().any(|(_, told)| same_figure(told, &finding)) {
                figures.push((night, finding));
            }
        }
    }
    Ok(Some(Told { episode, opened, figures }))
}

/// The run whose verdict told the team of night `run`: its rerun when the rerun confirmed it (the pair's alert
/// is the rerun's, holding only what it reproduced), else the run itself (its verdict stood). A noisy first run's
/// 23 findings, 5 of them reproduced, had made a recovery list 17 figures no one was told of as "came back",
/// and one as "stayed where it regressed to" (trial).
async fn told_run(store: &Store, run: RunId) -> Result<RunId, StoreError> {
    let Some(rerun) = store.rerun_of(run).await? else { return Ok(run) };
    let confirmed = store.find_run(rerun).await?.is_some_and(|r| r.status == RunStatus::Regressed);
    Ok(if confirmed { rerun } else { run })
}

impl Told {
    /// The figures that regressed during the episode and that tonight's verdict could not judge (a capacity
    /// search that ended at the generator's limit, a figure on too few requests, one excused by a held-back
    /// machine), in words; `None` when every one was judged. Such a night passed on the rest: it must not tell
    /// the team the regression recovered.
    pub fn unjudged(&self, report: &CheckReport) -> Option<String> {
        let unjudged: Vec<String> = self
            .regressions()
            .filter(|(_, then)| {
                let now = report.findings.iter().find(|now| same_figure(then, now));
                match now {
                    Some(now) => matches!(
                        now.outcome,
                        FindingOutcome::Inconclusive | FindingOutcome::TooFew | FindingOutcome::Excused
                    ),
                    // A server series with no finding tonight was not judged (its source did not answer, or
                    // answered too little of the night); an endpoint's figures always have one.
                    None => TelemetryMetric::parse(&then.metric).is_some(),
                }
            })
            .map(|(_, then)| format!("{} {}", then.endpoint, then.metric))
            .collect();
        (!unjudged.is_empty()).then(|| unjudged.join(", "))
    }

    /// What a night that passed says of the figures the episode told, in words, and whether any of them stayed
    /// slower: each figure that came back, with tonight's value and the one it regressed to (a recovery that
    /// named nothing read "passed again: passed: 20 unchanged" in a trial); and when some are still nearer
    /// where they regressed to than where they were, tonight passed because that slower level held for enough
    /// nights to become the level, which it says instead. `None` when no told figure was judged tonight.
    pub fn recovery(&self, report: &CheckReport) -> Option<(String, Stayed)> {
        let (mut kept, mut back) = (Vec::new(), Vec::new());
        for (run, then) in self.regressions() {
            let Some(before) = then.baseline_value.filter(|b| *b >= 0.0 && then.candidate_value > 0.0) else {
                continue;
            };
            let Some(now) = report.findings.iter().find(|now| same_figure(then, now)) else { continue };
            let value = |v| crate::report::with_unit(&then.metric, v);
            let figure = format!("{} {}", then.endpoint, then.metric);
            if nearer_where_it_went(now.candidate_value, then.candidate_value, before) {
                kept.push(format!("{figure} {} (was {} before run #{run})", value(now.candidate_value), value(before)));
            } else if then.metric != CAPACITY_METRIC {
                // A capacity back says so in its own words (`capacity_back`), with the change since it fell.
                back.push(format!(
                    "{figure} {} (was {} in run #{run})",
                    value(now.candidate_value),
                    value(then.candidate_value)
                ));
            }
        }
        if kept.is_empty() {
            return (!back.is_empty()).then(|| (format!("back: {}", back.join(", ")), Stayed::No));
        }
        let stayed = format!(
            "{} stayed where {} regressed to, and that level has held long enough to be the one judged against",
            kept.join(", "),
            if kept.len() == 1 { "it" } else { "they" }
        );
        Some((
            if back.is_empty() {
                format!("{stayed} (nothing got faster)")
            } else {
                format!("{} came back; {stayed}", back.join(", "))
            },
            Stayed::Yes,
        ))
    }
}

/// Whether a figure the episode told is still where it regressed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stayed {
    /// Every figure judged tonight came back.
    No,
    /// Some stayed slower, and that level is now the one judged against.
    Yes,
}

/// Whether `now` is nearer `went` (where a figure regressed to) than `before` (where it was). On the log scale,
/// so that a tenfold slowdown halfway back is still closer to its new level; on the plain scale from a zero
/// (an error rate from none: 0 → 1.37 % is no ratio, and such figures had been left out of the recovery).
fn nearer_where_it_went(now: f64, went: f64, before: f64) -> bool {
    if before > 0.0 && now > 0.0 {
        (now / went).ln().abs() < (now / before).ln().abs()
    } else {
        (now - went).abs() < (now - before).abs()
    }
}

#[cfg(test)]
mod tests {
    use super::nearer_where_it_went;

    #[test]
    fn a_figure_from_zero_is_read_on_the_plain_scale() {
        assert!(nearer_where_it_went(1.2, 1.37, 0.0), "an error rate still near where it rose to");
        assert!(!nearer_where_it_went(0.0, 1.37, 0.0), "back to none");
        assert!(nearer_where_it_went(60.0, 100.0, 10.0), "a tenfold slowdown halfway back stayed");
        assert!(!nearer_where_it_went(20.0, 100.0, 10.0));
    }
}
