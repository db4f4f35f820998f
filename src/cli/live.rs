//! The live progress line of a run (`run`, `check --run-now`, a segment of a split night) and the Ctrl-C or
//! SIGTERM handler that stops it.

use indicatif::{ProgressBar, ProgressStyle};

use super::shutdown_signal;
use crate::engine::Progress;
use crate::scenario::Plan;

/// The live progress line of a run, and the Ctrl-C handler that stops it.
pub(super) struct Live {
    bar: ProgressBar,
    ctrl_c: tokio::task::JoinHandle<()>,
}

impl Live {
    /// Shows the bar for `plan`; the receiver becomes true on Ctrl-C or SIGTERM.
    pub(super) fn start(plan: &Plan) -> (Self, tokio::sync::watch::Receiver<bool>) {
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        let ctrl_c = tokio::spawn(async move {
            shutdown_signal().await;
            stop_tx.send_replace(true);
        });
        (Self { bar: progress_bar(plan), ctrl_c }, stop)
    }

    /// Shows `progress`.
    pub(super) fn update(&self, progress: &Progress) {
        update(&self.bar, progress);
    }

    /// Clears the bar and stops listening for Ctrl-C.
    pub(super) fn finish(self) {
        self.bar.finish_and_clear();
        self.ctrl_c.abort();
    }
}

fn progress_bar(plan: &Plan) -> ProgressBar {
    let bar = ProgressBar::new(plan.load.duration().as_millis() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:24}] {msg}")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    bar
}

fn update(bar: &ProgressBar, p: &Progress) {
    bar.set_position(p.elapsed.as_millis() as u64);
    let left = p.planned.saturating_sub(p.elapsed);
    bar.set_message(format!(
        "stage {}/{} · {}s of {}s, {}s left · {} req/s · {} requests, {} errors · p95 {:.1} ms",
        p.stage,
        p.stages,
        p.elapsed.as_secs(),
        p.planned.as_secs(),
        left.as_secs(),
        p.snapshot.last_second_rate,
        p.snapshot.requests,
        p.snapshot.errors,
        p.snapshot.last_second_p95_us as f64 / 1000.0
    ));
}
