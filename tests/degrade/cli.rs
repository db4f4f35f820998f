//! The real binary, as a user meets it: `--help`, `init`, `validate`, `migrate` and their exit codes.

use crate::support::{TestDb, degrade, project, text};

#[test]
fn help_teaches_every_command_with_an_example() {
    let output = degrade(std::env::temp_dir().as_path(), &["--help"], &[]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    for needle in ["init", "validate", "migrate", "degrade init  ", "DEGRADE_DATABASE_URL", "Exit codes: 0 ok"] {
        assert!(stdout.contains(needle), "--help lacks {needle:?}:\n{stdout}");
    }
    for command in ["init", "validate", "migrate"] {
        let (stdout, _) = text(&degrade(std::env::temp_dir().as_path(), &[command, "--help"], &[]));
        assert!(
            stdout.contains(&format!("degrade {command}")) || stdout.contains("Example"),
            "{command} --help:\n{stdout}"
        );
    }
}

#[test]
fn unknown_commands_and_flags_exit_2() {
    let output = degrade(std::env::temp_dir().as_path(), &["valdiate"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("unrecognized subcommand 'valdiate'"));
}

#[test]
fn init_validate_migrate_in_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let init = degrade(dir.path(), &["init"], &[]);
    assert!(init.status.success(), "{:?}", text(&init));
    assert!(dir.path().join("degrade.toml").is_file());

    let validate = degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = text(&validate);
    assert!(validate.status.success(), "{stderr}");
    assert!(stdout.contains("degrade.toml is valid."), "{stdout}");
    assert!(stdout.contains("listens on 127.0.0.1:8080"), "{stdout}");

    let migrate = degrade(dir.path(), &["migrate"], &[]);
    let (stdout, stderr) = text(&migrate);
    assert!(migrate.status.success(), "{stderr}");
    let version = degrade::store::Store::latest_known_version();
    assert!(stdout.contains(&format!("(sqlite) is at schema version {version} (created)")), "{stdout}");
    assert!(dir.path().join("degrade.db").is_file());
}

#[test]
fn migrate_without_a_config_uses_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let output = degrade(dir.path(), &["migrate"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("note: no degrade.toml here; using the defaults"), "{stderr}");
    assert!(
        stdout.contains("sqlite://degrade.db (sqlite) is at schema version") && stdout.contains("(created)"),
        "{stdout}"
    );
    assert!(dir.path().join("degrade.db").is_file());
    // Running it again finds the schema in place.
    let again = degrade(dir.path(), &["migrate"], &[]);
    assert!(again.status.success() && text(&again).0.contains("(up to date)"), "{:?}", text(&again));
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let (dir, path) = project("# my tuned config\n", &[]);
    let output = degrade(dir.path(), &["init"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("degrade.toml already exists; pass --force to overwrite it"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# my tuned config\n");

    let forced = degrade(dir.path(), &["init", "--force"], &[]);
    assert!(forced.status.success());
    assert!(std::fs::read_to_string(&path).unwrap().contains("[database]"));
}

#[test]
fn a_malformed_config_exits_2_with_the_place_and_field() {
    let (dir, _) = project("[server]\nlisten = \"127.0.0.1:80\"\nport = 80\n", &[]);
    let output = degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("degrade.toml:3:1: server.port: unknown field `port`"), "{stderr}");
    assert!(stderr.contains("1 problem in the configuration"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    for args in [["--config", "elsewhere.toml", "validate"], ["validate", "--config", "elsewhere.toml"]] {
        let output = degrade(dir.path(), &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(text(&output).1.contains("elsewhere.toml: no such file; run `degrade init`"), "{args:?}");
    }
    let output =
        degrade(dir.path(), &["validate", "--config", "elsewhere.toml"], &[("DEGRADE_CONFIG", "degrade.toml")]);
    assert!(text(&output).1.contains("elsewhere.toml: no such file"), "the option after the subcommand wins");
}

/// `--config` is offered only where a config is read: not by `demo`, `demo-target` or `detect`.
#[test]
fn config_is_offered_only_where_it_means_something() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["demo", "demo-target", "detect"] {
        let help = text(&degrade(dir.path(), &[command, "--help"], &[])).0;
        assert!(!help.contains("--config"), "{command} --help offers --config:\n{help}");
        let refused = degrade(dir.path(), &[command, "--config", "x.toml"], &[]);
        assert_eq!(refused.status.code(), Some(2), "{command}");
    }
    for command in ["init", "validate", "migrate", "run", "check", "serve"] {
        let help = text(&degrade(dir.path(), &[command, "--help"], &[])).0;
        assert!(help.contains("--config <FILE>"), "{command} --help:\n{help}");
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn migrate_on_postgres_never_prints_the_password() {
    let db = TestDb::postgres().await;
    let dir = tempfile::tempdir().unwrap();
    assert!(degrade(dir.path(), &["init"], &[]).status.success());
    // The test server trusts every login, so a made-up password still connects and must stay hidden.
    let url = db.url_string().replacen("://postgres@", "://postgres:hunter2@", 1);
    assert!(url.contains("hunter2"), "the test URL should carry a password: {}", db.url);
    let env = [("DEGRADE_DATABASE_URL", url.as_str())];
    for command in ["validate", "migrate"] {
        let output = degrade(dir.path(), &[command], &env);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{command}: {stderr}");
        assert!(!stdout.contains("hunter2") && !stderr.contains("hunter2"), "{command} leaked:\n{stdout}{stderr}");
        assert!(stdout.contains("postgres://postgres:***@"), "{command}:\n{stdout}");
    }
    let again = text(&degrade(dir.path(), &["migrate"], &env)).0;
    assert!(again.contains("(postgres) is at schema version") && again.contains("(up to date)"), "{again}");
    // The server's own words, once, without the line of its C source sqlx appends ("… at line 948").
    let (head, _) = url.rsplit_once('/').unwrap();
    let missing = format!("{head}/degrade_no_such_database");
    let stderr = text(&degrade(dir.path(), &["migrate"], &[("DEGRADE_DATABASE_URL", missing.as_str())])).1;
    assert!(stderr.contains("database error: database \"degrade_no_such_database\" does not exist"), "{stderr}");
    assert!(!stderr.contains(" at line ") && stderr.matches("does not exist").count() == 1, "{stderr}");
}

#[test]
fn an_unreachable_database_exits_2_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    assert!(degrade(dir.path(), &["init"], &[]).status.success());
    // Port 9 on loopback: nothing listens there, so the connection is refused at once.
    let env = [("DEGRADE_DATABASE_URL", "postgres://app:hunter2@127.0.0.1:9/degrade")];
    let output = degrade(dir.path(), &["migrate"], &env);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("cannot open the database postgres://app:***@127.0.0.1:9/degrade"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

/// An unset webhook variable is worth a warning only to commands that deliver alerts: `validate` and
/// `check --run-now` say so, `migrate` and the check of a stored run (which send nothing) do not.
#[test]
fn only_commands_that_alert_warn_about_an_unset_webhook() {
    let config = "[[notify]]\nname = \"team\"\nkind = \"slack\"\nurl_env = \"TEAM_HOOK_UNSET\"\n";
    let (dir, _) = project(config, &[]);
    let warning = "environment variable TEAM_HOOK_UNSET is not set; this webhook's alerts wait in the outbox";
    let migrate = degrade(dir.path(), &["migrate"], &[]);
    let (stdout, stderr) = text(&migrate);
    assert_eq!(migrate.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains(warning), "{stderr}");
    let validate = degrade(dir.path(), &["validate"], &[]);
    assert!(text(&validate).1.contains(warning), "{}", text(&validate).1);
    let stored_check = degrade(dir.path(), &["check"], &[]);
    assert!(!text(&stored_check).1.contains(warning), "{}", text(&stored_check).1);
}

/// Before the first night, `validate` says what each endpoint's night will give to judge at the planned load,
/// so a user sizes the night for the tails they care about.
#[test]
fn validate_says_which_percentiles_a_night_can_judge_per_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"read\"\nweight = 9\n\
                    [[flow.step]]\npath = \"/a\"\n[[flow]]\nname = \"draft\"\nweight = 1\n[[flow.step]]\n\
                    method = \"POST\"\npath = \"/drafts\"\n[load]\nmodel = \"open\"\n[[load.stage]]\n\
                    duration = \"60s\"\nrate = 9\n";
    std::fs::write(dir.path().join("s.toml"), scenario).unwrap();
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("  per night GET /a: ~486 requests: p50, p95, p99 judged\n"), "{stdout}");
    assert!(
        stdout.contains(
            "  per night POST /drafts: ~54 requests: p50 judged; p95 needs ~73, p99 ~381: raise its share of the load \
             or the night's length\n"
        ),
        "{stdout}"
    );
    crate::support::quoted::assert_quoted("validate-per-night", &stdout);

    // A night whose measured stages plan no request would fail at 2 a.m.: validate refuses it now.
    for load in ["duration = \"5m\"\nrate = 0.0000001\n", "duration = \"60s\"\nfrom = 0\nto = 0\n"] {
        let idle = scenario.replace("duration = \"60s\"\nrate = 9\n", load);
        std::fs::write(dir.path().join("s.toml"), idle).unwrap();
        let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
        assert!(
            stderr.contains(": load.stage: the measured stages plan fewer than one arrival in all (0)"),
            "{stderr}"
        );
    }
}

/// The demo API's knobs refuse what is not a share, saying which.
#[test]
fn demo_target_refuses_a_share_that_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, said) in [
        ("--slow-share", "--slow-share 2 is not a share between 0 and 1"),
        ("--error-rate", "--error-rate 2 is not a share between 0 and 1"),
    ] {
        let output = degrade(dir.path(), &["demo-target", "--port", "1", flag, "2"], &[]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
    }
}

#[test]
fn validate_names_each_webhook_by_its_kind_as_written() {
    let config = crate::support::config::alerting_config("target = \"http://127.0.0.1:9\"");
    let (dir, _) = project(&config, &[("quick.toml", crate::support::config::QUICK_SCENARIO)]);
    let output = degrade(dir.path(), &["validate"], &[("HOOK", "https://hooks.example.com/secret-path")]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("notify    team (slack) via $HOOK (set)"), "{stdout}");
    assert!(stdout.contains("notify    ops (json) via $OPS (not set)"), "{stdout}");
    assert!(!stdout.contains("secret-path"), "a webhook URL is a secret: {stdout}");
}
