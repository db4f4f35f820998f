//! Episodes and their alerts: what each judged, failed or missing run means for the team's attention.
//!
//! - regressed → a regression episode opens (one alert); while it stays open, a regressed night tells the
//!   team only what no night of the episode named yet (a second route slowed, or a slow one began to fail:
//!   `regression_widened`), and a night that repeats what was told says nothing;
//! - passed → an open regression episode resolves (one recovery alert); when the figures that regressed are
//!   still where they went, the slower level has held long enough to be the one judged against, and the
//!   alert says so instead of "passed again"; a night that passed without judging a figure that regressed
//!   (a capacity search cut short by the generator, too few requests) leaves the episode open, silent;
//! - a run that could not be done → a run_failed episode opens (one alert) until a run measures again (one
//!   more: whoever was told it began is told it ended);
//! - no run for longer than the schedule allows → a missing_run episode opens (one alert) until a run starts
//!   (one more);
//! - nights held back one after another (each inconclusive because its machine was busy, its host took CPU
//!   time, or it was slower in itself) → an unjudged episode opens (one alert) until a night is judged: an
//!   inconclusive gate is no free pass, and a streak of them means nothing is watching (its end is told too).
//!
//! Inconclusive verdicts (too little history, an invalid run) neither open nor resolve a regression: they
//! say nothing about the build. Each episode change and its messages are stored in one transaction.

use chrono::{DateTime, Utc};

use super::judge_run::zone_name;
use crate::analysis::capacity::CAPACITY_METRIC;
use crate::config::Config;
use crate::model::{CapacityChange, Finding, FindingOutcome, RunId, VerdictOutcome, rate_text};
use crate::notify::{self, Alert, Event, Worse};
use crate::report::CheckReport;
use crate::store::{Episode, NewEpisode, Store, StoreError};

mod told;

/// Episode kinds, as stored.
pub mod kind {
    /// Tonight is worse than the baseline.
    pub const REGRESSION: &str = "regression";
    /// A run could not be done.
    pub const RUN_FAILED: &str = "run_failed";
    /// No run happened when one was due.
    pub const MISSING_RUN: &str = "missing_run";
    /// Nights in a row were held back by their machine, so the gate judged none of them.
    pub const UNJUDGED: &str = "unjudged";
}

/// Opens or resolves the scenario's episodes after `report` judged a run; `at` stamps the change.
pub async fn after_judgement(
    store: &Store,
    config: &Config,
    report: &CheckReport,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let scenario = &report.scenario;
    let measured = format!("measured {scenario} again ({})", report.outcome.as_str());
    resolve(
        store,
        config,
        scenario,
        kind::RUN_FAILED,
        report.run_id,
        ended(report, Event::RunFailedResolved, measured, at),
        at,
    )
    .await?;
    if report.outcome != VerdictOutcome::Inconclusive {
        // Judged again: the streak is over, which whoever was told of it is told.
        let judged = format!("judged {scenario} again ({})", report.outcome.as_str());
        resolve(
            store,
            config,
            scenario,
            kind::UNJUDGED,
            report.run_id,
            ended(report, Event::UnjudgedResolved, judged, at),
            at,
        )
        .await?;
    }
    match report.outcome {
        VerdictOutcome::Regressed => {
            if let Some(told) = told::told(store, scenario, report.run_id).await?.filter(|t| t.opened < report.run_id) {
                return widened(store, config, report, &told, at).await;
            }
            let (last_good, builds) =
                store.builds_since_last_good(scenario, report.run_id, &judged_against(report)).await?;
            let alert = Alert {
                run_id: Some(report.run_id),
                build_id: report.build_id.clone(),
                builds_since_last_good: builds,
                last_good_run_id: last_good,
                worse: worse(report.findings.iter()),
                capacity: capacity_fell(store, config, report).await?,
                ..Alert::about(Event::Regression, scenario, regression_summary(store, report).await?, at)
            };
            open(store, config, kind::REGRESSION, Some(report.run_id), last_good, alert).await
        }
        VerdictOutcome::Passed => {
            let told = told::told(store, scenario, report.run_id).await?;
            if let Some(unjudged) = told.as_ref().and_then(|t| t.unjudged(report)) {
                // A night that could not judge what regressed says nothing of it: no recovery yet.
                tracing::info!(
                    "run #{} passed, but {unjudged} could not be judged tonight: the regression stays open",
                    report.run_id
                );
                return Ok(());
            }
            let recovery = told.as_ref().and_then(|t| t.recovery(report));
            let capacity = capacity_back(store, config, report, told.as_ref()).await?;
            let said: Vec<&str> = capacity
                .as_ref()
                .map(|(_, words)| words.as_str())
                .into_iter()
                .chain(recovery.as_ref().map(|(words, _)| words.as_str()))
                .collect();
            let stayed = recovery.as_ref().is_some_and(|(_, stayed)| *stayed == told::Stayed::Yes);
            let passed = if stayed { "passed" } else { "passed again" };
            // The verdict's own summary opens with its outcome, which the sentence has just said.
            let counted = report.summary.strip_prefix("passed: ").unwrap_or(&report.summary);
            let summary = if said.is_empty() {
                format!("run #{} {passed}: {counted}", report.run_id)
            } else {
                format!("run #{} {passed}: {}; {counted}", report.run_id, said.join("; "))
            };
            let recovery = Alert {
                run_id: Some(report.run_id),
                build_id: report.build_id.clone(),
                capacity: capacity.map(|(back, _)| back),
                ..Alert::about(Event::Recovery, scenario, summary, at)
            };
            resolve(store, config, scenario, kind::REGRESSION, report.run_id, |_| Some(recovery.clone()), at).await
        }
        VerdictOutcome::Inconclusive => held_back(store, config, report, at).await,
    }
}

