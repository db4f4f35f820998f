//! Failures of a clean endpoint come in bursts: how often a night has one and how large it is, read from the
//! run's own baseline, and tonight's chance of at least its count of failures once a burst may add to it.
//!
//! The count test of `counts` reads failures as a rate per request that wobbles by a factor from night to
//! night. An endpoint that never fails has a rate near zero, so there a few failures look impossible, and the
//! more requests the history had, the more so. On `dev-runs.jsonl` that is not how clean endpoints fail: of
//! the nights whose endpoint was clean on every other night (at least ten), 0.35–1.2 % had failures whatever
//! their requests (1.2 % at ~10 requests, 0.75 % at ~300, 0.35 % at ~10,000), and 1–5 of them (264 nights with
//! one, 107 two, 50 three, 18 four, 3 five): a burst (a reset connection, a restart) fails the few requests in
//! flight, and no share of the night's requests. Read as a rate, three failures of 518 requests after 13,000
//! clean ones came at p = 2·10⁻⁵ and made an unchanged run regressed (DESIGN.md 6.8, dev-r00719); at a run's
//! first step (1 % over ~80 tests) a test should reject such a night once in 8,000, and the error tests of
//! unchanged endpoints did six times as often.
//!
//! So tonight's count is the rate's count plus, with the chance `chance`, one burst of at least one failure.
//! Both are read from the run's baseline, where the other endpoints are evidence as good as the endpoint's own
//! (the same client, network and server): `chance` is the share of the nights of endpoints that are clean but
//! for bursts (failures on at most one night in ten) on which they failed, with Jeffreys' half a burst so a
//! clean baseline still allows one; a burst's size is a zero-truncated Poisson whose mean is that of the
//! baseline's bursts, with a prior of [`SIZE_PRIOR`]. The burst's size does not grow with the night's
//! requests, so a real rise of the failure rate, tens of failures, stays as significant as before.
//!
//! An endpoint clean but for bursts has its own failures read as bursts only (`CountHistory::add_bursts`):
//! not also as its rate's night-to-night wobble, and its bursts as large as its own have been.

use super::{Count, CountHistory};

/// A prior on a burst's mean size: 1.6 failures (the 442 burst nights of clean endpoints on `dev-runs.jsonl`
/// above averaged 1.62), believed as much as four bursts: a run's baseline rarely shows more than one or two.
const SIZE_PRIOR: (f64, f64) = (1.6, 4.0);
/// An endpoint whose failures fall on at most this share of its baseline nights (and at least one night) is
/// clean but for bursts: a flaky endpoint fails on most nights, and its count test reads a rate.
const CLEAN_SHARE: f64 = 0.1;
/// A night of more failures than this is no burst (the 442 measured were of one to five, this is twice the
/// largest): an endpoint that had such a night in its baseline failed for a reason, it is not clean but for
/// bursts, and its night would make every endpoint's burst look large enough to hide a real rise.
const MAX_BURST: u64 = 10;
/// Burst sizes past this many are not summed: at a mean under `MAX_BURST` their chance is below 10⁻⁹.
const MAX_SIZE: u64 = 40;
/// A size's chance under which the rest are counted as one (a burst as large as the count, which only errs
/// toward the null): past the mean, the sizes' chances fall faster than geometrically.
const NEGLIGIBLE: f64 = 1e-15;

/// How often a clean endpoint's night has a burst of failures, and how large one is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bursts {
    /// The chance that a night has a burst.
    pub chance: f64,
    /// The Poisson mean of a burst's size before truncation at one failure.
    lambda: f64,
}

impl Bursts {
    /// Reads the bursts from each endpoint's failure counts on the baseline nights (one vector per endpoint,
    /// nights with requests only); `None` when no endpoint is clean but for bursts (every one fails at a
    /// rate, which its own count test reads).
    #[must_use]
    pub fn from_counts(endpoints: &[Vec<u64>]) -> Option<Self> {
        let (mut nights, mut bursts, mut failures) = (0.0, 0.0, 0.0);
        for counts in endpoints.iter().filter(|counts| clean_but_for_bursts(counts)) {
            nights += counts.len() as f64;
            bursts += counts.iter().filter(|&&k| k > 0).count() as f64;
            failures += counts.iter().sum::<u64>() as f64;
        }
        if nights == 0.0 {
            return None;
        }
        let (mean, weight) = SIZE_PRIOR;
        let mean_size = (failures + mean * weight) / (bursts + weight);
        Some(Self { chance: (bursts + 0.5) / (nights + 1.0), lambda: lambda_of_mean(mean_size) })
    }

