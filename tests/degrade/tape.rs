//! Request tapes: `degrade tape import` of the committed fixtures (a combined log with junk lines, a JSON
//! Lines log, a HAR recorded by Chromium) through the real binary, and replays against a recording server on
//! 127.0.0.1. `tests/fixtures/tape/EXPECTED.md` lists what each fixture holds.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use degrade::scenario;

use crate::support::{degrade, import_fixture as import, run_scenario, tape_fixture as fixture, text};

fn route_line(stdout: &str, route: &str) -> String {
    stdout
        .lines()
        .find(|l| l.ends_with(&format!("  {route}")))
        .unwrap_or_else(|| panic!("no {route} in\n{stdout}"))
        .to_owned()
}

#[test]
fn an_access_log_becomes_routes_with_secrets_scrubbed_and_junk_lines_located() {
    let (stdout, tape, dir) = import("access.log", &[]);
    assert!(stdout.contains("kept      33 requests"), "{stdout}");
    assert!(stdout.contains("dropped   5 static assets"), "{stdout}");
    assert!(stdout.contains("skipped   4 malformed lines"), "{stdout}");
    for line in [11, 18, 22, 27] {
        assert!(stdout.contains(&format!("access.log:{line}: ")), "line {line} in\n{stdout}");
    }
    assert!(stdout.contains("access.log:27: status: "), "{stdout}");
    // One path's query shapes are routes of their own: the names of the parameters, not their values.
    assert!(route_line(&stdout, "GET /api/boards/{id}/cards").contains(" 7 "), "{stdout}");
    assert!(route_line(&stdout, "GET /api/boards/{id}/cards?page=").contains(" 1 "), "{stdout}");
    assert!(route_line(&stdout, "GET /api/boards?page=").contains(" 5 "), "{stdout}");
    assert!(route_line(&stdout, "GET /api/search?email=&q=&token=").contains(" 1 "), "{stdout}");
    assert!(route_line(&stdout, "GET /api/reports/{date}").contains(" 1 "), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.contains(" % ")).count(), 12, "12 routes:\n{stdout}");
    for secret in ["SECRETTOKEN123", "jane.doe", "14155550123"] {
        assert!(!tape.contains(secret), "{secret} in the tape:\n{tape}");
    }
    assert!(tape.contains("/api/search?q=x&token=redacted-"), "{tape}");
    assert_eq!(tape.lines().filter(|l| !l.starts_with('#')).count(), 33);
    // The scenario it wrote replays the tape and validates as written.
    let validated = degrade(dir.path(), &["validate", "replay.toml"], &[]);
    let (out, err) = text(&validated);
    assert!(validated.status.success(), "{out}{err}");
    assert!(out.contains("tape      ") && out.contains("33 requests (24 distinct"), "{out}");
    // nginx's own definition of `combined`, given as a custom format, reads the same.
    let format = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
    let (custom, _, _) = import("access.log", &["--format", format]);
    assert!(custom.contains("kept      33 requests") && custom.contains("(custom access log)"), "{custom}");
    // Filters and a stratified sample: rare routes survive.
    let (filtered, _, _) =
        import("access.log", &["--method", "GET", "--path-prefix", "/api/boards", "--until", "2026-11-30 11:00"]);
    assert!(
        filtered.contains("other methods (--method)") && filtered.contains("outside --since/--until"),
        "{filtered}"
    );
    let (sampled, tape, _) = import("access.log", &["--sample", "22", "--seed", "3"]);
    assert!(sampled.contains("left out by --sample"), "{sampled}");
    assert_eq!(sampled.lines().filter(|l| l.contains(" % ")).count(), 12, "every route kept:\n{sampled}");
    let (again, same_tape, _) = import("access.log", &["--sample", "22", "--seed", "3"]);
    assert_eq!(route_line(&again, "GET /api/boards?page="), route_line(&sampled, "GET /api/boards?page="));
    // Placeholders differ between imports (their key is drawn each time); the requests chosen do not.
    let requests = |t: &str| {
        t.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('?').next().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(requests(&tape), requests(&same_tape), "the same seed samples the same requests");
    assert!(requests(&tape).len() < 33, "{tape}");
}

