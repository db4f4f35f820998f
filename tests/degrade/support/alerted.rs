//! A project alerting to two stub receivers on 127.0.0.1 (Slack-style and JSON), its SQLite store holding
//! `checkout`'s usual nights: where the alert tests start.

use std::sync::Arc;

use degrade::config::Config;
use degrade::model::RunStatus;
use degrade::notify::Courier;
use degrade::store::Store;

use super::config::{QUICK_SCENARIO, alerting_config, load};
use super::nights::store_night;
use super::receiver::Receiver;
use super::{TestDb, project};

/// The project, its receivers and its store. Bind it whole (`let alerted = …; let Alerted { store, .. } = &alerted;`):
/// the fields a pattern leaves out would otherwise be dropped with it, the receivers stopped and the database gone.
pub struct Alerted {
    pub slack: Receiver,
    pub json: Receiver,
    pub config: Arc<Config>,
    pub store: Store,
    pub courier: Courier,
    pub _project: tempfile::TempDir,
    pub _db: TestDb,
}

impl Alerted {
    /// `nights` ordinary nights of `checkout` (p95 within 2 % of 100 ms) stored, none judged.
    pub async fn with_usual_nights(nights: i64) -> Self {
        let slack = Receiver::start().await;
        let json = Receiver::start().await;
        let (project_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
        let config = load(&config_path, &slack.url(), &json.url());
        let db = TestDb::sqlite();
        let store = Store::connect(&db.url).await.unwrap();
        let courier = Courier::new(store.clone(), config.clone()).unwrap();
        for n in 0..nights {
            store_night(&store, "checkout", n, usual_p95(n), RunStatus::Finished).await;
        }
        Self { slack, json, config, store, courier, _project: project_dir, _db: db }
    }
}

/// Night `n`'s p95 on the usual nights, ms: within 2 % of 100.
pub fn usual_p95(n: i64) -> f64 {
    100.0 * (1.0 + 0.01 * (n % 3) as f64)
}
