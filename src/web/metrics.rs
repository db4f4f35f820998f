//! `/metrics` in the Prometheus text format: runs by status, the age of each scenario's latest run (alert
//! on it to catch a schedule that stopped), and open alert episodes.

use std::fmt::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use chrono::Utc;

use super::{AppState, WebError};

pub(super) async fn metrics(State(state): State<AppState>) -> Result<impl IntoResponse, WebError> {
    let counts = state.store.status_counts().await?;
    let summaries = state.store.scenario_summaries().await?;
    let mut out = String::new();
    out.push_str("# HELP degrade_runs Runs stored, by scenario and status.\n# TYPE degrade_runs gauge\n");
    for count in &counts {
        let _ = writeln!(
            out,
            "degrade_runs{{scenario=\"{}\",status=\"{}\"}} {}",
            label(&count.scenario),
            label(&count.status),
            count.runs
        );
    }
    out.push_str(
        "# HELP degrade_last_run_age_seconds Seconds since the scenario's latest run started.\n\
         # TYPE degrade_last_run_age_seconds gauge\n",
    );
    let now = Utc::now();
    for summary in &summaries {
        if let Some(run) = &summary.latest_run {
            let age = (now - run.started_at).num_milliseconds() as f64 / 1000.0;
            let _ = writeln!(out, "degrade_last_run_age_seconds{{scenario=\"{}\"}} {age:.3}", label(&summary.name));
        }
    }
    out.push_str("# HELP degrade_open_episodes Alert episodes not resolved yet.\n# TYPE degrade_open_episodes gauge\n");
    for summary in &summaries {
        let _ =
            writeln!(out, "degrade_open_episodes{{scenario=\"{}\"}} {}", label(&summary.name), summary.open_episodes);
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], out))
}

/// Escapes a label value as the text format requires.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
