//! The evidence about one endpoint × metric of a run: what tonight measured, what the baseline nights say,
//! and the tests that will be put to the run's family (see `nightly`). Gathered here, judged there.
//!
//! Latency percentiles are series on the log scale of milliseconds, each night carrying its sampling
//! variance from the order statistics of its requests. A percentile whose 95 % interval tonight, or on too
//! many baseline nights, reaches past the slowest request is not judged at all: it rests on too few requests.
//! The tail percentiles (p95, p99) get a second, distribution-free test: when tonight's value is at least the
//! minimum effect above the current level, did more of tonight's requests take that long than on the nights at
//! that level (and on a percentile ladder, at the step below a gap tonight's value may lie across; see
//! `slow_share`)? On nights with histograms the p99 also gets the tail test of `tail`, which needs no bounded
//! percentile: the share of requests far past the baseline's p99. Error rates are counts of failed requests.
//! Throughput is judged only in the closed model: in the open model the generator sets the arrival rate, and
//! sessions cut short show as errors upstream.

use super::body::{MEDIAN, MedianReading, Shown, shown_median};
use super::counts::{Count, CountHistory};
use super::detector::{ERROR_MIN_RISE, LOG_SIGMA_FLOOR};
use super::level::{Estimate, estimate};
use super::sample::Sample;
use super::shift::Shift;
use super::slow_share::slow_shares;
pub(super) use super::slow_share::{SlowShare, SlowShares};
use super::tail::{TailShare, tail_share};
use crate::analysis::Gates;
use crate::metrics::interval::requests_needed;
use crate::model::{EndpointResult, Interval, Metric};

/// The latency percentiles judged, with their quantile levels.
pub(super) const PERCENTILES: [(Metric, f64); 3] = [(Metric::P50, 0.5), (Metric::P95, 0.95), (Metric::P99, 0.99)];

/// What is known about one endpoint × metric before the family is judged.
#[derive(Debug, Clone)]
pub(super) struct Draft {
    /// The endpoint.
    pub endpoint: String,
    /// The metric.
    pub metric: Metric,
    /// The smallest change that counts, as a fraction.
    pub min_effect: f64,
    /// The evidence.
    pub evidence: Evidence,
    /// For the p99 on nights with histograms: the share of requests far past the baseline's p99, which judges
    /// the tail even when the p99 itself rests on too few requests.
    pub tail: Option<TailShare>,
}

/// The kinds of evidence.
#[derive(Debug, Clone)]
pub(super) enum Evidence {
    /// Too few baseline nights served this endpoint.
    ShortHistory {
        /// Nights with requests.
        nights: usize,
        /// Nights needed.
        needed: usize,
        /// Tonight's value, in the metric's unit.
        tonight: f64,
    },
    /// The percentile rests on too few requests to be bounded.
    TooFew {
        /// Tonight's requests.
        requests: u64,
        /// Requests a bounded percentile needs.
        needed: u64,
        /// Tonight's value, ms.
        tonight: f64,
    },
    /// A series of values: a latency percentile, or closed-model throughput.
    Value(Box<ValueEvidence>),
    /// Failed requests.
    Errors(ErrorEvidence),
}

/// A value series and tonight's value, on the judging scale: `sign` · ln(value), so larger is worse.
#[derive(Debug, Clone)]
pub(super) struct ValueEvidence {
    /// +1 when higher is worse (latency), −1 when lower is (throughput).
    pub sign: f64,
    /// The series' level and noise (its own until the pooled prior is applied).
    pub estimate: Estimate,
    /// Tonight, on the judging scale.
    pub tonight: f64,
    /// Tonight's sampling variance on the judging scale (how far it may lie above the truth).
    pub tonight_var: f64,
    /// Tonight's 95 % interval, in the metric's unit.
    pub interval: Option<Interval>,
    /// The share-of-slow-requests tests of a p95 or p99 (see `slow_share`): at tonight's value, and at the
    /// ladder step below a gap it reaches into.
    pub slow_shares: SlowShares,
    /// The test against the level, once the prior is applied.
    pub shift: Option<Shift>,
    /// The same percentile as a ratio to the run's other endpoints (see `relative`), when there are enough.
    pub relative: Option<Box<RelativeEvidence>>,
    /// The figure's own level and tonight's value, when what is tested is not the figure alone (the p50,
    /// tested as the body: `body`): what the finding shows.
    pub shown: Option<Shown>,
}

