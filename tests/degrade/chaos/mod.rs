//! The chaos test of the exactly-once promise: cycles of one scenario's nights through the real binary, each
//! night with a fault point (`DEGRADE_FAULT`, `store::fault`: a SIGKILL before or after a durable step, or a
//! committed write whose acknowledgement is lost) and a target (answering, answering every other request 500,
//! or down); the nights whose point is the capacity search's run one (a small ladder). A night the fault
//! stopped (killed, or ended by the database it lost) is resumed, its lease and its alerts' claims let run out
//! first as they would have by then, either by the next `check --run-now` (a setup without `serve`) or by
//! `degrade serve` started again, whose watch settles it and whose courier posts what is due; the harness
//! waits until serve has concluded it. After every cycle the invariants are checked against the store, the
//! webhook receiver, the dashboard and `check`:
//!
//! - no run is left `running` or `confirming`, and each night has one first run;
//! - every night measured and judged has one verdict, and none measured is left unjudged;
//! - every night judged or failed is stamped alerted;
//! - every episode's opening is written once in the outbox, and its resolution at most once;
//! - every regression and run-failed episode reached the receiver (a repeat is a duplicate, counted apart
//!   from violations: a webhook is at least once);
//! - no baseline holds a run that is unconfirmed, failed, invalid, aborted or confirming;
//! - the dashboard (JSON and pages) and `check --format json` say of each night what the store holds
//!   (`agreement`);
//! - every fault point was hit (the harness fails and lists those that were not).
//!
//! `cargo test` runs one point of every step (killed after it: the window that leaves the most undone) on
//! SQLite, and on PostgreSQL with `--include-ignored`; `ci/chaos.sh N` first hits every point in turn, then
//! draws N cycles at random (`CHAOS_NIGHTS`, `CHAOS_SEED`), on both, and prints the figures.

mod agreement;
mod harness;
mod invariants;

use std::sync::atomic::Ordering;

use degrade::store::fault::{FaultPoint, Step, When};
use rand::{Rng, SeedableRng};

use crate::support::TestDb;
use crate::support::killable::HalfFailing;
use harness::{Figures, Harness, Resume};

/// The targets of the nights a point reaches at any target, in turn: answering and down, so each night moves
/// an episode (a run failed, or recovered from) and most nights send a message.
const MODES: [u32; 2] = [0, 2];

/// Whether only a regression (and its confirmation) reaches `point`: its night's target half fails.
fn needs_a_regression(point: FaultPoint) -> bool {
    matches!(point.step, Step::RerunCreated | Step::RerunStored | Step::RerunJudged | Step::PairDecided)
}

/// The target for the `turn`-th night, at `point`: half failing (and slow) where only a regression reaches
/// it; else answering or down in turn, answering where a measured night is wanted. Half-failing nights are
/// kept a minority: a confirmed regression is a baseline night, and a baseline of mostly failing nights would
/// make one more no regression.
fn mode_for(point: FaultPoint, turn: usize) -> u32 {
    match (point.step, MODES[turn % MODES.len()]) {
        _ if needs_a_regression(point) => 1,
        (Step::VerdictStored | Step::TelemetryStored | Step::ResultsStored | Step::CapacityStored, _) => 0,
        (_, mode) => mode,
    }
}

/// `points` with those that need a regression spread among the others, a clean night or more between two.
fn interleaved(points: &[FaultPoint]) -> Vec<FaultPoint> {
    let (regressions, others): (Vec<FaultPoint>, Vec<FaultPoint>) =
        points.iter().copied().partition(|p| needs_a_regression(*p));
    let every = (others.len() / regressions.len().max(1)).max(1);
    let mut regressions = regressions.into_iter();
    let mut order = Vec::new();
    for (n, point) in others.into_iter().enumerate() {
        order.push(point);
        if n % every == every - 1 {
            order.extend(regressions.next());
        }
    }
    order.extend(regressions);
    order
}

/// 0: answering; 1: every other request 500; 2: down.
pub(super) async fn set_target(target: &HalfFailing, mode: u32) {
    target.failing.store(mode == 1, Ordering::Relaxed);
    if mode == 2 { target.go_down() } else { target.come_up().await }
}

fn report(backend: &str, figures: &Figures, reachable: usize) {
    eprintln!(
        "chaos on {backend}: {} nights ({} stopped ones resumed, {} of them by serve's watch), {} killed, {} \
         acknowledgements lost, {} of {} fault points hit, {} invariant violations, {} duplicates at the receiver; \
         the dashboard compared on {} run records, {} check reports compared",
        figures.nights,
        figures.resumed,
        figures.resumed_by_serve,
        figures.kills,
        figures.lost_acknowledgements,
        figures.points_hit.len(),
        reachable,
        figures.violations.len(),
        figures.duplicates_at_receiver,
        figures.runs_compared,
        figures.reports_compared
    );
}

