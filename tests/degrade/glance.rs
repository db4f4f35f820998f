//! What a glance at degrade's outputs says, on runs stored through the real store: a change past ×10 reads
//! as the same factor in `check` (text, Markdown, JUnit; JSON keeps the number) and in the alert; on the
//! dashboard only what the verdict judged is coloured, a sparkline draws the figure that regressed with the
//! verdict's own change, the grid is headed by builds, and an invalid run is drawn apart from its trend.

use chrono::Utc;
use degrade::model::{Change, Finding, FindingOutcome, NewVerdict, OVERALL_ENDPOINT, RunStatus, VerdictOutcome};
use degrade::notify::Courier;
use degrade::store::Store;

use crate::support::app::TestApp;
use crate::support::config::{QUICK_SCENARIO, alerting_config, load};
use crate::support::nights::{WOBBLE, judge_and_alert, store_night};
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
    let report = judge_and_alert(&store, &config, slow).await;
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
    // The number, not the factor's text, to the six significant digits an alert's figures keep.
    let sent = numbers["delta_pct"].as_f64().expect("a number");
    assert!((sent - delta).abs() <= delta.abs() * 1e-5, "the JSON alert keeps the number: {own:#}");

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

/// A finding of the last night's verdict.
fn finding(endpoint: &str, metric: &str, outcome: FindingOutcome, baseline: f64, delta_pct: f64) -> Finding {
    Finding {
        endpoint: endpoint.into(),
        metric: metric.into(),
        outcome,
        baseline_value: Some(baseline),
        candidate_value: baseline * (1.0 + delta_pct / 100.0),
        delta_pct: Some(delta_pct),
        limit: None,
        interval: None,
        p_value: None,
        reason: "judged".into(),
    }
}

/// Eight nights of `checkout` (boards about 10 ms, the sixth an invalid run at 900 ms), the last judged:
/// boards regressed ×316 on p50 and ×51 on p95, `POST /cards` moved +57 % and was judged unchanged. Returns
/// the ids of the invalid night and the last.
async fn judged_nights(store: &Store) -> (i64, i64) {
    let mut ids = Vec::new();
    for n in 0..8 {
        let (boards, status) = match n {
            5 => (900.0, RunStatus::Invalid),
            7 => (130.0, RunStatus::Finished),
            _ => (10.0 * WOBBLE[n as usize], RunStatus::Finished),
        };
        ids.push(store_night(store, "checkout", n, boards, status).await);
    }
    let last = ids[7];
    let findings = vec![
        finding("GET /boards/{id}", "p50", FindingOutcome::Regression, 5.0, 31531.5),
        finding("GET /boards/{id}", "p95", FindingOutcome::Regression, 61.9, 5014.5),
        finding("POST /cards", "p95", FindingOutcome::NoChange, 38.0, 57.0),
        finding(OVERALL_ENDPOINT, "p95", FindingOutcome::NoChange, 80.0, 2.0),
    ];
    let verdict = NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: vec![ids[4], ids[6]],
        outcome: VerdictOutcome::Regressed,
        summary: "regressed: 2 regressions".into(),
        created_at: Utc::now(),
        findings,
    };
    store.save_verdict(last, &verdict).await.unwrap();
    (ids[5], last)
}

#[tokio::test]
async fn the_dashboard_colours_and_labels_only_what_the_verdict_found() {
    let db = TestDb::sqlite();
    let app = TestApp::spawn(&db).await;
    let (invalid, last) = judged_nights(&app.store).await;

    let (status, overview) = app.get("/").await;
    assert_eq!(status, 200);
    // The changes table: the factor, its exact percentage on hover.
    assert!(overview.contains(r#"<td class="num change" title="+31531.5 %">×316</td>"#), "{overview}");
    let sparklines = overview.split(r#"<ul class="sparklines">"#).nth(1).unwrap();
    let sparkline = |endpoint: &str| {
        let start = sparklines.find(&format!(r#"<span class="endpoint">{endpoint}</span>"#)).unwrap();
        sparklines[start..].split("</li>").next().unwrap().to_owned()
    };
    // The regressed route's line is its p50, with the verdict's own change against its baseline.
    let boards = sparkline("GET /boards<wbr>/{id}");
    assert!(boards.contains(r#"p50 65.0 ms (<span title="+31531.5 %">×316</span> vs baseline)"#), "{boards}");
    assert!(boards.contains("regressed: p50, p95"), "{boards}");
    // The route judged unchanged carries no change of its own, however far it moved.
    let cards = sparkline("POST /cards");
    assert!(!cards.contains("vs baseline") && !cards.contains("(+") && !cards.contains("regressed"), "{cards}");

    let (_, trend) = app.get("/scenarios/checkout").await;
    let grid = trend.split(r#"<table class="grid">"#).nth(1).unwrap().split("</table>").next().unwrap();
    // Each night is headed by its build, its run on hover.
    assert!(grid.contains(&format!(r#"<th title="run #{last}, "#)) && grid.contains(">1.0.7</a></th>"), "{grid}");
    assert!(!grid.contains("style="), "no cell is tinted by a movement: {grid}");
    let cards_row = grid.split(r#"<th scope="row">POST /cards</th>"#).nth(1).unwrap().split("</tr>").next();
    let last_cell = cards_row.unwrap().rsplit("<td ").next().unwrap();
    assert!(
        last_cell.starts_with(r#"class="steady"><a href="/runs/"#) && last_cell.contains("+57.0 % (no_change)\"></a>"),
        "judged unchanged: plain, its numbers on hover: {last_cell}"
    );
    assert!(grid.contains("GET /boards/{id} p50 5.0 ms → 1581.6 ms, ×316 (+31531.5 %) (regression)"), "{grid}");
    assert!(grid.contains(">×316</a></td>"), "the cell says what the table says: {grid}");

    // The invalid night is marked apart from the boards line, above its scale, never joined into it.
    let boards_chart = trend.split("<h2>GET /boards<wbr>/{id}</h2>").nth(1).unwrap().split("</svg>").next().unwrap();
    let marked = format!(r#"<a href="/runs/{invalid}"><title>run #{invalid}, "#);
    let apart = boards_chart.split(&marked).nth(1).unwrap().split("</a>").next().unwrap();
    assert!(apart.contains("; invalid: never judged, drawn apart from the line"), "{apart}");
    assert!(apart.contains(r#"<path class="invalid-run""#) && apart.contains(r#"class="off-scale""#), "{apart}");
    let line = boards_chart.split(r##"<polyline fill="none" stroke="#2f6fd0""##).nth(1).unwrap();
    let line = line.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(line.split(' ').count(), 7, "seven valid nights on the line, the invalid one off it: {line}");
}
