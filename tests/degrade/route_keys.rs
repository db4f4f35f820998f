//! Endpoints keyed by their query parameter names (`GET /echo?q=`): scenario steps in a real run against a stub
//! API on 127.0.0.1, `degrade tape import` of access logs through the real binary (`--route` with a query
//! part, the cap on one path's query shapes), `[[tape.route]]` patterns in a replay, and the runs stored
//! under the old keys, which stay a series of their own that `check` explains and the dashboard still shows.

use chrono::{Duration, Utc};
use degrade::model::{EndpointResult, LoadSummary, NewRun, OVERALL_ENDPOINT, RunResults, RunStatus};
use degrade::scenario;
use degrade::store::Store;

use crate::support::app::TestApp;
use crate::support::target::StubTarget;
use crate::support::{TestDb, check, degrade, run_scenario, text};

/// Three kinds of request to one path, as a feed page sends them.
fn feed_scenario(base_url: &str) -> String {
    format!(
        "[target]\nbase_url = \"{base_url}\"\n[[flow]]\nname = \"feed\"\n\
         [[flow.step]]\npath = \"/echo\"\nquery = {{ userId = \"{{{{ randint(1, 9) }}}}\" }}\n\
         [[flow.step]]\npath = \"/echo?q=rust\"\n\
         [[flow.step]]\npath = \"/echo\"\nquery = {{ _sort = \"title\", _order = \"desc\" }}\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 20\n"
    )
}

const SHAPES: [&str; 3] = ["GET /echo?userId=", "GET /echo?q=", "GET /echo?_order=&_sort="];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_query_shapes_on_one_path_are_three_endpoints_of_a_real_run() {
    let target = StubTarget::start().await;
    let text = feed_scenario(&target.url());
    let plan = scenario::parse(std::path::Path::new("feed.toml"), &text, None, &|_| None).unwrap();
    assert_eq!(plan.endpoints, SHAPES);
    assert!(plan.warnings.is_empty(), "different names are different endpoints: {:?}", plan.warnings);
    let measurement = run_scenario(&text, &[]).await;
    let mut names: Vec<&str> = measurement.results.endpoints.iter().map(|e| e.endpoint.as_str()).collect();
    names.sort_unstable();
    let mut expected = [&[OVERALL_ENDPOINT][..], &SHAPES].concat();
    expected.sort_unstable();
    assert_eq!(names, expected);
    for endpoint in measurement.results.endpoints.iter().filter(|e| e.endpoint != OVERALL_ENDPOINT) {
        assert!(endpoint.requests > 0 && endpoint.errors == 0, "{endpoint:?}");
    }
    let echoed = target.counters.echoed.lock().unwrap().clone();
    for query in ["q=rust", "_order=desc&_sort=title"] {
        assert!(echoed.iter().any(|q| q == query), "{query} in {echoed:?}");
    }
    assert!(echoed.iter().any(|q| q.starts_with("userId=")), "{echoed:?}");
}

/// An nginx `combined` log of GETs to `targets`, one a second.
fn access_log(targets: &[String]) -> String {
    let line = |(i, target): (usize, &String)| {
        format!(
            "127.0.0.1 - - [30/Nov/2026:10:{:02}:{:02} +0000] \"GET {target} HTTP/1.1\" 200 12 \"-\" \"curl/8.5\"\n",
            i / 60,
            i % 60
        )
    };
    targets.iter().enumerate().map(line).collect()
}

/// `degrade tape import` of `log` in a temp folder with `args`: its output and the folder.
fn import(log: &str, args: &[&str]) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let mut all = vec!["tape", "import", "access.log", "--output", "t.tape", "--scenario", "replay.toml"];
    all.extend_from_slice(args);
    let output = degrade(dir.path(), &all, &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (stdout, dir)
}

/// The route table's line for `route`: share, requests and distinct ids.
fn route_line<'a>(stdout: &'a str, route: &str) -> Vec<&'a str> {
    let line =
        stdout.lines().find(|l| l.ends_with(&format!("  {route}"))).unwrap_or_else(|| panic!("{route}:\n{stdout}"));
    line.split_whitespace().collect()
}