#[test]
fn arguments_that_could_keep_nothing_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let log = fixture("access.log");
    let log = log.to_str().unwrap();
    let output = degrade(dir.path(), &["tape", "import", log, "--since", "2026-12-01", "--until", "2026-11-30"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not before --until") && stderr.contains("nothing could be kept"), "{stderr}");
    let output = degrade(dir.path(), &["tape", "import", log, "--sample", "0"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--sample") && stderr.contains("0 is not in 1.."), "{stderr}");
    assert!(!dir.path().join("scenarios/access.tape").exists());
}

/// The manual's import, as a new user types it: the tape and its scenario land in `scenarios/`, named after
/// the log (`access.tape`, `access.tape.gz` from a gzipped log), and the summary is the one the manual quotes.
#[test]
fn an_import_with_no_options_writes_what_the_readme_says() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::read(fixture("access.log")).unwrap();
    std::fs::write(dir.path().join("access.log"), &log).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "access.log"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(dir.path().join("scenarios/access.tape").is_file() && dir.path().join("scenarios/access.toml").is_file());
    crate::support::quoted::assert_quoted("tape-import", &stdout);
    assert!(!stdout.contains("replaced"), "{stdout}");
    // Imported again: the tape is replaced, which starts a new series, and says so (a trial's did not).
    let output = degrade(dir.path(), &["tape", "import", "access.log"], &[]);
    let (again, _) = text(&output);
    assert!(again.contains("  replaced  the tape that was there") && again.contains("new workload series"), "{again}");

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gzip, &log).unwrap();
    std::fs::write(dir.path().join("access.log.1.gz"), gzip.finish().unwrap()).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "access.log.1.gz"], &[]);
    assert!(output.status.success(), "{}", text(&output).1);
    assert!(dir.path().join("scenarios/access.tape.gz").is_file(), "{}", text(&output).0);
}

/// A tape goes where `-o` says, but never over the scenario that would replay it or another file that is no
/// tape; and a scenario in another folder than its tape finds it (`file` is relative to the scenario).
#[test]
fn a_tape_never_overwrites_a_scenario_and_its_scenario_finds_it_from_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("access.log"), dir.path().join("access.log")).unwrap();
    std::fs::create_dir(dir.path().join("scenarios")).unwrap();
    let mine = "[[flow]]\nname = \"mine\"\n";
    std::fs::write(dir.path().join("scenarios/access.toml"), mine).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "access.log", "-o", "scenarios/access.toml"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the tape and the scenario that replays it would be one file"), "{stderr}");
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let output = degrade(dir.path(), &["tape", "import", "access.log", "-o", "notes.txt"], &[]);
    assert!(text(&output).1.contains("notes.txt exists and is not a tape"), "{}", text(&output).1);
    assert_eq!(std::fs::read_to_string(dir.path().join("scenarios/access.toml")).unwrap(), mine);
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");

    let args = ["tape", "import", "access.log", "-o", "tapes/x.tape", "--scenario", "scenarios/new.toml"];
    let output = degrade(dir.path(), &args, &[]);
    assert!(output.status.success(), "{}", text(&output).1);
    let scenario = std::fs::read_to_string(dir.path().join("scenarios/new.toml")).unwrap();
    assert!(scenario.contains("file = \"../tapes/x.tape\""), "{scenario}");
    let output = degrade(dir.path(), &["validate", "scenarios/new.toml"], &[]);
    assert!(output.status.success(), "{}{}", text(&output).0, text(&output).1);
    // Imported again over its own tape: a tape may replace a tape.
    assert!(degrade(dir.path(), &args, &[]).status.success());
    // Never over the recording itself, nor over a compressed file that is no tape.
    let output = degrade(dir.path(), &["tape", "import", "access.log", "-o", "./access.log"], &[]);
    assert!(text(&output).1.contains("the tape would replace the recording it is read from"), "{}", text(&output).1);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gzip, b"select 1;\n").unwrap();
    std::fs::write(dir.path().join("backup.sql.gz"), gzip.finish().unwrap()).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "access.log", "-o", "backup.sql.gz"], &[]);
    assert!(text(&output).1.contains("backup.sql.gz exists and is not a tape"), "{}", text(&output).1);
    // A scenario named through `..` finds its tape all the same.
    let args = ["tape", "import", "../access.log", "-o", "y.tape", "--scenario", "../scenarios/y.toml"];
    let output = degrade(&dir.path().join("tapes"), &args, &[]);
    assert!(output.status.success(), "{}", text(&output).1);
    let scenario = std::fs::read_to_string(dir.path().join("scenarios/y.toml")).unwrap();
    assert!(scenario.contains("file = \"../tapes/y.tape\""), "{scenario}");
}

