//! The dashboard's doors over real HTTP: unknown paths and bad requests, methods a path does not take, POSTs
//! that need the configured token, pages that can require it, half-sent requests, cross-site posts and framing.

use degrade::model::RunStatus;

use crate::support::TestDb;
use crate::support::app::TestApp;

#[tokio::test]
async fn not_found_and_bad_requests() {
    let db = TestDb::sqlite();
    let app = TestApp::spawn(&db).await;
    app.store_nights(2).await;
    let pages: [(&str, u16, &str); 17] = [
        ("/runs/424242", 404, "There is no run #424242."),
        ("/runs/abc", 400, "`abc` is not a run id"),
        ("/scenarios/search", 404, "No scenario is called `search`."),
        ("/scenarios/checkout?range=2w", 400, "unknown range `2w`; use 7d, 30d, 90d, 1y or all"),
        ("/nothing/here", 404, "There is no page at /nothing/here."),
        // The API answers every error as JSON of one shape, also for paths it does not have.
        ("/api/v1/runs/424242", 404, r#"{"error":{"code":"not_found","message":"There is no run #424242."}}"#),
        (
            "/api/v1/scenarios/checkout/runs?limit=0",
            400,
            r#"{"error":{"code":"bad_request","message":"limit `0` is not a number from 1 to 500"}}"#,
        ),
        ("/api/v1/nothing", 404, r#"{"error":{"code":"not_found","message":"There is no page at /api/v1/nothing."}}"#),
        (
            "/api/v1/scenarios/checkout/trend?endpoint=nope",
            404,
            r#"{"error":{"code":"not_found","message":"Scenario `checkout` has no endpoint `nope`."}}"#,
        ),
        ("/scenarios/checkout?scale=loud", 400, "unknown scale `loud`; use linear or log"),
        ("/scenarios/checkout?to=%2B262142-12-31", 400, "the zoom&#39;s dates are out of range"),
        ("/scenarios/checkout?from=2026-12-01&to=2026-11-01", 400, "`from` (2026-12-01) is after `to` (2026-11-01)"),
        ("/scenarios/checkout?from_run=x", 400, "`from_run` must be a run number like 42, not `x`"),
        ("/scenarios/checkout?from_run=999999", 404, "Scenario `checkout` has no run #999999."),
        ("/scenarios/checkout?from=2026-12-01&to_run=3", 400, "zoom by dates (`from`, `to`) or by runs"),
        // No name holds a NUL, and PostgreSQL would refuse to look one up: a 400, never a 500.
        ("/scenarios/check%00out", 400, "A URL cannot carry a NUL character"),
        ("/api/v1/scenarios/checkout/trend?endpoint=GET%20%2F%00", 400, r#"{"error":{"code":"bad_request","#),
    ];
    for (path, status, message) in pages {
        let (actual, body) = app.get(path).await;
        assert_eq!(actual, status, "{path}: {body}");
        assert!(body.contains(message), "{path} should say {message:?}: {body}");
    }
    let (status, json) = app.get_json("/api/v1/scenarios/checkout/trend?metric=p42").await;
    assert_eq!(status, 400);
    assert_eq!(json["error"]["code"], "bad_request");
    assert!(json["error"]["message"].as_str().unwrap().starts_with("unknown metric `p42`"), "{json}");
}

#[tokio::test]
async fn a_method_an_api_path_does_not_take_is_answered_in_the_api_s_json() {
    let db = TestDb::sqlite();
    let app = TestApp::spawn_with(&db, "", Some("t0ken")).await;
    app.store_nights(1).await;
    let response = app
        .client
        .delete(format!("{}/api/v1/runs/1", app.address))
        .header("Authorization", "Bearer t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let allow = response.headers().get("allow").and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(allow.as_deref(), Some("GET,HEAD"), "the methods it does take");
    let body = response.text().await.unwrap();
    assert_eq!(body, r#"{"error":{"code":"method_not_allowed","message":"/api/v1/runs/1 does not take DELETE."}}"#);
}

#[tokio::test]
async fn posts_need_a_configured_token_and_pages_can_require_it() {
    let db = TestDb::sqlite();
    let open = TestApp::spawn(&db).await;
    let (status, body) =
        open.post_json("/api/v1/episodes/1/acknowledge", serde_json::json!({"reason": "x"}), Some("Bearer x")).await;
    assert_eq!((status, body.contains("no API token configured")), (403, true), "{body}");

    let locked = TestApp::spawn_with(&db, "[server]\npages_require_token = true\n", Some("t0ken")).await;
    assert_eq!(locked.get("/").await.0, 401);
    assert_eq!(locked.get("/api/v1/scenarios").await.0, 401);
    assert_eq!(locked.get("/healthz").await.0, 200, "health checks stay open");
    let with_basic =
        locked.client.get(format!("{}/", locked.address)).basic_auth("me", Some("t0ken")).send().await.unwrap();
    assert_eq!(with_basic.status().as_u16(), 200);
    let with_bearer =
        locked.client.get(format!("{}/api/v1/scenarios", locked.address)).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(with_bearer.status().as_u16(), 200);
    let challenge = locked.client.get(format!("{}/", locked.address)).send().await.unwrap();
    assert_eq!(challenge.headers()["www-authenticate"], "Basic realm=\"degrade\", charset=\"UTF-8\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_runs_starts_a_run_once_and_needs_the_token() {
    let target = crate::support::target::StubTarget::start().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("quick.toml");
    std::fs::write(
        &scenario,
        "[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/fast\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 20\n",
    )
    .unwrap();
    let config =
        format!("[[scenario]]\nname = \"quick\"\nfile = \"{}\"\ntarget = \"{}\"\n", scenario.display(), target.url());
    let db = TestDb::sqlite();
    let app = TestApp::spawn_with(&db, &config, Some("s3cret")).await;
    let store = &app.store;
    let path = "/api/v1/scenarios/quick/runs";
    // Errors are JSON, and a missing token is told apart from a wrong one.
    let (status, missing) = app.post_json(path, serde_json::json!({}), None).await;
    assert_eq!(status, 401);
    let missing: serde_json::Value = serde_json::from_str(&missing).unwrap();
    assert_eq!(missing["error"]["code"], "unauthorized");
    assert!(missing["error"]["message"].as_str().unwrap().starts_with("This needs the API token"), "{missing}");
    let (status, wrong) = app.post_json(path, serde_json::json!({}), Some("Bearer guess")).await;
    assert_eq!(status, 401);
    assert!(wrong.contains("The token sent is not the API token"), "{wrong}");
    let (status, unknown) =
        app.post_json("/api/v1/scenarios/nope/runs", serde_json::json!({}), Some("Bearer s3cret")).await;
    assert_eq!(
        (status, unknown.as_str()),
        (404, r#"{"error":{"code":"not_found","message":"No [[scenario]] called `nope` is configured."}}"#)
    );

    let (status, body) = app.post_json(path, serde_json::json!({}), Some("Bearer s3cret")).await;
    assert_eq!(status, 202, "{body}");
    assert!(body.contains("\"state\":\"started\""), "{body}");
    let (status, body) = app.post_json(path, serde_json::json!({}), Some("Bearer s3cret")).await;
    assert_eq!(status, 409, "a second trigger while the first runs: {body}");

    let started = std::time::Instant::now();
    let run = loop {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the triggered run never finished");
        if let Some(run) = store.find_run(1).await.unwrap().filter(|r| r.status != RunStatus::Running) {
            break run;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    crate::support::assert_measured(run.status, &run.validity_reasons);
    assert_eq!(store.run_detail(1).await.unwrap().unwrap().endpoints[1].requests, 40);
    let (_, overview) = app.get("/").await;
    assert!(overview.contains("<dd>on demand</dd>"), "a scenario without a schedule: {overview}");
}

/// A client that sends half a request's headers is cut off (after the 10 s header-read timeout) instead of
/// holding its connection open for good; HEAD on a public page needs no token; a cross-site POST is refused
/// even with the token (a browser would send a saved login with it).
#[tokio::test]
async fn half_sent_requests_time_out_cross_site_posts_are_refused_and_pages_are_never_framed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let db = TestDb::sqlite();
    let app = TestApp::spawn_with(&db, "", Some("t0ken")).await;
    let last = app.store_nights(1).await;
    let address = app.address.trim_start_matches("http://").to_owned();
    let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();

    let head = app.client.head(format!("{}/runs/{last}", app.address)).send().await.unwrap();
    assert_eq!(head.status().as_u16(), 200);
    // No page may be framed by another site (a hidden Acknowledge button), nor run a script: every answer,
    // pages, errors and the API alike, says so.
    for path in [format!("/runs/{last}"), "/alerts".to_owned(), "/nothing".to_owned(), "/api/v1/scenarios".to_owned()] {
        let answer = app.client.get(format!("{}{path}", app.address)).send().await.unwrap();
        let header = |name: &str| answer.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        let policy = header("content-security-policy");
        assert!(policy.contains("frame-ancestors 'none'") && policy.starts_with("default-src 'none'"), "{path}");
        assert!(policy.contains("form-action 'self'"), "{path}: {policy}");
    }
    let path = format!("{}/api/v1/scenarios/checkout/runs", app.address);
    let cross_site = app
        .client
        .post(&path)
        .header("Authorization", "bearer t0ken")
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status().as_u16(), 403);
    assert!(cross_site.text().await.unwrap().contains("sent by a page of another site"));

    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(30), slow.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the half-sent request was still open after 30 s");
}
