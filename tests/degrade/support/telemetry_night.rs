//! A night with telemetry for the `telemetry` and `telemetry_prometheus` tests: a project whose scenario loads a
//! stub target with `[[scenario.telemetry]]` tables, run through the real binary, and its stored sources.

use degrade::model::{RunTelemetry, SourceTelemetry};

use super::target::StubTarget;
use super::{TestDb, degrade_child, project, text};

/// A project whose `checkout` scenario loads `target` (a 1 s warm-up, 5 s measured), with `telemetry` as its
/// `[[scenario.telemetry]]` tables.
pub fn project_with(target: &StubTarget, telemetry: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let config = format!(
        "[[scenario]]\nname = \"checkout\"\nfile = \"scenarios/checkout.toml\"\ntarget = \"{}\"\n{telemetry}",
        target.url()
    );
    let scenario = "[[flow]]\nname = \"browse\"\n[[flow.step]]\npath = \"/fast\"\n[load]\nmodel = \"open\"\n\
                    [[load.stage]]\nduration = \"1s\"\nrate = 20\nmeasure = false\n\
                    [[load.stage]]\nduration = \"5s\"\nrate = 50\n";
    project(&config, &[("scenarios/checkout.toml", scenario)])
}

/// `degrade run` of the project in `dir` on `db`: its standard output, once it exited 0 or 3 (a machine too
/// slow to keep the schedule makes a run invalid, which is no matter here).
pub async fn run_night(dir: &tempfile::TempDir, db: &TestDb) -> String {
    let url = db.url_string();
    let child = degrade_child(dir.path(), &["run"], &[("DEGRADE_DATABASE_URL", url.as_str())]);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(matches!(output.status.code(), Some(0 | 3)), "{stdout}\n{stderr}");
    stdout
}

/// The stored source named `name`.
pub fn source_named<'a>(telemetry: &'a RunTelemetry, name: &str) -> &'a SourceTelemetry {
    telemetry.sources.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no source {name}: {telemetry:?}"))
}
