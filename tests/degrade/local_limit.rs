//! A night on a machine out of file descriptors (a container at `--ulimit nofile=1024` under a large
//! `max_in_flight`): the requests degrade could not make are its own `local_limit` failures, with no response
//! time, and the run is invalid saying why, never the target's errors in a valid run.

use degrade::store::{DatabaseUrl, Store};

use crate::support::target::StubTarget;
use crate::support::{degrade_child_with_open_files, project, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_this_machine_could_not_make_invalidate_the_run_and_are_not_the_targets() {
    let target = StubTarget::start().await;
    let config = format!("[[scenario]]\nname = \"api\"\nfile = \"api.toml\"\ntarget = \"{}\"\n", target.url());
    // 30 arrivals a second, each held 2 s by the target: 60 connections in flight want 120 descriptors.
    let scenario = "[target]\ntimeout = \"5s\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/slow\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 30\n";
    let (dir, _) = project(&config, &[("api.toml", scenario)]);
    let child = degrade_child_with_open_files(dir.path(), 48, &["run", "--build", "1.0.0"], &[]);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(stdout.contains("local_limit, e.g. "), "{stdout}{stderr}");
    assert!(stdout.contains("(this machine's limit, not the target's failure)"), "{stdout}");
    assert!(
        stdout.contains(
            "requests failed inside the generator: this machine ran out of file descriptors, local ports or \
                         socket buffers (its open-files limit is 48); raise `ulimit -n`"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("Valid: the generator delivered the planned load."), "{stdout}");

    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    let detail = store.run_detail(1).await.unwrap().unwrap();
    assert_eq!(detail.run.status.as_str(), "invalid", "{:?}", detail.run.validity_reasons);
    let slow = detail.endpoints.iter().find(|e| e.endpoint == "GET /slow").unwrap();
    assert!(slow.errors_by_class["local_limit"] > 0, "{slow:?}");
    assert_eq!(slow.errors_by_class.len(), 1, "no failure is filed as the target's: {:?}", slow.errors_by_class);
    // Only the requests that reached the target are timed: each took the route's 2 s.
    assert!(slow.p50_us >= 2_000_000, "{slow:?}");
    store.close().await;
}
