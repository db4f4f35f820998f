//! The held-back rules on the nights that shaped them: a busier machine, a host that steals time, a slower
//! machine, and what each may excuse.

use super::*;

fn regressed(metrics: &[(&str, FindingOutcome)]) -> Judgement {
    regressed_on(&metrics.iter().map(|(m, o)| ("GET /a", *m, *o)).collect::<Vec<_>>())
}

fn regressed_on(lines: &[(&str, &str, FindingOutcome)]) -> Judgement {
    let findings = lines
        .iter()
        .map(|(endpoint, metric, outcome)| Finding {
            endpoint: (*endpoint).into(),
            metric: (*metric).into(),
            outcome: *outcome,
            baseline_value: Some(1.0),
            candidate_value: 2.0,
            delta_pct: Some(100.0),
            limit: None,
            interval: None,
            p_value: Some(1e-6),
            reason: String::new(),
        })
        .collect();
    Judgement { outcome: VerdictOutcome::Regressed, findings, summary: "regressed: …".into() }
}

/// Night 3 of a `bench-verdicts` run: a busy loop on one of two cores through a 30 s run.
fn busy() -> Contention {
    Contention::Busier(busier_machine(Some(tonight(55.0)), &QUIET_VM).unwrap())
}

/// Tonight's added time of an endpoint: 1 ms more on each of a thousand requests.
fn thousand(_: &str) -> f64 {
    1.0
}

#[test]
fn latency_regressions_on_a_busier_machine_are_inconclusive() {
    // 1 ms more on 1000 requests burns at most 2 core-seconds on two cores; the machine spent 29 more.
    let judged = not_blamed_on_the_build(
        regressed(&[
            ("p95", FindingOutcome::Regression),
            ("p99", FindingOutcome::Regression),
            ("p50", FindingOutcome::NoChange),
        ]),
        &busy(),
        None,
        2,
        thousand,
    );
    assert_eq!(judged.outcome, VerdictOutcome::Inconclusive);
    assert!(
        judged.summary.contains("29.2 CPU-seconds more, while the slower requests could account for at most 2.0)"),
        "{}",
        judged.summary
    );
    assert!(judged.summary.contains("so the 2 latency regressions listed are not counted"), "{}", judged.summary);
    assert_eq!(judged.findings.len(), 3, "the findings stay, to be seen");
}

#[test]
fn a_slowdown_that_could_have_burnt_the_extra_cpu_is_blamed_on_the_build() {
    // 1 ms more on 20,000 requests of one route: up to 40 core-seconds, more than the machine's extra 29.
    let lines = [("GET /heavy", "p50", FindingOutcome::Regression), ("(all)", "p50", FindingOutcome::Regression)];
    let judged = not_blamed_on_the_build(regressed_on(&lines), &busy(), None, 2, |_| 20.0);
    assert_eq!(judged.outcome, VerdictOutcome::Regressed);
    assert!(
        judged.summary.ends_with(
            "; counted although the machine was busier than on the baseline nights (its CPU was 55 % busy during \
             the run, against 6 % on the median of 4 baseline nights: 29.2 CPU-seconds more), no more than the \
             slower requests could have burnt themselves (at most 40.0 CPU-seconds), as a build that burns more CPU beside the \
             generator would"
        ),
        "the machine is named beside the verdict: {}",
        judged.summary
    );
}

/// The nights of a new user's trial: a 2-core VM about 8 % busy, a quarter of a point stolen, echo ~70 µs.
fn trial_nights() -> Vec<UsualMachine> {
    [(8.1, 0.2, 68.0), (7.6, 0.3, 71.0), (8.4, 0.25, 70.0), (7.9, 0.2, 72.0), (8.0, 0.3, 69.0)]
        .map(|(busy, stolen, echo)| UsualMachine {
            busy_pct: Some(busy),
            stolen_pct: Some(stolen),
            echo_p50_us: Some(echo),
        })
        .to_vec()
}