/// The alert that ends an episode of failed or unjudged nights, for each such episode `report`'s night resolves:
/// `run #14 measured checkout again (passed), after run #12 could not be done: …`.
fn ended(
    report: &CheckReport,
    event: Event,
    words: String,
    at: DateTime<Utc>,
) -> impl Fn(&Episode) -> Option<Alert> + '_ {
    move |episode| {
        // What the episode said, less the advice it gave: the message says it is over.
        let said = episode.summary.split_once("; give the nightly run").map_or(episode.summary.as_str(), |(s, _)| s);
        let summary = format!("run #{} {words}, after {said}", report.run_id);
        let about = Alert::about(event, &report.scenario, summary, at);
        Some(Alert { run_id: Some(report.run_id), build_id: report.build_id.clone(), ..about })
    }
}

/// After a night that regressed while the scenario's regression episode is open: when it names figures no
/// night of the episode named (a second route slowed), tells the team once, listing only those; the episode
/// stays open. A night that only repeats what was told says nothing new.
async fn widened(
    store: &Store,
    config: &Config,
    report: &CheckReport,
    told: &told::Told,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let news = told.news(report);
    if news.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = news.iter().map(|f| format!("{} {}", f.endpoint, f.metric)).collect();
    let summary = format!(
        "run #{} also regressed on {} (the regression open since run #{} stays open): {}",
        report.run_id,
        named.join(", "),
        told.opened,
        report.summary
    );
    let capacity_news = news.iter().any(|f| f.metric == CAPACITY_METRIC);
    let (last_good, builds) =
        store.builds_since_last_good(&report.scenario, report.run_id, &judged_against(report)).await?;
    let alert = Alert {
        run_id: Some(report.run_id),
        build_id: report.build_id.clone(),
        builds_since_last_good: builds,
        last_good_run_id: last_good,
        worse: worse(news.into_iter()),
        capacity: if capacity_news { capacity_fell(store, config, report).await? } else { None },
        ..Alert::about(Event::RegressionWidened, &report.scenario, summary, at)
    };
    if store.tell_episode(told.episode, &notify::messages(config, &alert, told.episode)).await? {
        tracing::info!(scenario = report.scenario, episode = told.episode, "regression widened: {}", alert.summary);
    }
    Ok(())
}

