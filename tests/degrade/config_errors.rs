//! Every mistake in `degrade.toml` is reported with file:line:column and the field, and secrets never leak.

use std::collections::HashMap;
use std::path::Path;

use degrade::config::{Config, CronForm, EXAMPLE_CONFIG};
use degrade::store::DatabaseUrl;

use crate::support::project;

const SCENARIO: &str = "[[scenario]]\nname = \"checkout\"\nfile = \"scenarios/checkout.toml\"\n";

/// Validates `config` in a project that has `scenarios/checkout.toml`, with `env` as the environment.
fn load(config: &str, env: &[(&str, &str)]) -> Result<Config, String> {
    let files = [("scenarios/checkout.toml", "# workload\n"), ("scenarios/example.toml", "# workload\n")];
    let (dir, path) = project(config, &files);
    let env: HashMap<String, String> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let result = Config::load_with_env(&path, &|name| env.get(name).cloned());
    let folder = format!("{}/", dir.path().display());
    result.map_err(|e| e.to_string().replace(&folder, ""))
}

fn error(config: &str) -> String {
    load(config, &[]).expect_err("config should be rejected")
}

#[test]
fn the_example_config_is_valid() {
    let config = load(EXAMPLE_CONFIG, &[]).unwrap();
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:8080");
    assert!(matches!(&config.database, DatabaseUrl::Sqlite(path) if path.ends_with("degrade.db")));
    // Every commented-out block of the example is valid too, once uncommented.
    let uncommented: String = EXAMPLE_CONFIG.lines().map(uncomment_setting).collect::<Vec<_>>().join("\n");
    let config = load(&uncommented, &[("DEGRADE_SLACK_WEBHOOK", "https://hooks.example.com/T0/B0/x")])
        .unwrap_or_else(|e| panic!("{e}\n---\n{uncommented}"));
    let scenario = config.scenario("checkout").unwrap();
    assert_eq!(scenario.gates.metric_min_effect_pct[&degrade::model::Metric::P99], 20.0);
    assert_eq!(config.notifiers[0].name, "team-slack");
}

/// `# key = value` and `# [table]` lines without their `# `; prose and doubly commented lines stay.
fn uncomment_setting(line: &str) -> &str {
    match line.strip_prefix("# ") {
        Some(rest) if rest.starts_with('[') => rest,
        Some(rest)
            if rest
                .split_once(" = ")
                .is_some_and(|(key, _)| key.chars().all(|c| c.is_ascii_lowercase() || c == '_')) =>
        {
            rest
        }
        _ => line,
    }
}

#[test]
fn unknown_keys_name_line_column_and_field() {
    let message = error("[server]\nlisten = \"127.0.0.1:9000\"\nlisen = \"x\"\n");
    assert!(message.starts_with("degrade.toml:3:1: server.lisen: unknown field `lisen`"), "{message}");
    let message = error(&format!("{SCENARIO}shedule = \"0 2 * * *\"\n"));
    assert!(message.starts_with("degrade.toml:4:1: scenario[0].shedule: unknown field `shedule`"), "{message}");
}

#[test]
fn wrong_types_name_line_column_and_field() {
    let message = error("[server]\nlisten = 8080\n");
    assert!(message.starts_with("degrade.toml:2:10: server.listen: invalid type: integer `8080`"), "{message}");
    let message = error(&format!("{SCENARIO}catch_up = \"yes\"\n"));
    assert!(message.starts_with("degrade.toml:4:12: scenario[0].catch_up: invalid type: string"), "{message}");
    // TOML's words for a number, not Rust's, and a number in quotes told to lose them.
    let message = error(&format!("{SCENARIO}[scenario.gates]\nmin_runs = \"5\"\n"));
    let said =
        "scenario[0].gates.min_runs: invalid type: string \"5\", expected a whole number: write it without quotes";
    assert!(message.contains(said), "{message}");
}

#[test]
fn toml_syntax_errors_name_line_and_column() {
    let message = error("[server]\nlisten = \"127.0.0.1:8080\n");
    assert!(message.starts_with("degrade.toml:2:"), "{message}");
    assert!(message.contains("invalid TOML"), "{message}");
}

