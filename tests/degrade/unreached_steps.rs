//! A step no request of the night reached (the step before it failed every time) is said to be unmeasured by
//! `degrade run`, in text and JSON, instead of missing from the table without a word.

use crate::support::target::StubTarget;
use crate::support::{degrade_child, project, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_after_one_that_always_fails_is_said_to_be_unmeasured() {
    let target = StubTarget::start().await;
    let config = format!("[[scenario]]\nname = \"shop\"\nfile = \"shop.toml\"\ntarget = \"{}\"\n", target.url());
    let scenario = "[[flow]]\nname = \"browse\"\n[[flow.step]]\nname = \"home\"\npath = \"/fast\"\n\
         [[flow]]\nname = \"buy\"\n[[flow.step]]\nname = \"login\"\npath = \"/status/500\"\n\
         [[flow.step]]\nname = \"pay\"\npath = \"/fast\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 20\n";
    let (dir, _) = project(&config, &[("shop.toml", scenario)]);
    let output = degrade_child(dir.path(), &["run"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(stdout.contains("login "), "{stdout}\n{stderr}");
    assert!(stdout.contains("\nNo request reached pay, so nothing of it is measured. "), "{stdout}");

    let output = degrade_child(dir.path(), &["run", "-f", "json"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    assert_eq!(report["unreached"], serde_json::json!(["pay"]), "{report:#}");
}
