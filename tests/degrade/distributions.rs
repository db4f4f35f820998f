//! Skewed test data end to end: a real run against a stub target on 127.0.0.1 puts the share of sessions the
//! prediction says on the hottest rows of a Zipf feeder and on the hot keys of a `hotspot()` draw, counted by
//! the target; mistakes in skewed feeders and draws are named at file:line with their field.

use std::collections::HashMap;
use std::path::Path;

use degrade::scenario::distribution;
use serde_json::Value;

use crate::support::run_scenario;
use crate::support::target::StubTarget;

/// `count` rows `id,name`, ids from 1.
fn boards_csv(count: usize) -> String {
    let mut csv = String::from("id,name\n");
    for id in 1..=count {
        csv.push_str(&format!("{id},board {id}\n"));
    }
    csv
}

/// The share of `values` that are among the `top` most frequent.
fn top_share(values: &[String], top: usize) -> f64 {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for value in values {
        *counts.entry(value.as_str()).or_default() += 1;
    }
    let mut sorted: Vec<usize> = counts.into_values().collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.iter().take(top).sum::<usize>() as f64 / values.len() as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skewed_rows_and_keys_get_the_predicted_share_of_sessions() {
    let target = StubTarget::start().await;
    let text = format!(
        "[target]\nbase_url = \"{}\"\n[[data]]\nname = \"boards\"\nfile = \"boards.csv\"\norder = \"zipf\"\n\
         [[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/echo\"\n\
         query = {{ board = \"{{{{ boards.id }}}}\", card = \"{{{{ hotspot(1, 1000, 0.1, 0.9) }}}}\" }}\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"3s\"\nrate = 300\n",
        target.url()
    );
    let measurement = run_scenario(&text, &[("boards.csv", &boards_csv(1000))]).await;
    let echoed = target.counters.echoed.lock().unwrap().clone();
    assert!(echoed.len() >= 300, "a run of 900 planned sessions sent {}", echoed.len());
    let field = |name: &str| -> Vec<String> {
        echoed
            .iter()
            .map(|q| q.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).unwrap().to_owned())
            .collect()
    };
    let (boards, cards) = (field("board"), field("card"));
    // Zipf over 1,000 rows at s = 0.99: the hottest 10 rows take 39 % of the sessions, row 1 most of all.
    let zipf = distribution::compile("zipf", &[0.into(), 999.into(), 0.99.into()]).unwrap().shape().unwrap();
    let observed = top_share(&boards, 10);
    assert!((observed - zipf.top_percent).abs() < 0.08, "top 1 %: {observed:.3} against {:.3}", zipf.top_percent);
    let first = boards.iter().filter(|b| *b == "1").count() as f64 / boards.len() as f64;
    assert!((first - zipf.hottest).abs() < 0.05, "row 1: {first:.3} against {:.3}", zipf.hottest);
    // hotspot: 90 % of the draws on the first 10 % of 1,000 keys.
    let hot = cards.iter().filter(|c| c.parse::<u32>().is_ok_and(|c| (1..=100).contains(&c))).count();
    let hot = hot as f64 / cards.len() as f64;
    assert!((hot - 0.9).abs() < 0.05, "hot keys: {hot:.3}");
    the_run_counted_what_the_target_saw(&measurement, &boards, &cards).await;
}

