//! The dashboard and JSON API over real HTTP: the app on 127.0.0.1 port 0, a fresh database per test.

use chrono::{Duration, Utc};
use degrade::model::{LoadSummary, NewRun, OVERALL_ENDPOINT, RunResults, RunStatus};
use degrade::store::{NewEpisode, NewMessage};

use crate::support::TestDb;
use crate::support::app::{TestApp, endpoint_row};

#[tokio::test]
async fn dashboard_on_sqlite() {
    dashboard_story(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn dashboard_on_postgres() {
    let db = TestDb::postgres().await;
    dashboard_story(&db).await;
}

async fn dashboard_story(db: &TestDb) {
    let app = TestApp::spawn(db).await;
    let (status, body) = app.get("/").await;
    assert_eq!(status, 200);
    assert!(body.contains("No runs stored yet"), "{body}");

    let last = app.store_nights(10).await;
    let (status, body) = app.get("/").await;
    assert_eq!(status, 200);
    assert!(body.contains(r#"<a href="/scenarios/checkout">checkout</a>"#), "{body}");
    assert!(
        body.contains(&format!("#{last}")) && body.contains("status-regressed") && body.contains("1.0.9"),
        "{body}"
    );
    assert!(
        body.contains(r#"<tr class="worse"><td><span class="endpoint">GET /boards<wbr>/{id}</span>"#)
            && body.contains(r#"<span class="endpoint">GET /boards<wbr>/{id}</span>"#)
            && body.contains(r#"<strong class="alarm small">regressed: p95</strong>"#),
        "the overview names the regressed endpoint: {body}"
    );

    trend_page_story(&app, last).await;
    run_page_story(&app, last).await;
    let (_, body) = app.get(&format!("/runs/{last}")).await;
    // Names that come from scenario files are text, never markup.
    assert!(!body.contains("<script>alert(1)</script>"), "{body}");
    assert!(body.contains("&#60;script&#62;alert(1)&#60;/script&#62;") || body.contains("&lt;script&gt;"), "{body}");
    let (_, trends) = app.get("/scenarios/checkout").await;
    assert!(!trends.contains("<script>alert(1)</script>"), "the trend page escapes names too");

    let (status, json) = app.get_json(&format!("/api/v1/runs/{last}")).await;
    assert_eq!(status, 200);
    assert_eq!(json["run"]["status"], "regressed");
    let boards = json["endpoints"].as_array().unwrap().iter().find(|e| e["endpoint"] == "GET /boards/{id}").unwrap();
    assert_eq!(boards["p95_us"], 135_000);
    assert_eq!(json["verdict"]["findings"][0]["candidate_value"], 135.0);

    let (status, json) =
        app.get_json("/api/v1/scenarios/checkout/trend?endpoint=GET%20/boards/%7Bid%7D&metric=p95&range=30d").await;
    assert_eq!(status, 200);
    let values: Vec<f64> = json["points"].as_array().unwrap().iter().map(|p| p["value"].as_f64().unwrap()).collect();
    assert_eq!(values.len(), 10);
    assert_eq!((values[0], values[9]), (100.0, 135.0));

    // Paging: three pages of 4, 4 and 2 runs, newest first, then filtering by status.
    let mut seen = Vec::new();
    let mut path = "/api/v1/scenarios/checkout/runs?limit=4".to_owned();
    loop {
        let (status, json) = app.get_json(&path).await;
        assert_eq!(status, 200, "{json}");
        seen.extend(json["runs"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()));
        let Some(next) = json["next"].as_i64() else { break };
        path = format!("/api/v1/scenarios/checkout/runs?limit=4&before={next}");
    }
    assert_eq!(seen.len(), 10);
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "newest first, no repeats: {seen:?}");
    let (_, json) = app.get_json("/api/v1/scenarios/checkout/runs?status=regressed").await;
    assert_eq!(json["runs"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>(), [last]);
    assert_eq!(app.get("/api/v1/scenarios/checkout/runs?status=weird").await.0, 400);
    let (status, json) = app.get_json("/api/v1/scenarios").await;
    assert_eq!((status, json["scenarios"][0]["name"].as_str()), (200, Some("checkout")));
    assert_eq!(app.get("/healthz").await, (200, "ok\n".to_owned()));
    // The gate reads the nights the dashboard draws, and fails on the one it marks.
    let (code, stdout, stderr) = app.check(&["--baseline", "last-7d"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("GET /boards/{id}") && stdout.contains("p95"), "{stdout}");
}

/// The trend page of the stored nights: summary, grid, linked points, pins and notes.
async fn trend_page_story(app: &TestApp, last: i64) {
    // A zoom to the last two days shows only the runs started in them, and the scale toggle keeps it.
    let from = (Utc::now() - Duration::days(2)).format("%Y-%m-%d");
    let (status, zoomed) = app.get(&format!("/scenarios/checkout?from={from}")).await;
    assert_eq!(status, 200, "{zoomed}");
    let charts = zoomed.split("<h2>GET /boards<wbr>/{id}</h2>").nth(1).unwrap().split("<h2>").next().unwrap();
    assert!(charts.contains(&format!("<title>run #{last}, ")), "{charts}");
    assert!(!charts.contains(&format!("<title>run #{}, ", last - 5)), "an older run is outside the zoom: {charts}");
    assert!(zoomed.contains(&format!("scale=log&#38;from={from}&#38;to=")), "{zoomed}");
    // A zoom by runs, as a CI log or an alert names them: both ends in, nothing outside; the form keeps it
    // and its empty date fields are ignored.
    let (status, by_runs) =
        app.get(&format!("/scenarios/checkout?from=&to=&from_run={}&to_run={last}", last - 1)).await;
    assert_eq!(status, 200, "{by_runs}");
    let charts = by_runs.split("<h2>GET /boards<wbr>/{id}</h2>").nth(1).unwrap().split("<h2>").next().unwrap();
    for inside in [last - 1, last] {
        assert!(charts.contains(&format!("<title>run #{inside}, ")), "run #{inside} is in the zoom: {charts}");
    }
    assert!(!charts.contains(&format!("<title>run #{}, ", last - 2)), "an older run is outside the zoom: {charts}");
    assert!(by_runs.contains(&format!(r#"name="to_run" min="1" class="run-id" aria-label="to run" value="{last}""#)));
    assert!(by_runs.contains(&format!("&#38;from_run={}&#38;to_run={last}", last - 1)), "the scale toggle keeps it");
    let (status, reversed) = app.get(&format!("/scenarios/checkout?from_run={last}&to_run={}", last - 1)).await;
    assert_eq!(status, 400, "{reversed}");
    assert!(reversed.contains(&format!("run #{last} started after run #{}", last - 1)), "{reversed}");
    for range in ["7d", "30d", "all"] {
        let (status, body) = app.get(&format!("/scenarios/checkout?range={range}")).await;
        assert_eq!(status, 200, "{range}");
        assert!(body.contains("<svg") && body.contains("GET /boards/{id}: response time"), "{range}: {body}");
    }
    let (_, body) = app.get("/scenarios/checkout?range=30d").await;
    assert!(body.contains(&format!(": regressed here (run #{last}, build 1.0.9)</li>")), "{body}");
    // The summary at the top says what regressed, by how much, before any chart.
    let summary = body
        .find(r#"<tr class="worse"><td><span class="endpoint">GET /boards<wbr>/{id}</span> <strong>p95</strong></td>"#)
        .expect("the summary row");
    assert!(summary < body.find("<svg").unwrap(), "the summary comes first");
    assert!(body[summary..].contains("+35.0 %"), "{body}");
    // Every point is a way in: a dot linked to its run, with the numbers in its tooltip.
    assert!(body.contains(&format!(r#"<a href="/runs/{last}"><title>run #{last}, "#)), "{body}");
    assert!(body.contains("build 1.0.9: p95 135 ms") && body.contains(r#"</title><circle class="point""#), "{body}");
    // The grid: the regressed endpoint's cell on the last night is red and links to the run.
    assert!(body.contains(&format!(r#"<td class="regressed"><a href="/runs/{last}" title="run #{last}, "#)), "{body}");
    // Error charts only for endpoints that had errors.
    assert!(body.contains("GET /boards/{id}: error rate"), "{body}");
    assert!(!body.contains("alert(1)&lt;/script&gt;: error rate"), "no all-zero error chart: {body}");
    let worse = body.find("<h2>GET /boards<wbr>/{id}</h2>").expect("the boards section");
    let whole = body.find("<h2>(all)</h2>").expect("the whole-run section, which had no finding");
    let (marked, steady) =
        if worse < whole { (&body[worse..whole], &body[whole..]) } else { (&body[worse..], &body[whole..worse]) };
    assert!(
        marked.contains("regressed here") && marked.contains(r#"class="pin""#),
        "the regressed endpoint is marked: {marked}"
    );
    assert!(
        !steady.contains("regressed here") && !steady.contains(r#"class="pin""#),
        "the steady endpoint is not: {steady}"
    );
    assert_eq!(body.matches("<li>9 build changes in this range</li>").count(), 1, "{body}");
    let (_, body) = app.get("/scenarios/checkout?range=7d").await;
    assert_eq!(
        body.matches(": build 1.0.8 → 1.0.9</li>").count(),
        1,
        "a few build changes are listed one by one, once for every endpoint: {body}"
    );
    assert!(
        body.find(": build 1.0.8 → 1.0.9</li>") < body.find("<h2>GET /boards<wbr>/{id}</h2>"),
        "above the charts: {body}"
    );
    assert!(body.contains(r#"class="build-change""#) && body.contains("<title>build 1.0.8 → 1.0.9</title>"), "{body}");
}

/// The run page of the regressed night: the verdict with units and signs, and links to compare.
async fn run_page_story(app: &TestApp, last: i64) {
    let (status, body) = app.get(&format!("/runs/{last}")).await;
    assert_eq!(status, 200);
    let verdict_row = r#"<tr class="worse"><td data-label="Endpoint">GET /boards<wbr>/{id}</td><td data-label="Metric">p95</td><td data-label="Baseline" class="num">100.0 ms</td>"#;
    let linked = format!(r#"<a href="/compare?a={}&amp;b={last}">Compare with the baseline</a>"#, last - 1);
    let previous = format!(r#"<a href="/compare?a={}&amp;b={last}">Compare with the previous run</a>"#, last - 1);
    for expected in [
        "Verdict: regressed",
        verdict_row,
        "135.0 ms",
        "+35.0 %",
        "112.0 ms",
        "<td class=\"num\">135.0</td>",
        "16.50",
        &linked,
        &previous,
    ] {
        assert!(body.contains(expected), "run page lacks {expected:?}: {body}");
    }
}

#[tokio::test]
async fn run_page_compare_alerts_and_metrics() {
    let db = TestDb::sqlite();
    let app = TestApp::spawn_with(&db, "", Some("t0ken")).await;
    let store = &app.store;
    let last = app.store_nights(3).await;

    let (status, body) = app.get(&format!("/runs/{last}")).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("<h2>Deploy output</h2>") && body.contains("rolled out 1.0.2 &#60;3 replicas&#62;"),
        "{body}"
    );
    assert!(
        body.contains("GET /boards/{id}: response time per second") && body.contains("errors per second by class"),
        "{body}"
    );

    let (status, body) = app.get(&format!("/compare?a={}&b={last}", last - 1)).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(
            "<tr class=\"worse\"><td>p95 ms</td><td class=\"num\">100.00</td><td class=\"num\">135.00</td><td class=\"num change\" title=\"+35.0 %\">+35.0 %</td>"
        ),
        "{body}"
    );
    assert!(body.contains("GET /boards/{id}: p99 ms per second"), "{body}");
    assert_eq!(app.get("/compare?a=1").await.0, 400);

    let opening = NewEpisode {
        scenario: "checkout".into(),
        kind: "regression".into(),
        run_id: Some(last),
        last_good_run_id: None,
        summary: "p95 of GET /boards/{id} +35 %".into(),
        at: Utc::now(),
    };
    let message = |id: i64| {
        vec![NewMessage {
            episode_id: Some(id),
            notifier: "team-slack".into(),
            event: "regression".into(),
            payload: r#"{"text":"checkout regressed","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*GET /boards/{id}* p95 100 ms -> 135 ms"}}]}"#.into(),
            idempotency_key: format!("k-{id}"),
            created_at: Utc::now(),
        }]
    };
    let episode = store.open_episode(&opening, message).await.unwrap().expect("no episode was open");
    let [queued] = app.webhook_messages().await.try_into().unwrap();
    assert_eq!((queued.notifier.as_str(), queued.state()), ("team-slack", "pending"));
    let (status, body) = app.get("/alerts").await;
    assert_eq!(status, 200);
    assert!(
        body.contains("p95 of GET /boards/{id} +35 %") && body.contains(&format!("/alerts/{episode}/acknowledge")),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "<td data-label=\"Webhook\">team-slack</td>\n<td data-label=\"Event\">regression</td>\n<td \
             data-label=\"Episode\">#{episode}</td>"
        )),
        "{body}"
    );
    // The alert names the endpoints and numbers of its run, and shows the message as it was sent.
    assert!(body.contains(r#"<li><span class="endpoint">GET /boards<wbr>/{id}</span> <strong>p95</strong>"#), "{body}");
    assert!(body.contains("<pre class=\"message\">*GET /boards/{id}* p95 100 ms -&#62; 135 ms</pre>"), "{body}");
    assert!(body.contains("status-pending\">pending"), "{body}");
    let (status, metrics) = app.get("/metrics").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("degrade_runs{scenario=\"checkout\",status=\"finished\"} 2"), "{metrics}");
    assert!(metrics.contains("degrade_runs{scenario=\"checkout\",status=\"regressed\"} 1"), "{metrics}");
    assert!(metrics.contains("degrade_open_episodes{scenario=\"checkout\"} 1"), "{metrics}");
    assert!(metrics.contains("degrade_last_run_age_seconds{scenario=\"checkout\"} 86"), "{metrics}");

    // Acknowledging is a POST: it needs the token, and a reason.
    let path = format!("/api/v1/episodes/{episode}/acknowledge");
    let reason = serde_json::json!({ "reason": "known slow index, fix in 1.1" });
    assert_eq!(app.post_json(&path, reason.clone(), None).await.0, 401);
    assert_eq!(app.post_json(&path, reason.clone(), Some("Bearer wrong")).await.0, 401);
    let not_json = app.client.post(format!("{}{path}", app.address)).bearer_auth("t0ken").body("reason=x").send();
    let not_json = not_json.await.unwrap();
    assert_eq!(not_json.status().as_u16(), 400);
    let not_json: serde_json::Value = not_json.json().await.unwrap();
    assert!(not_json["error"]["message"].as_str().unwrap().starts_with("the body must be JSON"), "{not_json}");
    let (status, body) = app.post_json(&path, serde_json::json!({ "reason": " " }), Some("Bearer t0ken")).await;
    assert_eq!((status, body.contains("A reason is required")), (400, true), "{body}");
    let (status, body) = app.post_json(&path, reason.clone(), Some("Bearer t0ken")).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.post_json(&path, reason, Some("Bearer t0ken")).await;
    assert_eq!(
        (status, body.contains("is acknowledged already; it stays open until it recovers")),
        (409, true),
        "{body}"
    );
    let (_, json) = app.get_json("/api/v1/episodes").await;
    assert_eq!(json["episodes"][0]["state"], "acknowledged");
    assert_eq!(json["episodes"][0]["acknowledged_reason"], "known slow index, fix in 1.1");
}

/// Smoke runs (another scenario hash) are another workload series: the run page says which series a run
/// belongs to and that others exist; the scenario page lists every series with its shape, and shows the nights
/// of the scenario as written, not the newer smoke runs, unless asked.
#[tokio::test]
async fn run_and_scenario_pages_name_the_workload_series() {
    let db = TestDb::sqlite();
    let app = TestApp::spawn(&db).await;
    let store = &app.store;
    let last = app.store_nights(3).await;
    for n in 0..2 {
        let started_at = Utc::now() - Duration::hours(5 - n);
        let run = NewRun {
            scenario: "checkout".into(),
            build_id: Some("1.0.9".into()),
            seed: n,
            scenario_hash: "5m0ke5eries".into(),
            scenario_source: None,
            deploy_output: None,
            started_at,
            confirms: None,
            judged_against: None,
            reshape: Some("--duration 20s --rate-scale 0.5".into()),
        };
        let id = store.create_run(&run).await.unwrap();
        // The first over an HTTP/2 target, the second over an HTTP/1.1 target with gRPC steps over h2c.
        let connection = Some(degrade::model::ConnectionReport {
            negotiated: if n == 0 { degrade::model::WireProtocol::H2 } else { degrade::model::WireProtocol::H2c },
            connections_opened: 1 + n as u64,
            max_concurrent_streams: None,
            steps_only: n == 1,
        });
        let load_summary = LoadSummary {
            model: "open".into(),
            target_rate: 60.0,
            measured_secs: 20.0,
            connection,
            ..LoadSummary::default()
        };
        let results = RunResults {
            status: RunStatus::Finished,
            finished_at: started_at + Duration::seconds(25),
            validity_reasons: vec![],
            load_summary,
            endpoints: vec![endpoint_row(OVERALL_ENDPOINT, 90.0, 0)],
            timeline: vec![],
        };
        store.finish_run(id, &results).await.unwrap();
    }

    let (status, body) = app.get(&format!("/runs/{last}")).await;
    assert_eq!(status, 200);
    assert!(body.contains("Workload series <code>h</code>: 0 s measured at 0.0 sessions/s, 3 measured runs"), "{body}");
    assert!(body.contains("this scenario has 1 other series (2 runs: an edited scenario file"), "{body}");
    let (_, smoke) = app.get(&format!("/runs/{}", last + 2)).await;
    let smoke_shape = "20 s measured at 60.0 sessions/s, smoke runs: --duration 20s --rate-scale 0.5";
    assert!(smoke.contains(&format!("Workload series <code>5m0ke5er</code>: {smoke_shape}, 2")), "{smoke}");
    assert!(smoke.contains("1 other series (3 runs"), "{smoke}");
    let steps_only = "Connections: requests went over http/1.1; the steps that asked for HTTP/2 (gRPC, a step's own \
                      <code>protocol</code>) went over h2c, 2 connections opened.";
    assert!(smoke.contains(steps_only), "{smoke}");
    let (_, http2) = app.get(&format!("/runs/{}", last + 1)).await;
    assert!(http2.contains("Connections: HTTP/2 requests went over h2, 1 connection opened."), "{http2}");

    let (status, page) = app.get("/scenarios/checkout").await;
    assert_eq!(status, 200);
    assert!(page.contains("<h2 id=\"series\">Workload series</h2>"), "{page}");
    // The charts show one series, the scenario's nights rather than the newer smoke runs, and link to the others.
    assert!(
        page.contains(
            "Workload series shown: <a href=\"?series=5m0ke5er\"><code>5m0ke5er</code></a> (smoke) <strong><code>h</code></strong>"
        ),
        "{page}"
    );
    assert!(
        page.contains(&format!("<a href=\"/runs/{last}\"><title>run #{last}, ")),
        "the nights' runs are drawn: {page}"
    );
    let smoke_row = format!(
        "<tr><td><a href=\"?series=5m0ke5er\"><code>5m0ke5er</code></a></td><td>{smoke_shape}</td><td class=\"num\">2</td>"
    );
    assert!(page.contains(&smoke_row), "{page}");
    assert!(
        page.contains(
            "<tr><td><a href=\"?series=h\"><code>h</code></a></td><td>0 s measured at 0.0 sessions/s</td><td class=\"num\">3</td>"
        )
    );
    assert!(page.find(&smoke_row) < page.find("<tr><td><a href=\"?series=h\">"), "the newest series comes first");
    let (_, smoke_page) = app.get("/scenarios/checkout?series=5m0ke5er").await;
    assert!(
        smoke_page
            .contains("Workload series shown: <strong><code>5m0ke5er</code></strong> (smoke) <a href=\"?series=h\">"),
        "{smoke_page}"
    );
    assert!(
        smoke_page.contains(&format!("<a href=\"/runs/{}\"><title>run #{}, ", last + 2, last + 2)),
        "the smoke runs are drawn when asked for: {smoke_page}"
    );
    let (status, unknown) = app.get("/scenarios/checkout?series=nope").await;
    assert_eq!(status, 404);
    assert!(unknown.contains("Scenario `checkout` has no workload series `nope`."), "{unknown}");
}

/// The p95 band on a route's chart is what the detector would call no change for the newest night, read from
/// the nights its verdict was judged against: a recovered night judged against the nights before a regression
/// is drawn inside a band at their level, not far below one at the regressed nights' (found by a new-user trial).
#[tokio::test]
async fn the_band_is_read_from_the_nights_the_newest_was_judged_against() {
    use crate::support::nights::store_night;
    let db = TestDb::sqlite();
    let app = TestApp::spawn(&db).await;
    let store = &app.store;
    let mut usual = Vec::new();
    for n in 1..=5 {
        usual.push(store_night(store, "board", n, 20.0, RunStatus::Finished).await);
    }
    for n in 6..=9 {
        store_night(store, "board", n, 200.0, RunStatus::Regressed).await;
    }
    let recovered = store_night(store, "board", 10, 20.0, RunStatus::Passed).await;
    let verdict = degrade::model::NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: usual,
        outcome: degrade::model::VerdictOutcome::Passed,
        summary: "passed".into(),
        created_at: Utc::now(),
        findings: vec![],
    };
    store.save_verdict(recovered, &verdict).await.unwrap();
    let (status, page) = app.get("/scenarios/board?range=30d").await;
    assert_eq!(status, 200);
    let chart = page.find("GET /boards/{id}: response time").unwrap_or_else(|| panic!("no chart: {page}"));
    let band = "<title>no change for the detector: p95 from ";
    let at = chart + page[chart..].find(band).unwrap_or_else(|| panic!("no band: {page}"));
    // `17.0 ms to 23.6 ms</title>`
    let words: Vec<&str> = page[at + band.len()..].split(['<', ' ']).collect();
    let upper: f64 = words[3].parse().unwrap_or_else(|_| panic!("{words:?}"));
    assert!(upper < 40.0, "the band reaches {upper} ms, the regressed nights' level: {words:?}");
}
