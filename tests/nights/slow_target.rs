//! A target slow by its requests' numbers, and a project around it with nights of history run through the
//! real binary: the first run of a night can be slow while its rerun is not (a noisy night), or both are (a
//! real regression), or the rerun crawls so slowly that the generator drops arrivals (a rerun that cannot be
//! judged), or stalls past any timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use degrade::model::RunStatus;
use degrade::store::{DatabaseUrl, Store};

use crate::support::receiver::Receiver;
use crate::support::{degrade_child, project, text};

/// Which requests, counted from the last `slow` call, take 40 ms longer: those numbered below `first` and those
/// from `again` on. The rest answer at once. Those from `crawl` on take 400 ms (ten in flight at 40/s, past
/// the scenario's `max_in_flight`, so arrivals are dropped and the run is invalid); those from `stall` on
/// take 20 s, past any run's request timeout.
#[derive(Default)]
struct Slow {
    served: AtomicI64,
    first: AtomicI64,
    again: AtomicI64,
    crawl: AtomicI64,
    stall: AtomicI64,
    /// From this request number on (counted as `slow` counts), `/version` answers `1.1.0` instead of `1.0.0`:
    /// a new build deployed during the night.
    redeployed: AtomicI64,
}

/// A target slow by the numbers in [`Slow`].
pub struct SlowFor {
    pub address: SocketAddr,
    slow: Arc<Slow>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for SlowFor {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl SlowFor {
    pub async fn start() -> Self {
        let slow = Arc::new(Slow {
            again: AtomicI64::new(i64::MAX),
            crawl: AtomicI64::new(i64::MAX),
            stall: AtomicI64::new(i64::MAX),
            redeployed: AtomicI64::new(i64::MAX),
            ..Slow::default()
        });
        let app = Router::new().route("/items", get(items)).route("/version", get(version)).with_state(slow.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { address, slow, server }
    }

    /// The next `first` requests are slow, then the rest up to request number `again`, then all again.
    pub fn slow(&self, (first, again): (i64, i64)) {
        self.slow.first.store(first, Ordering::SeqCst);
        self.slow.again.store(again, Ordering::SeqCst);
        self.slow.crawl.store(i64::MAX, Ordering::SeqCst);
        self.slow.stall.store(i64::MAX, Ordering::SeqCst);
        self.slow.redeployed.store(i64::MAX, Ordering::SeqCst);
        self.slow.served.store(0, Ordering::SeqCst);
    }

    /// From request number `from` on (counted as `slow` counts), the target is build 1.1.0.
    pub fn redeploy(&self, from: i64) {
        self.slow.redeployed.store(from, Ordering::SeqCst);
    }

    /// From request number `from` on (counted as `slow` counts), each takes 400 ms.
    pub fn crawl(&self, from: i64) {
        self.slow.crawl.store(from, Ordering::SeqCst);
    }

    /// From request number `from` on (counted as `slow` counts), each takes 20 s.
    pub fn stall(&self, from: i64) {
        self.slow.stall.store(from, Ordering::SeqCst);
    }
}

async fn version(State(slow): State<Arc<Slow>>) -> &'static str {
    if slow.served.load(Ordering::SeqCst) >= slow.redeployed.load(Ordering::SeqCst) { "1.1.0" } else { "1.0.0" }
}

async fn items(State(slow): State<Arc<Slow>>) -> &'static str {
    let number = slow.served.fetch_add(1, Ordering::SeqCst);
    if number >= slow.stall.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_secs(20)).await;
    } else if number >= slow.crawl.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(400)).await;
    } else if number < slow.first.load(Ordering::SeqCst) || number >= slow.again.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    "[]"
}

/// One scenario, `GET /items` at 40/s for 2 s (80 requests a run), alerting to the webhook in HOOK. The other
/// tests, which come and go on this machine, keep it busier on some runs than on others, and a slowdown of
/// the one endpoint measured then would be inconclusive: this test is about reruns, so it judges whatever
/// the machine did (`check::a_slowdown_on_a_busier_machine_is_not_blamed_on_the_build` is about that). For
/// the same reason a regression must be 3× the usual figure: the slow requests take 40 ms on a route that
/// answers in about 1 ms (+3,000 %), while the other tests alone moved its p50 by +35 % in a CI run, in the
/// rerun of a noisy night, which then "confirmed" the noise.
pub fn project_for(target: &SlowFor) -> tempfile::TempDir {
    let config = format!(
        "[[scenario]]\nname = \"shop\"\nfile = \"scenarios/shop.toml\"\ntarget = \"http://{0}\"\n\
         [scenario.gates]\nbusy_machine_inconclusive = false\nmin_effect_pct = 200\n\
         [scenario.build]\nversion_url = \"http://{0}/version\"\n\n\
         [[notify]]\nname = \"team\"\nkind = \"json\"\nurl_env = \"HOOK\"\n",
        target.address
    );
    // At most 8 sessions in flight: 40 ms requests at 40/s keep under 2 on average, 400 ms ones at 10.
    let scenario = "[[flow]]\nname = \"list\"\n[[flow.step]]\npath = \"/items\"\n\
                    [load]\nmodel = \"open\"\nmax_in_flight = 8\n[[load.stage]]\nduration = \"2s\"\nrate = 40\n";
    project(&config, &[("scenarios/shop.toml", scenario)]).0
}

