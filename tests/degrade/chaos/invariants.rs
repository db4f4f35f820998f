//! The exactly-once invariants the chaos harness checks after every cycle, read straight from the database
//! (never through degrade's own queries, which are what is under test) and from the webhook receiver.

use std::collections::BTreeMap;

use degrade::store::Store;
use sqlx::Connection;

use crate::support::TestDb;
use crate::support::receiver::Receiver;

/// A statement run straight on the database.
pub(super) async fn execute(db: &TestDb, statement: &'static str) {
    let url = db.url_string();
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query(statement).execute(&mut c).await.unwrap();
    } else {
        let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query(statement).execute(&mut c).await.unwrap();
    }
}

/// One run's row: id, status, the run it confirms, stamped alerted, judged against a baseline (a runner's).
pub(super) type RunRow = (i64, String, Option<i64>, i64, i64);
/// One outbox row: its episode, its event.
type MessageRow = (Option<i64>, String);

/// The runs, the episodes and the outbox, read straight from the database.
pub(super) async fn rows(db: &TestDb) -> (Vec<RunRow>, Vec<(i64, String, String)>, Vec<MessageRow>) {
    let runs = "select id, status, confirms_run_id, cast(case when alerted_at is null then 0 else 1 end as bigint), \
                cast(case when judged_against is null then 0 else 1 end as bigint) from runs order by id";
    let episodes = "select id, kind, state from episodes order by id";
    let outbox = "select episode_id, event from outbox order by id";
    let url = db.url_string();
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        (
            sqlx::query_as(runs).fetch_all(&mut c).await.unwrap(),
            sqlx::query_as(episodes).fetch_all(&mut c).await.unwrap(),
            sqlx::query_as(outbox).fetch_all(&mut c).await.unwrap(),
        )
    } else {
        let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
        (
            sqlx::query_as(runs).fetch_all(&mut c).await.unwrap(),
            sqlx::query_as(episodes).fetch_all(&mut c).await.unwrap(),
            sqlx::query_as(outbox).fetch_all(&mut c).await.unwrap(),
        )
    }
}

/// The invariants' violations after `nights` nights, and how many messages the receiver got more than once.
pub(super) async fn invariants(db: &TestDb, store: &Store, hook: &Receiver, nights: usize) -> (Vec<String>, usize) {
    let (runs, episodes, outbox) = rows(db).await;
    let mut violations = Vec::new();
    let first_runs = runs.iter().filter(|run| run.2.is_none()).count();
    if first_runs != nights {
        violations.push(format!("{first_runs} first runs for {nights} nights"));
    }
    let status_of: BTreeMap<i64, String> = runs.iter().map(|r| (r.0, r.1.clone())).collect();
    for (id, status, confirms, alerted, runner) in &runs {
        if status == "running" || status == "confirming" {
            violations.push(format!("run #{id} left {status}"));
        }
        let first = store.first_verdict(*id).await.unwrap();
        let latest = store.latest_verdict(*id).await.unwrap();
        if first.as_ref().map(|v| v.id) != latest.as_ref().map(|v| v.id) {
            violations.push(format!("run #{id} judged more than once"));
        }
        let judged = first.is_some();
        if *runner == 1 && confirms.is_none() && status == "finished" && !judged {
            violations.push(format!("run #{id} measured and never judged"));
        }
        // As `NightStep::of` reads a night concluded: an invalid night judged is alerted (run-failed) too.
        let due = ["passed", "regressed", "failed"].contains(&status.as_str())
            || (["finished", "invalid"].contains(&status.as_str()) && judged);
        if *runner == 1 && confirms.is_none() && due && *alerted == 0 {
            violations.push(format!("run #{id} ({status}) never alerted"));
        }
        for base in latest.iter().flat_map(|v| v.baseline_run_ids.clone()) {
            let kind = status_of.get(&base).map_or("gone", String::as_str);
            if !["passed", "regressed", "finished"].contains(&kind) {
                violations.push(format!("run #{id}'s baseline holds run #{base}, {kind}"));
            }
        }
    }
    violations.extend(outbox_violations(&episodes, &outbox));
    let (undelivered, duplicates) = receiver_figures(hook, &episodes);
    violations.extend(undelivered);
    (violations, duplicates)
}

/// Each episode's opening written once in the outbox, its resolution at most once (one notifier here); a
/// regression's widenings, one per night that widened it, are neither (the outbox's keys keep each once).
fn outbox_violations(episodes: &[(i64, String, String)], outbox: &[MessageRow]) -> Vec<String> {
    let mut written: BTreeMap<(i64, &str), usize> = BTreeMap::new();
    for (episode, event) in outbox {
        *written.entry((episode.unwrap_or(-1), event.as_str())).or_default() += 1;
    }
    let mut violations = Vec::new();
    for (id, kind, _) in episodes {
        let opened = written.get(&(*id, kind.as_str())).copied().unwrap_or(0);
        if opened > 1 || (opened == 0 && ["regression", "run_failed"].contains(&kind.as_str())) {
            violations.push(format!("episode #{id} ({kind}) opened {opened} times in the outbox"));
        }
        let resolved = written
            .iter()
            .filter(|((e, event), _)| e == id && *event != kind && *event != "regression_widened")
            .map(|(_, n)| n)
            .sum::<usize>();
        if resolved > 1 {
            violations.push(format!("episode #{id} ({kind}) resolved {resolved} times in the outbox"));
        }
    }
    violations
}

/// The regression and run-failed episodes that never reached the receiver, and the repeats it got.
fn receiver_figures(hook: &Receiver, episodes: &[(i64, String, String)]) -> (Vec<String>, usize) {
    // Each message once by its idempotency key (a widening's names its night), each episode's opening at all.
    let mut received: BTreeMap<(String, i64), usize> = BTreeMap::new();
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    for message in hook.delivered() {
        let key =
            (message["event"].as_str().unwrap_or_default().to_owned(), message["episode_id"].as_i64().unwrap_or(-1));
        *received.entry(key).or_default() += 1;
        *by_key.entry(message["idempotency_key"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
    }
    let missing = episodes
        .iter()
        .filter(|(id, kind, _)| {
            ["regression", "run_failed"].contains(&kind.as_str()) && !received.contains_key(&(kind.clone(), *id))
        })
        .map(|(id, kind, _)| format!("episode #{id} ({kind}) never reached the receiver"))
        .collect();
    (missing, by_key.values().map(|n| n.saturating_sub(1)).sum())
}

/// A count read straight from the database.
pub(super) async fn count(db: &TestDb, query: &'static str) -> i64 {
    let url = db.url_string();
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar(query).fetch_one(&mut c).await.unwrap()
    } else {
        let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query_scalar(query).fetch_one(&mut c).await.unwrap()
    }
}
