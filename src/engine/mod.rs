//! The load engine: runs a [`Plan`] against its target and measures it.
//!
//! A pacer ([`pacer`]) starts sessions, open model (planned arrivals) or closed (looping users); each
//! session runs the one request loop ([`session`]) over pooled HTTP/1.1 connections ([`client`], [`http1`]), or
//! multiplexed HTTP/2 ones ([`http2`]) when the target asks, and reports
//! every request to one [`recorder`]. When the plan ends, in-flight requests get until their timeout to
//! finish; on Ctrl-C they get a short grace, then are cut off and counted as `aborted_at_end`.

mod alarm;
mod answer;
pub mod client;
mod cpu;
mod echo_probe;
mod machine_load;
mod failure;
mod grpc;
mod http1;
mod http2;
mod outcome;
mod own_runtime;
mod pacer;
mod precise_timer;
mod protobuf;
#[cfg(target_os = "linux")]
mod reactor;
mod recorder;
mod schedule;
mod replay;
mod request;
mod response_check;
mod session;
mod step_context;
mod tape_feed;
mod tls;
mod tls_pinned;
mod ws;
mod ticks;
#[cfg(target_os = "linux")]
mod timed_tcp;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinSet;

pub use outcome::{Measurement, ServiceTimes};
pub use own_runtime::run_apart;
pub(crate) use precise_timer::PreciseTimer;
pub use recorder::Snapshot;

use crate::scenario::Plan;
use crate::scenario::feeder::Cursor;
use crate::scenario::feeder_use::flow_feeders;
use crate::scenario::skew_shapes::{self, SiteOf};
use crate::scenario::skew_tally::SkewTally;
use crate::scenario::template::DrawTallies;
use client::HttpClient;
use pacer::Interruption;
use recorder::Recorder;
use request::StepRequest;
use session::{RunShared, SessionEnd};

use crate::model::LoadModel;

/// How long in-flight requests may finish after Ctrl-C before they are cut off.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How often the progress callback is called.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Where a run is, for the progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Time since the run started.
    pub elapsed: Duration,
    /// The plan's length.
    pub planned: Duration,
    /// 1-based index of the current stage.
    pub stage: usize,
    /// Number of stages.
    pub stages: usize,
    /// Counters so far.
    pub snapshot: Snapshot,
}

/// Runs `plan` until it ends or `stop` becomes true, calling `on_progress` a few times a second.
pub async fn run(plan: Arc<Plan>, stop: watch::Receiver<bool>, mut on_progress: impl FnMut(&Progress)) -> Measurement {
    #[cfg(target_os = "linux")]
    allow_open_files();
    // A segment of a split night starts at the shared start (set up first, then waiting for it); the
    // recorder's seconds count from it, so the segments' timelines add up second by second.
    let start = plan.start_at.map_or_else(Instant::now, |at| at.max(Instant::now()));
    let planned = plan.load.duration();
    let shared = Arc::new(run_shared(&plan, start, planned));
    // A segment's start is stamped when it woke for the shared start (late if it was), so the spread of the
    // segments' stamps is how far apart they really began; a run alone is stamped at its start.
    let started_at = if plan.start_at.is_some() {
        tokio::time::sleep_until(start.into()).await;
        chrono::Utc::now()
    } else {
        chrono::Utc::now() - Instant::now().saturating_duration_since(start)
    };
    let machine_at_start = machine_load::MachineSample::now();
    let echo = echo_probe::EchoProbe::start();
    let pacer = match plan.load.model {
        LoadModel::Open => tokio::spawn(pacer::open(Arc::clone(&shared), start, stop)),
        LoadModel::Closed => tokio::spawn(pacer::closed(Arc::clone(&shared), start, stop)),
    };
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    tokio::pin!(pacer);
    let (sessions, interruption) = loop {
        tokio::select! {
            paced = &mut pacer => break paced.expect("the pacer does not panic"),
            _ = ticker.tick() => on_progress(&progress(&plan, &shared, start)),
        }
    };
    // An uninterrupted run lasted its plan, whenever the last arrival happened to fall.
    let paced_for = if interruption.is_some() { start.elapsed() } else { planned };
    if interruption.is_some() {
        shared.stopping.store(true, Ordering::Relaxed);
    }
    let grace = if interruption == Some(Interruption::Stopped) { STOP_GRACE } else { plan.target.timeout };
    drain(sessions, grace, &shared.recorder).await;
    on_progress(&progress(&plan, &shared, start));
    let cpu = outcome::GeneratorCpu {
        busy: shared.busy.total(),
        machine: machine_at_start
            .zip(machine_load::MachineSample::now())
            .and_then(|(first, last)| last.use_since(first)),
        echo: echo.and_then(echo_probe::EchoProbe::finish),
        connection: shared.client.connection_report(),
    };
    let wall = start.elapsed();
    let mut measurement =
        outcome::measure(&plan, &shared.recorder, started_at, paced_for, wall, &cpu, interruption.as_ref());
    measurement.results.load_summary.skew = observed_skew(&plan, &shared);
    measurement
}