/// The run's own counts of its skewed draws (stored with it, shown on its page beside the prediction) agree
/// with what the target received.
async fn the_run_counted_what_the_target_saw(
    measurement: &degrade::engine::Measurement,
    boards: &[String],
    cards: &[String],
) {
    let skew = &measurement.results.load_summary.skew;
    let sites: Vec<&str> = skew.iter().map(|s| s.site.as_str()).collect();
    assert_eq!(sites, ["boards", "GET /echo?board=&card= query card"]);
    let share = |values: &[String], hot: &dyn Fn(u32) -> bool| {
        values.iter().filter(|v| v.parse::<u32>().is_ok_and(hot)).count() as f64 / values.len() as f64
    };
    // Sessions drawn but not answered before the run's end are counted by the run, not by the target.
    let (feeder, card) = (&skew[0], &skew[1]);
    for (site, received) in [(feeder, boards.len()), (card, cards.len())] {
        let drawn = site.draws as f64;
        assert!((drawn - received as f64).abs() <= drawn * 0.02 + 2.0, "{site:?} against {received} received");
        assert!(!site.departs(), "{site:?}");
    }
    let (hottest, top) = (share(boards, &|id| id == 1), share(boards, &|id| id <= 10));
    assert!((feeder.observed_hottest - hottest).abs() < 0.02, "{feeder:?}: the target saw {hottest:.3} on row 1");
    assert!((feeder.observed_top_percent - top).abs() < 0.02, "{feeder:?}: the target saw {top:.3} on rows 1-10");
    assert!((card.predicted_top_percent - 0.09).abs() < 1e-9, "10 of the 100 hot keys, each 0.9 %: {card:?}");
    let hot_ten = share(cards, &|key| key <= 10);
    assert!((card.observed_top_percent - hot_ten).abs() < 0.02, "{card:?}: the target saw {hot_ten:.3}");

    let db = crate::support::TestDb::sqlite();
    let app = crate::support::app::TestApp::spawn(&db).await;
    let run = degrade::model::NewRun {
        scenario: "boards".into(),
        build_id: None,
        seed: 1,
        scenario_hash: "b0a2d5".into(),
        scenario_source: None,
        deploy_output: None,
        started_at: measurement.started_at,
        confirms: None,
        judged_against: None,
        reshape: None,
    };
    let id = app.store.create_run(&run).await.unwrap();
    app.store.finish_run(id, &measurement.results).await.unwrap();
    let (status, page) = app.get(&format!("/runs/{id}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("Skewed data: the shares <code>degrade validate</code> predicted beside"), "{page}");
    let row = format!(
        "<td data-label=\"Drawn at\"><code>boards</code></td><td data-label=\"Draw\">zipf</td><td class=\"num\" \
         data-label=\"Keys\">1,000</td><td class=\"num\" data-label=\"Hottest key predicted\">{}</td>",
        degrade::scenario::skew_shapes::percent(feeder.predicted_hottest)
    );
    assert!(page.contains(&row), "{row}\n{page}");
    assert!(!page.contains("drew differently from its prediction"), "{page}");
}

/// Per account, the most sessions that held it at once, as the target saw them.
fn most_at_once(target: &StubTarget) -> HashMap<String, u32> {
    target.counters.holding.lock().unwrap().iter().map(|(who, (_, most))| (who.clone(), *most)).collect()
}

/// A capped feeder (`max_sessions_per_row = 1`, an account logged in once at a time) never hands one row to
/// two sessions at once: in the closed model every user finds a free row, and the skew the run drew is
/// flatter than predicted, which the run says; in the open model an arrival that finds every row held is
/// not sent and is counted as dropped, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_capped_at_one_session_is_never_used_by_two_at_once() {
    let flow = |target: &str, load: &str| {
        format!(
            "[target]\nbase_url = \"{target}\"\n[[data]]\nname = \"accounts\"\nfile = \"accounts.csv\"\norder = \"zipf\"\n\
             max_sessions_per_row = 1\n[[flow]]\nname = \"f\"\n\
             [[flow.step]]\npath = \"/hold?who={{{{ accounts.id }}}}\"\n{load}"
        )
    };
    let accounts = boards_csv(3);
    let closed = StubTarget::start().await;
    let load = "[load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"2s\"\nusers = 3\n";
    let measurement = run_scenario(&flow(&closed.url(), load), &[("accounts.csv", &accounts)]).await;
    let seen = most_at_once(&closed);
    assert_eq!(seen.len(), 3, "three users, three accounts, each user on a free one: {seen:?}");
    assert!(seen.values().all(|&most| most == 1), "{seen:?}");
    let skew = &measurement.results.load_summary.skew[0];
    // Zipf over 3 rows predicts 55 % of sessions on row 1; held by one user at a time, it gets about a third.
    assert!(skew.predicted_hottest > 0.5 && skew.observed_hottest < 0.45, "{skew:?}");
    assert!(skew.departs(), "the run says its data drew flatter than predicted: {skew:?}");
    assert_eq!(measurement.results.load_summary.dropped, 0);

    let open = StubTarget::start().await;
    let load = "[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 200\n";
    let measurement = run_scenario(&flow(&open.url(), load), &[("accounts.csv", &accounts)]).await;
    let seen = most_at_once(&open);
    assert!(seen.values().all(|&most| most == 1), "{seen:?}");
    let results = &measurement.results;
    assert!(results.load_summary.dropped > 0, "{:?}", results.load_summary);
    let samples: Vec<&String> = results.endpoints.iter().flat_map(|e| e.error_samples.values().flatten()).collect();
    assert!(
        samples.iter().any(|s| s.contains("every row of feeder `accounts` was held by 1 session already")),
        "{samples:?}"
    );
}

/// `session_vars` draw once a session: both requests of a session carry the board it drew, and the run counts
/// one draw a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_variable_is_drawn_once_and_kept_for_the_whole_session() {
    let target = StubTarget::start().await;
    let text = format!(
        "[target]\nbase_url = \"{}\"\n[[flow]]\nname = \"f\"\n\
         session_vars = {{ board = \"{{{{ zipf(1, 100, 0.99) }}}}\", visit = \"{{{{ uuid() }}}}\" }}\n\
         [[flow.step]]\npath = \"/echo?visit={{{{ visit }}}}&board={{{{ board }}}}\"\n\
         [[flow.step]]\npath = \"/echo?visit={{{{ visit }}}}&board={{{{ board }}}}\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 100\n",
        target.url()
    );
    let measurement = run_scenario(&text, &[]).await;
    let mut boards_of_visit: HashMap<String, Vec<String>> = HashMap::new();
    for query in target.counters.echoed.lock().unwrap().iter() {
        let (visit, board) = query.split_once('&').unwrap();
        boards_of_visit.entry(visit.to_owned()).or_default().push(board.to_owned());
    }
    assert!(boards_of_visit.len() >= 100, "{} sessions", boards_of_visit.len());
    let whole = boards_of_visit.values().filter(|boards| boards.len() == 2).count();
    assert!(whole >= boards_of_visit.len() - 2, "all but the sessions cut by the run's end sent both steps");
    for boards in boards_of_visit.values() {
        assert!(boards.iter().all(|b| *b == boards[0]), "one board a session: {boards:?}");
    }
    let skew = &measurement.results.load_summary.skew;
    assert_eq!(skew.len(), 1, "{skew:?}");
    assert_eq!(skew[0].site, "f session_vars.board");
    assert_eq!(skew[0].draws as usize, boards_of_visit.len(), "one draw a session, not a request");
}

