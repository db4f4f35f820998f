//! Control characters, NUL above all: refused where a user writes them (names, fixed header values, paths) by
//! `validate`, with file, line, column and field; and never able to fail a write to the database, whatever
//! text from outside carries one (a build id, deploy output, an error sample, a failure reason, an alert),
//! on SQLite and on PostgreSQL, which cannot store U+0000 in text at all.

use std::collections::BTreeMap;

use chrono::Duration;
use degrade::model::{
    EndpointResult, Finding, FindingOutcome, NewRun, NewVerdict, OVERALL_ENDPOINT, RunResults, RunStatus,
    VerdictOutcome,
};
use degrade::store::{NewEpisode, NewMessage, Store};

use crate::support::nights::{endpoint, night};
use crate::support::{TestDb, degrade, text};

/// `file:line:column` of the first `needle` in `text`, as `validate` reports a value there.
fn place(file: &str, text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap_or_else(|| panic!("{needle} not in {text}"));
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("{file}:{line}:{column}")
}

#[test]
fn validate_refuses_control_characters_in_names_headers_and_paths_with_where() {
    let scenario = r#"[target]
base_url = "http://127.0.0.1:9"
headers = { x-trace = "a\r\nInjected: 1" }

[vars]
"bad\u0007var" = 1

[[flow]]
name = "checkout\n"

  [[flow.step]]
  name = "step\u0000nul"
  path = "/a"
  extract = { "id\u0000" = "$.id" }

  [[flow.step]]
  path = "/a\u0000b"
  headers = { accept = "json\u0000" }

  [[flow.step]]
  path = "/search/two words/{{ uuid() }}"

[load]
model = "open"
[[load.stage]]
duration = "10s"
rate = 5
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), scenario).unwrap();
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    let expected = [
        (r#""step\u0000nul""#, "flow[0].step[0].name: `step\\u{0}nul` holds a control character (\\u{0})"),
        (r#""checkout\n""#, "flow[0].name: `checkout\\u{a}` holds a control character (\\u{a})"),
        (r#""$.id""#, "flow[0].step[0].extract.id\\u{0}: `id\\u{0}` holds a control character"),
        ("1\n", "vars.bad\\u{7}var: `bad\\u{7}var` holds a control character"),
        (r#""a\r\nInjected"#, "target.headers.x-trace: `a\\u{d}\\u{a}Injected: 1` holds a control character (\\u{d})"),
        (r#""json\u0000""#, "flow[0].step[1].headers.accept: `json\\u{0}` holds a control character"),
        (r#""/a\u0000b""#, "flow[0].step[1].path: `/a\\u{0}b` holds a control character (\\u{0})"),
        (r#""/search/two"#, "flow[0].step[2].path: `/search/two words/{{ uuid() }}` holds a space"),
    ];
    for (value, message) in expected {
        let line = format!("{}: {message}", place("s.toml", scenario, value));
        assert!(stderr.contains(&line), "expected\n{line}\nin\n{stderr}");
    }
}

/// An error quotes what it could not read (a TOML key, a scenario's name given on the command line): an escape
/// sequence in it reaches the terminal written out, never as itself (a trial's unknown key cleared the screen).
#[test]
fn an_error_never_hands_the_terminal_an_escape_sequence() {
    let scenario = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"a\"\n\"we\\u001b[2Jight\" = 5\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), scenario).unwrap();
    for args in [&["validate", "s.toml"][..], &["run", "\u{1b}[31mnosuch"]] {
        let output = degrade(dir.path(), args, &[]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
        assert!(!format!("{stdout}{stderr}").contains('\u{1b}'), "{args:?}: {stderr:?}");
        assert!(stderr.contains("\\u{1b}["), "written out: {stderr}");
    }
}

#[tokio::test]
async fn text_with_a_nul_is_stored_on_sqlite() {
    nul_story(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn text_with_a_nul_is_stored_on_postgres() {
    nul_story(&TestDb::postgres().await).await;
}

/// Every kind of text a night writes, each carrying a NUL: all of it is stored (the NUL written out as
/// `\u{0}`), none of it fails its transaction.
async fn nul_story(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let run = NewRun {
        scenario: "checkout".into(),
        build_id: Some("1.0\u{0}beta".into()),
        seed: 1,
        scenario_hash: "h".into(),
        scenario_source: Some("[target]\n# \u{0}".into()),
        deploy_output: Some("deployed\u{0}".into()),
        started_at: night(1),
        confirms: None,
        judged_against: None,
        reshape: None,
    };
    let id = store.create_run(&run).await.unwrap();
    let mut failing = EndpointResult { errors: 3, ..endpoint("GET /a\u{0}b", 50.0) };
    failing.errors_by_class = BTreeMap::from([("status".to_owned(), 3)]);
    failing.error_samples = BTreeMap::from([("status".to_owned(), vec!["500: boom\u{0}".to_owned()])]);
    let results = RunResults {
        status: RunStatus::Finished,
        finished_at: night(1) + Duration::minutes(5),
        validity_reasons: vec!["note\u{0}".into()],
        load_summary: degrade::model::LoadSummary::default(),
        endpoints: vec![endpoint(OVERALL_ENDPOINT, 50.0), failing],
        timeline: vec![],
    };
    store.finish_run(id, &results).await.expect("a NUL in an endpoint name or an error sample is stored");
    let detail = store.run_detail(id).await.unwrap().unwrap();
    assert_eq!(detail.run.build_id.as_deref(), Some("1.0\\u{0}beta"));
    assert_eq!(store.deploy_output(id).await.unwrap().as_deref(), Some("deployed\\u{0}"));
    assert_eq!(detail.endpoints[1].endpoint, "GET /a\\u{0}b");
    assert_eq!(detail.endpoints[1].error_samples["status"], ["500: boom\u{0}"], "JSON keeps it escaped");
    let verdict = NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: vec![],
        outcome: VerdictOutcome::Regressed,
        summary: "1 regression on GET /a\u{0}b".into(),
        created_at: night(1) + Duration::minutes(6),
        findings: vec![Finding {
            endpoint: "GET /a\u{0}b".into(),
            metric: "p95".into(),
            outcome: FindingOutcome::Regression,
            baseline_value: None,
            candidate_value: 1.0,
            delta_pct: None,
            limit: None,
            reason: "slower\u{0}".into(),
            interval: None,
            p_value: None,
        }],
    };
    store.save_verdict(id, &verdict).await.unwrap();
    let stored = store.latest_verdict(id).await.unwrap().unwrap();
    assert_eq!(stored.findings[0].endpoint, "GET /a\\u{0}b");
    let episode = NewEpisode {
        scenario: "checkout".into(),
        kind: "regression".into(),
        run_id: Some(id),
        last_good_run_id: None,
        summary: "GET /a\u{0}b is slower".into(),
        at: night(1) + Duration::minutes(7),
    };
    let message = |episode: i64| {
        vec![NewMessage {
            episode_id: Some(episode),
            notifier: "team".into(),
            event: "regression".into(),
            payload: "{\"text\":\"GET /a\u{0}b\"}".into(),
            idempotency_key: format!("{episode}-regression"),
            created_at: night(1) + Duration::minutes(7),
        }]
    };
    let opened = store.open_episode(&episode, message).await.unwrap().expect("opened");
    store.acknowledge_episode(opened, "known\u{0}", night(1) + Duration::minutes(8)).await.unwrap();
    let due = store.due_messages(night(2), 10).await.unwrap();
    store.record_attempt(due[0].id, night(2), Err(("refused\u{0}", None))).await.unwrap();
    let failed = store.create_run(&NewRun { build_id: None, started_at: night(2), ..run }).await.unwrap();
    store.end_run(failed, RunStatus::Failed, "deploy said \u{0}", night(2)).await.unwrap();
    assert_eq!(store.find_run(failed).await.unwrap().unwrap().failure_reason.as_deref(), Some("deploy said \\u{0}"));
    store.close().await;
}
