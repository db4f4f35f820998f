//! Episodes and alerts on runs stored through the real store, judged by the real judge, delivered over
//! real HTTP to a stub receiver on 127.0.0.1: once when a regression opens, once when it recovers, never
//! twice, and not lost when the receiver or degrade is down for a while.

use chrono::{TimeDelta, Utc};
use degrade::clock::Clock;
use degrade::config::Config;
use degrade::model::{RunStatus, VerdictOutcome};
use degrade::notify::Courier;
use degrade::pipeline::alerting;
use degrade::store::{Claim, Store};
use serde_json::Value;

use crate::support::alerted::{Alerted, usual_p95};
use crate::support::config::{QUICK_SCENARIO, alerting_config, load};
use crate::support::nights::{judge_and_alert, new_run, night, store_both_routes_night, store_night};
use crate::support::receiver::{Answer, Receiver, unused_address, url_at};
use crate::support::{TestDb, project};

/// Judges the stored run `id` against last-7d and updates episodes, as the nightly chain does.
async fn judge_night(store: &Store, config: &Config, id: i64) -> VerdictOutcome {
    judge_and_alert(store, config, id).await.outcome
}

fn texts(value: &Value) -> String {
    value.to_string()
}

#[tokio::test]
async fn a_regression_alerts_once_and_its_recovery_once() {
    let slack = Receiver::start().await;
    let json = Receiver::start().await;
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &slack.url(), &json.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let courier = Courier::new(store.clone(), config.clone()).unwrap();
    // Ten ordinary nights, the later ones judged (and passed) as the nightly service would.
    for n in 0..10 {
        let id = store_night(&store, "checkout", n, usual_p95(n), RunStatus::Finished).await;
        if n >= 5 {
            assert_eq!(judge_night(&store, &config, id).await, VerdictOutcome::Passed, "night {n}");
        }
    }
    courier.deliver_due().await.unwrap();
    assert!(slack.posts().is_empty(), "passing nights say nothing: {:?}", slack.posts());

    let regressed = store_night(&store, "checkout", 10, 150.0, RunStatus::Finished).await;
    assert_eq!(judge_night(&store, &config, regressed).await, VerdictOutcome::Regressed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "one message per webhook");
    let again = store_night(&store, "checkout", 11, 152.0, RunStatus::Finished).await;
    assert_eq!(judge_night(&store, &config, again).await, VerdictOutcome::Regressed);
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "the episode is open already: no second alert");

    let [message] = slack.delivered().try_into().unwrap();
    let text = message["text"].as_str().unwrap();
    assert_eq!(text, "degrade: checkout regressed on build 1.0.10", "{message:#}");
    let blocks = message["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "header");
    assert_eq!(blocks[0]["text"]["text"], "Regression in checkout");
    let facts = blocks[1]["text"]["text"].as_str().unwrap();
    assert!(facts.contains(&format!("*Run* <https://degrade.example.com/runs/{regressed}|#{regressed}>")), "{facts}");
    assert!(
        facts.contains("*Build* `1.0.10`") && facts.contains("*Builds since the last good run (#10)* `1.0.10`"),
        "{facts}"
    );
    let worse = blocks[2]["text"]["text"].as_str().unwrap();
    assert!(worse.starts_with("• `GET /boards/{id}` p95: 100."), "{worse}");
    assert!(worse.contains(" ms → 150.0 ms (+4") || worse.contains(" ms → 150.0 ms (+5"), "{worse}");
    assert!(!worse.contains("POST /cards"), "only what got worse is listed: {worse}");
    assert_eq!(blocks.last().unwrap()["type"], "context");

    let recovered = store_night(&store, "checkout", 12, 101.0, RunStatus::Finished).await;
    assert_eq!(judge_night(&store, &config, recovered).await, VerdictOutcome::Passed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2);
    assert_eq!(courier.deliver_due().await.unwrap(), 0);
    let slack_messages = slack.delivered();
    assert_eq!(slack_messages.len(), 2, "{slack_messages:#?}");
    assert_eq!(slack_messages[1]["text"], "degrade: checkout passes again on build 1.0.12");

    let json_messages = json.delivered();
    assert_eq!(json_messages.len(), 2);
    let opened = &json_messages[0];
    assert_eq!(opened["schema"], "degrade.alert.v1");
    assert_eq!(opened["event"], "regression");
    assert_eq!(opened["scenario"], "checkout");
    assert_eq!(opened["run_id"], regressed);
    assert_eq!(opened["run_url"], format!("https://degrade.example.com/runs/{regressed}"));
    assert_eq!(opened["build"], "1.0.10");
    assert_eq!(opened["builds_since_last_good"], serde_json::json!(["1.0.10"]));
    assert_eq!(opened["worse"][0]["endpoint"], "GET /boards/{id}");
    assert_eq!(opened["worse"][0]["unit"], "ms");
    assert_eq!(json_messages[1]["event"], "recovery");
    // It names what came back, with the figure it had regressed to, and says "passed" once.
    let summary = json_messages[1]["summary"].as_str().unwrap();
    let back = format!("run #{recovered} passed again: back: GET /boards/{{id}} p95 10");
    assert!(summary.starts_with(&back), "{summary}");
    assert!(summary.contains(&format!(" ms (was 150.0 ms in run #{regressed}); ")), "{summary}");
    assert!(!summary.contains("passed: "), "{summary}");
    let keys: Vec<Option<String>> = json.posts().into_iter().map(|p| p.key).collect();
    assert_eq!(keys[0].as_deref(), opened["idempotency_key"].as_str(), "the header carries the body's key");
    assert_ne!(keys[0], keys[1]);

    let episodes = store.episodes(10).await.unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!((episodes[0].state.as_str(), episodes[0].resolved_run_id), ("resolved", Some(recovered)));
}

