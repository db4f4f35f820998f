//! Beside a segment's load: keeps the segment seen (every second), and stops its load early when the night
//! turns invalid (another segment stopped, failed or was lost) or when this degrade is stopped (Ctrl-C, a pod's
//! SIGTERM), which it records as the night's invalid reason so the other segments stop too.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::model::Segment;
use crate::store::Store;

/// How often the sentinel stamps the segment seen and looks at the others.
const EVERY: Duration = Duration::from_secs(1);

/// A running segment not seen for this long is lost (killed, its machine gone): five missed stamps, so a
/// database or machine pausing for a few seconds does not end the night.
pub const LOST_AFTER: Duration = Duration::from_secs(5);

/// The sentinel of one segment's load.
pub(super) struct Sentinel {
    task: JoinHandle<()>,
    done: watch::Sender<bool>,
}

impl Sentinel {
    /// Starts watching; the receiver stops the engine (this degrade stopped, or the night invalid).
    pub(super) fn start(
        store: Store,
        key: String,
        segment: Segment,
        mut stopped: watch::Receiver<bool>,
    ) -> (Self, watch::Receiver<bool>) {
        let (stop_tx, stop) = watch::channel(false);
        let (done, mut finished) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(EVERY);
            // Whoever could stop this degrade may be gone (nothing will stop it then): that branch is left out.
            let mut can_be_stopped = true;
            loop {
                tokio::select! {
                    _ = ticker.tick() => {
                        if let Some(reason) = look(&store, &key, segment).await {
                            tracing::warn!("segment {segment}: stopping early: {reason}");
                            stop_tx.send_replace(true);
                            return;
                        }
                    }
                    // The guard the wait hands back is dropped inside: it may not live across an await.
                    was_stopped = async { stopped.wait_for(|s| *s).await.is_ok() }, if can_be_stopped => {
                        if !was_stopped {
                            can_be_stopped = false;
                            continue;
                        }
                        let reason =
                            format!("segment {} was stopped (SIGTERM or Ctrl-C) before its plan ended", segment.index());
                        let _ = store.invalidate_segmented_run(&key, &reason).await;
                        stop_tx.send_replace(true);
                        return;
                    }
                    _ = finished.changed() => return,
                }
            }
        });
        (Self { task, done }, stop)
    }

    /// Stops watching (the load ended).
    pub(super) async fn finish(self) {
        self.done.send_replace(true);
        let _ = self.task.await;
    }
}

/// Stamps this segment seen; the reason to stop, if the night is invalid or another segment is lost. A database
/// that cannot be read is no reason to stop a load in progress: the next look tries again.
async fn look(store: &Store, key: &str, segment: Segment) -> Option<String> {
    let _ = store.segment_seen(key, segment.index()).await;
    let registry = store.segmented_run(key).await.ok().flatten()?;
    if let Some(reason) = registry.invalid_reason {
        return Some(reason);
    }
    let rows = store.run_segments(key).await.ok()?;
    let lost = rows
        .iter()
        .find(|r| !matches!(r.state.as_str(), "done" | "failed") && r.unseen_ms > LOST_AFTER.as_millis() as i64)?;
    let reason = format!(
        "segment {} ({}) was last seen {:.1} s ago: its generator is gone",
        lost.segment_index,
        crate::outside_text::clipped(&lost.holder, 80),
        lost.unseen_ms as f64 / 1000.0
    );
    Some(store.invalidate_segmented_run(key, &reason).await.unwrap_or(reason))
}
