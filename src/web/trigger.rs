//! `POST /api/v1/scenarios/{name}/runs`: starts a run of a configured scenario now, through the same
//! pipeline as `degrade run` (deploy, health, build id, load, store), in the background.
//!
//! One run per scenario at a time in this process: a second trigger while one is under way gets 409, so an
//! impatient double click cannot halve the load each run sends. (Across several `degrade serve` instances on
//! one database, the nightly scheduler's lease will hold that line.)

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{AppState, WebError};
use crate::pipeline::{self, Job, RunOutcome};

/// The scenarios with a run under way in this process.
#[derive(Debug, Clone, Default)]
pub struct RunsUnderWay(Arc<Mutex<HashSet<String>>>);

impl RunsUnderWay {
    /// Marks `scenario` as running, or `None` if it already is; the mark goes when the guard is dropped.
    fn start(&self, scenario: &str) -> Option<UnderWay> {
        let mut running = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        running.insert(scenario.to_owned()).then(|| UnderWay { runs: self.clone(), scenario: scenario.to_owned() })
    }

    /// How many runs are under way.
    #[must_use]
    pub fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }
}

struct UnderWay {
    runs: RunsUnderWay,
    scenario: String,
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.runs.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.scenario);
    }
}

pub(super) async fn trigger(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<Value>), WebError> {
    if state.config.scenario(&name).is_none() {
        return Err(WebError::NotFound(format!("No [[scenario]] called `{name}` is configured.")));
    }
    let job = Job::find(&state.config, Some(&name)).map_err(|e| WebError::Unprocessable(format!("{e:#}")))?;
    let Some(under_way) = state.runs.start(&name) else {
        return Err(WebError::Conflict(format!("A run of `{name}` is already under way; wait for it to finish.")));
    };
    let (store, stop) = (state.store.clone(), state.stop.clone());
    tokio::spawn(async move {
        let _under_way = under_way;
        match pipeline::run(&store, job, None, stop, |_| {}).await {
            Ok(RunOutcome::Measured { run_id, measurement, .. }) => {
                tracing::info!(run_id, status = %measurement.results.status, "triggered run ended");
            }
            Ok(RunOutcome::Failed { run_id, reason }) => tracing::warn!(run_id, reason, "triggered run failed"),
            Err(e) => tracing::error!(error = format!("{e:#}"), "triggered run could not be stored"),
        }
    });
    let runs = format!("/api/v1/scenarios/{name}/runs");
    Ok((StatusCode::ACCEPTED, Json(json!({ "scenario": name, "state": "started", "runs": runs }))))
}