/// A night that passed without judging the figure that regressed (a capacity search the generator cut short, a
/// figure on too few requests) is no recovery: the episode stays open, silent, until a night judges it.
#[tokio::test]
async fn a_night_that_could_not_judge_what_regressed_is_no_recovery() {
    use degrade::model::BaselineSpec;
    use degrade::model::FindingOutcome;
    use degrade::pipeline::judge_run::{IfRegressed, judge_run};
    // Every field bound, so the receivers, the project and the database live to the end of the test.
    let alerted = Alerted::with_usual_nights(8).await;
    let Alerted { json, config, store, courier, .. } = &alerted;
    let regressed = store_night(store, "checkout", 8, 150.0, RunStatus::Finished).await;
    let opened = judge_and_alert(store, config, regressed).await;
    assert_eq!(opened.outcome, VerdictOutcome::Regressed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "one message per webhook");
    let what = opened.findings.iter().find(|f| f.outcome == FindingOutcome::Regression).unwrap().clone();

    // Back to its level, but the figure that regressed could not be judged tonight: passed on the rest.
    let back = store_night(store, "checkout", 9, 100.0, RunStatus::Finished).await;
    let run = store.find_run(back).await.unwrap().unwrap();
    let mut report =
        judge_run(store, config, &run, &BaselineSpec::LastDays(7), IfRegressed::Stands, Utc::now()).await.unwrap();
    assert_eq!(report.outcome, VerdictOutcome::Passed);
    for finding in report.findings.iter_mut().filter(|f| f.endpoint == what.endpoint && f.metric == what.metric) {
        finding.outcome = FindingOutcome::Inconclusive;
    }
    alerting::after_judgement(store, config, &report, Utc::now()).await.unwrap();
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "no recovery on a figure not judged: {:?}", json.posts());

    // A night that judges it, back at its level, resolves the episode: one recovery.
    let judged = store_night(store, "checkout", 10, 100.0, RunStatus::Finished).await;
    assert_eq!(judge_night(store, config, judged).await, VerdictOutcome::Passed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "the recovery, once per webhook");
    let recovery = json.delivered().into_iter().find(|p| p["event"] == "recovery").unwrap();
    assert_eq!(recovery["run_id"], judged, "{recovery:#}");
}