#[test]
fn a_neighbour_that_loads_the_cpu_and_makes_the_host_steal_is_named_but_excuses_nothing() {
    // The trial's unchanged build: 28.5 % busy, 10.4 % stolen, echo 91 µs; its own work grew 10 points, as a
    // build that burns CPU makes it grow, so neither the host's rule nor the echo's may excuse the slowdown.
    let tonight = MachineLoad { busy_pct: 28.5, stolen_pct: Some(10.4), cores: 2, secs: 20.0, echo_p50_us: Some(91.0) };
    assert_eq!(contention(Some(tonight), &trial_nights()), None);
    let why = unusual_but_maybe_the_build(Some(tonight), &trial_nights()).expect("the host and the echo both moved");
    let judged = counted_although(regressed(&[("p50", FindingOutcome::Regression)]), &why);
    assert_eq!(judged.outcome, VerdictOutcome::Regressed, "counted: the machine's trouble never excuses a build here");
    assert_eq!(
        judged.summary,
        "regressed: …; counted although the machine was not as usual: its host kept 10.4 % of the CPU time from it \
         (against 0.2 % on the median of 5 baseline nights) and its loopback echo took 91 µs at the median \
         (against 70 µs); but its own work grew too (18 % of its CPU against 8 %), as a build that burns more CPU \
         beside the generator makes it grow, so the slowdown is not laid on the machine; a rerun on a quieter \
         machine tells the two apart"
    );
    let errors_only = regressed(&[("error_rate", FindingOutcome::Regression)]);
    assert_eq!(counted_although(errors_only.clone(), &why), errors_only, "only a counted slowdown is read beside it");
    let quiet = MachineLoad { busy_pct: 8.3, stolen_pct: Some(0.3), echo_p50_us: Some(73.0), ..tonight };
    assert_eq!(unusual_but_maybe_the_build(Some(quiet), &trial_nights()), None, "a usual machine says nothing");
    let excusable = MachineLoad { busy_pct: 18.0, ..tonight };
    assert!(contention(Some(excusable), &trial_nights()).is_some());
    assert_eq!(unusual_but_maybe_the_build(Some(excusable), &trial_nights()), None, "the rules speak for it");
}

#[test]
fn errors_throughput_and_gates_are_not_excused() {
    for kept in [
        ("error_rate", FindingOutcome::Regression),
        ("throughput", FindingOutcome::Regression),
        ("p95", FindingOutcome::GateBreached),
    ] {
        let judged = not_blamed_on_the_build(
            regressed(&[("p95", FindingOutcome::Regression), kept]),
            &busy(),
            None,
            2,
            thousand,
        );
        assert_eq!(judged.outcome, VerdictOutcome::Regressed, "{kept:?}");
    }
}

const QUIET_VM: [Option<f64>; 5] = [Some(6.0), Some(5.5), Some(7.0), None, Some(6.5)];

fn tonight(busy_pct: f64) -> MachineLoad {
    MachineLoad { busy_pct, stolen_pct: None, cores: 2, secs: 30.0, echo_p50_us: None }
}

#[test]
fn a_busy_loop_on_one_of_two_cores_is_a_busier_machine() {
    let busier = busier_machine(Some(tonight(55.0)), &QUIET_VM).expect("half the machine more");
    assert_eq!((busier.usual_pct, busier.nights), (6.25, 4));
    assert!((busier.extra_core_secs - 29.25).abs() < 1e-9, "{busier:?}");
    assert!(busier.describe().contains("its CPU was 55 % busy during the run, against 6 % on the median of 4"));
}

#[test]
fn the_usual_spread_is_not_contention() {
    assert_eq!(busier_machine(Some(tonight(25.0)), &QUIET_VM), None);
    let busy_every_night = [Some(55.0), Some(60.0), Some(52.0)];
    assert_eq!(busier_machine(Some(tonight(58.0)), &busy_every_night), None);
}

#[test]
fn missing_figures_say_nothing() {
    assert_eq!(busier_machine(None, &QUIET_VM), None);
    assert_eq!(busier_machine(Some(tonight(94.0)), &[Some(5.0), None, Some(6.0)]), None);
    assert_eq!(busier_machine(Some(tonight(f64::NAN)), &QUIET_VM), None);
}