impl ValueEvidence {
    /// A judging-scale value in the metric's unit.
    pub fn raw(&self, u: f64) -> f64 {
        (self.sign * u).exp()
    }

    /// The figure's level and tonight's value as shown (the figure's own, where the test read more).
    pub fn shown(&self) -> Shown {
        self.shown.unwrap_or(Shown { level: self.estimate.level, tonight: self.tonight })
    }

    /// How much worse the shown figure itself is than its level, as a fraction: where the test read more than
    /// the figure, the figure must pass each bar too, so a finding never shows a change under the bar it names.
    pub fn own_worse_by(&self) -> f64 {
        match self.shown {
            Some(s) => (s.tonight - s.level).exp_m1().min(self.worse_by()),
            None => self.worse_by(),
        }
    }

    /// How much better the shown figure itself is, as a fraction (see [`Self::own_worse_by`]).
    pub fn own_better_by(&self) -> f64 {
        match self.shown {
            Some(s) => (-(s.tonight - s.level).exp_m1()).min(self.better_by()),
            None => self.better_by(),
        }
    }

    /// The shown figure's limit for `limit`, the tested value's: the same value where they are one figure.
    pub fn shown_limit(&self, limit: f64, min_effect: f64) -> f64 {
        self.shown.map_or(limit, |s| s.limit(self.tonight, limit, min_effect))
    }

    /// How much worse than each baseline tonight is, at the least, as a fraction.
    pub fn worse_by(&self) -> f64 {
        let baselines = self.shift.as_ref().map_or_else(|| vec![self.estimate.level], |s| s.baselines.clone());
        baselines.iter().map(|b| (self.tonight - b).exp() - 1.0).fold(f64::INFINITY, f64::min)
    }

    /// How much better than each baseline tonight is, at the least, as a fraction.
    pub fn better_by(&self) -> f64 {
        let baselines = self.shift.as_ref().map_or_else(|| vec![self.estimate.level], |s| s.baselines.clone());
        baselines.iter().map(|b| 1.0 - (self.tonight - b).exp()).fold(f64::INFINITY, f64::min)
    }
}

/// The others count as faster than usual tonight when a night as fast comes less than once in 20 by their
/// usual wobble. A generous test on purpose: it guards against calling an unchanged route slower because the
/// rest of the run got faster, so a doubt costs only the ratio test's head start, never a false alarm.
const OTHERS_FASTER_ALPHA: f64 = 0.05;

/// The ratio test's evidence: the ratio as a series like any other, and what made tonight's factor.
#[derive(Debug, Clone)]
pub(super) struct RelativeEvidence {
    /// The ratio series and tonight's ratio, tested once the pooled prior is applied.
    pub value: ValueEvidence,
    /// Tonight's common factor, ln: how far the other endpoints stood from their usual values.
    pub common: f64,
    /// The chance of a factor at least this far below the usual ones by their night-to-night wobble alone
    /// (the baseline nights' factors as a series, tested like any other).
    pub faster_chance: f64,
    /// The other endpoints that made it.
    pub controls: usize,
    /// The night-to-night variance of the factor itself on the baseline nights (its estimation error
    /// included): with the value's and the ratio's, it says how much of the value's noise the factor is.
    pub factor_var: f64,
}

impl RelativeEvidence {
    /// The part of `value`'s night-to-night variance that is the night's common factor. The three series
    /// split it: the value wobbles by the factor and its own (c + u), the ratio by its own and the factor's
    /// estimation error (u + e), the factor by itself and that error (c + e), so c = (value + factor − ratio)/2,
    /// within what the value's own variance allows.
    pub fn common_var(&self, value: &ValueEvidence) -> f64 {
        let own = value.estimate.night_var;
        ((own + self.factor_var - self.value.estimate.night_var) / 2.0).clamp(0.0, own)
    }

