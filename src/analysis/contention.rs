//! Whether tonight's machine was busier than on the baseline nights, judged from the share of all its
//! cores' time that was busy during the run (`LoadSummary::machine_cpu_busy_pct`).
//!
//! A noisy neighbour that lasts (another job, a busy loop on one core) slows every endpoint in a run and in
//! its confirmation rerun alike, so the rerun cannot tell it from a regression; this can. It never hides a
//! slowdown on a machine as quiet as usual, nor one route slower among others, and it only ever turns a
//! latency regression into "cannot tell": error rates and absolute gates are not excused by a busy machine.
//!
//! Tonight is compared with the same machine's usual night (the baseline nights' median), since what else
//! runs there is the machine's own business. Measured on a 2-core VM running the demo: 6 % busy on quiet
//! nights, 55 % with a busy loop on one core.

use std::collections::BTreeSet;

use super::judge::{Judgement, Outcome, finding};
use crate::store::{Finding, Metric, OVERALL_ENDPOINT};

/// Busier by at least this many percentage points of the machine's CPU than the usual night: a quarter of
/// the machine taken by work that was not there (one core of four; half a core of two). Less than that
/// leaves a small machine spare time and is lost in a big one's.
const BUSIER_POINTS: f64 = 25.0;
/// The usual figure needs a few nights behind it, like any baseline (a median of one or two is a guess).
const MIN_NIGHTS: usize = 3;

/// A busier machine tonight than on the baseline nights.
#[derive(Debug, Clone, PartialEq)]
pub struct BusierMachine {
    /// Tonight's busy share of the machine's CPU, percent.
    pub tonight_pct: f64,
    /// The baseline nights' median of the same, percent.
    pub usual_pct: f64,
    /// How many baseline nights had the figure.
    pub nights: usize,
}

impl BusierMachine {
    /// One clause for people.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "the machine was busier than on the baseline nights (its CPU was {:.0} % busy during the run, against \
             {:.0} % on the median of {} baseline nights)",
            self.tonight_pct, self.usual_pct, self.nights
        )
    }
}

/// Compares tonight's busy share with the baseline nights'; `None` when the machine was as quiet as usual, or
/// when the figures are missing (not Linux, runs stored before they were measured).
#[must_use]
pub fn busier_machine(tonight: Option<f64>, baseline: &[Option<f64>]) -> Option<BusierMachine> {
    let tonight_pct = tonight.filter(|t| t.is_finite())?;
    let mut usual: Vec<f64> = baseline.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    if usual.len() < MIN_NIGHTS {
        return None;
    }
    usual.sort_by(f64::total_cmp);
    let middle = usual.len() / 2;
    let usual_pct = if usual.len() % 2 == 1 { usual[middle] } else { f64::midpoint(usual[middle - 1], usual[middle]) };
    let busier = tonight_pct - usual_pct >= BUSIER_POINTS;
    busier.then_some(BusierMachine { tonight_pct, usual_pct, nights: usual.len() })
}

/// A regressed judgement on a busier machine, when every regression is a latency percentile and they span
/// at least half of the judged endpoints: inconclusive, with the findings kept so people see what moved.
///
/// Why the breadth: a neighbour slows every endpoint alike, while a build that burns more CPU on one route
/// (and so also makes the generator on the same machine wait) slows that route most. Such a regression is
/// still blamed on the build. Anything else (an error rate, a throughput, a breached gate) stands as judged.
#[must_use]
pub fn not_blamed_on_the_build(judgement: Judgement, busier: &BusierMachine) -> Judgement {
    let failing: Vec<&Finding> = judgement
        .findings
        .iter()
        .filter(|f| f.outcome == finding::REGRESSION || f.outcome == finding::GATE_BREACHED)
        .collect();
    let only_latency = failing.iter().all(|f| f.outcome == finding::REGRESSION && is_latency(f));
    if judgement.outcome != Outcome::Regressed || !only_latency || !broad(&judgement.findings) {
        return judgement;
    }
    let summary = format!(
        "inconclusive: {}; a slowdown measured on a busier machine is not blamed on the build, so the {} latency \
         regression{} below {} not counted; run it again when the machine is quieter",
        busier.describe(),
        failing.len(),
        if failing.len() == 1 { "" } else { "s" },
        if failing.len() == 1 { "is" } else { "are" }
    );
    Judgement { outcome: Outcome::Inconclusive, summary, ..judgement }
}

fn is_latency(f: &Finding) -> bool {
    matches!(f.metric.parse(), Ok(Metric::P50 | Metric::P95 | Metric::P99))
}

