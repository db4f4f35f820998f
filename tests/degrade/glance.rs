//! What a glance at degrade's outputs says, on runs stored through the real store: a change past ×10 reads
//! as the same factor in `check` (text, Markdown, JUnit; JSON keeps the number) and in the alert.

use chrono::Utc;
use degrade::model::{BaselineSpec, Change, Finding, RunStatus};
use degrade::notify::Courier;
use degrade::pipeline::alerting;
use degrade::pipeline::judge_run::{IfRegressed, judge_run};
use degrade::store::Store;

use crate::support::config::{QUICK_SCENARIO, alerting_config, load};
use crate::support::nights::{WOBBLE, store_night};
use crate::support::receiver::Receiver;
use crate::support::{TestDb, check, project};

#[tokio::test]
async fn a_change_past_tenfold_reads_as_one_factor_in_check_and_in_the_alert() {
    let (slack, json) = (Receiver::start().await, Receiver::start().await);
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &slack.url(), &json.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    for n in 0..10 {
        store_night(&store, "checkout", n, 10.0 * WOBBLE[n as usize], RunStatus::Finished).await;
    }
    // Tonight boards takes about 316 times as long: the judge finds it, the alert goes out.
    let slow = store_night(&store, "checkout", 10, 3163.0, RunStatus::Finished).await;
    let run = store.find_run(slow).await.unwrap().unwrap();
    let report = judge_run(&store, &config, &run, &BaselineSpec::LastDays(7), IfRegressed::Stands, Utc::now());
    let report = report.await.unwrap();
    alerting::after_judgement(&store, &config, &report, Utc::now()).await.unwrap();
    Courier::new(store.clone(), config.clone()).unwrap().deliver_due().await.unwrap();
    let boards = |f: &&Finding| f.endpoint == "GET /boards/{id}" && f.metric == "p95";
    let delta = report.findings.iter().find(boards).and_then(|f| f.delta_pct).expect("boards p95 was judged");
    let (factor, exact) = (Change::from_pct(delta).to_string(), format!("{delta:+.1} %"));
    assert!(factor.starts_with('×') && delta > 20_000.0, "{factor} for {delta}");

    let [message] = slack.delivered().try_into().unwrap();
    let worse = message["blocks"][2]["text"]["text"].as_str().unwrap();
    assert!(worse.contains(&format!(" ms → 3163.0 ms ({factor})")), "the alert says {factor}: {worse}");
    let [own] = json.delivered().try_into().unwrap();
    let worse = own["worse"].as_array().unwrap().iter();
    let numbers = worse.clone().find(|w| w["endpoint"] == "GET /boards/{id}" && w["metric"] == "p95").unwrap();
    assert_eq!(numbers["delta_pct"].as_f64(), Some(delta), "the JSON alert keeps the number: {own:#}");

    let slow = slow.to_string();
    for format in ["human", "markdown", "junit"] {
        let (code, stdout, stderr) = check(&db, &["--run", &slow, "--format", format]);
        assert_eq!(code, Some(1), "{stdout}{stderr}");
        let line = stdout.lines().find(|l| l.contains("GET /boards/{id}") && l.contains("3163.0 ms")).unwrap();
        assert!(line.contains(&factor) && !line.contains(&exact), "{format} writes {factor}: {line}");
    }
    let (_, stdout, _) = check(&db, &["--run", &slow, "--format", "json"]);
    let checked: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mut findings = checked["findings"].as_array().unwrap().iter();
    let finding = findings.find(|f| f["endpoint"] == "GET /boards/{id}" && f["metric"] == "p95");
    assert_eq!(finding.unwrap()["delta_pct"].as_f64(), Some(delta), "JSON keeps the number, not the text");
    store.close().await;
}