/// Hits each of `points` once: up to six nights each, the target moved on until the point is reached (a busy
/// machine's invalid night, never judged, reaches no confirmation: another night is tried). Every other
/// point's night is resumed by `serve`, the others by the next night.
async fn in_turn(harness: &mut Harness<'_>, points: &[FaultPoint]) {
    for (n, point) in interleaved(points).iter().enumerate() {
        let resume = if n % 2 == 0 { Resume::NextNight } else { Resume::Serve };
        for attempt in 0..6 {
            let mode = mode_for(*point, harness.turn);
            if harness.cycle(*point, mode, resume).await {
                break;
            }
            eprintln!("chaos: {} not reached in night {attempt} (target {mode})", point.name());
        }
    }
}

/// The short form: every step killed after it once; each must be hit, no invariant broken.
async fn every_step_keeps_every_night_once(db: &TestDb, backend: &str) {
    let mut harness = Harness::start(db).await;
    let points: Vec<FaultPoint> = FaultPoint::all().into_iter().filter(|p| p.when == When::After).collect();
    in_turn(&mut harness, &points).await;
    let figures = harness.stop().await;
    report(backend, &figures, points.len());
    assert!(figures.violations.is_empty(), "{:#?}", figures.violations);
    let missed: Vec<String> = points.iter().map(|p| p.name()).filter(|n| !figures.points_hit.contains(n)).collect();
    assert!(missed.is_empty(), "every step hit; missed: {missed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_killed_keeps_every_night_once_on_sqlite() {
    every_step_keeps_every_night_once(&TestDb::sqlite(), "SQLite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn every_step_killed_keeps_every_night_once_on_postgresql() {
    every_step_keeps_every_night_once(&TestDb::postgres().await, "PostgreSQL").await;
}

/// The long form on one database: every point in turn, then `cycles` drawn at random.
async fn long_form(db: &TestDb, backend: &str, cycles: usize, seed: u64) -> Vec<String> {
    let mut harness = Harness::start(db).await;
    let points = FaultPoint::all();
    in_turn(&mut harness, &points).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..cycles {
        let point = points[rng.random_range(0..points.len())];
        // Half failing one night in five, drawn: a minority of the baseline, as `mode_for` explains.
        let mode =
            if rng.random_bool(0.5) { mode_for(point, harness.turn) } else { [0, 0, 0, 1, 2][rng.random_range(0..5)] };
        let resume = if rng.random_bool(0.5) { Resume::NextNight } else { Resume::Serve };
        harness.cycle(point, mode, resume).await;
    }
    let figures = harness.stop().await;
    report(backend, &figures, points.len());
    let mut violations = figures.violations;
    let missed: Vec<String> =
        points.iter().map(|p| p.name()).filter(|name| !figures.points_hit.contains(name)).collect();
    if !missed.is_empty() {
        violations.push(format!("{backend}: fault points never hit: {}", missed.join(", ")));
    }
    violations
}

/// `ci/chaos.sh N`: every point, then N cycles drawn at random, on SQLite and, when
/// `DEGRADE_TEST_POSTGRES_URL` is set, on PostgreSQL; prints the figures and fails on any violation.
/// `CHAOS_BACKEND=sqlite` or `postgres` runs one of them alone, so that ci/chaos.sh can run the two side by
/// side in two processes (each backend's harness has its own target, receiver and database).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the long form: ci/chaos.sh N"]
async fn random_nights_keep_every_night_once() {
    let cycles: usize = std::env::var("CHAOS_NIGHTS").ok().and_then(|n| n.parse().ok()).unwrap_or(60);
    let seed: u64 = std::env::var("CHAOS_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(46);
    let only = std::env::var("CHAOS_BACKEND").ok();
    let runs = |backend: &str| only.as_deref().is_none_or(|only| only.eq_ignore_ascii_case(backend));
    let mut violations = Vec::new();
    if runs("sqlite") {
        violations.extend(long_form(&TestDb::sqlite(), "SQLite", cycles, seed).await);
    }
    if runs("postgres") {
        if std::env::var(crate::support::POSTGRES_ENV).is_ok() {
            violations.extend(long_form(&TestDb::postgres().await, "PostgreSQL", cycles, seed).await);
        } else {
            eprintln!("chaos on PostgreSQL: skipped ({} is not set)", crate::support::POSTGRES_ENV);
        }
    }
    for violation in &violations {
        eprintln!("chaos violation: {}", violation.replace('\n', "\n    "));
    }
    assert!(violations.is_empty(), "{violations:#?}");
}
