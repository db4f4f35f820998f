//! What the manual in `docs/` quotes of degrade's answers is what degrade answers (`support::quoted`): the
//! `validate` summary of the files `init` writes, the JSON API's answers over real HTTP, and the webhook
//! payloads as a receiver on 127.0.0.1 gets them, after nights judged by the real judge.

use degrade::model::RunStatus;
use degrade::notify::Courier;
use degrade::store::Store;
use serde_json::Value;

use crate::support::app::TestApp;
use crate::support::config::{QUICK_SCENARIO, alerting_config, load};
use crate::support::nights::{judge_and_alert, store_night};
use crate::support::quoted::assert_quoted;
use crate::support::receiver::Receiver;
use crate::support::{TestDb, degrade, project, text};

#[test]
fn validate_summarises_the_files_init_writes() {
    let dir = tempfile::tempdir().unwrap();
    assert!(degrade(dir.path(), &["init"], &[]).status.success());
    let output = degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert_quoted("validate-init", &stdout);
}

/// `GET path` and its answer as the manual shows it: the request line, then the JSON, pretty-printed.
async fn answer(app: &TestApp, path: &str) -> String {
    let (status, json) = app.get_json(path).await;
    format!("GET {path} → {status}\n{}\n", serde_json::to_string_pretty(&json).unwrap())
}

#[tokio::test]
async fn the_api_answers_as_the_manual_shows() {
    let db = TestDb::sqlite();
    let app = TestApp::spawn(&db).await;
    let last = app.store_nights(8).await;
    let mut printed = String::new();
    for path in [
        "/api/v1/scenarios".to_owned(),
        "/api/v1/scenarios/checkout/runs?limit=2".to_owned(),
        format!("/api/v1/runs/{last}"),
        "/api/v1/scenarios/checkout/trend?endpoint=GET%20/boards/%7Bid%7D&metric=p95&range=30d".to_owned(),
        "/api/v1/runs/424242".to_owned(),
    ] {
        printed += &answer(&app, &path).await;
    }
    assert_quoted("api-answers", &printed);
}

#[tokio::test]
async fn webhooks_get_the_payloads_the_manual_shows() {
    let slack = Receiver::start().await;
    let json = Receiver::start().await;
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &slack.url(), &json.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let courier = Courier::new(store.clone(), config.clone()).unwrap();
    // Ten ordinary nights, then a slower one, judged and alerted as the nightly chain does.
    for n in 0..=10 {
        let boards_ms = if n == 10 { 150.0 } else { 100.0 * (1.0 + 0.01 * (n % 3) as f64) };
        let id = store_night(&store, "checkout", n, boards_ms, RunStatus::Finished).await;
        if n >= 5 {
            judge_and_alert(&store, &config, id).await;
        }
    }
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "one regression message per webhook");
    let pretty = |messages: Vec<Value>| serde_json::to_string_pretty(&messages[0]).unwrap();
    let printed = format!("slack:\n{}\njson:\n{}\n", pretty(slack.delivered()), pretty(json.delivered()));
    assert_quoted("webhook-payloads", &printed);

    // The episode those messages belong to, as the API lists it.
    let app = TestApp::spawn(&db).await;
    assert_quoted("api-episodes", &answer(&app, "/api/v1/episodes").await);
}
