//! Alert episodes: the `/alerts` page with its acknowledge form, and the same under `/api/v1/episodes`.
//! Acknowledging needs a reason, so the next person on call knows why nobody acted.

use askama::Template;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::changes::{ChangeRow, rows};
use super::error::ApiError;
use super::{AppState, WebError};
use crate::store::{Acknowledged, Episode, OutboxMessage};

/// How many resolved episodes the page and the API list after the unresolved ones.
const RECENT_RESOLVED: u32 = 50;
/// How many alert messages (delivered, pending or given up) the page and the API list, newest first.
const RECENT_MESSAGES: u32 = 50;

#[derive(Template)]
#[template(path = "alerts.html")]
struct AlertsPage {
    /// Each episode with what its opening run's verdict found worse (empty for missed or failed runs).
    episodes: Vec<(Episode, Vec<ChangeRow>)>,
    messages: Vec<OutboxMessage>,
}

// Templates pass every argument by reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
impl AlertsPage {
    fn when(millis: &i64) -> String {
        crate::store::from_millis(*millis).format("%Y-%m-%d %H:%M:%S UTC").to_string()
    }

    /// The message as it was sent: a Slack message's blocks as their text, one per line; any other body as
    /// its JSON, pretty-printed.
    fn as_sent(message: &OutboxMessage) -> String {
        let Ok(json) = serde_json::from_str::<Value>(&message.payload) else { return message.payload.clone() };
        let Some(blocks) = json.get("blocks").and_then(Value::as_array) else {
            return serde_json::to_string_pretty(&json).unwrap_or_else(|_| message.payload.clone());
        };
        let text = |v: &Value| {
            v.get("text").and_then(|t| t.get("text").or(Some(t))).and_then(Value::as_str).map(str::to_owned)
        };
        let lines = blocks.iter().flat_map(|block| {
            let own = text(block);
            let elements = block.get("elements").and_then(Value::as_array).into_iter().flatten().filter_map(text);
            own.into_iter().chain(elements)
        });
        lines.collect::<Vec<_>>().join("\n")
    }
}

/// `GET /alerts`.
pub(super) async fn page(State(state): State<AppState>) -> Result<Html<String>, WebError> {
    let mut episodes = Vec::new();
    for episode in state.store.episodes(RECENT_RESOLVED).await? {
        let verdict = match episode.opened_run_id {
            Some(run) => state.store.latest_verdict(run).await?,
            None => None,
        };
        let worse: Vec<ChangeRow> =
            verdict.map(|v| rows(&v.findings).into_iter().filter(|r| r.worse).collect()).unwrap_or_default();
        episodes.push((episode, worse));
    }
    let messages = state.store.recent_messages(RECENT_MESSAGES).await?;
    Ok(Html(AlertsPage { episodes, messages }.render()?))
}

/// The acknowledge form, and the API's JSON body.
#[derive(Deserialize)]
pub(super) struct Acknowledgement {
    reason: Option<String>,
}

/// `POST /alerts/{id}/acknowledge` (form): acknowledges, then back to the list.
pub(super) async fn acknowledge_form(
    State(state): State<AppState>,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<Acknowledgement>,
) -> Result<Response, WebError> {
    acknowledge(&state, &id, form.reason.as_deref()).await?;
    Ok(Redirect::to("/alerts").into_response())
}

/// `GET /api/v1/episodes`.
pub(super) async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let episodes = state.store.episodes(RECENT_RESOLVED).await?;
    let messages = state.store.recent_messages(RECENT_MESSAGES).await?;
    Ok(Json(json!({ "episodes": episodes, "messages": messages })))
}

/// `POST /api/v1/episodes/{id}/acknowledge` with `{"reason": "…"}`.
pub(super) async fn acknowledge_json(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<Json<Acknowledgement>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    // A body that is not JSON gets the API's JSON error too, not axum's plain-text rejection.
    let Json(body) = body.map_err(|rejection| {
        WebError::BadRequest(format!("the body must be JSON like {{\"reason\": \"…\"}}: {}", rejection.body_text()))
    })?;
    let id = acknowledge(&state, &id, body.reason.as_deref()).await?;
    Ok(Json(json!({ "acknowledged": id })))
}

async fn acknowledge(state: &AppState, id: &str, reason: Option<&str>) -> Result<i64, WebError> {
    let id: i64 = id.parse().map_err(|_| WebError::BadRequest(format!("`{id}` is not an episode id")))?;
    let reason = reason
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| WebError::BadRequest("A reason is required to acknowledge an alert.".to_owned()))?;
    match state.store.acknowledge_episode(id, reason, state.runner.clock().now()).await? {
        Acknowledged::Done => Ok(id),
        Acknowledged::AlreadyAcknowledged => {
            Err(WebError::Conflict(format!("Episode #{id} is acknowledged already; it stays open until it recovers.")))
        }
        Acknowledged::Resolved => {
            Err(WebError::Conflict(format!("Episode #{id} is resolved: there is nothing to acknowledge.")))
        }
        Acknowledged::NotFound => Err(WebError::NotFound(format!("There is no episode #{id}."))),
    }
}