#[test]
fn an_access_log_with_query_shapes_on_one_path_gives_a_route_each() {
    let targets = [
        "/posts?userId=1",
        "/posts?userId=2&utm_source=news&utm_medium=mail",
        "/posts?userId=3&_=1764496000000",
        "/posts?q=rust",
        "/posts?q=go&fbclid=IwAR2x",
        "/posts?_sort=views&_order=desc",
        "/posts?_order=asc&_sort=id",
        "/posts?tag=a&tag=b",
        "/posts?tag%5B%5D=a",
        "/posts?tag[]=b",
        "/posts",
        "/posts?1764496000000",
        "/posts?caf%C3%A9=1",
        "/posts?a%0Ab=1",
    ]
    .map(str::to_owned);
    let (stdout, dir) = import(&access_log(&targets), &[]);
    assert!(stdout.contains("kept      14 requests, 14 distinct, 8 routes"), "{stdout}");
    // Share, requests and distinct ids (none: no placeholder), then the route.
    for (route, requests) in [
        ("GET /posts?userId=", "3"),
        ("GET /posts?q=", "2"),
        ("GET /posts?_order=&_sort=", "2"),
        ("GET /posts", "2"),
        ("GET /posts?tag=", "1"),
        ("GET /posts?tag[]=", "2"),
        ("GET /posts?caf%C3%A9=", "1"),
        ("GET /posts?a%0Ab=", "1"),
    ] {
        assert_eq!(route_line(&stdout, route)[2..4], [requests, "-"], "{route}:\n{stdout}");
    }
    // A control character in a name reaches the report (and the keys) escaped, never as itself.
    assert!(stdout.chars().all(|c| c == '\n' || !c.is_control()), "{stdout:?}");
    // The scenario it wrote replays the tape, and validate lists the same routes.
    let validated = degrade(dir.path(), &["validate", "replay.toml"], &[]);
    let (out, err) = text(&validated);
    assert!(validated.status.success(), "{out}{err}");
    assert!(out.contains("8 routes") && out.contains("GET /posts?_order=&_sort="), "{out}");

    // A pattern with a query part is accepted and used: its placeholder's values are the route's ids.
    let (routed, _) = import(&access_log(&targets), &["--route", "/posts?q={q}"]);
    assert_eq!(route_line(&routed, "GET /posts?q=")[2..4], ["2", "2"], "{routed}");
    let (fixed, _) = import(&access_log(&targets), &["--route", "/posts?q=rust", "--route", "/posts?*"]);
    assert_eq!(route_line(&fixed, "GET /posts?q=rust")[2], "1", "{fixed}");
    assert_eq!(route_line(&fixed, "GET /posts")[2], "13", "every other request to the path: {fixed}");
    let refused = degrade(dir.path(), &["tape", "import", "access.log", "--route", "/posts?utm_source={s}"], &[]);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--route: in `/posts?utm_source={s}`, `utm_source` is never part of a route key"),
        "{stderr}"
    );
}

