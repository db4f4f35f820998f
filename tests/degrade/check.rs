//! `degrade check` through the real binary, on runs stored through the real store.

use chrono::Duration;
use degrade::model::{EndpointResult, FindingOutcome, LoadSummary, NewRun, OVERALL_ENDPOINT, RunResults, RunStatus};
use degrade::store::Store;

use crate::support::nights::{WOBBLE, endpoint, new_run, night, store_night, store_smoke_night};
use crate::support::{TestDb, check, degrade, project, text};

/// Ten normal nights of `checkout`: boards p95 about 100 ms.
async fn ten_nights(store: &Store) {
    for n in 0..10 {
        store_night(store, "checkout", n, 100.0 * WOBBLE[n as usize], RunStatus::Finished).await;
    }
}

#[tokio::test]
async fn check_story_on_sqlite() {
    check_story(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn check_story_on_postgres() {
    let db = TestDb::postgres().await;
    check_story(&db).await;
}

async fn check_story(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    ten_nights(&store).await;

    // Night 10: boards got 35 % slower. Exit 1, and the finding names the endpoint and the numbers.
    let regressed = store_night(&store, "checkout", 10, 135.0, RunStatus::Finished).await;
    let (code, stdout, stderr) = check(db, &["--baseline", "last-7d"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("run #{regressed}")), "{stdout}");
    assert!(stdout.contains("baseline last-7d: 7 runs: #4 ("), "the baseline lists its runs: {stdout}");
    let regression_lines: Vec<&str> = stdout.lines().filter(|l| l.contains("REGRESSION")).collect();
    assert!(!regression_lines.is_empty(), "{stdout}");
    assert!(regression_lines.iter().all(|l| l.contains("GET /boards/{id}")), "only boards regressed: {stdout}");
    assert!(stdout.contains("GET /boards/{id}  p95  ") && stdout.contains("-> 135.0 ms (+3"), "{stdout}");
    let boards_p95 = stdout.lines().find(|l| l.contains("GET /boards/{id}  p95  ")).unwrap();
    assert!(boards_p95.contains(", tonight 1") && boards_p95.contains("–1"), "tonight's 95 % interval: {stdout}");
    assert!(stdout.contains("(1 % false alarms over the run's "), "the reason names the run's family: {stdout}");
    assert!(stdout.lines().last().unwrap().starts_with("verdict: regressed: "), "{stdout}");
    crate::support::quoted::assert_quoted("check-regressed", &stdout);
    assert_eq!(store.find_run(regressed).await.unwrap().unwrap().status, RunStatus::Regressed);
    let verdict = store.latest_verdict(regressed).await.unwrap().unwrap();
    assert_eq!(verdict.baseline_run_ids.len(), 7);
    assert!(verdict.findings.iter().any(|f| f.outcome == FindingOutcome::Regression && f.metric == "p95"));

    // Night 11: back to normal. Exit 0; judged against the last 7 nights, which include the slow one.
    let normal = store_night(&store, "checkout", 11, 101.0, RunStatus::Finished).await;
    let (code, stdout, stderr) = check(db, &["--baseline", "last-7d"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("run #{normal}")) && stdout.contains("verdict: passed"), "{stdout}");
    assert_eq!(store.find_run(normal).await.unwrap().unwrap().status, RunStatus::Passed);

    // The regressed night judged again with explicit choices, in every machine-readable format.
    let run = regressed.to_string();
    let (code, stdout, _) = check(db, &["--run", &run, "--baseline", "last-5", "--format", "json"]);
    assert_eq!(code, Some(1));
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("JSON output parses");
    assert_eq!(json["outcome"], "regressed");
    assert_eq!(json["baseline"].as_array().unwrap().len(), 5);
    let (code, stdout, _) = check(db, &["--run", &run, "--format", "junit"]);
    assert_eq!(code, Some(1));
    let xml = roxmltree::Document::parse(&stdout).expect("JUnit output parses as XML");
    let suite = xml.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    // Throughput is judged only under a closed model; these runs carry no load model, so 4 metrics each.
    assert_eq!(suite.attribute("tests"), Some("12"), "3 endpoints x 4 metrics");
    let failed: Vec<_> = xml
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .map(|f| f.parent().unwrap().attribute("classname").unwrap().to_owned())
        .collect();
    assert!(!failed.is_empty() && failed.iter().all(|c| c == "checkout.GET /boards/{id}"), "{failed:?}");
    // One named run as the baseline: no noise to measure, the minimum effect decides.
    let (code, stdout, stderr) = check(db, &["--run", &run, "--baseline", "run:3"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("baseline run:3: 1 run: #3 (") && stdout.contains("compared with one run"), "{stdout}");
    let (code, stdout, _) = check(db, &["--run", &run, "--format", "markdown"]);
    assert_eq!(code, Some(1));
    assert!(stdout.starts_with("### ❌ degrade: regressed: "), "{stdout}");
    assert!(stdout.contains("| `GET /boards/{id}` | p95 | "), "{stdout}");
    // Against other baselines (the slow night itself among them, `last-1` of the next night), it answered a
    // question: the night's verdict, its run's status and so the dashboard's history stay as they were.
    let (_, _, stderr) = check(db, &["--run", &normal.to_string(), "--baseline", "last-1"]);
    assert!(stderr.contains(&format!("note: run #{normal} was judged against last-7d already")), "{stderr}");
    assert_eq!(store.latest_verdict(normal).await.unwrap().unwrap().baseline_spec, "last-7d");
    let verdict = store.latest_verdict(regressed).await.unwrap().unwrap();
    assert_eq!(verdict.baseline_spec, "last-7d", "run:3 and last-5 were questions, not the night's verdict");
    assert_eq!(store.find_run(regressed).await.unwrap().unwrap().status, RunStatus::Regressed);
    store.close().await;
}

/// A night of `checkout` with an admin endpoint of `requests` requests a night next to the busy ones.
async fn store_thin_night(store: &Store, n: i64, requests: i64) {
    store_admin_night(store, n, requests, 0).await;
}

/// A night of `checkout` whose admin endpoint made `requests` requests, `errors` of them failed.
async fn store_admin_night(store: &Store, n: i64, requests: i64, errors: i64) {
    let id = store.create_run(&new_run("checkout", n)).await.unwrap();
    let wobble = WOBBLE[n as usize % WOBBLE.len()];
    let admin = EndpointResult { requests, errors, ..endpoint("GET /admin/report", 300.0 * wobble) };
    let results = RunResults {
        status: RunStatus::Finished,
        finished_at: night(n) + Duration::minutes(5),
        validity_reasons: vec![],
        load_summary: LoadSummary::default(),
        endpoints: vec![endpoint(OVERALL_ENDPOINT, 80.0 * wobble), endpoint("GET /boards/{id}", 100.0 * wobble), admin],
        timeline: vec![],
    };
    store.finish_run(id, &results).await.unwrap();
}

#[tokio::test]
async fn a_percentile_of_too_few_requests_is_named_and_not_judged() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    for n in 0..=10 {
        store_thin_night(&store, n, 200).await;
    }
    let (code, stdout, stderr) = check(&db, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // One line for people; the reasons are in the JSON.
    assert!(
        stdout.contains(
            "  too few     1 figure had too few requests to judge: GET /admin/report p99 (why, and how many are \
             needed: --format json, or the run page)"
        ),
        "{stdout}"
    );
    crate::support::quoted::assert_quoted("check-too-few", &stdout);
    let (_, json, _) = check(&db, &["--format", "json"]);
    assert!(json.contains("p99 of 200 requests: too few to judge"), "{json}");
    assert!(json.contains("are needed); p95 judged instead"), "{json}");
    assert!(stdout.contains("verdict: passed: ") && stdout.contains("1 on too few requests to judge"), "{stdout}");
    // The run page says what the night's size let it judge, and what the thin tail needs.
    let app = crate::support::app::TestApp::spawn(&db).await;
    let (status, page) = app.get("/runs/11").await;
    assert_eq!(status, 200);
    assert!(page.contains("GET /admin/report: 200 requests: p50, p95 judged; p99 needs ~"), "{page}");
    assert!(!page.contains("GET /boards/{id}: "), "an endpoint with enough requests is not listed: {page}");
    store.close().await;
}

#[tokio::test]
async fn an_endpoint_that_starts_failing_reads_from_none_not_n_a() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    for n in 0..10 {
        store_admin_night(&store, n, 12_000, 0).await;
    }
    store_admin_night(&store, 10, 12_000, 600).await;
    let (code, stdout, stderr) = check(&db, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let line = stdout.lines().find(|l| l.contains("GET /admin/report  error_rate")).expect(&stdout);
    assert!(line.contains("0.000 % -> 5.000 % (from none, tonight "), "no ratio from zero, and no \"n/a\": {line}");
    let (_, xml, _) = check(&db, &["--format", "junit"]);
    assert!(xml.contains("change from none, limit") && xml.contains("change none, limit"), "{xml}");
    let (_, markdown, _) = check(&db, &["--format", "markdown"]);
    assert!(markdown.contains("| 0.000 % | 5.000 % | 4.624–5.405 % | from none |"), "{markdown}");
    let app = crate::support::app::TestApp::spawn(&db).await;
    let (_, page) = app.get("/runs/11").await;
    assert!(page.contains(">from none</td>"), "{page}");
    let (_, scenario) = app.get("/scenarios/checkout").await;
    assert!(scenario.contains(r#"<td class="regressed"><a href="/runs/11" title="run #11, "#), "{scenario}");
    assert!(scenario.contains(">from 0</a></td>"), "the grid's cell says which way it went: {scenario}");
    assert!(scenario.contains(">from none</"), "what changed says it too: {scenario}");
    store.close().await;
}

#[tokio::test]
async fn too_few_nights_are_inconclusive() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    for n in 0..4 {
        store_night(&store, "checkout", n, 100.0, RunStatus::Finished).await;
    }
    let (code, stdout, stderr) = check(&db, &[]);
    assert_eq!(code, Some(0), "inconclusive exits 0 without --strict: {stdout}{stderr}");
    assert!(stdout.contains("verdict: inconclusive: 3 valid runs in the baseline, at least 5 needed"), "{stdout}");
    assert!(stderr.contains("warning: the verdict is inconclusive"), "{stderr}");
    let (code, _, _) = check(&db, &["--strict"]);
    assert_eq!(code, Some(3));
}

#[tokio::test]
async fn a_short_baseline_names_the_invalid_nights_it_dropped() {
    // Seven nights in the window, three of them invalid, then tonight's, invalid too.
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    for n in 0..8 {
        let status = if [3, 4, 5, 7].contains(&n) { RunStatus::Invalid } else { RunStatus::Finished };
        store_night(&store, "checkout", n, 100.0, status).await;
    }
    let (code, stdout, stderr) = check(&db, &["--run", "7"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "verdict: inconclusive: 3 valid runs in the baseline, at least 5 needed to judge against night-to-night \
             noise; 3 invalid nights left out: #4 (dropped 12 % of arrivals), #5 (dropped 12 % of arrivals), #6"
        ),
        "{stdout}"
    );
    // `last-2` is as long as asked: no invalid night shortened it, none is named.
    let (_, stdout, _) = check(&db, &["--run", "7", "--baseline", "last-2"]);
    assert!(stdout.contains("verdict: inconclusive: 2 valid runs in the baseline, at least 5 needed"), "{stdout}");
    assert!(!stdout.contains("invalid night"), "{stdout}");
    // An invalid run is not compared, and its header still counts the baseline a valid one would have had.
    let (code, stdout, stderr) = check(&db, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("baseline last-7d: 4 runs: #1 ("), "{stdout}");
}

#[tokio::test]
async fn bad_input_gets_a_clear_message_and_the_right_exit_code() {
    let db = TestDb::sqlite();
    let missing = check(&db, &[]);
    assert_eq!(missing.0, Some(2));
    assert!(missing.2.contains("it does not exist; check [database] url or DEGRADE_DATABASE_URL"), "{}", missing.2);

    let store = Store::connect(&db.url).await.unwrap();
    let empty = check(&db, &[]);
    assert_eq!(empty.0, Some(2));
    assert!(empty.2.contains("no scenario has been run yet"), "{}", empty.2);

    ten_nights(&store).await;

    let cases: [(&[&str], i32, &str); 7] = [
        (&["--baseline", "last-week"], 2, "unknown baseline `last-week`; use last-7d"),
        (&["--scenario", "search"], 2, "unknown scenario `search`"),
        (&["search"], 2, "unknown scenario `search`"),
        (&["search", "--scenario", "checkout"], 2, "cannot be used with"),
        (&["--run", "4242"], 2, "run #4242 does not exist"),
        (&["--baseline", "run:4242"], 2, "baseline run #4242 does not exist"),
        // A build the scenario never ran is a typo in a CI step, not an inconclusive verdict that passes.
        (&["--baseline", "build:9.9"], 2, "baseline build:9.9: scenario `checkout` has no run of build 9.9; its"),
    ];
    for (args, code, message) in cases {
        let (actual, stdout, stderr) = check(&db, args);
        assert_eq!(actual, Some(code), "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains(message), "{args:?} should say {message:?}:\n{stdout}{stderr}");
    }

    // An invalid run says nothing about the build: inconclusive, with the generator's reasons.
    let invalid = store_night(&store, "checkout", 10, 300.0, RunStatus::Invalid).await;
    let (code, stdout, _) = check(&db, &["--strict"]);
    assert_eq!(code, Some(3), "{stdout}");
    let reason =
        format!("run #{invalid} is invalid, the load generator could not be trusted: dropped 12 % of arrivals");
    assert!(stdout.contains(&reason), "{stdout}");
    // As a PR comment: the reason, and no empty table of checks.
    let (_, stdout, _) = check(&db, &["--format", "markdown"]);
    assert!(stdout.contains(&reason) && !stdout.contains("All 0 checks"), "{stdout}");

    let run = NewRun {
        scenario: "checkout".into(),
        build_id: None,
        seed: 1,
        scenario_hash: "h".into(),
        scenario_source: None,
        deploy_output: None,
        started_at: night(11),
        confirms: None,
        judged_against: None,
        reshape: None,
    };
    let aborted = store.create_run(&run).await.unwrap();
    store.end_run(aborted, RunStatus::Aborted, "degrade was stopped", night(11)).await.unwrap();
    let (code, _, stderr) = check(&db, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(&format!("run #{aborted} was stopped (degrade was stopped); a run cut short is never judged")),
        "{stderr}"
    );
    // It says which run before it measured (not the invalid one), for the gate to judge that night instead.
    let said =
        format!("note: run #{aborted}, the latest, was stopped before it ended; the latest run that measured is #");
    assert!(stderr.contains(&said) && !stderr.contains(&format!("is #{invalid} ")), "{stderr}");
    store.close().await;
}

/// A smoke run named as the baseline of a night as written (or the other way round) is refused as another
/// workload, not as "a different version of the scenario file", which it is not.
#[tokio::test]
async fn a_smoke_run_is_no_baseline_of_a_night_as_written_and_says_so() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    ten_nights(&store).await;
    let smoke = store_smoke_night(&store, "checkout", 10, "--duration 2s").await;
    let (code, stdout, stderr) = check(&db, &["--run", "3", "--baseline", &format!("run:{smoke}")]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    let said = format!(
        "baseline run #{smoke} was a smoke run (--duration 2s) and run #3 is the scenario as written: another \
         workload, so its numbers are not comparable"
    );
    assert!(stderr.contains(&said), "{stderr}");
    store.close().await;
}

/// The gate without `--run` speaks for the nightly series: a smoke run made after a regressed night is passed
/// over, saying so, and the night is judged (a trial's gate judged the smoke run, inconclusive, and exited 0).
#[tokio::test]
async fn a_smoke_run_after_a_regressed_night_does_not_hide_it_from_the_gate() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    ten_nights(&store).await;
    let regressed = store_night(&store, "checkout", 10, 150.0, RunStatus::Finished).await;
    let smoke = store_smoke_night(&store, "checkout", 11, "--duration 2s").await;
    let (code, stdout, stderr) = check(&db, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let said = format!(
        "note: run #{smoke}, the latest, is a smoke run (reshaped by --duration or --rate-scale); the gate judges \
         #{regressed}, the latest nightly run"
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(stdout.contains(&format!("run #{regressed} ")), "{stdout}");
    store.close().await;
}

#[test]
fn several_scenarios_need_a_name() {
    let (dir, _) = project(
        "[[scenario]]\nname = \"a\"\nfile = \"a.toml\"\n[[scenario]]\nname = \"b\"\nfile = \"a.toml\"\n",
        &[("a.toml", "# workload\n")],
    );
    assert!(degrade(dir.path(), &["migrate"], &[]).status.success());
    let output = degrade(dir.path(), &["check"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).1.contains("2 scenarios exist (a, b); choose one with --scenario NAME"),
        "{:?}",
        text(&output)
    );
}

#[test]
fn detect_speaks_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let history: Vec<String> =
        WOBBLE.iter().map(|w| format!("{{\"date\":\"2026-01-01\",\"value\":{}}}", 100.0 * w)).collect();
    let line = |id: &str, value: f64| {
        format!(
            "{{\"id\":\"{id}\",\"metric\":\"p95_latency_ms\",\"kind\":\"latency\",\"unit\":\"ms\",\"direction\":\"higher_is_worse\",\
             \"history\":[{}],\"candidate\":{{\"date\":\"2026-01-11\",\"value\":{value}}}}}",
            history.join(",")
        )
    };
    let input =
        format!("{}\n{}\n{{\"id\":\"bad\",\"direction\":\"sideways\"}}\n", line("slow", 140.0), line("fine", 101.0));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_degrade"))
        .arg("detect")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "a bad line makes the exit code 2: {stderr}");
    assert!(stderr.contains("stdin:3: direction: unknown variant `sideways`"), "{stderr}");
    let answers: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2);
    assert_eq!((answers[0]["id"].as_str(), answers[0]["alert"].as_bool()), (Some("slow"), Some(true)));
    assert_eq!((answers[1]["id"].as_str(), answers[1]["alert"].as_bool()), (Some("fine"), Some(false)));
    assert!(answers[0]["delta_pct"].as_f64().unwrap() > 35.0);
}

#[test]
fn detect_rejects_bad_settings_and_unreadable_lines() {
    let dir = tempfile::tempdir().unwrap();
    let output = degrade(dir.path(), &["detect", "--min-effect-pct", "0"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("`0` is not a percentage in (0, 1000]"), "{:?}", text(&output));
    let output = degrade(dir.path(), &["detect", "--min-runs", "1"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("1 is not in 2..=1000"), "{:?}", text(&output));

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_degrade"))
        .arg("detect")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input =
        b"\xff\xfe not text\n{\"id\":1,\"direction\":\"higher_is_worse\",\"history\":[],\"candidate\":{\"value\":1}}\n";
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("stdin:1: not UTF-8 text"), "{stderr}");
    assert!(
        stdout.contains("\"reason\":\"inconclusive: 0 nights of history, at least 3 needed\""),
        "the readable line is answered: {stdout}"
    );
}