    /// These bursts for an endpoint whose own bursts were larger on average (`counts`, its baseline nights' failures):
    /// its bursts are as large as its own have been. The run's mean size is a prior for an endpoint that has shown
    /// few bursts; one that failed ten requests at once has shown what its bursts can be.
    fn at_least_as_large_as(&self, counts: &[u64]) -> Self {
        let bursts = counts.iter().filter(|&&k| k > 0).count();
        let own_mean = counts.iter().sum::<u64>() as f64 / bursts.max(1) as f64;
        let run_mean = self.lambda / -(-self.lambda).exp_m1();
        if own_mean > run_mean { Self { lambda: lambda_of_mean(own_mean), ..*self } } else { *self }
    }

    /// The chance that a burst is `size` failures.
    fn size_is(&self, size: u64) -> f64 {
        let log_pmf = -self.lambda + size as f64 * self.lambda.ln() - ln_factorial(size);
        log_pmf.exp() / -(-self.lambda).exp_m1()
    }

    /// The chance of at least `hits` failures tonight: the rate's count of `history`, plus a burst.
    #[must_use]
    pub fn p_at_least(&self, history: &CountHistory, hits: u64, trials: f64) -> f64 {
        if hits == 0 {
            return 1.0;
        }
        // A burst of b failures leaves hits − b to the rate; one of at least `hits` needs nothing from it.
        let mut burst = 0.0;
        let mut covered = 0.0;
        for size in 1..hits.min(MAX_SIZE + 1) {
            let chance = self.size_is(size);
            if size as f64 > self.lambda && chance < NEGLIGIBLE {
                break;
            }
            covered += chance;
            burst += chance * history.p_rate_at_least(hits - size, trials);
        }
        burst += (1.0 - covered).max(0.0);
        ((1.0 - self.chance) * history.p_rate_at_least(hits, trials) + self.chance * burst).clamp(0.0, 1.0)
    }
}

impl CountHistory {
    /// Gives the count test of the endpoint whose baseline `nights` this history sums the run's `bursts`. An
    /// endpoint clean but for bursts has its failures read as bursts, and then not also as its rate's wobble:
    /// read from every night, a burst of six and one of two in 32 nights made the rate vary ×4.9, which excused
    /// 20 failures of 1,180 requests tonight (dev-r00796, a real rise of 2 pp). So its wobble is read from its
    /// nights without failures, and its bursts are as large as its own have been (`at_least_as_large_as`), so a
    /// repeat of its largest burst stays as likely as before.
    pub fn add_bursts(&mut self, bursts: Bursts, nights: &[Count]) {
        let counts: Vec<u64> = nights.iter().map(|n| n.hits as u64).collect();
        let clean: Vec<Count> = nights.iter().filter(|n| n.hits == 0.0).copied().collect();
        if clean_but_for_bursts(&counts) && !clean.is_empty() {
            self.log_wobble_var = Self::new(&clean).log_wobble_var;
            self.bursts = Some(bursts.at_least_as_large_as(&counts));
        } else {
            self.bursts = Some(bursts);
        }
    }
}

/// Whether an endpoint's baseline `counts` are clean but for bursts: failures on at most a tenth of its
/// nights (and at least one), none of them more than a burst's.
fn clean_but_for_bursts(counts: &[u64]) -> bool {
    let failing = counts.iter().filter(|&&k| k > 0).count();
    failing as f64 <= (CLEAN_SHARE * counts.len() as f64).max(1.0) && counts.iter().all(|&k| k <= MAX_BURST)
}

/// The Poisson mean whose zero-truncated mean is `mean` (> 1), by bisection: λ / (1 − e^−λ) grows with λ.
fn lambda_of_mean(mean: f64) -> f64 {
    let (mut low, mut high) = (1e-9, mean.max(1.0 + 1e-9));
    for _ in 0..100 {
        let mid = 0.5 * (low + high);
        if mid / -(-mid).exp_m1() < mean { low = mid } else { high = mid }
    }
    0.5 * (low + high)
}

fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(nights: usize, requests: f64) -> CountHistory {
        CountHistory::new(&vec![Count { hits: 0.0, trials: requests }; nights])
    }

    #[test]
    fn a_burst_of_three_on_a_clean_endpoint_is_no_proof_but_a_real_rise_still_is() {
        // dev-r00719: 3 of 518 failed after 0 of 13,000 on 25 nights; the run's 275 other nights had 2 bursts.
        let mut run: Vec<Vec<u64>> = vec![vec![0; 25]; 10];
        run[0][4] = 1;
        run[0][21] = 1;
        let bursts = Bursts::from_counts(&run).unwrap();
        assert!((bursts.chance - 2.5 / 251.0).abs() < 1e-12, "{bursts:?}");
        let history = clean(25, 520.0);
        assert!(history.p_rate_at_least(3, 518.0) < 1e-4, "as a rate alone it looks impossible");
        let p = bursts.p_at_least(&history, 3, 518.0);
        assert!(p > 2e-4, "a burst of three comes about once in a thousand nights here: {p}");
        // +2 pp of the same requests is ten failures: no burst makes that likely.
        assert!(bursts.p_at_least(&history, 10, 518.0) < 1e-7);
    }

    /// A run of twenty endpoints of 1,200 requests a night, clean but for `bursts` (endpoint, night, failures).
    fn run_of_twenty(nights: usize, bursts: &[(usize, usize, u64)]) -> Vec<Vec<u64>> {
        let mut run = vec![vec![0; nights]; 20];
        for &(endpoint, night, failures) in bursts {
            run[endpoint][night] = failures;
        }
        run
    }

    fn history_of(counts: &[u64]) -> (CountHistory, Vec<Count>) {
        let nights: Vec<Count> = counts.iter().map(|&k| Count { hits: k as f64, trials: 1200.0 }).collect();
        (CountHistory::new(&nights), nights)
    }

    #[test]
    fn an_endpoints_own_bursts_are_bursts_not_its_rates_wobble() {
        // dev-r00796: a burst of six and one of two in 32 nights, then 20 failures tonight (+1.7 pp).
        let run = run_of_twenty(32, &[(0, 28, 6), (0, 29, 2), (5, 3, 1), (9, 17, 1)]);
        let bursts = Bursts::from_counts(&run).unwrap();
        let (mut history, nights) = history_of(&run[0]);
        history.bursts = Some(bursts);
        let read_as_wobble = history.p_at_least(20, 1180.0);
        assert!(read_as_wobble > 1e-4, "its bursts read as the rate's wobble as well excused it: {read_as_wobble}");
        history.add_bursts(bursts, &nights);
        assert!(history.log_wobble_var < 0.1, "its clean nights' wobble, the prior's weight shrunk: {history:?}");
        let rise = history.p_at_least(20, 1180.0);
        assert!(rise < 1e-8, "20 failures are no burst of its: {rise}");
        for (tonight, read_as) in [(6, "a repeat of its largest burst"), (4, "a burst of four")] {
            let p = history.p_at_least(tonight, 1180.0);
            assert!(p > 1e-3, "{read_as} is no proof: {p}");
        }
    }

    #[test]
    fn a_repeat_of_an_endpoints_largest_burst_is_no_proof() {
        // One night of ten failures in ten, the largest a burst may be: ten again tonight is what it has done.
        let run = run_of_twenty(10, &[(0, 4, 10), (7, 2, 1)]);
        let bursts = Bursts::from_counts(&run).unwrap();
        let (mut history, nights) = history_of(&run[0]);
        history.add_bursts(bursts, &nights);
        let p = history.p_at_least(10, 1200.0);
        assert!(p > 1e-3, "{p} {history:?}");
        let flaky = [9; 10];
        let (mut history, nights) = history_of(&flaky);
        let measured = history;
        history.add_bursts(bursts, &nights);
        assert_eq!(
            history,
            CountHistory { bursts: Some(bursts), ..measured },
            "a flaky endpoint's rate wobbles as measured"
        );
    }

    #[test]
    fn bursts_add_little_to_a_flaky_endpoints_count() {
        let flaky = CountHistory::new(&[Count { hits: 20.0, trials: 1000.0 }; 10]);
        let bursts = Bursts::from_counts(&vec![vec![0; 10]; 5]).unwrap();
        for hits in [25, 40, 60] {
            let (alone, with) = (flaky.p_rate_at_least(hits, 1000.0), bursts.p_at_least(&flaky, hits, 1000.0));
            assert!(with >= alone && with < 1.2 * alone + 1e-9, "{hits}: {alone} {with}");
        }
    }

    #[test]
    fn one_endpoints_failing_night_in_the_baseline_hides_no_rise_elsewhere() {
        // One endpoint's 300 failures on one night of 25 (a regressed night kept in the baseline) is no burst:
        // read as one, every endpoint's bursts would average 60 failures and cover a real rise on any of them.
        let mut run: Vec<Vec<u64>> = vec![vec![0; 25]; 10];
        run[3][12] = 300;
        let bursts = Bursts::from_counts(&run).unwrap();
        assert!((bursts.chance - 0.5 / 226.0).abs() < 1e-12, "the nine clean endpoints only: {bursts:?}");
        let p = bursts.p_at_least(&clean(25, 1000.0), 100, 1000.0);
        assert!(p < 1e-6, "100 of 1,000 after a clean history: {p}");
        assert_eq!(Bursts::from_counts(&[vec![300; 25], vec![5; 25]]), None, "no endpoint clean but for bursts");
    }

    #[test]
    fn sizes_are_a_zero_truncated_poisson_of_the_stated_mean() {
        let lambda = lambda_of_mean(1.6);
        assert!((lambda / -(-lambda).exp_m1() - 1.6).abs() < 1e-9);
        let b = Bursts { chance: 0.01, lambda };
        let total: f64 = (1..=MAX_SIZE).map(|s| b.size_is(s)).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
    }
}
