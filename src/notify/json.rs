//! degrade's own alert JSON, for receivers that are not chat tools (an incident tool, a script). The schema,
//! `degrade.alert.v1`, is documented in the manual (docs/src/reference/webhooks.md); fields are added, never
//! renamed, within a version:
//!
//! ```json
//! { "schema": "degrade.alert.v1", "event": "regression", "scenario": "checkout", "episode_id": 3,
//!   "run_id": 12, "run_url": "https://degrade.example.com/runs/12", "build": "1.4.2",
//!   "builds_since_last_good": ["1.4.1", "1.4.2"], "last_good_run_id": 9,
//!   "summary": "regressed: …", "worse": [{ "endpoint": "GET /items/{id}", "metric": "p95",
//!   "baseline": 120.0, "tonight": 180.0, "delta_pct": 50.0, "unit": "ms" }],
//!   "at": "2026-11-30T02:14:07Z", "idempotency_key": "degrade-episode-3-regression-team" }
//! ```
//!
//! An alert about a capacity search that fell (or came back) carries `capacity` too: the capacity against the
//! one it is compared with, the zone and why the first rate out left it, and the sentence the verdict says.

use serde_json::{Value, json};

use super::{Alert, Links};

pub(super) fn payload(alert: &Alert, links: &Links, episode: Option<i64>, key: &str) -> Value {
    let mut body = json!({
        "schema": "degrade.alert.v1",
        "event": alert.event,
        "scenario": alert.scenario,
        "episode_id": episode,
        "run_id": alert.run_id,
        "run_url": links.run,
        "build": alert.build_id,
        "builds_since_last_good": alert.builds_since_last_good,
        "last_good_run_id": alert.last_good_run_id,
        "summary": alert.summary,
        "worse": alert.worse,
        "at": alert.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "idempotency_key": key,
    });
    // Only when a capacity search fell or came back: the other alerts' bodies stay as they were.
    if let Some(capacity) = &alert.capacity {
        body["capacity"] = json!({
            "baseline": capacity.baseline,
            // No step held: the capacity is under `first_out`, not a number to plot.
            "tonight": (!capacity.under).then_some(capacity.tonight),
            "delta_pct": capacity.delta_pct,
            "first_out": capacity.first_out,
            "zone": capacity.zone,
            "left_zone_on": capacity.breach,
            "words": capacity.describe(),
            "unit": "req/s",
        });
    }
    body
}
