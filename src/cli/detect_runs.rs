//! `degrade detect --runs`: whole runs in, verdicts out, judged by the same judge as `degrade check`.
//!
//! Each input line is one scenario's history of nightly runs and tonight's run, every night with the
//! per-endpoint figures degrade stores (requests, errors, rate and the percentile ladder; no histograms, so
//! the judge reads the ladder). The format is that of `../shared/detect/README.md`; each answer is
//! `{"id", "regressed", "endpoints", "summary", "findings"}`, the endpoints being those with a regression
//! finding and the findings those regressions with their reasons.

use serde::{Deserialize, Serialize};

use crate::analysis::Gates;
use crate::analysis::judge::{Comparison, judge};
use crate::model::{EndpointResult, FindingOutcome, LoadModel, OVERALL_ENDPOINT, VerdictOutcome};

/// One input line.
#[derive(Debug, Deserialize)]
pub(super) struct RunCase {
    id: serde_json::Value,
    /// The smallest change that counts, in percent; the command line's when absent.
    min_effect_pct: Option<f64>,
    /// `open` (the default) or `closed`: throughput is judged only for the closed model.
    #[serde(default)]
    model: Option<String>,
    history: Vec<Night>,
    candidate: Night,
}

#[derive(Debug, Deserialize)]
struct Night {
    endpoints: Vec<EndpointFigures>,
}

/// One endpoint's stored figures on one night.
#[derive(Debug, Deserialize)]
struct EndpointFigures {
    endpoint: String,
    requests: i64,
    errors: i64,
    rate: f64,
    p50_ms: f64,
    p75_ms: f64,
    p90_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
    #[serde(default)]
    mean_ms: f64,
}

impl From<&EndpointFigures> for EndpointResult {
    fn from(f: &EndpointFigures) -> Self {
        let us = |ms: f64| (ms * 1000.0).round() as i64;
        EndpointResult {
            endpoint: f.endpoint.clone(),
            requests: f.requests.max(0),
            errors: f.errors.clamp(0, f.requests.max(0)),
            rate: f.rate,
            p50_us: us(f.p50_ms),
            p75_us: us(f.p75_ms),
            p90_us: us(f.p90_ms),
            p95_us: us(f.p95_ms),
            p99_us: us(f.p99_ms),
            p999_us: us(f.p999_ms),
            max_us: us(f.max_ms),
            mean_us: f.mean_ms * 1000.0,
            ..EndpointResult::default()
        }
    }
}

/// One output line.
#[derive(Debug, Serialize)]
pub(super) struct RunAnswer {
    id: serde_json::Value,
    regressed: bool,
    endpoints: Vec<String>,
    summary: String,
    /// The regression findings behind the verdict, each with its reason.
    findings: Vec<FindingAnswer>,
}

/// One regression finding of an answer.
#[derive(Debug, Serialize)]
struct FindingAnswer {
    endpoint: String,
    metric: String,
    reason: String,
}

/// Judges one case at the default gates, with its minimum effect.
pub(super) fn judge_case(case: RunCase, default_min_effect_pct: f64) -> RunAnswer {
    let results = |night: &Night| night.endpoints.iter().map(EndpointResult::from).collect::<Vec<_>>();
    let baseline: Vec<Vec<EndpointResult>> = case.history.iter().map(results).collect();
    let gates = Gates { min_effect_pct: case.min_effect_pct.unwrap_or(default_min_effect_pct), ..Gates::default() };
    let model = case.model.as_deref().map_or(LoadModel::Open, LoadModel::from_stored);
    let judgement = judge(&results(&case.candidate), &baseline, &gates, Comparison::Nightly, model);
    let mut endpoints: Vec<String> = judgement
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::Regression && f.endpoint != OVERALL_ENDPOINT)
        .map(|f| f.endpoint.clone())
        .collect();
    endpoints.dedup();
    let findings = judgement
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::Regression)
        .map(|f| FindingAnswer { endpoint: f.endpoint.clone(), metric: f.metric.clone(), reason: f.reason.clone() })
        .collect();
    RunAnswer {
        id: case.id,
        regressed: judgement.outcome == VerdictOutcome::Regressed,
        endpoints,
        summary: judgement.summary,
        findings,
    }
}
