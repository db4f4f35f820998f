//! A project whose degrade the tests kill at fault points (`DEGRADE_FAULT`, debug builds only) through the real
//! binary, with five nights of history, and its target: answering, answering slowly and every other request 500,
//! or down.
//! Used by `killed_nights` (each window on its own) and `chaos` (random windows, invariants after each).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use degrade::store::Store;
use tokio::net::TcpListener;

use super::receiver::Receiver;
use super::{TestDb, degrade_child, project, text};

/// A target that answers every other request 500 while `failing` is set, and can go down and come up again on
/// the same port.
pub struct HalfFailing {
    pub url: String,
    pub failing: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    address: SocketAddr,
    down: AtomicBool,
    server: Mutex<tokio::task::JoinHandle<()>>,
}

impl HalfFailing {
    pub async fn start() -> Self {
        let (failing, served) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = Mutex::new(serve(listener, &failing, &served));
        Self { url: format!("http://{address}"), failing, served, address, down: AtomicBool::new(false), server }
    }

    /// Stops answering: new connections are refused from now on.
    pub fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
        self.server.lock().unwrap().abort();
    }

    /// Answers again, on the same port, if it was down.
    pub async fn come_up(&self) {
        if !self.down.swap(false, Ordering::SeqCst) {
            return;
        }
        // The aborted server lets the port go once its task is dropped, a moment after the abort.
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.address).await {
                Ok(listener) => break listener,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 200 => tries += 1,
                Err(e) => panic!("cannot listen on {} again: {e}", self.address),
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        *self.server.lock().unwrap() = serve(listener, &self.failing, &self.served);
    }
}

fn serve(listener: TcpListener, failing: &Arc<AtomicBool>, served: &Arc<AtomicU64>) -> tokio::task::JoinHandle<()> {
    let app = Router::new()
        .route("/items", get(items))
        .route("/metrics", get(metrics))
        .with_state((Arc::clone(failing), Arc::clone(served)));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() })
}

impl Drop for HalfFailing {
    fn drop(&mut self) {
        self.go_down();
    }
}

async fn items(State((failing, served)): State<(Arc<AtomicBool>, Arc<AtomicU64>)>) -> StatusCode {
    let odd = served.fetch_add(1, Ordering::Relaxed) % 2 == 1;
    if !failing.load(Ordering::Relaxed) {
        return StatusCode::OK;
    }
    // Slow as well: a baseline that already holds failing nights (confirmed regressions are baselines) makes
    // their error rate look like a flaky endpoint's, but its latency level, a median, stays the clean nights'
    // while they are most, so a failing night is still a regression after many of them (the chaos test).
    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    if odd { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::OK }
}

/// An exporter's page: the requests served so far, a counter the chaos test's telemetry source scrapes.
async fn metrics(State((_, served)): State<(Arc<AtomicBool>, Arc<AtomicU64>)>) -> String {
    format!("# TYPE items_served_total counter\nitems_served_total {}\n", served.load(Ordering::Relaxed))
}

/// The killed degrade's lease on the scenario would run out two minutes after its last renewal, and the next
/// run wait until then; here it runs out at once, as it would have by then.
pub async fn expire_the_lease_of_the_killed(store: &Store) {
    let lease = store.lease("shop").await.unwrap().expect("a killed degrade leaves its lease");
    store.release_lease("shop", &lease.holder).await.unwrap();
}

/// Lets go of the lease a degrade that stopped part-way may have left (a kill, or a database it lost).
pub async fn expire_any_lease(store: &Store) {
    if let Some(lease) = store.lease("shop").await.unwrap() {
        store.release_lease("shop", &lease.holder).await.unwrap();
    }
}

/// One night through `check --run-now`, killed at `fault` when given: the exit status and the output.
pub async fn night(
    dir: &tempfile::TempDir,
    hook: &Receiver,
    fault: Option<&str>,
) -> (std::process::ExitStatus, String) {
    let url = hook.url();
    let mut env = vec![("HOOK", url.as_str())];
    env.extend(fault.map(|point| ("DEGRADE_FAULT", point)));
    let output = degrade_child(dir.path(), &["check", "--run-now"], &env).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    (output.status, format!("{stdout}{stderr}"))
}

/// The half-failing target (answering well), a webhook receiver, and a project on `db` with five valid nights
/// of history, with its store; `gates` is the scenario's `[scenario.gates]` table, if any.
pub async fn a_project_with_history(db: &TestDb, gates: &str) -> (HalfFailing, Receiver, tempfile::TempDir, Store) {
    let target = HalfFailing::start().await;
    let hook = Receiver::start().await;
    let config = format!(
        "[database]\nurl = \"{}\"\n\n[[scenario]]\nname = \"shop\"\nfile = \"shop.toml\"\ntarget = \"{}\"\n{gates}\n\
         [[notify]]\nname = \"team\"\nkind = \"json\"\nurl_env = \"HOOK\"\n",
        db.url_string(),
        target.url
    );
    let scenario = "[[flow]]\nname = \"list\"\n[[flow.step]]\npath = \"/items\"\n\
                    [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 40\n";
    let (dir, _) = project(&config, &[("shop.toml", scenario)]);
    let store = Store::connect(&db.url).await.unwrap();
    let mut valid = 0;
    for n in 1..=12 {
        let (status, output) = night(&dir, &hook, None).await;
        assert!(matches!(status.code(), Some(0 | 3)), "history night {n}: {output}");
        valid += usize::from(store.last_runs("shop", 1).await.unwrap()[0].status.is_valid_measurement());
        if valid == 5 {
            break;
        }
    }
    assert_eq!(valid, 5, "five valid nights of history in twelve");
    (target, hook, dir, store)
}