#[test]
fn cron_expressions_in_both_forms() {
    let five = load(&format!("{SCENARIO}schedule = \"30 2 * * *\"\n"), &[]).unwrap();
    let schedule = five.scenarios[0].schedule.as_ref().unwrap();
    assert_eq!((schedule.form, schedule.six_fields.as_str()), (CronForm::FiveFields, "0 30 2 * * *"));
    assert!(schedule.understood_as().contains("5-field cron"), "{}", schedule.understood_as());
    let six = load(&format!("{SCENARIO}schedule = \"0 30 2 * * *\"\n"), &[]).unwrap();
    assert_eq!(six.scenarios[0].schedule.as_ref().unwrap().form, CronForm::SixFields);

    let message = error(&format!("{SCENARIO}schedule = \"0 2 * *\"\n"));
    assert!(message.starts_with("degrade.toml:4:12: scenario[0].schedule: `0 2 * *` has 4 fields"), "{message}");
    let message = error(&format!("{SCENARIO}schedule = \"0 25 * * *\"\n"));
    assert!(
        message
            .starts_with("degrade.toml:4:12: scenario[0].schedule: `0 25 * * *`: the hour is 25; it goes from 0 to 23"),
        "{message}"
    );
}

/// A bad schedule and a bad timezone together: both are reported, not only the timezone.
#[test]
fn a_bad_schedule_is_reported_with_a_bad_timezone() {
    let message = error(&format!("{SCENARIO}schedule = \"0 25 * * *\"\ntimezone = \"Mars/Olympus\"\n"));
    assert!(message.contains("scenario[0].timezone: unknown timezone `Mars/Olympus`"), "{message}");
    assert!(message.contains("scenario[0].schedule: `0 25 * * *`: the hour is 25"), "{message}");
}

#[test]
fn unknown_timezones() {
    let message = error(&format!("{SCENARIO}schedule = \"0 2 * * *\"\ntimezone = \"Europe/Berlinn\"\n"));
    assert!(
        message.starts_with("degrade.toml:5:12: scenario[0].timezone: unknown timezone `Europe/Berlinn`"),
        "{message}"
    );
}

#[test]
fn duplicate_scenario_names_point_at_both() {
    let message = error(&format!("{SCENARIO}{SCENARIO}"));
    assert!(
        message.starts_with("degrade.toml:5:8: scenario[1].name: duplicate scenario name `checkout`; it is already used at degrade.toml:2:8"),
        "{message}"
    );
}

#[test]
fn missing_scenario_files() {
    let message = error("[[scenario]]\nname = \"search\"\nfile = \"scenarios/search.toml\"\n");
    assert!(
        message.starts_with("degrade.toml:3:8: scenario[0].file: scenario file `scenarios/search.toml` does not exist"),
        "{message}"
    );
}

#[test]
fn every_problem_is_listed_at_once() {
    let message = error(&format!(
        "{SCENARIO}schedule = \"nope\"\nbaseline = \"last-week\"\n[scenario.gates]\nmin_effect_pct = -5.0\n"
    ));
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines.len(), 3, "{message}");
    assert!(lines[1].starts_with("degrade.toml:5:12: scenario[0].baseline: unknown baseline `last-week`"), "{message}");
    assert!(
        lines[2].starts_with("degrade.toml:7:18: scenario[0].gates.min_effect_pct: -5 is not a percentage"),
        "{message}"
    );
}

#[test]
fn missing_config_file_says_how_to_make_one() {
    let message = Config::load(Path::new("/nonexistent/degrade.toml")).unwrap_err().to_string();
    assert!(message.starts_with("/nonexistent/degrade.toml: no such file; run `degrade init`"), "{message}");
}