/// After an inconclusive night: when it makes a streak of nights held back by their machine, tells the team
/// once (the episode stays open, silent, until a night is judged).
async fn held_back(store: &Store, config: &Config, report: &CheckReport, at: DateTime<Utc>) -> Result<(), StoreError> {
    let streak = store.held_back_in_a_row(&report.scenario, report.run_id).await?;
    let Some(streak) = streak.told_at(Some(report.run_id)) else { return Ok(()) };
    let summary = format!(
        "the gate has not judged scenario {} {}; give the nightly run a quieter machine or hour",
        report.scenario,
        streak.describe()
    );
    let alert = Alert {
        run_id: Some(report.run_id),
        build_id: report.build_id.clone(),
        ..Alert::about(Event::Unjudged, &report.scenario, summary, at)
    };
    open(store, config, kind::UNJUDGED, Some(report.run_id), None, alert).await
}

/// Opens a run_failed episode for a run that could not be done.
pub async fn after_failure(
    store: &Store,
    config: &Config,
    scenario: &str,
    run_id: RunId,
    build_id: Option<String>,
    reason: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let summary = format!("run #{run_id} could not be done: {reason}");
    let (last_good, builds) = store.builds_since_last_good(scenario, run_id, &[]).await?;
    let alert = Alert {
        run_id: Some(run_id),
        build_id,
        builds_since_last_good: builds,
        last_good_run_id: last_good,
        ..Alert::about(Event::RunFailed, scenario, summary, at)
    };
    open(store, config, kind::RUN_FAILED, Some(run_id), None, alert).await
}

/// Resolves a missing_run episode: a run has started.
pub async fn after_start(
    store: &Store,
    config: &Config,
    scenario: &str,
    run_id: RunId,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let started = |episode: &Episode| {
        let when = episode.opened_at.format("%Y-%m-%d %H:%M UTC");
        let summary = format!(
            "run #{run_id} of {scenario} started: runs have resumed (none had started when one was due, as told at {when})"
        );
        Some(Alert { run_id: Some(run_id), ..Alert::about(Event::MissingRunResolved, scenario, summary, at) })
    };
    resolve(store, config, scenario, kind::MISSING_RUN, run_id, started, at).await
}

/// Opens a missing_run episode: no run since `last_run` although one was due at `due`.
pub async fn missing_run(
    store: &Store,
    config: &Config,
    scenario: &str,
    last_run: Option<DateTime<Utc>>,
    due: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let minute = |at: DateTime<Utc>| at.format("%Y-%m-%d %H:%M UTC").to_string();
    let last =
        last_run.map_or_else(|| "no run is recorded yet".to_owned(), |at| format!("the last started {}", minute(at)));
    let summary = format!("a run of {scenario} was due at {} and has not happened; {last}", minute(due));
    let alert = Alert::about(Event::MissingRun, scenario, summary, at);
    open(store, config, kind::MISSING_RUN, None, None, alert).await
}

async fn open(
    store: &Store,
    config: &Config,
    kind: &str,
    run_id: Option<RunId>,
    last_good_run_id: Option<RunId>,
    alert: Alert,
) -> Result<(), StoreError> {
    let episode = NewEpisode {
        scenario: alert.scenario.clone(),
        kind: kind.to_owned(),
        run_id,
        last_good_run_id,
        summary: alert.summary.clone(),
        at: alert.at,
    };
    if let Some(id) = store.open_episode(&episode, |id| notify::messages(config, &alert, id)).await? {
        tracing::info!(scenario = alert.scenario, kind, episode = id, "episode opened: {}", alert.summary);
    }
    Ok(())
}

/// Resolves the scenario's unresolved episodes of `kind`, enqueuing the alert `told` makes for each (if any).
async fn resolve(
    store: &Store,
    config: &Config,
    scenario: &str,
    kind: &str,
    run_id: RunId,
    told: impl Fn(&Episode) -> Option<Alert>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    // A run resolves only what it or an earlier run opened: a first run whose verdict stands after its rerun
    // failed, or a night decided late (`interrupted`), says nothing of a failure or a regression seen after it.
    let episodes = store.unresolved_episodes(scenario).await?.into_iter();
    for episode in episodes.filter(|e| e.kind == kind && e.opened_run_id.is_none_or(|opened| opened <= run_id)) {
        let messages = told(&episode).map(|a| notify::messages(config, &a, episode.id)).unwrap_or_default();
        if store.resolve_episode(episode.id, Some(run_id), at, &messages).await? {
            tracing::info!(scenario, kind, episode = episode.id, run_id, "episode resolved");
        }
    }
    Ok(())
}

