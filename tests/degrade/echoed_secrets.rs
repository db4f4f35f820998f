//! A token the scenario reads with `env("…")`, quoted back by a server's debug page, never reaches the run's
//! error samples: not the table `degrade run` prints, not its JSON, not the database behind the run page.

use degrade::store::{DatabaseUrl, Store};

use crate::support::target::StubTarget;
use crate::support::{degrade_child, project, text};

const TOKEN: &str = "tok_SECRET_abcdef123456";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_a_server_echoes_back_is_hidden_in_the_error_samples() {
    let target = StubTarget::start().await;
    let config = format!("[[scenario]]\nname = \"api\"\nfile = \"api.toml\"\ntarget = \"{}\"\n", target.url());
    let scenario = "[target]\nheaders = { authorization = \"Bearer {{ env(\\\"API_TOKEN\\\") }}\" }\n\
         [[flow]]\nname = \"f\"\n[[flow.step]]\nname = \"debug\"\npath = \"/echo-auth\"\n\
         [[flow.step]]\nname = \"after\"\npath = \"/fast\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 10\n";
    let (dir, _) = project(&config, &[("api.toml", scenario)]);
    let env = [("API_TOKEN", TOKEN)];
    let output = degrade_child(dir.path(), &["run"], &env).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        stdout.contains("debug: ") && stdout.contains("http_5xx, e.g. status 500: oops auth was: Bearer ***"),
        "{stdout}"
    );
    assert!(!stdout.contains("tok_SECRET") && !stderr.contains("tok_SECRET"), "{stdout}{stderr}");

    let output = degrade_child(dir.path(), &["run", "-f", "json"], &env).wait_with_output().await.unwrap();
    let (stdout, _) = text(&output);
    assert!(stdout.contains("Bearer ***") && !stdout.contains("tok_SECRET"), "{stdout}");

    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    for run in [1, 2] {
        let detail = store.run_detail(run).await.unwrap().unwrap();
        let samples = format!("{:?}", detail.endpoints.iter().map(|e| &e.error_samples).collect::<Vec<_>>());
        assert!(samples.contains("Bearer ***") && !samples.contains("tok_SECRET"), "{samples}");
    }
    store.close().await;
}