pub async fn check_run_now(dir: &tempfile::TempDir, hook: &Receiver) -> (Option<i32>, String) {
    let url = hook.url();
    let child = degrade_child(dir.path(), &["check", "--run-now"], &[("HOOK", url.as_str())]);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), format!("{stdout}{stderr}"))
}

/// A night this busy machine spoiled after it had consequences: its first run measured and regressed, and
/// every rerun degrade tried was invalid (requests sent late), so the first verdict stood, was alerted, and is
/// history now (a slow night the next night is judged after). Trying the night again would judge it after
/// that night, so the story starts again from a fresh project (see [`again_while_spoiled`]).
#[derive(Debug)]
pub struct Spoiled(pub String);

/// Runs `story` (a whole test from a fresh project) again while this busy machine spoiled one of its nights, at
/// most three times.
pub async fn again_while_spoiled<F: Future<Output = Result<(), Spoiled>>>(story: impl Fn() -> F) {
    for attempt in 1..=3 {
        match story().await {
            Ok(()) => return,
            Err(night) => eprintln!("attempt {attempt}: {}; starting the story again", night.0),
        }
    }
    panic!("three attempts in a row had a spoiled night: this machine is too busy to measure anything");
}

/// One night through `check --run-now` with requests slowed as `slow` says (see [`SlowFor::slow`]), again while
/// its first run was invalid (this machine, busy with other tests, sent requests late: such a run says nothing
/// about the build and judges nothing; an invalid rerun in between is tried again by degrade itself). A night
/// whose deciding rerun was invalid had its first verdict stand: [`Spoiled`]. Returns the exit code, the
/// output, the night's first run and the run that decided it (its last rerun, or the first run when it had
/// none).
pub async fn judged_night(
    dir: &tempfile::TempDir,
    hook: &Receiver,
    target: &SlowFor,
    slow: (i64, i64),
) -> Result<(Option<i32>, String, i64, i64), Spoiled> {
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    for _ in 0..6 {
        let before = store.last_runs("shop", 1).await.unwrap().first().map_or(0, |r| r.id);
        target.slow(slow);
        let (code, output) = check_run_now(dir, hook).await;
        let made = store.last_runs("shop", 4).await.unwrap();
        let made: Vec<_> = made.iter().filter(|r| r.id > before).collect();
        let (first, last) = (made.iter().min_by_key(|r| r.id), made.iter().max_by_key(|r| r.id));
        if first.is_none_or(|r| r.status == RunStatus::Invalid) {
            continue;
        }
        store.close().await;
        if last.is_some_and(|r| r.status == RunStatus::Invalid) {
            return Err(Spoiled(format!("every rerun of the night's first run #{} was invalid: {output}", before + 1)));
        }
        return Ok((code, output, before + 1, last.map_or(before + 1, |r| r.id)));
    }
    panic!("six nights in a row had an invalid first run: this machine is too busy to measure anything");
}

/// Five valid nights of history; a night this machine was too slow for is invalid and does not count.
pub async fn five_valid_nights(dir: &tempfile::TempDir, hook: &Receiver, store: &Store) {
    let mut valid = 0;
    let mut runs = 0;
    while valid < 5 {
        assert!(runs < 12, "12 history nights without 5 valid ones");
        let (code, output) = check_run_now(dir, hook).await;
        assert!(matches!(code, Some(0 | 3)), "history night {}: {output}", runs + 1);
        runs += 1;
        valid += i32::from(store.find_run(runs).await.unwrap().unwrap().status.is_valid_measurement());
    }
}

/// The slow target, a webhook receiver, and a project with five valid nights of history, with its store.
pub async fn five_nights_in() -> (SlowFor, Receiver, tempfile::TempDir, Store) {
    let target = SlowFor::start().await;
    let hook = Receiver::start().await;
    let dir = project_for(&target);
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    five_valid_nights(&dir, &hook, &store).await;
    (target, hook, dir, store)
}
