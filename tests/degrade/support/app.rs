//! The real app in-process: the dashboard and API on 127.0.0.1 port 0 over a test database, driven through
//! HTTP, with the domain's fixtures one call away (nights to show, the gate, the alert outbox).

use chrono::{Duration, Utc};
use degrade::config::Config;
use degrade::model::{
    EndpointResult, Finding, FindingOutcome, LoadSummary, NewRun, NewVerdict, OVERALL_ENDPOINT, RunResults, RunStatus,
    TimelinePoint, VerdictOutcome,
};
use degrade::store::{OutboxMessage, Store};
use degrade::web::AppState;

use super::TestDb;

/// The real app serving a test database; stopped when dropped.
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub address: String,
    /// The store the app serves, for the test to write nights and read what the app did.
    pub store: Store,
    /// A client that never follows redirects and times out.
    pub client: reqwest::Client,
    database: String,
    _shutdown: tokio::sync::oneshot::Sender<()>,
    /// Stops runs triggered through the API when the test ends.
    _stop_runs: tokio::sync::watch::Sender<bool>,
}

impl TestApp {
    /// The app with no `degrade.toml` of its own (defaults).
    pub async fn spawn(db: &TestDb) -> Self {
        Self::spawn_with(db, "", None).await
    }

    /// The app with `config` as its degrade.toml and `token` in DEGRADE_API_TOKEN.
    pub async fn spawn_with(db: &TestDb, config: &str, token: Option<&str>) -> Self {
        let store = Store::connect(&db.url).await.unwrap();
        let env = |name: &str| (name == "DEGRADE_API_TOKEN").then(|| token.map(str::to_owned)).flatten();
        let config = Config::parse_with_env(std::path::Path::new("degrade.toml"), config, &env).unwrap();
        let (state, stop_runs) = AppState::new(store.clone(), config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(degrade::web::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        let (client, database) = (super::http_client(), db.url_string());
        Self { address, store, client, database, _shutdown: shutdown, _stop_runs: stop_runs }
    }

    /// Stores `count` nights of `checkout`, one a day up to yesterday, the last regressed on
    /// `GET /boards/{id}` with its verdict; returns the last run's id.
    pub async fn store_nights(&self, count: i64) -> i64 {
        regressed_nights(&self.store, count).await
    }

    /// `degrade check` with `args` (e.g. `["--baseline", "last-7d"]`) through the real binary on this app's
    /// database: the exit code, stdout and stderr.
    pub fn check(&self, args: &[&str]) -> (Option<i32>, String, String) {
        super::check_on(&self.database, args)
    }

    /// The webhook messages the app's outbox holds, newest first.
    pub async fn webhook_messages(&self) -> Vec<OutboxMessage> {
        self.store.recent_messages(100).await.unwrap()
    }

    /// GETs `path`: the status and the body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let response = self.client.get(format!("{}{path}", self.address)).send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// GETs `path` and parses the body as JSON.
    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let (status, body) = self.get(path).await;
        (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}")))
    }

    /// POSTs a JSON body with an optional `Authorization` header value.
    pub async fn post_json(&self, path: &str, body: serde_json::Value, authorization: Option<&str>) -> (u16, String) {
        let mut request = self.client.post(format!("{}{path}", self.address)).json(&body);
        if let Some(value) = authorization {
            request = request.header("Authorization", value);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }
}

/// One endpoint's row of a dashboard night: 1,000 requests, `errors` of them failed.
pub fn endpoint_row(name: &str, p95_ms: f64, errors: i64) -> EndpointResult {
    let us = (p95_ms * 1000.0) as i64;
    EndpointResult {
        endpoint: name.into(),
        requests: 1000,
        errors,
        rate: 16.5,
        p50_us: us / 2,
        p90_us: us * 9 / 10,
        p95_us: us,
        p99_us: us * 2,
        max_us: us * 3,
        ..EndpointResult::default()
    }
}

/// Thirty seconds of `GET /boards/{id}`, with a burst of timeouts at second 20.
fn timeline() -> Vec<TimelinePoint> {
    (0..30)
        .map(|s| TimelinePoint {
            endpoint: "GET /boards/{id}".into(),
            elapsed_s: s,
            requests: 16,
            errors: i64::from(s == 20),
            p50_us: 50_000,
            p99_us: 120_000 + s * 1000,
            max_us: 150_000,
            errors_by_class: if s == 20 {
                [("timeout".to_owned(), 1)].into()
            } else {
                std::collections::BTreeMap::new()
            },
        })
        .collect()
}

/// Stores nights 0..count of `checkout`, one a day up to yesterday; the last one regressed on
/// `GET /boards/{id}` with a stored verdict. Returns the last run's id.
async fn regressed_nights(store: &Store, count: i64) -> i64 {
    let mut last = 0;
    for n in 0..count {
        let started_at = Utc::now() - Duration::days(count - n);
        let run = NewRun {
            scenario: "checkout".into(),
            build_id: Some(format!("1.0.{n}")),
            seed: n,
            scenario_hash: "h".into(),
            scenario_source: None,
            deploy_output: (n == count - 1).then(|| format!("rolled out 1.0.{n} <3 replicas>")),
            started_at,
            confirms: None,
            judged_against: None,
            reshape: None,
        };
        let id = store.create_run(&run).await.unwrap();
        let boards = if n == count - 1 { 135.0 } else { 100.0 };
        let results = RunResults {
            status: RunStatus::Finished,
            finished_at: started_at + Duration::minutes(5),
            validity_reasons: vec![],
            load_summary: LoadSummary::default(),
            endpoints: vec![
                endpoint_row(OVERALL_ENDPOINT, 90.0, 1),
                endpoint_row("GET /boards/{id}", boards, 1),
                endpoint_row("<script>alert(1)</script>", 10.0, 0),
            ],
            timeline: timeline(),
        };
        store.finish_run(id, &results).await.unwrap();
        last = id;
    }
    let finding = Finding {
        endpoint: "GET /boards/{id}".into(),
        metric: "p95".into(),
        outcome: FindingOutcome::Regression,
        baseline_value: Some(100.0),
        candidate_value: 135.0,
        delta_pct: Some(35.0),
        limit: Some(112.0),
        reason: "7.1 sigma above the level".into(),
        interval: None,
        p_value: None,
    };
    let verdict = NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: vec![last - 1],
        outcome: VerdictOutcome::Regressed,
        summary: "regressed: 1 regression".into(),
        created_at: Utc::now(),
        findings: vec![finding],
    };
    store.save_verdict(last, &verdict).await.unwrap();
    last
}
