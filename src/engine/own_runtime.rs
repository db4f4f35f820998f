//! The engine on a runtime of its own: its own threads, which nothing else in the process schedules work on.
//! `serve` renders dashboard pages, answers the API and runs the scheduler on its main runtime; a run that
//! shared those worker threads queued its arrivals and reads behind page rendering, and six loops loading
//! pages during a night on a 2-core box made two runs invalid (schedule-lag p99 17 ms against 1–3 ms quiet).
//! The operating system still shares the cores, as with any other process on the machine, but a page no
//! longer holds a pacer's wake-up on the same thread.

use std::sync::Arc;

use tokio::sync::{oneshot, watch};

use super::{Measurement, Progress};
use crate::scenario::Plan;

/// Runs `plan` as [`super::run`] does, on a runtime of its own started for the run and stopped after it;
/// `on_progress` is called here, on the caller's runtime, with the engine's latest progress.
///
/// # Panics
/// When the operating system refuses a thread for the runtime (no run could be measured then).
pub async fn run_apart(
    plan: Arc<Plan>,
    stop: watch::Receiver<bool>,
    mut on_progress: impl FnMut(&Progress),
) -> Measurement {
    let (progress_tx, mut progress) = watch::channel::<Option<Progress>>(None);
    let (done_tx, mut done) = oneshot::channel();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    std::thread::Builder::new()
        .name("degrade-engine".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("degrade-engine")
                .enable_all()
                .build()
                .expect("the engine's runtime starts");
            let measurement = runtime.block_on(super::run(plan, stop, |p| {
                progress_tx.send_replace(Some(*p));
            }));
            // The caller may have gone (degrade stopping): the measurement then has no one to go to.
            let _ = done_tx.send(measurement);
        })
        .expect("a thread for the engine's runtime");
    loop {
        tokio::select! {
            measurement = &mut done => {
                // The engine's last word on its progress (after its drain) is shown before its measurement.
                if progress.has_changed().unwrap_or(false)
                    && let Some(p) = progress.borrow_and_update().as_ref()
                {
                    on_progress(p);
                }
                return measurement.expect("the engine's thread hands back its measurement");
            }
            Ok(()) = progress.changed() => {
                if let Some(p) = progress.borrow_and_update().as_ref() {
                    on_progress(p);
                }
            }
        }
    }
}