/// A fix that brought most of what regressed back, with one figure that stayed at its regressed level long
/// enough to be the level: the recovery names both, and never says "nothing got faster" (a trial's fixed route
/// fell from 31.5 to 1.5 ms while the message said its `(all)` figure stayed and nothing got faster).
#[tokio::test]
async fn a_recovery_says_what_came_back_beside_what_stayed() {
    use degrade::model::BaselineSpec;
    use degrade::model::FindingOutcome;
    use degrade::pipeline::judge_run::{IfRegressed, judge_run};
    // Every field bound, so the receivers, the project and the database live to the end of the test.
    let alerted = Alerted::with_usual_nights(8).await;
    let Alerted { json, config, store, courier, .. } = &alerted;
    let regressed = store_both_routes_night(store, "checkout", 8, 150.0, 90.0).await;
    let opened = judge_and_alert(store, config, regressed).await;
    let worse: Vec<(&str, &str)> = opened
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::Regression)
        .map(|f| (f.endpoint.as_str(), f.metric.as_str()))
        .collect();
    assert_eq!(worse, [("GET /boards/{id}", "p95"), ("POST /cards", "p95")]);
    courier.deliver_due().await.unwrap();

    // The boards route is back to its level; the cards route stayed where it regressed to and, in this
    // verdict, is the level by now.
    let fixed = store_night(store, "checkout", 9, 100.0, RunStatus::Finished).await;
    let run = store.find_run(fixed).await.unwrap().unwrap();
    let mut report =
        judge_run(store, config, &run, &BaselineSpec::LastDays(7), IfRegressed::Stands, Utc::now()).await.unwrap();
    assert_eq!(report.outcome, VerdictOutcome::Passed);
    let cards = report.findings.iter_mut().find(|f| f.endpoint == "POST /cards" && f.metric == "p95").unwrap();
    cards.candidate_value = 90.0;
    alerting::after_judgement(store, config, &report, Utc::now()).await.unwrap();
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "the recovery, once per webhook");
    let recovery = json.delivered().into_iter().find(|p| p["event"] == "recovery").unwrap();
    let summary = recovery["summary"].as_str().unwrap();
    let came_back = format!("GET /boards/{{id}} p95 100.0 ms (was 150.0 ms in run #{regressed})");
    assert!(summary.contains(&came_back), "{summary}");
    assert!(summary.contains("came back; POST /cards p95 90.0 ms (was 60."), "{summary}");
    assert!(summary.contains("stayed where it regressed to") && !summary.contains("nothing got faster"), "{summary}");
}

/// The suspects of a regression are the builds since the last good run, never that run's own build, which a
/// smoke run of it since had listed (a trial's alert named `1.0.0, 1.2.0` after night #9 passed on 1.0.0).
#[tokio::test]
async fn the_last_good_build_is_no_suspect_after_smoke_runs_of_it() {
    let alerted = Alerted::with_usual_nights(9).await;
    let Alerted { config, store, .. } = &alerted;
    let good = store_night(store, "checkout", 9, 101.0, RunStatus::Finished).await;
    assert_eq!(judge_night(store, config, good).await, VerdictOutcome::Passed);
    // A smoke run of the good build, then a night of the next build.
    let smoke_run = degrade::model::NewRun { build_id: Some("1.0.9".into()), ..new_run("checkout", 10) };
    let smoke = store.create_run(&smoke_run).await.unwrap();
    let results = store.run_detail(good).await.unwrap().unwrap();
    let finished = degrade::model::RunResults {
        status: RunStatus::Finished,
        finished_at: night(10),
        validity_reasons: vec![],
        load_summary: degrade::model::LoadSummary::default(),
        endpoints: results.endpoints,
        timeline: vec![],
    };
    store.finish_run(smoke, &finished).await.unwrap();
    let next = store_night(store, "checkout", 11, 150.0, RunStatus::Finished).await;
    let (last_good, suspects) = store.builds_since_last_good("checkout", next, &[]).await.unwrap();
    assert_eq!((last_good, suspects), (Some(good), vec!["1.0.11".to_owned()]));
    // The good build measured again and regressed: it is the build measured, so it is named.
    let (_, suspects) = store.builds_since_last_good("checkout", smoke, &[]).await.unwrap();
    assert_eq!(suspects, ["1.0.9"]);
}