    /// Whether the other endpoints were faster tonight, by at least `min_effect` or by more than their usual
    /// wobble explains: then a higher ratio may be their improvement rather than this endpoint's loss.
    pub fn others_faster(&self, min_effect: f64) -> bool {
        self.common <= -min_effect.ln_1p() || self.faster_chance <= OTHERS_FASTER_ALPHA
    }
}

/// Failed requests tonight and on the baseline nights.
#[derive(Debug, Clone)]
pub(super) struct ErrorEvidence {
    /// The baseline's rate and night-to-night wobble.
    pub history: CountHistory,
    /// Tonight's failed requests.
    pub errors: u64,
    /// Tonight's requests.
    pub requests: u64,
    /// The chance of at least tonight's count by the baseline's rate.
    pub p: f64,
    /// Tonight's 95 % interval of the error rate, percent.
    pub interval: Option<Interval>,
}

impl ErrorEvidence {
    /// Tonight's error rate, percent.
    pub fn tonight_pct(&self) -> f64 {
        100.0 * self.errors as f64 / self.requests.max(1) as f64
    }

    /// The rise over the baseline, in percentage points.
    pub fn rise_pp(&self) -> f64 {
        self.tonight_pct() - 100.0 * self.history.rate()
    }

    /// Whether the rise is large enough to count: at least +0.1 pp and the minimum effect.
    pub fn is_effect(&self, min_effect: f64) -> bool {
        let base = 100.0 * self.history.rate();
        self.rise_pp() >= ERROR_MIN_RISE && (base <= 0.0 || self.rise_pp() / base >= min_effect)
    }
}

/// Everything known about `endpoint` tonight against the `baseline` nights, one draft per judged metric.
pub(super) fn endpoint_drafts(
    endpoint: &EndpointResult,
    baseline: &[Vec<EndpointResult>],
    gates: &Gates,
    judge_throughput: bool,
) -> Vec<Draft> {
    let tonight = Sample::from_result(endpoint);
    let history: Vec<Sample> = baseline
        .iter()
        .filter_map(|run| run.iter().find(|e| e.endpoint == endpoint.endpoint && e.requests > 0))
        .map(Sample::from_result)
        .collect();
    // An endpoint counted without response times (WebSocket pushes, sends without an await) has no latency to
    // judge: its failures are.
    let timed = !endpoint.is_counted_only();
    let mut metrics: Vec<Metric> = if timed { PERCENTILES.iter().map(|(m, _)| *m).collect() } else { Vec::new() };
    metrics.push(Metric::ErrorRate);
    if judge_throughput {
        metrics.push(Metric::Throughput);
    }
    let needed = (gates.min_runs as usize).max(2);
    let draft = |metric: Metric, evidence| Draft {
        endpoint: endpoint.endpoint.clone(),
        metric,
        min_effect: gates.min_effect_pct_of(metric) / 100.0,
        evidence,
        tail: None,
    };
    if history.len() < needed {
        return metrics
            .into_iter()
            .map(|m| draft(m, Evidence::ShortHistory { nights: history.len(), needed, tonight: m.value_of(endpoint) }))
            .collect();
    }
    let mut drafts: Vec<Draft> = Vec::new();
    for (metric, p) in PERCENTILES.into_iter().filter(|_| timed) {
        let mut d = draft(metric, Evidence::ShortHistory { nights: 0, needed, tonight: 0.0 });
        d.evidence = percentile_evidence(&tonight, &history, p, needed, d.min_effect);
        if metric == Metric::P99 {
            d.tail = tail_share(&tonight, &history, d.min_effect, needed);
            // Where the histograms give the tail test, the p99's slow-share test is not made: its threshold is
            // tonight's own p99, chosen by the very requests it then counts, and on the stored bench nights it
            // alone made 2 of 22 unchanged runs regressed (DESIGN.md 6.3). The tail test's threshold is the
            // baseline's.
            if let (Some(_), Evidence::Value(v)) = (&d.tail, &mut d.evidence) {
                v.slow_shares = SlowShares::default();
            }
        }
        drafts.push(d);
    }
    drafts.push(draft(Metric::ErrorRate, Evidence::Errors(error_evidence(endpoint, &tonight, &history))));
    if judge_throughput {
        drafts.push(draft(Metric::Throughput, throughput_evidence(&tonight, &history)));
    }
    drafts
}

