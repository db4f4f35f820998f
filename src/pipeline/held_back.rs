//! Judging with the machine in mind (`[scenario.gates] busy_machine_inconclusive`): a baseline night whose
//! machine was held back, against the other baseline nights, is left out of the baseline, and a latency
//! regression measured on a held-back machine tonight is not blamed on the build. Both use the same rules
//! (`analysis::contention`): busier with other work, kept waiting by its host, or slower in itself by its
//! loopback echo.
//!
//! Why leave baseline nights out: a night measured on a held-back machine measured the machine. Kept, it
//! passes for night-to-night noise and widens every comparison after it: on `bench-verdicts`, the nights of
//! one host spell raised the slowed route's ratio noise from ±3.9 % to ±7.4 %, and a +25 % slowdown went
//! uncaught. The decision rests on the machine's own figures, never on the endpoint's, so it cannot talk the
//! noise of a series down (a wild night on a quiet machine stays in).

use crate::analysis::capacity::CAPACITY_METRIC;
use crate::analysis::contention::{
    Contention, MachineLoad, UsualMachine, contention, counted_although, held_back_by_host, machine_slowdown,
    not_blamed_on_the_build, unusual_but_maybe_the_build,
};
use crate::analysis::judge::{Judgement, counted_findings};
use crate::model::{EndpointResult, FindingOutcome, Run, VerdictOutcome};
use crate::report::LeftOut;

fn usual_machine(run: &Run) -> UsualMachine {
    run.load_summary.as_ref().map_or_else(UsualMachine::default, |l| UsualMachine {
        busy_pct: l.machine_cpu_busy_pct,
        stolen_pct: l.machine_cpu_stolen_pct,
        echo_p50_us: l.machine_echo_p50_us,
    })
}

fn machine_load(run: &Run) -> Option<MachineLoad> {
    let l = run.load_summary.as_ref()?;
    Some(MachineLoad {
        busy_pct: l.machine_cpu_busy_pct?,
        stolen_pct: l.machine_cpu_stolen_pct,
        cores: l.machine_cores?,
        secs: l.measured_secs,
        echo_p50_us: l.machine_echo_p50_us,
    })
}

/// The baseline without its held-back nights (each against the median of all of them), and those left out.
/// None is left out when fewer than `min_runs` nights would remain: a short baseline cannot judge at all,
/// a noisier one still can.
#[must_use]
pub fn without_held_back_nights(baseline: Vec<Run>, min_runs: usize) -> (Vec<Run>, Vec<LeftOut>) {
    let usual: Vec<UsualMachine> = baseline.iter().map(usual_machine).collect();
    let why: Vec<Option<String>> =
        baseline.iter().map(|run| contention(machine_load(run), &usual).map(|c| in_a_few_words(&c))).collect();
    let left = why.iter().filter(|w| w.is_some()).count();
    if left == 0 || baseline.len() - left < min_runs {
        return (baseline, Vec::new());
    }
    let mut kept = Vec::with_capacity(baseline.len() - left);
    let mut left_out = Vec::with_capacity(left);
    for (run, why) in baseline.into_iter().zip(why) {
        match why {
            Some(why) => left_out.push(LeftOut { id: run.id, why }),
            None => kept.push(run),
        }
    }
    (kept, left_out)
}

fn in_a_few_words(contention: &Contention) -> String {
    match contention {
        Contention::Busier(b) => {
            format!("the machine's CPU was {:.0} % busy, against {:.0} % usually", b.tonight_pct, b.usual_pct)
        }
        Contention::HeldBack(h) => {
            format!("its host stole {:.1} % of the CPU time, against {:.1} % usually", h.tonight_pct, h.usual_pct)
        }
        Contention::Slower(s) => {
            format!("its loopback echo took {:.0} µs, against {:.0} µs usually", s.tonight_us, s.usual_us)
        }
    }
}

/// A latency regression measured while the machine was busier than on the baseline nights (beyond what the
/// slower requests could have burnt themselves), held back by its host, or slower in itself by its loopback
/// echo, is inconclusive unless it stands out from the rest of the run (see `analysis::contention`).
#[must_use]
pub fn excuse_a_held_back_machine(
    judgement: Judgement,
    candidate: &Run,
    tonight: &[EndpointResult],
    baseline: &[Run],
    before: &[Vec<EndpointResult>],
) -> Judgement {
    let usual: Vec<UsualMachine> = baseline.iter().map(usual_machine).collect();
    let load = machine_load(candidate);
    let Some(contention) = contention(load, &usual) else {
        return match unusual_but_maybe_the_build(load, &usual) {
            Some(why) => counted_although(judgement, &why),
            None => judgement,
        };
    };
    let slowdown = machine_slowdown(load, &usual);
    not_blamed_on_the_build(judgement, &contention, slowdown, load.map_or(1, |l| l.cores), |endpoint| {
        added_secs(endpoint, tonight, before)
    })
}