/// A body the scrubber dropped was recorded: only a write the source holds no body for is noted, with how to
/// record one in that kind of source.
#[test]
fn a_dropped_body_is_not_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"method":"POST","path":"/xml","status":200,"body":"<a>1</a>","headers":{"content-type":"application/xml"}}"#,
        r#"{"method":"POST","path":"/empty","status":200}"#,
    ];
    std::fs::write(dir.path().join("api.jsonl"), lines.join("\n")).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "api.jsonl"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("1 body that could not be checked (dropped)"), "{stdout}");
    assert!(
        stdout.contains(
            "note      1 POST, PUT or PATCH request has no recorded body and replays empty, which services \
             usually refuse: log each request's body,"
        ),
        "{stdout}"
    );
}

#[test]
fn a_truncated_gzip_log_stops_the_import_with_where_and_writes_no_tape() {
    let dir = tempfile::tempdir().unwrap();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gzip, &std::fs::read(fixture("access.log")).unwrap().repeat(50)).unwrap();
    let packed = gzip.finish().unwrap();
    std::fs::write(dir.path().join("cut.log.gz"), &packed[..packed.len() / 2]).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "cut.log.gz"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cut.log.gz:") && stderr.contains("cannot read further"), "{stderr}");
    assert!(!dir.path().join("scenarios/cut.tape.gz").exists());
}

#[test]
fn a_json_lines_log_keeps_bodies_and_sessions_and_loses_every_secret() {
    let (stdout, tape, _dir) = import("requests.jsonl", &[]);
    assert!(stdout.contains("kept      17 requests"), "{stdout}");
    assert!(
        stdout.contains("requests.jsonl:10: not JSON") && stdout.contains("requests.jsonl:14: method: missing"),
        "{stdout}"
    );
    let secrets = [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "4f9c2e71d0a84b6c9e3f5a1b7d2c8e60",
        "7d1c9a0b5e2f4a3c8b6d",
        "bob@example.com",
        "hunter2",
        "carol@example.com",
        "correct horse battery staple",
        "AKIA5EXAMPLEKEY77",
        "415 555 0199",
        "carol.w@example.org",
        "rt_8c1f0e2d3b4a",
    ];
    for secret in secrets {
        assert!(!tape.contains(secret), "{secret} in the tape:\n{tape}");
    }
    assert!(!tape.to_lowercase().contains("authorization") && !tape.to_lowercase().contains("cookie"), "{tape}");
    assert!(tape.contains("\"title\":\"Q4 plan\"") || tape.contains("\"title\": \"Q4 plan\""), "{tape}");
    assert!(tape.lines().filter(|l| l.starts_with("POST\t")).count() == 3, "`post` replays as POST:\n{tape}");
    // Session ids may be credentials: placeholders, the same for the same session.
    assert!(!tape.contains("s=s-") && tape.contains("\ts=redacted-"), "{tape}");
    assert!(!tape.contains("api.example.com"), "a full URL keeps its path only:\n{tape}");
}