fn percentile_evidence(tonight: &Sample, history: &[Sample], p: f64, needed: usize, min_effect: f64) -> Evidence {
    let reading = MedianReading::of(history.iter().chain([tonight]));
    // Tested: `now` (the p50 as the body); shown: `own`, the percentile itself.
    let (now, own) = (tonight.judged_percentile(p, reading), tonight.percentile(p));
    let (judged, nights): (Vec<&Sample>, Vec<_>) =
        history.iter().map(|s| (s, s.judged_percentile(p, reading))).filter(|(_, n)| n.hi.is_some()).unzip();
    if now.hi.is_none() || nights.len() < needed {
        return Evidence::TooFew { requests: tonight.timed(), needed: requests_needed(p), tonight: own.value.exp() };
    }
    let values: Vec<f64> = nights.iter().map(|n| n.value).collect();
    let variances: Vec<f64> = nights.iter().map(|n| n.sampling_sd.powi(2)).collect();
    let estimate = estimate(&values, &variances, LOG_SIGMA_FLOOR, None);
    let shown = (p == MEDIAN && reading == MedianReading::Body).then(|| shown_median(tonight, &judged, &estimate));
    let interval = Interval { lo: own.lo.exp(), hi: own.hi.map(f64::exp) };
    let slow_shares =
        if p > 0.9 { slow_shares(tonight, &judged, &estimate, p, needed, min_effect) } else { SlowShares::default() };
    Evidence::Value(Box::new(ValueEvidence {
        sign: 1.0,
        estimate,
        tonight: now.value,
        tonight_var: now.sampling_sd_down.powi(2),
        interval: Some(interval),
        slow_shares,
        shift: None,
        relative: None,
        shown,
    }))
}

fn error_evidence(endpoint: &EndpointResult, tonight: &Sample, history: &[Sample]) -> ErrorEvidence {
    let counts: Vec<Count> =
        history.iter().map(|s| Count { hits: s.errors as f64, trials: s.requests as f64 }).collect();
    let history = CountHistory::new(&counts);
    ErrorEvidence {
        p: history.p_at_least(tonight.errors, tonight.requests as f64),
        history,
        errors: tonight.errors,
        requests: tonight.requests,
        interval: endpoint.intervals.error_pct,
    }
}

/// Closed-model throughput: −ln(rate), each night's count Poisson (sampling variance 1/requests).
fn throughput_evidence(tonight: &Sample, history: &[Sample]) -> Evidence {
    let judged = |s: &Sample| s.rate > 0.0 && s.requests > 0;
    let nights: Vec<&Sample> = history.iter().filter(|s| judged(s)).collect();
    if !judged(tonight) || nights.len() < 2 {
        return Evidence::TooFew { requests: tonight.requests, needed: 1, tonight: tonight.rate };
    }
    let values: Vec<f64> = nights.iter().map(|s| -s.rate.ln()).collect();
    let variances: Vec<f64> = nights.iter().map(|s| 1.0 / s.requests as f64).collect();
    Evidence::Value(Box::new(ValueEvidence {
        sign: -1.0,
        estimate: estimate(&values, &variances, LOG_SIGMA_FLOOR, None),
        tonight: -tonight.rate.ln(),
        tonight_var: 1.0 / tonight.requests as f64,
        interval: None,
        slow_shares: SlowShares::default(),
        shift: None,
        relative: None,
        shown: None,
    }))
}