/// The capacity's fall, when the report's capacity finding is a regression: against the baseline nights' level,
/// with why tonight's first rate out left the zone.
async fn capacity_fell(
    store: &Store,
    config: &Config,
    report: &CheckReport,
) -> Result<Option<CapacityChange>, StoreError> {
    let fell = report.findings.iter().find(|f| f.metric == CAPACITY_METRIC && f.outcome == FindingOutcome::Regression);
    let Some(level) = fell.and_then(|f| f.baseline_value) else { return Ok(None) };
    let Some(tonight) = store.capacity(report.run_id).await? else { return Ok(None) };
    Ok(Some(CapacityChange::new(level, &tonight, &zone_name(config, &report.scenario))))
}

/// When a night of the scenario's open regression episode told a capacity that fell (the opening night, or a
/// later one that widened it) and tonight's capacity is back nearer the level it fell from: the change since
/// that night, and the recovery's words (`capacity 3,100 → 3,950 req/s (+27.4 %) since run #12, back by the
/// nights' level of 4,000 req/s`). `None` otherwise: a capacity still where it fell is said by
/// [`told::Told::still_slower`].
async fn capacity_back(
    store: &Store,
    config: &Config,
    report: &CheckReport,
    told: Option<&told::Told>,
) -> Result<Option<(CapacityChange, String)>, StoreError> {
    let Some((fell_on, then)) = told.and_then(told::Told::capacity_fell) else { return Ok(None) };
    let is_capacity = |f: &&Finding| f.metric == CAPACITY_METRIC;
    let (Some(level), Some(now)) = (then.baseline_value, report.findings.iter().find(is_capacity)) else {
        return Ok(None);
    };
    let Some(tonight) = store.capacity(report.run_id).await? else { return Ok(None) };
    // Back means nearer the level it fell from than where it fell to, on the log scale.
    let fell_to = then.candidate_value.max(1e-9);
    let now_value = now.candidate_value.max(1e-9);
    if (now_value / level).ln().abs() >= (now_value / fell_to).ln().abs() {
        return Ok(None);
    }
    let back = CapacityChange::new(fell_to, &tonight, &zone_name(config, &report.scenario));
    let words =
        format!("{} since run #{fell_on}, back by the nights' level of {} req/s", back.headline(), rate_text(level));
    Ok(Some((back, words)))
}

/// A regression's summary, saying when no rerun confirmed it (the rerun cut short, unjudgeable, of another
/// build, or never made), which the team should know before waking for it (a trial's alert read like a
/// confirmed one; only the run page said otherwise).
async fn regression_summary(store: &Store, report: &CheckReport) -> Result<String, StoreError> {
    // A first run's report with a confirmation note is one whose verdict stood without a rerun's (a rerun's
    // report is the night's when it confirmed); with or without a rerun row (one that could not be made).
    match &report.confirmation {
        Some(note) if store.confirmed_by(report.run_id).await?.is_none() => Ok(format!("{}; {note}", report.summary)),
        _ => Ok(report.summary.clone()),
    }
}

/// The nights `report`'s verdict was judged against.
fn judged_against(report: &CheckReport) -> Vec<RunId> {
    report.baseline.iter().map(|night| night.id).collect()
}

/// The findings among `findings` that make the run worse, largest change first (a capacity's fall is a change
/// for the worse).
fn worse<'a>(findings: impl Iterator<Item = &'a Finding>) -> Vec<Worse> {
    let mut worse: Vec<Worse> = findings
        .filter(|f| f.outcome.is_failure())
        .map(|f| Worse {
            endpoint: f.endpoint.clone(),
            metric: f.metric.clone(),
            baseline: f.baseline_value.or(f.limit),
            tonight: f.candidate_value,
            delta_pct: f.delta_pct,
            unit: notify::unit_of(&f.metric),
        })
        .collect();
    let worsening = |w: &Worse| {
        let delta = w.delta_pct.unwrap_or(0.0);
        if notify::higher_is_better(&w.metric) { -delta } else { delta }
    };
    worse.sort_by(|a, b| worsening(b).total_cmp(&worsening(a)));
    worse
}
