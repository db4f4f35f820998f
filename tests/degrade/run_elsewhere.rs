//! A schedule something else runs (`run_by = "elsewhere"`: a Kubernetes CronJob's nights): the scheduler in
//! `serve` never starts its nights, and still raises `missing_run` when one does not come. Without it a
//! suspended CronJob was silence.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use degrade::model::RunStatus;
use degrade::notify::Courier;
use degrade::pipeline::Runner;
use degrade::scheduler::Scheduler;
use degrade::store::Store;

use crate::support::config::{QUICK_SCENARIO, alerting_config, load};
use crate::support::nights::{night, store_night};
use crate::support::receiver::Receiver;
use crate::support::served::Served;
use crate::support::target::StubTarget;
use crate::support::{TestDb, project};

#[tokio::test]
async fn a_schedule_run_elsewhere_is_watched_and_never_run() {
    let (target, receiver) = (StubTarget::start().await, Receiver::start().await);
    // Due every two seconds: a scheduler that ran it would have started several nights by the end.
    let extra = format!("target = \"{}\"\nschedule = \"*/2 * * * * *\"\nrun_by = \"elsewhere\"", target.url());
    let (dir, config_path) = project(&alerting_config(&extra), &[("quick.toml", QUICK_SCENARIO)]);
    let validate = crate::support::degrade(dir.path(), &["validate"], &[]);
    let (said, _) = crate::support::text(&validate);
    assert!(said.contains("run elsewhere (a CronJob, CI): serve only watches for its nights"), "{said}");
    let config = load(&config_path, &receiver.url(), &receiver.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    // The CronJob's last night was three nights ago.
    store_night(&store, "checkout", 9, 100.0, RunStatus::Finished).await;
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let runner = Runner::new(store.clone(), Arc::clone(&config), stop);
    let scheduler = Scheduler::start(runner, store.clone(), config.clone()).await.unwrap();
    Courier::new(store.clone(), config.clone()).unwrap().deliver_due().await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    scheduler.stop().await;
    assert_eq!(store.runs_between("checkout", night(0), Utc::now()).await.unwrap().len(), 1, "serve ran a night");
    let [alert] = receiver.delivered().try_into().unwrap();
    assert_eq!(alert["text"], "degrade: no recent run of checkout");
    // The overview says who runs it beside when.
    let url = db.url_string();
    let served = Served::start(dir.path(), &["--no-scheduler"], &[("DEGRADE_DATABASE_URL", url.as_str())]).await;
    let (status, overview) = served.get("/").await.unwrap();
    assert_eq!(status, 200);
    assert!(overview.contains(" UTC, run elsewhere"), "{overview}");
    served.stop().await;
}

#[test]
fn run_elsewhere_needs_a_schedule_and_refuses_catch_up() {
    let (_dir, path) = project(&alerting_config("run_by = \"elsewhere\""), &[("quick.toml", QUICK_SCENARIO)]);
    let errors = degrade::config::Config::load(&path).unwrap_err().to_string();
    assert!(errors.contains("scenario[0].run_by: run_by = \"elsewhere\" needs the `schedule`"), "{errors}");
    let extra = "schedule = \"0 2 * * *\"\nrun_by = \"elsewhere\"\ncatch_up = true";
    let (_dir, path) = project(&alerting_config(extra), &[("quick.toml", QUICK_SCENARIO)]);
    let errors = degrade::config::Config::load(&path).unwrap_err().to_string();
    assert!(errors.contains("scenario[0].catch_up: serve runs no night of a schedule run elsewhere"), "{errors}");
    let (_dir, path) = project(&alerting_config("run_by = \"cron\""), &[("quick.toml", QUICK_SCENARIO)]);
    let errors = degrade::config::Config::load(&path).unwrap_err().to_string();
    assert!(errors.contains("degrade.toml:6:10: scenario[0].run_by: `cron` is not who runs the schedule"), "{errors}");
}