#[test]
fn a_closed_model_with_more_users_than_capped_rows_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("accounts.csv"), boards_csv(3)).unwrap();
    let text = "[target]\nbase_url = \"http://127.0.0.1:1\"\n[[data]]\nname = \"accounts\"\nfile = \"accounts.csv\"\n\
                max_sessions_per_row = 2\n[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/{{ accounts.id }}\"\n\
                [load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"1s\"\nusers = 7\n";
    let error = degrade::scenario::parse(&dir.path().join("s.toml"), text, None, &|_| None).unwrap_err().to_string();
    let expected = "s.toml:6:24: data[0].max_sessions_per_row: 7 users at once need 7 sessions' rows, but 3 rows × 2 \
                    sessions a row hold 6";
    assert!(error.contains(expected), "{error}");
    let zero = text.replace("max_sessions_per_row = 2", "max_sessions_per_row = 0");
    let error = degrade::scenario::parse(&dir.path().join("s.toml"), &zero, None, &|_| None).unwrap_err().to_string();
    assert!(error.contains("data[0].max_sessions_per_row: a number of sessions, at least 1"), "{error}");
    let session_vars = text.replace(
        "[[flow]]\nname = \"f\"\n",
        "[[flow]]\nname = \"f\"\nsession_vars = { \"my-board\" = \"{{ zip(1, 9, 1) }}\" }\n",
    );
    let error =
        degrade::scenario::parse(&dir.path().join("s.toml"), &session_vars, None, &|_| None).unwrap_err().to_string();
    assert!(error.contains("flow[0].session_vars.my-board: `my-board` is not"), "{error}");
    let typo = session_vars.replace("my-board", "board");
    let error = degrade::scenario::parse(&dir.path().join("s.toml"), &typo, None, &|_| None).unwrap_err().to_string();
    assert!(error.contains("flow[0].session_vars.board: in `{{ zip(1, 9, 1) }}`: unknown function `zip`"), "{error}");
}

