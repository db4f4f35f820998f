//! The run as its own control: each endpoint's latency against the other endpoints of the same run.
//!
//! Most night-to-night noise is shared. On a shared machine, a slower host, a busier disk or a colder cache
//! slows every endpoint of the night together: on the bench's demo target the common factor moved from −10 %
//! to +18 % across unchanged nights, which left a single route's p50 swinging ±14 % while its share of the
//! night (its value over the other endpoints') swung ±6 %. A regression of one route changes that share; a
//! slower night does not. So, beside the test of each figure against its own level, each endpoint's
//! p50/p95/p99 is tested as a ratio: its log value minus the night's common factor, the median over the
//! other endpoints of how far each stood from its own usual value that night (the median, so that another
//! regressed endpoint cannot drag the factor along). The ratio's history is a series like any other, with
//! its own level, change points and noise (which includes the factor's own estimation error), tested by the
//! same shift and held to the same run-level false-alarm rate.
//!
//! A change that slows every endpoint alike leaves every ratio where it was; the absolute tests and the
//! whole-run aggregate `(all)` catch that one, which is why both kinds of tests are made. The three series
//! (the value, its ratio, the factor) also say how much of an endpoint's noise is the factor, whose far
//! tail is heavier than a normal's: the absolute test reads that part on a Student-t (`shift`).

use super::body::MedianReading;
use super::detector::LOG_SIGMA_FLOOR;
use super::evidence::{RelativeEvidence, SlowShares, ValueEvidence};
use super::level::{estimate, median};
use super::sample::Sample;
use super::shift::shift;
use crate::model::{EndpointResult, OVERALL_ENDPOINT};

/// The fewest other endpoints whose values make a night's common factor: with fewer, one endpoint's own
/// noise would be the factor.
pub(super) const MIN_CONTROLS: usize = 3;

/// One night's bounded percentile of one endpoint: ln ms and its sampling variance.
type Night = Option<(f64, f64)>;

/// Every named endpoint measured tonight, with its samples on the baseline nights (oldest first) and then
/// tonight's; `(all)` is not among them (it is every endpoint at once).
pub(super) struct Nights(Vec<(String, Vec<Option<Sample>>)>);

impl Nights {
    /// Reads the samples of `candidate`'s endpoints tonight and on the `baseline` nights.
    pub fn new(candidate: &[EndpointResult], baseline: &[Vec<EndpointResult>]) -> Self {
        let sample = |result: Option<&EndpointResult>| result.filter(|r| r.requests > 0).map(Sample::from_result);
        let endpoints = candidate
            .iter()
            .filter(|e| e.endpoint != OVERALL_ENDPOINT && e.requests > 0)
            .map(|e| {
                let mut nights: Vec<Option<Sample>> =
                    baseline.iter().map(|run| sample(run.iter().find(|r| r.endpoint == e.endpoint))).collect();
                nights.push(sample(Some(e)));
                (e.endpoint.clone(), nights)
            })
            .collect();
        Self(endpoints)
    }
}

/// The percentile `p` of every endpoint of [`Nights`], night by night, where the night's requests bound it.
pub(super) struct Table {
    endpoints: Vec<(String, Vec<Night>)>,
    nights: usize,
}

impl Table {
    /// Reads percentile `p` of every night as the judge tests it (the p50 as the body: `body`); tonight's
    /// sampling spread is how far it may lie above the truth.
    pub fn new(nights: &Nights, p: f64) -> Self {
        let count = nights.0.first().map_or(0, |(_, n)| n.len());
        let endpoints = nights
            .0
            .iter()
            .map(|(name, samples)| {
                let reading = MedianReading::of(samples.iter().flatten());
                let values = samples
                    .iter()
                    .enumerate()
                    .map(|(night, sample)| {
                        let percentile = sample.as_ref()?.judged_percentile(p, reading);
                        percentile.hi?;
                        let sd = if night + 1 == count { percentile.sampling_sd_down } else { percentile.sampling_sd };
                        Some((percentile.value, sd * sd))
                    })
                    .collect();
                (name.clone(), values)
            })
            .collect();
        Self { endpoints, nights: count }
    }

    /// `endpoint`'s ratio to the others, when tonight and at least `needed` baseline nights have a factor. The
    /// ratio's sampling variances are the endpoint's own: the factor's error is part of the ratio's noise.
    pub fn ratio(&self, endpoint: &str, needed: usize) -> Option<RelativeEvidence> {
        let (_, own) = self.endpoints.iter().find(|(name, _)| name == endpoint)?;
        let tonight = self.nights.checked_sub(1)?;
        // Controls: the others measured tonight and on enough nights to have a usual value.
        let controls: Vec<(f64, &Vec<Night>)> = self
            .endpoints
            .iter()
            .filter(|(name, nights)| name != endpoint && nights[tonight].is_some())
            .filter_map(|(_, nights)| {
                let history: Vec<f64> = nights[..tonight].iter().flatten().map(|(value, _)| *value).collect();
                (history.len() >= needed).then(|| (median(&history), nights))
            })
            .collect();
        if controls.len() < MIN_CONTROLS {
            return None;
        }
        let common = |night: usize| -> Option<f64> {
            let offsets: Vec<f64> =
                controls.iter().filter_map(|(usual, nights)| nights[night].map(|(value, _)| value - usual)).collect();
            (offsets.len() >= MIN_CONTROLS).then(|| median(&offsets))
        };
        let (mut history, mut history_var, mut factors) = (Vec::new(), Vec::new(), Vec::new());
        for (night, own_night) in own[..tonight].iter().enumerate() {
            if let (Some((value, var)), Some(factor)) = (*own_night, common(night)) {
                history.push(value - factor);
                history_var.push(var);
                factors.push(factor);
            }
        }
        let (value, tonight_var) = own[tonight]?;
        let factor = common(tonight)?;
        if history.len() < needed {
            return None;
        }
        let factors = estimate(&factors, &vec![0.0; factors.len()], LOG_SIGMA_FLOOR, None);
        let faster_chance = shift(&factors, factor, 0.0).p_better;
        let factor_var = factors.own_night_var;
        let value = ValueEvidence {
            sign: 1.0,
            estimate: estimate(&history, &history_var, LOG_SIGMA_FLOOR, None),
            tonight: value - factor,
            tonight_var,
            interval: None,
            slow_shares: SlowShares::default(),
            shift: None,
            relative: None,
            shown: None,
        };
        Some(RelativeEvidence { value, common: factor, faster_chance, controls: controls.len(), factor_var })
    }
}