/// What every session of a run shares: the client (paced by the open model's ticks), the prepared requests or
/// the tape, the recorder counting from `start`, the feeders' cursors, and the run's deadline.
fn run_shared(plan: &Arc<Plan>, start: Instant, planned: Duration) -> RunShared {
    let step_protocols: Vec<_> = plan.flows.iter().flat_map(|f| &f.steps).filter_map(|s| s.protocol).collect();
    let client = HttpClient::for_target(&plan.target, &step_protocols).expect("the scenario checked the base URL");
    // The open-model pacer wakes for every arrival; answers due before the next one are read then.
    let ticks = (plan.load.model == LoadModel::Open).then(|| Arc::new(ticks::Ticks::default()));
    let client = match &ticks {
        Some(ticks) => client.paced_by(Arc::clone(ticks)),
        None => client,
    };
    let requests = StepRequest::prepare(plan, client.host_header(), client.prefix());
    let tape = plan.tape.as_ref().map(|_| tape_feed::TapeFeed::start(plan, client.host_header(), client.prefix()));
    RunShared {
        client,
        ticks,
        requests,
        tape,
        recorder: Recorder::new(start, plan.endpoints.clone()),
        cursors: plan
            .feeders
            .iter()
            .enumerate()
            .map(|(i, f)| Cursor::new(f, plan.seed ^ i as u64).segment(plan.segment))
            .collect(),
        flow_feeders: flow_feeders(plan),
        seq: AtomicU64::new(0),
        draw_tallies: draw_tallies(plan),
        connections: plan.target.max_connections.map(tokio::sync::Semaphore::new),
        busy: cpu::BusyClock::default(),
        deadline: start + planned,
        stopping: false.into(),
        fanouts: ws::Fanouts::default(),
        plan: Arc::clone(plan),
    }
}

/// Raises this process's soft limit on open files to the hard one, as load generators do: a run may hold a
/// thousand connections (`[load] max_in_flight`), and in the open model one waiting for the kernel to wake it
/// holds two descriptors ([`timed_tcp`]), where the soft limit is often 1,024.
#[cfg(target_os = "linux")]
fn allow_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        // Refused, the run goes on under the old limit; connections past it fail as `local_limit` errors.
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// This process's open-files limit (the soft one, which [`allow_open_files`] raised as far as it could).
#[cfg(target_os = "linux")]
pub(crate) fn open_files_limit() -> Option<u64> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok().map(|(soft, _)| soft)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn open_files_limit() -> Option<u64> {
    None
}

/// Counters for each skewed draw in the plan's templates.
fn draw_tallies(plan: &Plan) -> DrawTallies {
    DrawTallies::new(skew_shapes::sites(plan).into_iter().filter_map(|site| {
        let index = site.at.template_site()?;
        SkewTally::new(site.label, site.draw).map(|tally| (index, tally))
    }))
}

/// What the run drew from each skewed feeder and draw, in the order `validate` predicted them.
fn observed_skew(plan: &Plan, shared: &RunShared) -> Vec<crate::model::SkewObserved> {
    skew_shapes::sites(plan)
        .iter()
        .filter_map(|site| match site.at {
            SiteOf::Feeder(index) => shared.cursors.get(index).and_then(Cursor::tally),
            SiteOf::Template(index) | SiteOf::Session(index) => shared.draw_tallies.get(index),
        })
        .map(crate::scenario::skew_tally::SkewTally::observed)
        .collect()
}

fn progress(plan: &Plan, shared: &RunShared, start: Instant) -> Progress {
    let elapsed = start.elapsed();
    let mut stage = 1;
    let mut end = Duration::ZERO;
    for (index, s) in plan.load.stages.iter().enumerate() {
        end += s.duration;
        stage = index + 1;
        if elapsed < end {
            break;
        }
    }
    Progress {
        elapsed,
        planned: plan.load.duration(),
        stage,
        stages: plan.load.stages.len(),
        snapshot: shared.recorder.snapshot(),
    }
}

/// Lets running sessions finish for up to `grace`, then cancels them and records what was still in flight.
async fn drain(mut sessions: JoinSet<SessionEnd>, grace: Duration, recorder: &Recorder) {
    let finished = tokio::time::timeout(grace + Duration::from_millis(500), async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        sessions.abort_all();
        while sessions.join_next().await.is_some() {}
        recorder.abort_in_flight();
    }
}