#[test]
fn latency_regressions_while_the_host_held_the_machine_back_are_inconclusive() {
    let held = held_back_by_host(Some(host::tests::stolen(14.1, 3.16)), &host::tests::ordinary_vm()).unwrap();
    let lines = [("p50", FindingOutcome::Regression), ("p95", FindingOutcome::Regression)];
    let judged = not_blamed_on_the_build(regressed(&lines), &Contention::HeldBack(held), None, 2, |_| 1_000.0);
    assert_eq!(judged.outcome, VerdictOutcome::Inconclusive, "no CPU budget: stolen time was burnt by nobody here");
    assert!(
        judged.summary.contains("measured while the host held the machine back is not blamed on the build"),
        "{}",
        judged.summary
    );
    assert!(judged.summary.ends_with("run it again when its host is quieter"), "{}", judged.summary);
}

/// A p50 finding whose limit is 15 % above its baseline.
fn line(endpoint: &str, base: f64, tonight: f64) -> Finding {
    Finding {
        endpoint: endpoint.into(),
        metric: "p50".into(),
        outcome: if tonight > base * 1.15 { FindingOutcome::Regression } else { FindingOutcome::NoChange },
        baseline_value: Some(base),
        candidate_value: tonight,
        delta_pct: None,
        limit: Some(base * 1.15),
        interval: None,
        p_value: None,
        reason: "4.6 sigma above".into(),
    }
}

fn host_spell() -> Contention {
    Contention::HeldBack(held_back_by_host(Some(host::tests::stolen(14.1, 3.16)), &host::tests::ordinary_vm()).unwrap())
}

#[test]
fn a_held_back_night_whose_every_regression_stands_out_is_judged_as_measured() {
    let findings = vec![
        line(OVERALL_ENDPOINT, 1.0, 1.7),
        line("GET /boards", 0.6, 0.62),
        line("GET /boards/{id}/cards", 0.5, 82.0),
        line("GET /cards/{id}", 1.3, 1.37),
        line("PATCH /cards/{id}", 1.6, 1.65),
    ];
    let judgement = Judgement { outcome: VerdictOutcome::Regressed, findings, summary: "regressed: as judged".into() };
    assert_eq!(not_blamed_on_the_build(judgement.clone(), &host_spell(), None, 2, |_| 0.0), judgement);
}

#[test]
fn a_route_that_stands_out_from_a_held_back_run_is_still_the_build_s() {
    // The demo on a CI box whose host stole time: 80 ms on one route, the others 3-25 % slower.
    let findings = vec![
        line(OVERALL_ENDPOINT, 1.0, 1.7),
        line("GET /boards", 0.6, 0.75),
        line("GET /boards/{id}/cards", 0.5, 82.0),
        line("GET /cards/{id}", 1.3, 1.37),
        line("PATCH /cards/{id}", 1.6, 1.65),
        line("GET /search", 0.7, 0.8),
    ];
    let judgement = Judgement { outcome: VerdictOutcome::Regressed, findings, summary: String::new() };
    let judged = not_blamed_on_the_build(judgement, &host_spell(), None, 2, |_| 0.0);
    assert_eq!(judged.outcome, VerdictOutcome::Regressed);
    let outcomes: Vec<FindingOutcome> = judged.findings.iter().map(|f| f.outcome).collect();
    assert_eq!(
        outcomes,
        [
            FindingOutcome::Regression,
            FindingOutcome::Excused,
            FindingOutcome::Regression,
            FindingOutcome::NoChange,
            FindingOutcome::NoChange,
            FindingOutcome::NoChange
        ]
    );
    assert!(
        judged.findings[1].reason.starts_with(
            "not blamed on the build: measured while the host held the machine back (the other endpoints moved \
             +5.4 % and +0.07 ms at the median, spread ±3.3 % and ±11 µs at this one's level; to stand out, this \
             one had to be beyond that by its limit and by 53.5 spreads, and was not); judged alone it was 4.6 sigma"
        ),
        "{}",
        judged.findings[1].reason
    );
    assert!(
        judged.summary.starts_with(
            "regressed: 2 regressions, 1 excused, 3 unchanged; the excused latency regression was measured while \
             the host held the machine back, not beyond what the rest of the run went through, and the machine's"
        ),
        "{}",
        judged.summary
    );
}

#[test]
fn a_busier_machine_is_named_before_its_host() {
    let tonight = Some(host::tests::stolen(58.0, 3.0));
    assert!(matches!(contention(tonight, &host::tests::ordinary_vm()), Some(Contention::Busier(_))));
}