#[test]
fn passwords_belong_in_the_environment() {
    let message = error("[database]\nurl = \"postgres://app:hunter2@db/degrade\"\n");
    assert!(message.starts_with("degrade.toml:2:7: database.url: contains a password"), "{message}");
    assert!(message.contains("DEGRADE_DATABASE_URL"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");

    let config = load("", &[("DEGRADE_DATABASE_URL", "postgres://app:hunter2@db/degrade")]).unwrap();
    let printed = format!("{} {:?} {config:?}", config.database, config.database);
    assert!(!printed.contains("hunter2"), "{printed}");
    assert!(printed.contains("postgres://app:***@db/degrade"), "{printed}");

    let message = load("", &[("DEGRADE_DATABASE_URL", "mysql://app:hunter2@db/degrade")]).unwrap_err();
    assert!(message.starts_with("environment variable DEGRADE_DATABASE_URL: database.url:"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn environment_overrides_the_file() {
    let config = load(
        "[server]\nlisten = \"127.0.0.1:9000\"\n",
        &[("DEGRADE_SERVER_LISTEN", "0.0.0.0:7000"), ("DEGRADE_SERVER_PUBLIC_URL", "https://perf.example.com/")],
    )
    .unwrap();
    assert_eq!(config.server.listen.to_string(), "0.0.0.0:7000");
    assert_eq!(config.server.public_url.as_deref(), Some("https://perf.example.com"));
    let message = load("", &[("DEGRADE_SERVER_LISTEN", "localhost")]).unwrap_err();
    assert!(
        message.starts_with("environment variable DEGRADE_SERVER_LISTEN: server.listen: `localhost` is not an address"),
        "{message}"
    );
}

#[test]
fn webhook_urls_come_from_the_environment_and_never_print() {
    let notify = "[[notify]]\nname = \"team\"\nkind = \"slack\"\nurl_env = \"TEAM_HOOK\"\n";
    let config = load(notify, &[("TEAM_HOOK", "https://hooks.example.com/T0/B0/s3cret")]).unwrap();
    assert!(!format!("{config:?}").contains("s3cret"));
    assert_eq!(config.notifiers[0].url.as_ref().unwrap().expose(), "https://hooks.example.com/T0/B0/s3cret");

    let unset = load(notify, &[]).unwrap();
    assert_eq!(
        unset.warnings,
        ["notify[0].url_env: environment variable TEAM_HOOK is not set; this webhook's alerts wait in the outbox \
             (up to a day) for a degrade that has it set, such as `degrade serve`"]
    );

    let message = load(notify, &[("TEAM_HOOK", "ftp://s3cret")]).unwrap_err();
    assert!(message.starts_with("environment variable TEAM_HOOK: notify[0].url_env: the webhook URL"), "{message}");
    assert!(!message.contains("s3cret"), "{message}");

    let message = error("[[notify]]\nname = \"team\"\nkind = \"teams\"\nurl_env = \"X\"\n");
    assert!(message.starts_with("degrade.toml:3:8: notify[0].kind: unknown variant `teams`"), "{message}");
    let message = error("[[notify]]\nname = \"team\"\nkind = \"json\"\nurl_env = \"https://hooks.example.com/x\"\n");
    assert!(
        message.starts_with("degrade.toml:4:11: notify[0].url_env: is not an environment variable name"),
        "{message}"
    );
    assert!(!message.contains("hooks.example.com"), "a pasted webhook URL is not echoed: {message}");
}

#[test]
fn build_and_gate_settings() {
    let config = load(
        &format!(
            "{SCENARIO}[scenario.build]\nversion_url = \"http://127.0.0.1:1/version\"\nversion_pointer = \"/build\"\n\
             deploy_command = \"./deploy.sh\"\ndeploy_timeout = \"2m\"\n[scenario.gates]\nmax_p75_ms = 1000\n"
        ),
        &[],
    );
    let config = config.unwrap();
    let scenario = &config.scenarios[0];
    assert_eq!(scenario.build.deploy.as_ref().unwrap().timeout.as_secs(), 120);
    assert_eq!(scenario.gates.absolute.max_p75_ms, Some(1000.0));
    assert_eq!(scenario.gates.min_runs, 5);

    let message = error(&format!(
        "{SCENARIO}[scenario.build]\nversion_url = \"http://x/v\"\nversion_command = \"git rev-parse HEAD\"\n"
    ));
    assert!(
        message.starts_with(
            "degrade.toml:6:19: scenario[0].build.version_command: give either version_url or version_command"
        ),
        "{message}"
    );
    let orphans =
        load(&format!("{SCENARIO}[scenario.build]\nversion_pointer = \"/v\"\nhealth_timeout = \"1m\"\n"), &[]).unwrap();
    assert_eq!(
        orphans.warnings,
        [
            "scenario[0].build.version_pointer: ignored without version_url",
            "scenario[0].build.health_timeout: ignored without health_url"
        ]
    );
    let message = error(&format!("{SCENARIO}[scenario.gates]\nmetric_min_effect_pct = {{ p42 = 5.0 }}\n"));
    assert!(
        message.starts_with("degrade.toml:5:27: scenario[0].gates.metric_min_effect_pct.p42: unknown metric `p42`"),
        "{message}"
    );
}

#[test]
fn telemetry_mistakes_name_line_column_and_field_and_never_echo_a_password() {
    let telemetry = "[[scenario.telemetry]]\nname = \"host\"\nkind = \"victoria\"\n\
        url = \"http://degrade:pa55word@127.0.0.1:9100/metrics\"\nexporter = \"nginx_exporter\"\nevery = \"5s\"\n\
        timeout = \"10s\"\n[[scenario.telemetry.series]]\nname = \"open files\"\n\
        metric = 'process_open_fds{job=~\"(api\"}'\nkind = \"level\"\nunit = \"files\"\nworse = \"up\"\n";
    let message = error(&format!("{SCENARIO}{telemetry}"));
    let field = "scenario[0].telemetry[0]";
    for expected in [
        format!("degrade.toml:6:8: {field}.kind: `victoria` is not a telemetry kind; use `scrape` (degrade reads"),
        format!("degrade.toml:7:7: {field}.url: contains a password; secrets only come from the environment"),
        format!("degrade.toml:8:12: {field}.exporter: `nginx_exporter` is not an exporter degrade knows"),
        format!("degrade.toml:10:11: {field}.timeout: `10s` is longer than `every` (5s)"),
        format!(
            "degrade.toml:13:10: {field}.series[0].metric: `process_open_fds{{job=~\"(api\"}}` is not a series \
             selector: the pattern of `job` is not a regular expression"
        ),
        format!("degrade.toml:14:8: {field}.series[0].kind: `level` is not one of `gauge`, `counter`"),
        format!("degrade.toml:16:9: {field}.series[0].worse: `up` is not one of `higher`, `lower`"),
    ] {
        assert!(message.contains(&expected), "missing `{expected}` in:\n{message}");
    }
    assert!(!message.contains("pa55word"), "{message}");

    let nothing_kept =
        "[[scenario.telemetry]]\nname = \"host\"\nkind = \"scrape\"\nurl = \"http://127.0.0.1:9100/metrics\"\n";
    let message = error(&format!("{SCENARIO}{nothing_kept}"));
    assert!(message.starts_with("degrade.toml:5:8: scenario[0].telemetry[0].series: keeps no series"), "{message}");
    let twice = format!("{nothing_kept}exporter = \"node_exporter\"\n{nothing_kept}exporter = \"node_exporter\"\n");
    let message = error(&format!("{SCENARIO}{twice}"));
    assert!(
        message.contains("degrade.toml:10:8: scenario[0].telemetry[1].name: another telemetry source"),
        "{message}"
    );
    let unknown = format!("{nothing_kept}exporter = \"node_exporter\"\nscrape_every = \"5s\"\n");
    let message = error(&format!("{SCENARIO}{unknown}"));
    assert!(message.starts_with("degrade.toml:9:1: scenario[0].telemetry[0].scrape_every: unknown field"), "{message}");
}

#[test]
fn a_prometheus_source_keeps_queries_and_says_where_a_selector_or_an_exporter_was_given() {
    let source = "[[scenario.telemetry]]\nname = \"prom\"\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\n";
    let series =
        |keys: &str| format!("[[scenario.telemetry.series]]\nname = \"s\"\nkind = \"gauge\"\nunit = \"u\"\n{keys}");
    let field = "scenario[0].telemetry[0]";
    for (extra, expected) in [
        (
            "exporter = \"node_exporter\"\n".to_owned() + &series("query = \"up\"\n"),
            format!("degrade.toml:8:12: {field}.exporter: an exporter's defaults are what degrade scrapes itself"),
        ),
        (
            series("metric = \"up\"\n"),
            format!("degrade.toml:12:10: {field}.series[0].metric: a `prometheus` source's series is a `query`"),
        ),
        (series(""), format!("degrade.toml:9:8: {field}.series[0].query: missing: the PromQL expression it keeps")),
        (
            series("query = \"sum(up)\"\ndivide_by = \"up\"\n"),
            format!("degrade.toml:13:13: {field}.series[0].divide_by: a query does its own arithmetic"),
        ),
        (
            series("query = \"up\\u001b[2J\"\n"),
            format!("degrade.toml:12:9: {field}.series[0].query: holds a control character (\\u{{1b}})"),
        ),
        (
            String::new(),
            format!(
                "degrade.toml:5:8: {field}.series: keeps no series: list [[scenario.telemetry.series]], each with \
                 its PromQL `query`"
            ),
        ),
    ] {
        let message = error(&format!("{SCENARIO}{source}{extra}"));
        assert!(message.contains(&expected), "missing `{expected}` in:\n{message}");
    }
    let scrape = source.replace("prometheus\"", "scrape\"") + &series("query = \"up\"\n");
    let message = error(&format!("{SCENARIO}{scrape}"));
    let expected = format!("{field}.series[0].query: a `scrape` source's series reads a `metric` selector");
    assert!(message.contains(&expected), "{message}");
    // A query spans lines as PromQL allows, and is kept as written; the step and a query's timeout are its own.
    let query = "sum(rate(node_cpu_seconds_total{mode!=\"idle\"}[1m]))\n  / sum(rate(node_cpu_seconds_total[1m]))";
    let keys = format!("query = '''\n{query}'''\n");
    let valid = format!("{source}every = \"15s\"\ntimeout = \"30s\"\n{}", series(&keys));
    let config = load(&format!("{SCENARIO}{valid}"), &[]).unwrap_or_else(|e| panic!("{e}"));
    let prom = &config.scenario("checkout").unwrap().telemetry[0];
    assert_eq!(prom.kind, degrade::config::SourceKind::Prometheus);
    assert_eq!((prom.every.as_secs(), prom.timeout.as_secs()), (15, 30));
    assert_eq!(prom.series[0].reads, degrade::config::Reads::Query(query.to_owned()));
}

#[test]
fn telemetry_limits_name_a_kept_series_and_read_a_share_as_a_fraction() {
    let source = "[[scenario.telemetry]]\nname = \"host\"\nkind = \"scrape\"\nurl = \"http://127.0.0.1:9100/metrics\"\n\
                  exporter = \"node_exporter\"\n";
    let field = "scenario[0].telemetry[0].limits";
    for (limits, expected) in [
        (
            "limits = { \"CPU\" = { max = 0.6 } }",
            format!(
                "degrade.toml:9:12: {field}.CPU: this source keeps no series named `CPU`; it keeps `CPU busy`, `iowait`, `memory used`"
            ),
        ),
        (
            "limits = { \"CPU busy\" = { max = 60 } }",
            format!(
                "degrade.toml:9:33: {field}.CPU busy.max: 60 is outside 0..=1: this series is a share, so 60 % is written 0.6"
            ),
        ),
        (
            "limits = { iowait = { min = 0.5, max = 0.2 } }",
            format!("degrade.toml:9:12: {field}.iowait: `min` (0.5) must be below `max` (0.2)"),
        ),
        ("limits = { iowait = {} }", format!("degrade.toml:9:12: {field}.iowait: give `max`, `min` or both")),
        ("limits = { iowait = { maximum = 0.2 } }", "unknown field `maximum`, expected `max` or `min`".to_owned()),
    ] {
        let message = error(&format!("{SCENARIO}{source}{limits}\n"));
        assert!(message.contains(&expected), "missing `{expected}` in:\n{message}");
    }
    let config = load(&format!("{SCENARIO}{source}limits = {{ \"CPU busy\" = {{ max = 0.6 }} }}\n"), &[]).unwrap();
    let gates = &config.scenario("checkout").unwrap().gates;
    assert_eq!(
        gates.telemetry_limits,
        [degrade::analysis::TelemetryLimit {
            source: "host".into(),
            series: "CPU busy".into(),
            max: Some(0.6),
            min: None
        }]
    );
}

#[test]
fn the_manuals_telemetry_example_is_valid_and_keeps_what_it_says() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/guide/telemetry.md");
    let page = std::fs::read_to_string(page).unwrap();
    let example = page.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let config = load(example, &[("DB_EXPORTER_TOKEN", "a-token")]).unwrap_or_else(|e| panic!("{e}\n{example}"));
    let sources = &config.scenario("checkout").unwrap().telemetry;
    let kept: Vec<Vec<&str>> = sources.iter().map(|s| s.series.iter().map(|s| s.name.as_str()).collect()).collect();
    assert_eq!(
        kept,
        [vec!["CPU busy", "iowait", "memory used"], vec!["connections", "transactions", "blocks read", "cache misses"]]
    );
    assert_eq!(sources[1].series[3].value_unit(), "share");
}
