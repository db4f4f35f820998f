//! The unit tests of `confirm`.

use super::*;

fn found(endpoint: &str, metric: &str, outcome: FindingOutcome) -> Finding {
    Finding {
        endpoint: endpoint.into(),
        metric: metric.into(),
        outcome,
        baseline_value: Some(1.0),
        candidate_value: 2.0,
        delta_pct: Some(100.0),
        limit: Some(1.1),
        interval: None,
        p_value: None,
        reason: "9.0 sigma above the level of 7 nights".into(),
    }
}

fn judged(findings: Vec<Finding>) -> Judgement {
    let summary = counted_findings(VerdictOutcome::Regressed, &findings);
    Judgement { outcome: VerdictOutcome::Regressed, findings, summary }
}

fn outcomes(judgement: &Judgement) -> Vec<FindingOutcome> {
    judgement.findings.iter().map(|f| f.outcome).collect()
}

#[test]
fn what_the_rerun_alone_found_is_unconfirmed() {
    let first =
        [found("GET /a", "p95", FindingOutcome::Regression), found("GET /b", "p50", FindingOutcome::Regression)];
    let rerun = judged(vec![
        found("GET /a", "p95", FindingOutcome::Regression),
        found("GET /a", "p50", FindingOutcome::Regression),
        found("GET /c", "max_p95_ms", FindingOutcome::GateBreached),
        found("GET /b", "p50", FindingOutcome::NoChange),
    ]);
    let judged = only_what_reproduced(rerun, 7, &first);
    assert_eq!(judged.outcome, VerdictOutcome::Regressed);
    assert_eq!(
        outcomes(&judged),
        [
            FindingOutcome::Regression,
            FindingOutcome::Unconfirmed,
            FindingOutcome::Unconfirmed,
            FindingOutcome::NoChange
        ]
    );
    assert!(judged.findings[1].reason.starts_with("seen in this rerun only: run #7, the night's first run"));
    assert!(judged.findings[1].reason.ends_with("judged alone, 9.0 sigma above the level of 7 nights"));
    assert_eq!(judged.summary, "regressed: 1 regression, 2 not reproduced, 1 unchanged");
}

#[test]
fn a_rerun_that_regressed_only_elsewhere_passes_and_stays_out_of_the_baseline() {
    let first = [found("GET /a", "p95", FindingOutcome::Regression)];
    let rerun = judged(vec![
        found("GET /b", "p95", FindingOutcome::Regression),
        found("GET /a", "p95", FindingOutcome::NoChange),
    ]);
    let judged = only_what_reproduced(rerun, 7, &first);
    assert_eq!(judged.outcome, VerdictOutcome::Passed);
    assert_eq!(judged.summary, "passed: 1 not reproduced, 1 unchanged");
    let rerun = report(8, judged);
    let confirmation = Confirmation { first_run: 7, rerun: Rerun::NotReproduced };
    let ended = statuses(&confirmation, &rerun);
    assert_eq!(ended, (RunStatus::Unconfirmed, Some(RunStatus::Unconfirmed)));
}

fn report(run_id: RunId, judgement: Judgement) -> CheckReport {
    CheckReport {
        scenario: "shop".into(),
        run_id,
        build_id: None,
        started_at: chrono::DateTime::UNIX_EPOCH,
        outcome: judgement.outcome,
        summary: judgement.summary,
        baseline_spec: "last-7d".into(),
        baseline: Vec::new(),
        left_out: Vec::new(),
        findings: judgement.findings,
        confirmation: None,
        capacity: None,
    }
}