#[test]
fn one_path_with_endless_query_shapes_keeps_sixteen_and_says_so() {
    // A search page whose optional filters come in forty combinations, and one other route.
    let mut targets: Vec<String> = (0..40).map(|i| format!("/echo?f{i:02}=x")).collect();
    targets.extend((0..40).map(|i| format!("/echo?f{i:02}=y")));
    targets.push("/fast".to_owned());
    let (stdout, dir) = import(&access_log(&targets), &[]);
    assert!(stdout.contains("kept      81 requests, 81 distinct, 18 routes"), "16 shapes, the rest, /fast: {stdout}");
    assert_eq!(route_line(&stdout, "GET /echo?f00=")[2], "2", "{stdout}");
    assert_eq!(route_line(&stdout, "GET /echo?(other queries)")[2], "48", "{stdout}");
    let note = "note      GET /echo has more query shapes than the 16 told apart for one path: 48 of its requests \
                share one route, GET /echo?(other queries)";
    assert!(stdout.contains(note), "{stdout}");
    assert!(!stdout.contains("GET /echo?f16="), "{stdout}");
    // The replay measures the shapes past the cap under the route they share.
    let tape = std::fs::read_to_string(dir.path().join("t.tape")).unwrap();
    let replayed = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let target = StubTarget::start().await;
        let text = format!(
            "[target]\nbase_url = \"{}\"\n[[tape]]\nfile = \"t.tape\"\n\
             [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 81\n",
            target.url()
        );
        run_scenario(&text, &[("t.tape", &tape)]).await
    });
    let endpoints = &replayed.results.endpoints;
    let count = |name: &str| endpoints.iter().find(|e| e.endpoint == name).map_or(0, |e| e.requests);
    assert_eq!(endpoints.len(), 19, "(all) and the 18 routes: {endpoints:#?}");
    let sent: i64 = endpoints.iter().filter(|e| e.endpoint != OVERALL_ENDPOINT).map(|e| e.requests).sum();
    assert!(sent >= 77, "{endpoints:#?}");
    assert!(count("GET /echo?(other queries)") as f64 >= 0.5 * sent as f64, "{endpoints:#?}");
    assert!(endpoints.iter().all(|e| e.errors == 0), "{endpoints:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tape_route_with_a_query_part_keys_the_replay() {
    let target = StubTarget::start().await;
    let tape = "GET\t/echo?state=open&page=1\t200\nGET\t/echo?state=open\t200\nGET\t/echo?state=closed\t200\n\
                GET\t/status/404?_sort=a&_order=b\t200\nGET\t/status/404?x=1\t200\nGET\t/fast?q=a&utm_source=z\t200\n";
    let text = format!(
        "[target]\nbase_url = \"{}\"\n[[tape]]\nfile = \"t.tape\"\n\
         [[tape.route]]\npattern = \"/echo?state=open\"\n\
         [[tape.route]]\npattern = \"/fast?q={{q}}\"\n\
         [[tape.route]]\npattern = \"/status/{{code}}?*\"\n\
         [[tape.expect]]\nroute = \"GET /status/{{code}}\"\nstatus = [404]\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 12\n",
        target.url()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.tape"), tape).unwrap();
    let plan = scenario::parse(&dir.path().join("s.toml"), &text, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
    let mut keys = plan.endpoints.clone();
    keys.sort_unstable();
    let expected =
        ["GET /echo?page=&state=", "GET /echo?state=", "GET /echo?state=open", "GET /fast?q=", "GET /status/{code}"];
    assert_eq!(keys, expected, "a fixed value, any value, the built-in rules, a path whatever its query");
    assert!(plan.query_keys, "keys with a query part: a new series for runs stored under the old keys");
    std::fs::write(dir.path().join("plain.tape"), "GET\t/boards/1\t200\nGET\t/status/404?x=1\t200\n").unwrap();
    let plain = text.replace("file = \"t.tape\"", "file = \"plain.tape\"");
    let plain = scenario::parse(&dir.path().join("s.toml"), &plain, None, &|_| None).unwrap();
    assert!(!plain.query_keys, "a tape whose keys did not change keeps its series");
    let measurement = run_scenario(&text, &[("t.tape", tape)]).await;
    let endpoint = |name: &str| measurement.results.endpoints.iter().find(|e| e.endpoint == name).unwrap().clone();
    assert_eq!((endpoint("GET /echo?state=open").requests, endpoint("GET /echo?state=").requests), (2, 2));
    let status = endpoint("GET /status/{code}");
    assert_eq!((status.requests, status.errors), (4, 0), "404 as [[tape.expect]] says, whatever the query");
    // A route written with its names in another order is the same route; a pattern asking for a name keys
    // never hold is refused where it is written.
    let reordered = text.replace(
        "[[tape.expect]]\nroute = \"GET /status/{code}\"",
        "[[tape.expect]]\nroute = \"GET /echo?state=&page=\"",
    );
    assert!(scenario::parse(&dir.path().join("s.toml"), &reordered, None, &|_| None).is_ok());
    let refused = text.replace("/fast?q={q}", "/fast?gclid={g}");
    let error = scenario::parse(&dir.path().join("s.toml"), &refused, None, &|_| None).unwrap_err().to_string();
    assert!(
        error.contains("tape.route.pattern: in `/fast?gclid={g}`, `gclid` is never part of a route key"),
        "{error}"
    );
}

/// A night of `feed` as an earlier release stored it: the same scenario file, its requests to `/echo` keyed as
/// one endpoint, and that release's hash.
fn old_night(text: &str, n: i64) -> (NewRun, RunResults) {
    let started_at = Utc::now() - Duration::days(10 - n);
    let run = NewRun {
        scenario: "feed".into(),
        build_id: Some(format!("1.0.{n}")),
        seed: 1,
        scenario_hash: "0123456789abcdef".into(),
        scenario_source: Some(text.to_owned()),
        deploy_output: None,
        started_at,
        confirms: None,
        judged_against: None,
        reshape: None,
    };
    (run, results(started_at, &[OVERALL_ENDPOINT, "GET /echo"]))
}

fn results(started_at: chrono::DateTime<Utc>, endpoints: &[&str]) -> RunResults {
    let row = |name: &&str| EndpointResult {
        endpoint: (*name).to_owned(),
        requests: 2000,
        rate: 20.0,
        p50_us: 4000,
        p95_us: 9000,
        p99_us: 12000,
        max_us: 15000,
        ..EndpointResult::default()
    };
    RunResults {
        status: RunStatus::Finished,
        finished_at: started_at + Duration::minutes(2),
        validity_reasons: vec![],
        load_summary: LoadSummary::default(),
        endpoints: endpoints.iter().map(row).collect(),
        timeline: vec![],
    }
}

async fn old_keys_stay_a_series_of_their_own(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let text = feed_scenario("http://127.0.0.1:9");
    for n in 0..6 {
        let (run, results) = old_night(&text, n);
        let id = store.create_run(&run).await.unwrap();
        store.finish_run(id, &results).await.unwrap();
    }
    // Tonight's run of the same file under this release: its keys name the query parameters.
    let plan = scenario::parse(std::path::Path::new("feed.toml"), &text, None, &|_| None).unwrap();
    assert_ne!(plan.hash, "0123456789abcdef");
    let started_at = Utc::now() - Duration::hours(1);
    let tonight = NewRun {
        scenario_hash: plan.hash.clone(),
        started_at,
        build_id: Some("1.1.0".into()),
        ..old_night(&text, 0).0
    };
    let id = store.create_run(&tonight).await.unwrap();
    let keys: Vec<&str> = [OVERALL_ENDPOINT].into_iter().chain(plan.endpoints.iter().map(String::as_str)).collect();
    store.finish_run(id, &results(started_at, &keys)).await.unwrap();

    let (code, stdout, stderr) = check(db, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verdict: inconclusive: 0 valid runs in the baseline"), "a new series: {stdout}");
    let why = "the earlier 6 runs of this scenario were keyed without query parameter names (`GET /echo` where \
               this run has `GET /echo?_order=&_sort=`): degrade now keys each endpoint by them too, and a change \
               of keys starts a new workload series";
    assert!(stdout.contains(why), "{stdout}");
    assert_eq!(stdout.matches("keyed without query parameter names").count(), 1, "said once: {stdout}");
    assert!(!stdout.contains("REGRESSION"), "no endpoint is compared with one it never had: {stdout}");
    // The stored nights keep their keys: nothing rewrote them.
    let first = store.run_detail(1).await.unwrap().unwrap();
    assert!(first.endpoints.iter().any(|e| e.endpoint == "GET /echo"), "{:?}", first.endpoints);

    // The dashboard shows either series, and the long range that sums both, without confusing their keys.
    let app = TestApp::spawn(db).await;
    let (status, newest) = app.get("/scenarios/feed").await;
    assert_eq!(status, 200, "{newest}");
    assert!(newest.contains("GET /echo?q=") && !newest.contains("<h2>GET /echo</h2>"), "{newest}");
    let (status, old) = app.get("/scenarios/feed?series=01234567").await;
    assert_eq!(status, 200, "{old}");
    assert!(old.contains("<h2>GET /echo</h2>") && !old.contains("<h2>GET /echo?q=</h2>"), "{old}");
    for range in ["1y", "all"] {
        let (status, body) = app.get(&format!("/scenarios/feed?range={range}")).await;
        assert_eq!(status, 200, "{range}: {body}");
    }
    let (status, trend) = app.get_json("/api/v1/scenarios/feed/trend?endpoint=GET%20%2Fecho%3Fq%3D&range=30d").await;
    assert_eq!(status, 200, "{trend}");
    assert_eq!(trend["points"].as_array().map(Vec::len), Some(1), "{trend}");
    let (status, _) = app.get(&format!("/runs/{id}")).await;
    assert_eq!(status, 200);
    // An old night and tonight side by side: only the whole run is in both, under the same key.
    let (status, compared) = app.get(&format!("/compare?a=6&b={id}")).await;
    assert_eq!(status, 200, "{compared}");
    assert!(compared.contains("<h2>(all)</h2>") && !compared.contains("<h2>GET /echo</h2>"), "{compared}");
}

#[tokio::test]
async fn old_keys_stay_a_series_of_their_own_on_sqlite() {
    old_keys_stay_a_series_of_their_own(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn old_keys_stay_a_series_of_their_own_on_postgres() {
    old_keys_stay_a_series_of_their_own(&TestDb::postgres().await).await;
}
