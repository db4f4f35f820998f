//! After a segment's load: its results stored in its row (whole histograms, counters, error classes, the
//! timeline from the shared start, its clock's offsets), and, by the one segment that finds all N reported
//! (or the night invalid with a segment lost), the N added up into the night's one run (`metrics::segments`),
//! with the clocks' and the night's reasons among its validity reasons.

use anyhow::Context;

use super::Night;
use super::clock::{self, Offset};
use super::sentinel::LOST_AFTER;
use crate::engine::Measurement;
use crate::metrics::segments::{merge, segment_results};
use crate::model::{OVERALL_ENDPOINT, RunId, RunStatus, SegmentResults};
use crate::store::{SegmentRow, SegmentSummary, Store};

/// The night's one run, as the merging segment stored it.
#[derive(Debug, Clone)]
pub struct MergedNight {
    /// `finished`, `invalid` or `failed`.
    pub status: RunStatus,
    /// Why it is invalid.
    pub reasons: Vec<String>,
    /// Requests of the whole night.
    pub requests: i64,
    /// Segments merged.
    pub segments: usize,
    /// How far apart the segments' loads started, µs (database clock).
    pub start_spread_us: Option<i64>,
    /// Whether the split itself failed the night (a segment stopped, lost or missing, a plan or a clock that
    /// differed, starts too far apart), rather than only a segment's share falling behind as a single
    /// machine's can: such a night is alerted as one that could not be measured.
    pub split_fault: bool,
}

/// Stores this segment's results: `done`, or `failed` when it was stopped before its plan ended (which makes
/// the night invalid).
pub(super) async fn store_segment(
    store: &Store,
    night: &Night<'_>,
    measurement: &Measurement,
    before: Offset,
    after: Offset,
) -> anyhow::Result<()> {
    let index = night.segment.index();
    let results = &measurement.results;
    let ours = segment_results(index, results);
    let overall = results.endpoints.iter().find(|e| e.endpoint == OVERALL_ENDPOINT);
    let summary = SegmentSummary {
        requests: overall.map_or(0, |e| e.requests),
        errors: overall.map_or(0, |e| e.errors),
        p50_us: overall.map_or(0, |e| e.p50_us),
        p95_us: overall.map_or(0, |e| e.p95_us),
        p99_us: overall.map_or(0, |e| e.p99_us),
        schedule_lag_p99_us: results.load_summary.schedule_lag_p99_us,
    };
    // Its load's start on the database's clock: its own start, on its own clock, moved by its offset.
    let skew = clock::own_clock_us() - chrono::Utc::now().timestamp_micros();
    let started_at_us = measurement.started_at.timestamp_micros() + skew + before.offset_us;
    let state = if results.status == RunStatus::Aborted { "failed" } else { "done" };
    let json = serde_json::to_string(&ours).context("cannot write the segment's results")?;
    store
        .save_segment_results(
            night.key,
            index,
            state,
            results.status.as_str(),
            summary,
            (after.offset_us, started_at_us),
            &json,
        )
        .await
        .context("cannot store the segment's results")?;
    if results.status == RunStatus::Aborted {
        let reason = format!("segment {index} was stopped before its plan ended");
        store.invalidate_segmented_run(night.key, &reason).await?;
    }
    Ok(())
}

/// Merges the night into its run when this segment is the one to: every segment reported, or the night is
/// invalid, some segment is lost (it will never report) and every other one has reported. A segment still
/// running (seen lately) will report, stopped by the invalid night, and is waited for (until it reports or is
/// lost): merged before it, the night lacked a surviving segment's requests and named it among the lost
/// (found by a new-user trial); left to it alone, a night whose last survivor then died had no one to merge it.
pub(super) async fn merge_if_last(
    store: &Store,
    night: &Night<'_>,
    run_id: RunId,
) -> anyhow::Result<Option<MergedNight>> {
    let registry = store.segmented_run(night.key).await?.context("the night's registry row vanished")?;
    let invalid = registry.invalid_reason.is_some();
    let Some(anyway) = without_the_lost(store, night, invalid).await? else { return Ok(None) };
    if !store.claim_segment_merge(night.key, anyway).await? {
        return Ok(None);
    }
    let rows = store.run_segments(night.key).await?;
    let mut segments = Vec::new();
    for row in &rows {
        if let Some(text) = &row.results {
            let results: SegmentResults = serde_json::from_str(text)
                .with_context(|| format!("segment {}'s stored results are unreadable", row.segment_index))?;
            segments.push(results);
        }
    }
    let mut results = merge(&segments, night.segment.count(), chrono::Utc::now()).map_err(anyhow::Error::msg)?;
    let mut reasons: Vec<String> = registry.invalid_reason.into_iter().collect();
    for row in &rows {
        reasons.extend(clock::clock_reasons(row.segment_index as u32, row.offset_before_us, row.offset_after_us));
    }
    let starts: Vec<i64> = rows.iter().filter_map(|r| r.started_at_us).collect();
    let (start_spread_us, spread_reason) = clock::start_spread(&starts);
    reasons.extend(spread_reason);
    let split_fault = !reasons.is_empty() || segments.len() < night.segment.count() as usize;
    if !reasons.is_empty() {
        if results.status == RunStatus::Finished {
            results.status = RunStatus::Invalid;
        }
        reasons.append(&mut results.validity_reasons);
        results.validity_reasons = reasons;
    }
    store.finish_run(run_id, &results).await.context("cannot store the merged night")?;
    let requests = results.endpoints.iter().find(|e| e.endpoint == OVERALL_ENDPOINT).map_or(0, |e| e.requests);
    Ok(Some(MergedNight {
        status: results.status,
        reasons: results.validity_reasons,
        requests,
        segments: segments.len(),
        start_spread_us,
        split_fault,
    }))
}

/// Whether an `invalid` night is to be merged without some segment (lost, or never started), once every
/// segment still seen has reported; `None` when one is still seen after twice the time that makes a segment
/// lost: it merges the night itself when it reports.
async fn without_the_lost(store: &Store, night: &Night<'_>, invalid: bool) -> anyhow::Result<Option<bool>> {
    let reported = |r: &SegmentRow| matches!(r.state.as_str(), "done" | "failed");
    let seen_lately = |r: &SegmentRow| r.unseen_ms <= LOST_AFTER.as_millis() as i64;
    let waited = std::time::Instant::now();
    loop {
        let rows = store.run_segments(night.key).await?;
        let lost = rows.iter().any(|r| !reported(r) && !seen_lately(r));
        let running = rows.iter().any(|r| !reported(r) && seen_lately(r));
        let missing = lost || rows.len() < night.segment.count() as usize;
        if !invalid || !missing || !running {
            return Ok(Some(invalid && missing));
        }
        if waited.elapsed() > 2 * LOST_AFTER {
            return Ok(None);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}
