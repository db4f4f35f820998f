//! `POST /api/v1/scenarios/{name}/runs`: starts a run of a configured scenario now, through the whole
//! nightly chain (deploy, health, build id, load, store, judge, alerts), in the background.
//!
//! One run per scenario at a time: a second trigger while one is under way, here or in another degrade
//! sharing the database, gets 409, so an impatient double click cannot halve the load each run sends.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::error::ApiError;
use super::{AppState, WebError};
use crate::model::BaselineSpec;
use crate::pipeline::{ClaimError, Job};

pub(super) async fn trigger(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Some(scenario) = state.config.scenario(&name) else {
        return Err(WebError::NotFound(format!("No [[scenario]] called `{name}` is configured.")).into());
    };
    let spec: BaselineSpec = scenario.baseline.clone();
    let job = Job::find(&state.config, Some(&name)).map_err(|e| WebError::Unprocessable(format!("{e:#}")))?;
    let claim = match state.runner.claim(&name).await {
        Ok(claim) => claim,
        Err(busy @ (ClaimError::RunningHere(_) | ClaimError::RunningElsewhere(..) | ClaimError::ShuttingDown(_))) => {
            return Err(
                WebError::Conflict(format!("{}; wait for it to finish.", capitalised(&busy.to_string()))).into()
            );
        }
        Err(ClaimError::Database(_, e)) => return Err(WebError::Store(e).into()),
    };
    let runner = state.runner.clone();
    tokio::spawn(async move {
        match runner.run(claim, job, None, &spec, |_| {}).await {
            Ok(ended) => tracing::info!(run_id = ended.run_id, status = %ended.status, "triggered run ended"),
            Err(e) => tracing::error!(error = format!("{e:#}"), "triggered run could not be completed"),
        }
    });
    let runs = format!("/api/v1/scenarios/{name}/runs");
    Ok((StatusCode::ACCEPTED, Json(json!({ "scenario": name, "state": "started", "runs": runs }))))
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}