/// A capacity that fell while the machine's host held it back (its hypervisor kept CPU time from it, which no
/// build does) is not blamed on the build: the search measured the host. Only the host excuses it: a busier
/// or slower machine does not, since a build that burns CPU beside its generator makes the machine both, and
/// its capacity's fall is the build's. The machine is read over the night's stages, run just before the search.
#[must_use]
pub fn excuse_a_capacity_fall_on_a_held_back_host(
    judgement: Judgement,
    candidate: &Run,
    baseline: &[Run],
) -> Judgement {
    let fell = |f: &crate::model::Finding| f.metric == CAPACITY_METRIC && f.outcome == FindingOutcome::Regression;
    if !judgement.findings.iter().any(fell) {
        return judgement;
    }
    let usual: Vec<UsualMachine> = baseline.iter().map(usual_machine).collect();
    let Some(held) = held_back_by_host(machine_load(candidate), &usual) else { return judgement };
    let Judgement { outcome, mut findings, summary } = judgement;
    for finding in findings.iter_mut().filter(|f| fell(f)) {
        finding.reason = format!(
            "not blamed on the build: measured while {}; judged alone it was {}",
            held.describe(),
            finding.reason
        );
        finding.outcome = FindingOutcome::Excused;
    }
    if outcome != VerdictOutcome::Regressed {
        return Judgement { outcome, findings, summary };
    }
    if findings.iter().any(|f| f.outcome.is_failure()) {
        let summary = format!(
            "{}; the capacity's fall is excused, measured while the host held the machine back",
            counted_findings(VerdictOutcome::Regressed, &findings)
        );
        return Judgement { outcome, findings, summary };
    }
    let summary = format!(
        "inconclusive: {}; a capacity fall measured while the host held the machine back is not blamed on the \
         build; run it again when its host is quieter",
        held.describe()
    );
    Judgement { outcome: VerdictOutcome::Inconclusive, findings, summary }
}

/// How much longer an endpoint's requests took tonight, together, than at the baseline nights' median mean.
fn added_secs(endpoint: &str, tonight: &[EndpointResult], before: &[Vec<EndpointResult>]) -> f64 {
    let Some(now) = tonight.iter().find(|e| e.endpoint == endpoint) else { return 0.0 };
    let mut means: Vec<f64> = before
        .iter()
        .flatten()
        .filter(|e| e.endpoint == endpoint)
        .map(|e| e.mean_us)
        .filter(|m| m.is_finite())
        .collect();
    means.sort_by(f64::total_cmp);
    let usual = means.get(means.len() / 2).copied().unwrap_or(0.0);
    (now.mean_us - usual).max(0.0) / 1e6 * now.requests.max(0) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LoadSummary, RunStatus};

    /// Run `id` on a 2-core machine `busy` % busy, `stolen` % of it stolen.
    fn night(id: i64, busy: f64, stolen: f64) -> Run {
        Run {
            id,
            scenario: "demo".into(),
            build_id: None,
            status: RunStatus::Passed,
            started_at: chrono::DateTime::UNIX_EPOCH,
            finished_at: None,
            scenario_hash: "h".into(),
            seed: id,
            validity_reasons: Vec::new(),
            load_summary: Some(LoadSummary {
                machine_cpu_busy_pct: Some(busy),
                machine_cpu_stolen_pct: Some(stolen),
                machine_cores: Some(2),
                measured_secs: 30.0,
                ..LoadSummary::default()
            }),
            failure_reason: None,
            segments: 1,
        }
    }

    fn ids(runs: &[Run]) -> Vec<i64> {
        runs.iter().map(|r| r.id).collect()
    }

    #[test]
    fn nights_of_a_busy_loop_or_a_host_spell_are_left_out() {
        let baseline = vec![
            night(1, 9.0, 0.2),
            night(2, 58.0, 0.3), // a busy loop on one core
            night(3, 10.0, 0.1),
            night(4, 12.0, 3.1), // the host stole time
            night(5, 9.5, 0.3),
            night(6, 8.5, 0.2),
            night(7, 10.5, 0.4),
        ];
        let (kept, left) = without_held_back_nights(baseline, 5);
        assert_eq!(ids(&kept), [1, 3, 5, 6, 7]);
        assert_eq!(
            left,
            [
                LeftOut { id: 2, why: "the machine's CPU was 58 % busy, against 10 % usually".into() },
                LeftOut { id: 4, why: "its host stole 3.1 % of the CPU time, against 0.3 % usually".into() },
            ]
        );
    }

    #[test]
    fn none_is_left_out_when_too_few_nights_would_remain() {
        let baseline = vec![night(1, 9.0, 0.2), night(2, 58.0, 0.3), night(3, 10.0, 0.1), night(4, 9.0, 0.2)];
        let (kept, left) = without_held_back_nights(baseline, 4);
        assert_eq!((ids(&kept), left), (vec![1, 2, 3, 4], vec![]));
    }

    #[test]
    fn nights_without_machine_figures_stay() {
        let mut old = night(1, 0.0, 0.0);
        old.load_summary = None;
        let baseline = vec![
            old,
            night(2, 9.0, 0.2),
            night(3, 10.0, 0.1),
            night(4, 58.0, 0.3),
            night(5, 9.0, 0.3),
            night(6, 9.0, 0.2),
        ];
        let (kept, left) = without_held_back_nights(baseline, 5);
        assert_eq!(ids(&kept), [1, 2, 3, 5, 6], "the night that measured nothing of its machine is not judged by it");
        assert_eq!(left.iter().map(|l| l.id).collect::<Vec<_>>(), [4]);
    }
}