#[test]
fn a_har_recording_becomes_flows_that_carry_the_created_id_and_token() {
    let dir = tempfile::tempdir().unwrap();
    let har = fixture("session.har");
    let output =
        degrade(dir.path(), &["tape", "import", har.to_str().unwrap(), "--flows", "--scenario", "flows.toml"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("flow      Boards (6 steps)"), "named by the page's title: {stdout}");
    assert!(stdout.contains("correlated boards_id = $.id of POST /api/boards's answer, used 3 time(s)"), "{stdout}");
    assert!(stdout.contains("correlated boards_csrf = $.csrf"), "{stdout}");
    assert!(stdout.contains("correlated boards_owner = $.owner"), "{stdout}");
    let scenario = std::fs::read_to_string(dir.path().join("flows.toml")).unwrap();
    assert!(scenario.contains(r#"extract = { boards_csrf = "$.csrf", boards_id = "$.id" }"#), "{scenario}");
    assert!(scenario.contains(r#"path = "/api/boards/{{ boards_id }}/cards""#), "{scenario}");
    assert!(scenario.contains(r#"query = { owner = "{{ boards_owner }}" }"#), "{scenario}");
    assert!(scenario.contains(r#"headers = { x-csrf-token = "{{ boards_csrf }}""#), "{scenario}");
    assert!(scenario.contains(r#"json = { title = "Q4 plan" }"#), "{scenario}");
    for secret in ["tk_aa690c6ee7b8ceb02caf9c915f904db0", "bd8bd60aaf0fbe9292574084", "9118"] {
        assert!(!scenario.contains(secret), "{secret} in\n{scenario}");
    }
    assert!(!scenario.contains("style.css") && !scenario.contains("app.js"), "{scenario}");
    let validated = degrade(dir.path(), &["validate", "flows.toml"], &[]);
    assert!(validated.status.success(), "{:?}", text(&validated));
}

/// Every request a recording server got: method, target and body.
type Received = Arc<Mutex<Vec<(String, String, String)>>>;

/// A server on 127.0.0.1 that records every request and answers 200, or 404 under `/missing`, 500 under `/broken`.
async fn recording_server() -> (String, Received) {
    let received: Received = Arc::default();
    let app = axum::Router::new().fallback(record).with_state(Arc::clone(&received));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

async fn record(
    State(received): State<Received>,
    method: Method,
    uri: Uri,
    body: String,
) -> (StatusCode, &'static str) {
    let status = match uri.path() {
        p if p.starts_with("/missing") => StatusCode::NOT_FOUND,
        p if p.starts_with("/broken") => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::OK,
    };
    received.lock().unwrap().push((method.to_string(), uri.to_string(), body));
    (status, "ok")
}

/// A tape of 1,000 requests: 500 GETs over 250 ids, 300 POSTs with bodies, 150 PUTs, 50 DELETEs.
fn mixed_tape() -> String {
    let mut tape = String::from("# degrade tape 1\n");
    for i in 0..1000_u32 {
        let line = match i % 20 {
            0..=9 => format!("GET\t/boards/{}\t200", i % 250),
            10..=15 => format!("POST\t/boards\t201\th=content-type: application/json\tb={{\"title\":\"t{i}\\tx\"}}"),
            16..=18 => format!("PUT\t/boards/{}/title\t200\tb=plain {i}", i % 7),
            _ => format!("DELETE\t/boards/{i}\t204"),
        };
        tape.push_str(&line);
        tape.push('\n');
    }
    tape
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_reproduces_the_recorded_mix_with_bodies_and_methods_intact() {
    let (url, received) = recording_server().await;
    let tape = mixed_tape();
    let text = format!(
        "[target]\nbase_url = \"{url}\"\n[[tape]]\nfile = \"t.tape\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 500\n"
    );
    let measurement = run_scenario(&text, &[("t.tape", &tape)]).await;
    let count =
        |name: &str| measurement.results.endpoints.iter().find(|e| e.endpoint == name).map_or(0, |e| e.requests);
    let expected = [
        ("GET /boards/{id}", 500),
        ("POST /boards", 300),
        ("PUT /boards/{id}/title", 150),
        ("DELETE /boards/{id}", 50),
    ];
    let sent: i64 = expected.iter().map(|(name, _)| count(name)).sum();
    assert!(sent >= 990, "{:#?}", measurement.results.endpoints);
    for (name, recorded) in expected {
        let share = count(name) as f64 / sent as f64;
        assert!((share - f64::from(recorded) / 1000.0).abs() <= 0.01, "{name}: {share} of {sent}");
    }
    assert_eq!(measurement.results.endpoints.iter().map(|e| e.errors).sum::<i64>(), 0);
    let mut received = received.lock().unwrap().clone();
    let mut expected_requests: Vec<(String, String, String)> = tape
        .lines()
        .skip(1)
        .map(|line| {
            let request = degrade::tape::TapeRequest::parse(line).unwrap();
            (request.method.to_string(), request.target, request.body.unwrap_or_default())
        })
        .collect();
    expected_requests.truncate(received.len());
    // Concurrent connections may reorder neighbours on the way in; what was sent is the tape's start.
    received.sort();
    expected_requests.sort();
    assert_eq!(received, expected_requests, "the tape's requests, methods and bodies as recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_requests_expect_their_recorded_status_class_or_the_routes_rule() {
    let (url, _) = recording_server().await;
    let tape = "GET\t/missing/1\t404\nGET\t/broken/1\t200\nGET\t/ok/1\t200\nGET\t/missing/2\t200\n";
    let text = format!(
        "[target]\nbase_url = \"{url}\"\n[[tape]]\nfile = \"t.tape\"\n[[tape.expect]]\nroute = \"GET /missing/{{id}}\"\n\
         status = [200, 404]\n[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 8\n"
    );
    let measurement = run_scenario(&text, &[("t.tape", tape)]).await;
    let errors =
        |name: &str| measurement.results.endpoints.iter().find(|e| e.endpoint == name).map(|e| (e.requests, e.errors));
    assert_eq!(errors("GET /missing/{id}"), Some((4, 0)), "404 accepted by the rule");
    assert_eq!(errors("GET /broken/{id}"), Some((2, 2)), "500 where 200 was recorded");
    assert_eq!(errors("GET /ok/{id}"), Some((2, 0)));
}

#[test]
fn a_tape_is_checked_when_the_scenario_loads_and_its_content_names_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let load = "[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"10s\"\nrate = 100\n";
    let scenario = format!("[target]\nbase_url = \"http://127.0.0.1:1\"\n[[tape]]\nfile = \"t.tape\"\n{load}");
    let parse = |tape: &str| {
        std::fs::write(dir.path().join("t.tape"), tape).unwrap();
        scenario::parse(&dir.path().join("s.toml"), &scenario, None, &|_| None)
    };
    let first = parse("GET\t/a/1\t200\nGET\t/a/2\t200\n").unwrap();
    // A route pattern no request of the tape matches is mistyped: said where it stands (a trial's passed).
    let patterned = format!(
        "{scenario}[[tape.route]]\npattern = \"/a/{{id}}\"\n[[tape.route]]\npattern = \"/orders?status=open\"\n"
    );
    let plan = scenario::parse(&dir.path().join("s.toml"), &patterned, None, &|_| None).unwrap();
    let unmatched: Vec<&String> = plan.warnings.iter().filter(|w| w.contains("matches no request")).collect();
    assert_eq!(unmatched.len(), 1, "{:?}", plan.warnings);
    assert!(unmatched[0].contains("tape.route[1].pattern `/orders?status=open` matches no request"), "{unmatched:?}");
    let second = parse("GET\t/a/1\t200\nGET\t/a/3\t200\n").unwrap();
    assert_ne!(first.hash, second.hash, "a new tape starts a new series");
    let realism = first.tape.as_ref().unwrap().realism().unwrap();
    assert!(
        realism.contains("this run sends 1,000 requests from a tape of 2 distinct ones: each repeats 500×"),
        "{realism}"
    );
    assert!(first.warnings.iter().any(|w| w.contains("caches will be warmer than production")), "{:?}", first.warnings);
    // A shorter night (`--duration 10ms`: one request) is warned about as it runs, not as planned.
    let short = first.clone().scaled(Some(std::time::Duration::from_millis(10)), 1.0).unwrap();
    assert!(!short.warnings.iter().any(|w| w.contains("caches will be warmer")), "{:?}", short.warnings);
    let longer = first.clone().scaled(None, 2.0).unwrap();
    let said: Vec<&String> = longer.warnings.iter().filter(|w| w.contains("caches will be warmer")).collect();
    assert!(said.len() == 1 && said[0].contains("this run sends 2,000 requests"), "{:?}", longer.warnings);
    let error = parse("GET\t/a/1\t200\nGET\t/a/2\tok\n").unwrap_err().to_string();
    assert!(error.contains("t.tape:2: status: `ok` is not an HTTP status"), "{error}");
    let error = parse("GET\t/a\t200\th=Authorization: Bearer x\n").unwrap_err().to_string();
    assert!(error.contains("t.tape:1: h: a tape holds no credentials"), "{error}");
    // What a night judges counts the measured stages only: a warm-up's requests reach the service, not the verdict.
    let warmed = "[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"30s\"\nrate = 10\nmeasure = false\n\
                  [[load.stage]]\nduration = \"100s\"\nrate = 1\n";
    let text = format!("[target]\nbase_url = \"http://127.0.0.1:1\"\n[[tape]]\nfile = \"t.tape\"\n{warmed}");
    std::fs::write(dir.path().join("t.tape"), "GET\t/a/1\t200\nGET\t/b/1\t200\n").unwrap();
    let plan = scenario::parse(&dir.path().join("s.toml"), &text, None, &|_| None).unwrap();
    let nights = degrade::scenario::night_sizes::endpoint_nights(&plan).unwrap();
    let counts: Vec<(&str, f64)> = nights.iter().map(|n| (n.endpoint.as_str(), n.requests.round())).collect();
    assert_eq!(counts, [("GET /a/{id}", 50.0), ("GET /b/{id}", 50.0)], "not 200 each with the warm-up's 300");
    // A run shorter than the tape, in order, replays its start: its nights count the start's routes (a trial's
    // tape began with 400 searches; validate said ~78 of them and ~4 of seven other routes, the night sent 100
    // searches and nothing else). The warm-up takes the first 300 requests; the measured 100 follow.
    let tape = (0..1000).map(|i| format!("GET\t/{}/{i}\t200\n", if i < 350 { "a" } else { "b" })).collect::<Vec<_>>();
    let tape = tape.concat();
    std::fs::write(dir.path().join("t.tape"), tape).unwrap();
    let counts = |options: &str| {
        let text =
            format!("[target]\nbase_url = \"http://127.0.0.1:1\"\n[[tape]]\nfile = \"t.tape\"\n{options}\n{warmed}");
        let plan = scenario::parse(&dir.path().join("s.toml"), &text, None, &|_| None).unwrap();
        let nights = degrade::scenario::night_sizes::endpoint_nights(&plan).unwrap();
        nights.iter().map(|n| (n.endpoint.clone(), n.requests.round())).collect::<Vec<_>>()
    };
    let (a, b) = ("GET /a/{id}".to_owned(), "GET /b/{id}".to_owned());
    assert_eq!(counts(""), [(b.clone(), 50.0), (a.clone(), 50.0)], "requests 300..400: 50 of each");
    assert_eq!(counts("preserve = \"mix\""), [(b, 65.0), (a, 35.0)], "spread over the whole tape");
    std::fs::write(dir.path().join("t.tape"), "GET\t/a\t200\n").unwrap();
    let both = format!("{scenario}[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/\"\n");
    let error = scenario::parse(&dir.path().join("s.toml"), &both, None, &|_| None).unwrap_err().to_string();
    assert!(error.contains("a scenario replays a tape or runs flows, not both"), "{error}");
}

/// Runs `tape` with the `[[tape]]` options `options` at `rate` arrivals per second for a second, against a
/// recording server: the requests it got, in arrival order.
async fn replay(tape: &str, options: &str, rate: u32) -> Vec<(String, String, String)> {
    let (url, received) = recording_server().await;
    let text = format!(
        "[target]\nbase_url = \"{url}\"\nmax_connections = 1\n[[tape]]\nfile = \"t.tape\"\n{options}\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = {rate}\n"
    );
    run_scenario(&text, &[("t.tape", tape)]).await;
    received.lock().unwrap().clone()
}

fn targets(received: &[(String, String, String)]) -> Vec<&str> {
    received.iter().map(|(_, target, _)| target.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_shuffles_and_the_preserved_mix_replay_what_they_promise() {
    // By session: each arrival replays one recorded session whole, in order.
    let sessions = "GET\t/a/1\t200\ts=a\nGET\t/a/2\t200\ts=a\nGET\t/a/3\t200\ts=a\nGET\t/b/1\t200\ts=b\nGET\t/b/2\t200\ts=b\nGET\t/c/1\t200\n";
    let got = replay(sessions, "order = \"session\"", 3).await;
    assert_eq!(targets(&got), ["/a/1", "/a/2", "/a/3", "/b/1", "/b/2", "/c/1"]);
    // Shuffled: every request of the tape once per pass, not in recorded order.
    let tape = (0..50).map(|i| format!("GET\t/s/{i}\t200\n")).collect::<Vec<_>>().concat();
    let got = replay(&tape, "order = \"shuffle\"", 50).await;
    let mut sorted: Vec<&str> = targets(&got);
    assert_ne!(sorted, (0..50).map(|i| format!("/s/{i}")).collect::<Vec<_>>(), "shuffled");
    sorted.sort_unstable();
    let mut expected: Vec<String> = (0..50).map(|i| format!("/s/{i}")).collect();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "each request once");
    // A tape whose first half is one route and second half another: a short run in recorded order replays the
    // first only; with preserve = "mix" it spreads over both.
    let tape: String = (0..400)
        .map(|i| if i < 200 { format!("GET\t/morning/{i}\t200\n") } else { format!("GET\t/evening/{i}\t200\n") })
        .collect();
    let evening = |got: &[(String, String, String)]| got.iter().filter(|(_, t, _)| t.starts_with("/evening")).count();
    assert_eq!(evening(&replay(&tape, "", 20).await), 0);
    assert_eq!(evening(&replay(&tape, "preserve = \"mix\"", 20).await), 10);
}