#[tokio::test]
async fn a_receiver_that_is_down_gets_the_message_when_it_is_back_and_only_once() {
    let address = unused_address();
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &url_at(address), &url_at(address));
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    // The courier decides what is due by its clock: the test moves it on instead of waiting for the backoff.
    let clock = Clock::manual(Utc::now());
    alerting::missing_run(&store, &config, "checkout", Some(night(8)), night(9), clock.now()).await.unwrap();
    let courier = Courier::new(store.clone(), config.clone()).unwrap().with_clock(clock.clone());

    assert_eq!(courier.deliver_due().await.unwrap(), 0);
    let [pending] = store.recent_messages(10).await.unwrap().try_into().unwrap();
    let error = pending.last_error.clone().unwrap();
    assert!(error.starts_with("cannot connect"), "{error}");
    assert!(!error.contains(&address.port().to_string()), "the webhook URL is a secret: {error}");
    assert_eq!(pending.state(), "pending");

    let receiver = Receiver::start_on(address).await;
    receiver.answer(Answer::Fail(500));
    clock.advance(TimeDelta::milliseconds(2100));
    assert_eq!(courier.deliver_due().await.unwrap(), 0);
    let error = store.recent_messages(1).await.unwrap()[0].last_error.clone().unwrap();
    assert!(error.contains("500"), "{error}");

    receiver.answer(Answer::Accept);
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "not due yet: the backoff doubled to 4 s");
    clock.advance(TimeDelta::milliseconds(4100));
    assert_eq!(courier.deliver_due().await.unwrap(), 1);
    // A restart of degrade (a new store and courier) finds nothing left to send.
    let restarted = Store::connect(&db.url).await.unwrap();
    let courier = Courier::new(restarted.clone(), config.clone()).unwrap().with_clock(clock);
    assert_eq!(courier.deliver_due().await.unwrap(), 0);
    let [delivered] = receiver.delivered().try_into().unwrap();
    assert_eq!(delivered["text"], "degrade: no recent run of checkout", "{delivered:#}");
    let keys: Vec<Option<String>> = receiver.posts().into_iter().map(|p| p.key).collect();
    assert!(keys.windows(2).all(|k| k[0] == k[1]), "every attempt carries the same key: {keys:?}");
    let message = &restarted.recent_messages(1).await.unwrap()[0];
    assert_eq!((message.state(), message.attempts), ("delivered", 3));
}

/// A courier killed while it posted leaves its claim with no attempt recorded: the message may have arrived.
/// Once the claim lapses the next courier posts it again, with the same idempotency key, and the Slack copy
/// says first that it is sent again: a Slack channel cannot drop the duplicate by its key.
#[tokio::test]
async fn a_message_cut_short_by_a_kill_is_sent_again_saying_so() {
    let slack = Receiver::start().await;
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &slack.url(), &slack.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let clock = Clock::manual(Utc::now());
    alerting::missing_run(&store, &config, "checkout", Some(night(8)), night(9), clock.now()).await.unwrap();
    // The killed courier: it claimed the message and was posting it when it died, so nothing was recorded.
    let [due] = store.due_messages(clock.now(), 10).await.unwrap().try_into().unwrap();
    assert!(!due.may_have_arrived(), "a message never claimed cannot have arrived");
    assert!(store.claim_message(&due, Claim::until(clock.now() + TimeDelta::seconds(60))).await.unwrap());

    let courier = Courier::new(store.clone(), config.clone()).unwrap().with_clock(clock.clone());
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "claimed a minute by the killed courier");
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(courier.deliver_due().await.unwrap(), 1);
    let [post] = slack.posts().try_into().unwrap();
    assert_eq!(post.key.as_deref(), Some(due.idempotency_key.as_str()), "the same key as the first attempt");
    let [delivered] = slack.delivered().try_into().unwrap();
    let text = delivered["text"].as_str().unwrap();
    assert_eq!(
        text,
        "Sent again: degrade stopped while sending this alert, so it may have arrived once already. degrade: no \
         recent run of checkout"
    );
    let first_block = delivered["blocks"][0]["elements"][0]["text"].as_str().unwrap_or_default();
    assert!(first_block.starts_with("Sent again:"), "the first thing a reader sees: {delivered:#}");
    let message = &store.recent_messages(1).await.unwrap()[0];
    assert_eq!((message.state(), message.attempts, message.claims), ("delivered", 1, 2));
}

