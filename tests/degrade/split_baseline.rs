//! A night split into segments is judged only against nights split the same way, and a short baseline says so:
//! a trial's 2-way night read "0 valid runs in the baseline" beside valid single-machine nights of the same
//! shape, with no word of why.

use degrade::model::RunStatus;
use degrade::store::Store;

use crate::support::nights::store_night;
use crate::support::{TestDb, check};

#[tokio::test]
async fn a_split_nights_short_baseline_names_the_nights_measured_by_another_number_of_machines() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    for n in 0..7 {
        store_night(&store, "checkout", n, 100.0, RunStatus::Finished).await;
    }
    let split = store_night(&store, "checkout", 7, 100.0, RunStatus::Finished).await;
    store.close().await;
    // As the segment that prepared it records it (`Store::segment_build_prepared`).
    let pool = sqlx::SqlitePool::connect(&db.url_string()).await.unwrap();
    sqlx::query("update runs set segments = 2 where id = $1").bind(split).execute(&pool).await.unwrap();
    pool.close().await;
    let (code, stdout, stderr) = check(&db, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let said = format!(
        "7 earlier runs of this workload were measured by one machine, and run #{split} by 2 segments: a night is \
         judged only against nights split the same way"
    );
    assert!(stdout.contains(&said), "{stdout}");
}