#[test]
fn a_gate_breached_once_is_refuted_by_a_rerun_within_it_however_short_the_baseline() {
    let first = report(2, judged(vec![found("demo-api", "CPU ceiling", FindingOutcome::GateBreached)]));
    // The rerun's baseline is too short for the relative tests, but its gates were judged.
    let within = Judgement {
        outcome: VerdictOutcome::Inconclusive,
        findings: vec![found("demo-api", "CPU ceiling", FindingOutcome::GatePassed)],
        summary: "inconclusive: 1 valid run in the baseline, at least 5 needed".into(),
    };
    assert_eq!(compare(&first, &report(3, within.clone())).rerun, Rerun::NotReproduced);
    let again = Judgement {
        findings: vec![found("demo-api", "CPU ceiling", FindingOutcome::GateBreached)],
        outcome: VerdictOutcome::Regressed,
        ..within.clone()
    };
    assert!(matches!(compare(&first, &report(3, again)).rerun, Rerun::Reproduced(_)));
    // A latency regression beside the gate needs the baseline the rerun did not have: undecided.
    let both = report(
        2,
        judged(vec![
            found("demo-api", "CPU ceiling", FindingOutcome::GateBreached),
            found("GET /a", "p50", FindingOutcome::Regression),
        ]),
    );
    assert_eq!(compare(&both, &report(3, within)).rerun, Rerun::Undecided);
}

#[test]
fn a_rerun_that_could_not_be_judged_neither_confirms_nor_refutes() {
    let first = report(7, judged(vec![found("GET /a", "p50", FindingOutcome::Regression)]));
    // Measured on a held-back machine: the same slowdown, excused, and the verdict inconclusive.
    let held_back = Judgement {
        outcome: VerdictOutcome::Inconclusive,
        findings: vec![found("GET /a", "p50", FindingOutcome::Excused)],
        summary: "inconclusive: the machine's host held it back".into(),
    };
    let confirmation = compare(&first, &report(8, held_back.clone()));
    assert_eq!(confirmation.rerun, Rerun::Undecided);
    assert!(!confirmation.confirmed());
    assert!(confirmation.describe(8).starts_with("undecided: run #7 was judged regressed, and rerun #8"));
    let ended = statuses(&confirmation, &report(8, held_back));
    assert_eq!(ended, (RunStatus::Regressed, Some(RunStatus::Unconfirmed)), "the first verdict stands");
    let undecided = [(8, "run #8 is invalid".into()), (9, "run #9 is invalid".into())];
    let note = stands_note(&undecided, LastRerun::Undecided);
    assert!(note.starts_with("the confirmation could not be made: reruns #8, #9 of the same build"), "{note}");
    let again = report(8, judged(vec![found("GET /a", "p50", FindingOutcome::Regression)]));
    assert_eq!(compare(&first, &again).rerun, Rerun::Reproduced(vec![("GET /a".into(), "p50".into())]));
}

#[test]
fn a_rerun_that_excused_the_finding_cannot_pass_the_night() {
    // The host held the rerun back: GET /a p95 excused, and only GET /b, seen in the rerun alone, stood out.
    let first = report(7, judged(vec![found("GET /a", "p95", FindingOutcome::Regression)]));
    let rerun = Judgement {
        outcome: VerdictOutcome::Passed,
        findings: vec![
            found("GET /a", "p95", FindingOutcome::Excused),
            found("GET /b", "p50", FindingOutcome::Unconfirmed),
        ],
        summary: "passed: 1 excused, 1 not reproduced".into(),
    };
    assert_eq!(compare(&first, &report(8, rerun)).rerun, Rerun::Undecided);
    let note = stands_note(&[(8, "its machine was held back".into())], LastRerun::MeasuredNothing(Some(9)));
    assert!(note.starts_with("rerun #9 of the same build measured nothing to judge"), "{note}");
    assert!(note.ends_with("; rerun #8 before it could not be judged (#8: its machine was held back)"), "{note}");
}

#[test]
fn a_verdict_that_did_not_regress_is_left_alone() {
    let passed = Judgement {
        outcome: VerdictOutcome::Inconclusive,
        findings: vec![found("GET /b", "p95", FindingOutcome::Excused)],
        summary: "inconclusive: …".into(),
    };
    assert_eq!(only_what_reproduced(passed.clone(), 7, &[]), passed);
}