#[test]
fn skewed_feeder_and_draw_mistakes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("boards.csv"), "id,weight\n1,5\n2,x\n").unwrap();
    let path = dir.path().join("s.toml");
    let error = |data: &str, query: &str| {
        let text = format!(
            "[target]\nbase_url = \"http://127.0.0.1:1\"\n[[data]]\nname = \"boards\"\nfile = \"boards.csv\"\n{data}\n\
             [[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/echo\"\nquery = {{ q = \"{query}\" }}\n\
             [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 1\n"
        );
        degrade::scenario::parse(Path::new(&path), &text, None, &|_| None).unwrap_err().to_string()
    };
    let cases = [
        ("order = \"weighted\"", "{{ boards.id }}", "s.toml:6:9: data[0].weight_column: order = \"weighted\" needs"),
        (
            "order = \"weighted\"\nweight_column = \"weight\"",
            "{{ boards.id }}",
            "s.toml:7:17: data[0].weight_column: row 2 has `\"x\"` as its weight, not a number",
        ),
        (
            "order = \"random\"\nskew = 1.2",
            "x",
            "s.toml:7:8: data[0].skew: `skew` shapes a skewed order, not order = \"random\"",
        ),
        ("order = \"zipf\"\nskew = -1", "x", "s.toml:7:8: data[0].skew: must be at least 0"),
        ("order = \"hotspot\"\nhot_rows = 0.2", "x", "data[0].hot_draws: order = \"hotspot\" needs `hot_draws`"),
        (
            "",
            "{{ zipf(10, 1, 0.99) }}",
            "flow[0].step[0].query.q: in `{{ zipf(10, 1, 0.99) }}`: zipf(low, high, s): low and high",
        ),
        ("", "{{ weighted('a', 1, 'b') }}", "weighted(value, weight, …) takes values each followed by its weight"),
    ];
    for (data, query, expected) in cases {
        let message = error(data, query);
        assert!(message.contains(expected), "{data} / {query}:\n{message}\nexpected: {expected}");
    }
    // A feeder's rows as data: a JSON number weight reads too.
    assert_eq!(
        Value::from(1),
        distribution::compile("weighted", &[1.into(), 1.into()])
            .unwrap()
            .sample(&mut rand::SeedableRng::seed_from_u64(1), 0)
    );
}

#[test]
fn validate_says_what_the_skew_will_do_before_the_first_night() {
    let config = "[[scenario]]\nname = \"boards\"\nfile = \"scenarios/boards.toml\"\ntarget = \"http://127.0.0.1:9\"\n";
    let scenario = "[[data]]\nname = \"boards\"\nfile = \"boards.csv\"\norder = \"zipf\"\n\
                    [[flow]]\nname = \"open board\"\n[[flow.step]]\npath = \"/boards/{{ boards.id }}/cards\"\n\
                    query = { card = \"{{ hotspot(1, 500000, 0.01, 0.5) }}\" }\n\
                    [load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"60s\"\nusers = 200\n";
    let csv = boards_csv(1000);
    let (dir, _) =
        crate::support::project(config, &[("scenarios/boards.toml", scenario), ("scenarios/boards.csv", &csv)]);
    let output = crate::support::degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = crate::support::text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let expected = [
        "skew      boards: zipf over 1,000 rows: the hottest row 13 % of sessions, the top 1 % (10 rows) 38 %; \
         of 200 users, about 25.9 on the hottest row at once",
        "skew      GET /boards/{boards.id}/cards?card= query card: hotspot over 500,000 keys: the hottest key \
         0.010 % of draws, the top 1 % (5,000 keys) 50 %",
    ];
    for line in expected {
        assert!(stdout.contains(line), "{stdout}\nexpected: {line}");
    }
    crate::support::quoted::assert_quoted("validate-skew", &stdout);

    // Read by one flow of weight 1 in 10: a tenth of the sessions draw from it.
    let weighted = scenario
        .replace("name = \"open board\"\n", "name = \"open board\"\nweight = 1\n")
        .replace("[load]", "[[flow]]\nname = \"list\"\nweight = 9\n[[flow.step]]\npath = \"/boards\"\n[load]");
    std::fs::write(dir.path().join("scenarios/boards.toml"), weighted).unwrap();
    let output = crate::support::degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = crate::support::text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("; of 200 users, about 2.6 on the hottest row at once"), "{stdout}");
}