/// Whether latency regressions touch at least half of the endpoints whose latency was judged (the `(all)`
/// row aside: it moves with any endpoint).
fn broad(findings: &[Finding]) -> bool {
    let judged = |f: &&Finding| {
        f.endpoint != OVERALL_ENDPOINT
            && is_latency(f)
            && [finding::REGRESSION, finding::NO_CHANGE, finding::IMPROVEMENT].contains(&f.outcome.as_str())
    };
    let endpoints: BTreeSet<&str> = findings.iter().filter(judged).map(|f| f.endpoint.as_str()).collect();
    let slower: BTreeSet<&str> = findings
        .iter()
        .filter(judged)
        .filter(|f| f.outcome == finding::REGRESSION)
        .map(|f| f.endpoint.as_str())
        .collect();
    !slower.is_empty() && slower.len() * 2 >= endpoints.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regressed(metrics: &[(&str, &str)]) -> Judgement {
        regressed_on(&metrics.iter().map(|(m, o)| ("GET /a", *m, *o)).collect::<Vec<_>>())
    }

    fn regressed_on(lines: &[(&str, &str, &str)]) -> Judgement {
        let findings = lines
            .iter()
            .map(|(endpoint, metric, outcome)| Finding {
                endpoint: (*endpoint).into(),
                metric: (*metric).into(),
                outcome: (*outcome).into(),
                baseline_value: Some(1.0),
                candidate_value: 2.0,
                delta_pct: Some(100.0),
                limit: None,
                interval: None,
                p_value: Some(1e-6),
                reason: String::new(),
            })
            .collect();
        Judgement { outcome: Outcome::Regressed, findings, summary: "regressed: …".into() }
    }

    fn busy() -> BusierMachine {
        BusierMachine { tonight_pct: 55.0, usual_pct: 6.0, nights: 7 }
    }

    #[test]
    fn latency_regressions_on_a_busier_machine_are_inconclusive() {
        let judged = not_blamed_on_the_build(
            regressed(&[("p95", finding::REGRESSION), ("p99", finding::REGRESSION), ("p50", finding::NO_CHANGE)]),
            &busy(),
        );
        assert_eq!(judged.outcome, Outcome::Inconclusive);
        assert!(judged.summary.contains("so the 2 latency regressions below are not counted"), "{}", judged.summary);
        assert_eq!(judged.findings.len(), 3, "the findings stay, to be seen");
    }

    #[test]
    fn one_route_slower_among_many_is_still_blamed_on_the_build() {
        let mut lines = vec![("GET /slow", "p95", finding::REGRESSION), ("(all)", "p95", finding::REGRESSION)];
        lines.extend([("GET /b", "p95", finding::NO_CHANGE), ("GET /c", "p95", finding::NO_CHANGE)]);
        assert_eq!(not_blamed_on_the_build(regressed_on(&lines), &busy()).outcome, Outcome::Regressed);
        lines[2].2 = finding::REGRESSION;
        assert_eq!(not_blamed_on_the_build(regressed_on(&lines), &busy()).outcome, Outcome::Inconclusive);
    }

    #[test]
    fn errors_throughput_and_gates_are_not_excused() {
        for kept in
            [("error_rate", finding::REGRESSION), ("throughput", finding::REGRESSION), ("p95", finding::GATE_BREACHED)]
        {
            let judged = not_blamed_on_the_build(regressed(&[("p95", finding::REGRESSION), kept]), &busy());
            assert_eq!(judged.outcome, Outcome::Regressed, "{kept:?}");
        }
    }

    const QUIET_VM: [Option<f64>; 5] = [Some(6.0), Some(5.5), Some(7.0), None, Some(6.5)];

    #[test]
    fn a_busy_loop_on_one_of_two_cores_is_a_busier_machine() {
        let busier = busier_machine(Some(55.0), &QUIET_VM).expect("half the machine more");
        assert_eq!((busier.usual_pct, busier.nights), (6.25, 4));
        assert!(busier.describe().contains("its CPU was 55 % busy during the run, against 6 % on the median of 4"));
    }

    #[test]
    fn the_usual_spread_is_not_contention() {
        assert_eq!(busier_machine(Some(25.0), &QUIET_VM), None);
        let busy_every_night = [Some(55.0), Some(60.0), Some(52.0)];
        assert_eq!(busier_machine(Some(58.0), &busy_every_night), None);
    }

    #[test]
    fn missing_figures_say_nothing() {
        assert_eq!(busier_machine(None, &QUIET_VM), None);
        assert_eq!(busier_machine(Some(94.0), &[Some(5.0), None, Some(6.0)]), None);
        assert_eq!(busier_machine(Some(f64::NAN), &QUIET_VM), None);
    }
}
