//! A split night whose generators are all gone: `serve`'s watch (and every runner's settling of what was left
//! behind) finds a night none of whose segments was seen for [`QUIET`] — its deadline, since a live segment
//! stamps itself seen every second, at the barrier as under load — and marks it `invalid`, naming the segments
//! that never reported their results, then alerts it once like any split night that could not be measured.
//! So a night whose pods all died never stays `running`. Its scenario's lease (`lease`) runs out by itself,
//! since no segment renews it any more; this is how its run ends.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::model::{RunId, RunStatus};
use crate::store::{SegmentRow, Store, StoreError};

/// How long a split night may go without any of its segments seen before it is lost: a minute, so a database
/// or a cluster pausing for a while does not end a night that is still going.
pub const QUIET: Duration = Duration::from_mins(1);

/// Marks every split night quiet for [`QUIET`] before `now` (system clock) invalid, with the reason, and alerts
/// each at `at`; returns their runs. A night another process merged or ended meanwhile is left as it is.
pub async fn settle_lost(
    store: &Store,
    config: &Config,
    now: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<Vec<RunId>, StoreError> {
    let mut lost = Vec::new();
    for (key, run_id, count) in store.split_nights_gone_quiet(now, QUIET).await? {
        let rows = store.run_segments(&key).await?;
        let reason = store.invalidate_segmented_run(&key, &lost_reason(count, &rows)).await?;
        match store.end_run(run_id, RunStatus::Invalid, &reason, now).await {
            Ok(()) => {}
            // Merged or ended by a segment a moment ago: its own ending stands.
            Err(StoreError::RunNotRunning(_)) => continue,
            Err(e) => return Err(e),
        }
        tracing::warn!(run_id, "the split night `{key}` is lost: {reason}");
        super::alert::after_unmeasured(store, config, run_id, at).await?;
        lost.push(run_id);
    }
    Ok(lost)
}

/// Why the night is lost: which segments never reported their results, and how each was last seen.
fn lost_reason(count: i64, rows: &[SegmentRow]) -> String {
    let mut missing = Vec::new();
    let mut reported = Vec::new();
    for index in 0..count {
        match rows.iter().find(|r| r.segment_index == index) {
            Some(row) if row.state == "done" => reported.push(index.to_string()),
            Some(row) => missing.push(format!(
                "segment {index} ({}, last seen {:.0} s ago)",
                row.state,
                row.unseen_ms as f64 / 1000.0
            )),
            None => missing.push(format!("segment {index} (never registered)")),
        }
    }
    if missing.is_empty() {
        return format!(
            "no segment of the night was seen for {} s: every segment reported, but none merged the night (the one \
             merging it stopped)",
            QUIET.as_secs()
        );
    }
    let reported =
        if reported.is_empty() { String::new() } else { format!("; reported: segment {}", reported.join(", ")) };
    format!(
        "no segment of the night was seen for {} s, and {} never reported {}{reported}",
        QUIET.as_secs(),
        missing.join(", "),
        if missing.len() == 1 { "its results" } else { "their results" },
    )
}