/// A claim written whose answer was lost (a dropped connection) is asked again by its courier: the store finds
/// it the courier's own and the message goes out now, not once the claim runs out (with `check --run-now`
/// alone, the next night: `ci/chaos.sh 500` found a night's two regression alerts left so). A courier that read
/// the message before that claim is still refused, even one claiming until the same millisecond.
#[tokio::test]
async fn a_claim_whose_answer_was_lost_is_found_its_couriers_own_when_asked_again() {
    let hook = Receiver::start().await;
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &hook.url(), &hook.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let now = Utc::now();
    alerting::missing_run(&store, &config, "checkout", None, night(9), now).await.unwrap();
    let [due] = store.due_messages(now, 10).await.unwrap().try_into().unwrap();
    let until = now + TimeDelta::seconds(60);
    let ours = Claim::until(until);
    assert!(store.claim_message(&due, ours).await.unwrap());
    assert!(store.claim_message(&due, ours).await.unwrap(), "asked again, the claim is this courier's");
    assert!(!store.claim_message(&due, Claim::until(until)).await.unwrap(), "another courier's, the same until");
    let later = Claim::until(until + TimeDelta::seconds(1));
    assert!(!store.claim_message(&due, later).await.unwrap(), "another courier's");
    let message = &store.recent_messages(1).await.unwrap()[0];
    assert_eq!((message.state(), message.claims), ("pending", 1), "one claim, counted once");
}

async fn pending_outbox_is_delivered_once_by_two_couriers(db: TestDb) {
    let receiver = Receiver::start().await;
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &receiver.url(), &receiver.url());
    let store = Store::connect(&db.url).await.unwrap();
    alerting::missing_run(&store, &config, "checkout", None, night(9), Utc::now()).await.unwrap();
    alerting::missing_run(&store, &config, "checkout", None, night(10), Utc::now()).await.unwrap();
    store.close().await;
    // Two degrade instances start on the database with the message pending (a restart, or a pair), on one
    // clock: their claims hold until the same millisecond, and only a claim's token tells them apart.
    let (one, two) = (Store::connect(&db.url).await.unwrap(), Store::connect(&db.url).await.unwrap());
    let clock = Clock::manual(Utc::now());
    let courier = |store| Courier::new(store, config.clone()).unwrap().with_clock(clock.clone());
    let (one, two) = (courier(one), courier(two));
    let (a, b) = tokio::join!(one.deliver_due(), two.deliver_due());
    assert_eq!(a.unwrap() + b.unwrap(), 1, "one episode, one message for the one missing-run webhook");
    assert_eq!(receiver.delivered().len(), 1);
    assert_eq!(texts(&receiver.delivered()[0]).matches("Missing run of checkout").count(), 1);
}

#[tokio::test]
async fn pending_outbox_is_delivered_once_on_sqlite() {
    pending_outbox_is_delivered_once_by_two_couriers(TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn pending_outbox_is_delivered_once_on_postgres() {
    let db = TestDb::postgres().await;
    pending_outbox_is_delivered_once_by_two_couriers(db).await;
}

/// One missing-run message posted once to a receiver that answers `answer`; returns the stored message.
async fn one_attempt_against(answer: Answer) -> degrade::store::OutboxMessage {
    let receiver = Receiver::start().await;
    receiver.answer(answer);
    let (_dir, config_path) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &receiver.url(), &receiver.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    alerting::missing_run(&store, &config, "checkout", None, night(9), Utc::now()).await.unwrap();
    let courier = Courier::new(store.clone(), config).unwrap();
    assert_eq!(courier.deliver_due().await.unwrap(), 0);
    store.recent_messages(1).await.unwrap().remove(0)
}

#[tokio::test]
async fn a_hanging_receiver_times_out_and_the_message_waits_for_a_retry() {
    let message = one_attempt_against(Answer::Hang).await;
    assert_eq!(message.state(), "pending");
    assert!(message.last_error.as_deref().unwrap().starts_with("no answer within 10 s"), "{message:?}");
}

#[tokio::test]
async fn a_rejected_message_is_given_up_not_retried_forever() {
    let message = one_attempt_against(Answer::Fail(404)).await;
    assert_eq!(message.state(), "gave up", "{message:?}");
    assert!(message.last_error.as_deref().unwrap().contains("404"));
}
