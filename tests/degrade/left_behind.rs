//! What a stopped degrade leaves behind, in the store, told once and run on both backends: runs left `running`
//! or `confirming` are found where the scope says and nowhere else, a pair is decided once however many
//! degrades try, and a database where an older degrade's rerun was killed is brought to `confirming` by its
//! migration.

use chrono::{Duration, Utc};
use degrade::model::{NewRun, NewVerdict, RunStatus, VerdictOutcome};
use degrade::store::{DatabaseUrl, LeftBehind, NewEpisode, Store};

use crate::support::TestDb;
use crate::support::nights::{new_run, store_night};

#[tokio::test]
async fn left_behind_on_sqlite() {
    let db = TestDb::sqlite();
    left_behind_story(&db).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn left_behind_on_postgres() {
    let db = TestDb::postgres().await;
    left_behind_story(&db).await;
}

fn verdict(outcome: VerdictOutcome, spec: &str) -> NewVerdict {
    NewVerdict {
        baseline_spec: spec.into(),
        baseline_run_ids: vec![],
        outcome,
        summary: format!("{outcome:?}"),
        created_at: Utc::now(),
        findings: vec![],
    }
}

async fn status(store: &Store, run: i64) -> RunStatus {
    store.find_run(run).await.unwrap().unwrap().status
}

/// Runs `sql` on the test's database, as an older degrade or a kill would have left it.
async fn execute(db: &TestDb, sql: &str) {
    match &db.url {
        DatabaseUrl::Sqlite(_) => {
            let pool = sqlx::SqlitePool::connect(&db.url_string()).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&pool).await.unwrap();
            pool.close().await;
        }
        DatabaseUrl::Postgres(_) => {
            let pool = sqlx::PgPool::connect(&db.url_string()).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&pool).await.unwrap();
            pool.close().await;
        }
    }
}

async fn left_behind_story(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let now = Utc::now();
    // shop: a regression to confirm, and its rerun, linked from its creation, cut short.
    let first = store_night(&store, "shop", 0, 100.0, RunStatus::Finished).await;
    store.save_verdict_to_confirm(first, &verdict(VerdictOutcome::Regressed, "last-7d")).await.unwrap();
    assert_eq!(status(&store, first).await, RunStatus::Confirming);
    let rerun = store.create_run(&NewRun { confirms: Some(first), ..new_run("shop", 1) }).await.unwrap();
    assert_eq!(
        (store.confirmed_by(rerun).await.unwrap(), store.rerun_of(first).await.unwrap()),
        (Some(first), Some(rerun))
    );
    // search: the same, but a live degrade holds its lease.
    let busy = store_night(&store, "search", 0, 100.0, RunStatus::Finished).await;
    store.save_verdict_to_confirm(busy, &verdict(VerdictOutcome::Regressed, "last-7d")).await.unwrap();
    let busy_rerun = store.create_run(&NewRun { confirms: Some(busy), ..new_run("search", 1) }).await.unwrap();
    assert!(store.acquire_lease("search", "live:1:x", now, now + Duration::minutes(2)).await.unwrap());

    let unleased = LeftBehind::Unleased(now);
    assert_eq!(store.confirming_left_behind(unleased).await.unwrap(), [first]);
    assert_eq!(store.confirming_left_behind(LeftBehind::Claimed("shop")).await.unwrap(), [first]);
    assert_eq!(store.confirming_left_behind(LeftBehind::Claimed("search")).await.unwrap(), [busy]);
    assert_eq!(store.abort_interrupted_runs(unleased, now).await.unwrap(), [rerun]);
    assert_eq!(status(&store, busy_rerun).await, RunStatus::Running, "a live degrade's run is left alone");

    // A verdict of a `check` since does not move a confirming run, nor change the verdict it is decided by.
    store.save_verdict(first, &verdict(VerdictOutcome::Passed, "run:1")).await.unwrap();
    assert_eq!(status(&store, first).await, RunStatus::Confirming);
    let runners = store.first_verdict(first).await.unwrap().unwrap();
    assert_eq!((runners.outcome, runners.baseline_spec.as_str()), (VerdictOutcome::Regressed, "last-7d"));
    assert_eq!(store.latest_verdict(first).await.unwrap().unwrap().outcome, VerdictOutcome::Passed);

    // Decided once: the second degrade to try changes nothing.
    assert!(store.end_confirmation(first, RunStatus::Unconfirmed, &[(rerun, RunStatus::Unconfirmed)]).await.unwrap());
    assert!(!store.end_confirmation(first, RunStatus::Regressed, &[(rerun, RunStatus::Regressed)]).await.unwrap());
    assert_eq!(
        (status(&store, first).await, status(&store, rerun).await),
        (RunStatus::Unconfirmed, RunStatus::Aborted),
        "a rerun that measured nothing keeps its status"
    );
    assert!(store.confirming_left_behind(LeftBehind::Claimed("shop")).await.unwrap().is_empty());

    // A pair decided late is alerted unless the team has heard of a later night: a later run only measured
    // (`degrade run`) does not count, one judged does, and so does a regression episode a later run opened.
    let later = store_night(&store, "shop", 2, 100.0, RunStatus::Finished).await;
    assert!(!store.superseded(first).await.unwrap());
    store.save_verdict(later, &verdict(VerdictOutcome::Passed, "last-7d")).await.unwrap();
    assert!(store.superseded(first).await.unwrap());
    let latest = store_night(&store, "shop", 3, 100.0, RunStatus::Finished).await;
    assert!(!store.superseded(later).await.unwrap());
    let episode = NewEpisode {
        scenario: "shop".into(),
        kind: "regression".into(),
        run_id: Some(latest),
        last_good_run_id: None,
        summary: "later".into(),
        at: now,
    };
    store.open_episode(&episode, |_| vec![]).await.unwrap();
    assert!(store.superseded(later).await.unwrap());
    migration_story(db, store, later).await;
}

/// An older degrade left a first run `unconfirmed`, with no rerun linked, when its rerun was killed; the
/// migration makes it `confirming`. Not a rerun its first run did not reproduce, nor a run of a scenario a live
/// degrade holds the lease on (its rerun may be under way).
async fn migration_story(db: &TestDb, store: Store, earlier: i64) {
    let killed = store_night(&store, "shop", 4, 100.0, RunStatus::Finished).await;
    let leased = store_night(&store, "search", 4, 100.0, RunStatus::Finished).await;
    let rerun = store.create_run(&NewRun { confirms: Some(earlier), ..new_run("shop", 5) }).await.unwrap();
    let unconfirmed = format!("update runs set status = 'unconfirmed' where id in ({killed}, {leased}, {rerun})");
    execute(db, &unconfirmed).await;
    store.close().await;
    execute(db, "delete from _sqlx_migrations where version = 11").await;
    let store = Store::connect(&db.url).await.unwrap();
    let statuses = [status(&store, killed).await, status(&store, leased).await, status(&store, rerun).await];
    assert_eq!(statuses, [RunStatus::Confirming, RunStatus::Unconfirmed, RunStatus::Unconfirmed]);
    store.close().await;
}
