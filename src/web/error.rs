//! The one error type at the HTTP edge: semantic cases become 4xx pages, or under `/api/v1` JSON of one
//! shape, `{"error": {"code": "not_found", "message": "…"}}`; everything else is logged with its detail and
//! answered with a generic 500, so no internal message (which could name a database host) reaches a browser.

use askama::Template;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::store::StoreError;

/// What went wrong while answering a request.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The scenario or run does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A query parameter is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The request clashes with what is under way (a run of that scenario is already running).
    #[error("{0}")]
    Conflict(String),
    /// The request is fine but what it names cannot be done as configured (a scenario file with problems).
    #[error("{0}")]
    Unprocessable(String),
    /// The path exists but does not take the request's method.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The request needs the API token and did not send it, or sent another.
    #[error("{0}")]
    Unauthorized(String),
    /// The request is refused whatever it sends (no token configured, or sent by another site's page).
    #[error("{0}")]
    Forbidden(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A template or chart failed to render.
    #[error("rendering failed: {0}")]
    Render(String),
}

impl From<askama::Error> for WebError {
    fn from(error: askama::Error) -> Self {
        Self::Render(error.to_string())
    }
}

/// The error page.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    status: u16,
    title: &'a str,
    message: &'a str,
}

impl WebError {
    fn status_and_message(&self) -> (StatusCode, String) {
        match self {
            Self::NotFound(message) => (StatusCode::NOT_FOUND, message.clone()),
            Self::BadRequest(message) => (StatusCode::BAD_REQUEST, message.clone()),
            Self::Conflict(message) => (StatusCode::CONFLICT, message.clone()),
            Self::MethodNotAllowed(message) => (StatusCode::METHOD_NOT_ALLOWED, message.clone()),
            Self::Unprocessable(message) => (StatusCode::UNPROCESSABLE_ENTITY, message.clone()),
            Self::Unauthorized(message) => (StatusCode::UNAUTHORIZED, message.clone()),
            Self::Forbidden(message) => (StatusCode::FORBIDDEN, message.clone()),
            Self::Store(_) | Self::Render(_) => {
                tracing::error!(error = %self, "request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong on our side; the details are in the server log.".into(),
                )
            }
        }
    }

    /// The error's kind for scripts, stable across wordings.
    fn code(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "not_found",
            Self::BadRequest(_) => "bad_request",
            Self::Conflict(_) => "conflict",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::Unprocessable(_) => "unprocessable",
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::Store(_) | Self::Render(_) => "internal",
        }
    }

    /// The same error as JSON, for `/api/v1` routes.
    #[must_use]
    pub fn into_json(self) -> Response {
        let code = self.code();
        let (status, message) = self.status_and_message();
        (status, Json(serde_json::json!({ "error": { "code": code, "message": message } }))).into_response()
    }

    /// As JSON under `/api/`, else as a page.
    #[must_use]
    pub fn answer_for(self, path: &str) -> Response {
        if path.starts_with("/api/") { self.into_json() } else { self.into_response() }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let (status, message) = self.status_and_message();
        let title = status.canonical_reason().unwrap_or("Error");
        let page = ErrorPage { status: status.as_u16(), title, message: &message };
        let body = page.render().unwrap_or_else(|_| message.clone());
        (status, Html(body)).into_response()
    }
}

/// An `/api/v1` result: errors answer as JSON.
pub struct ApiError(pub WebError);

impl<E: Into<WebError>> From<E> for ApiError {
    fn from(error: E) -> Self {
        Self(error.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.0.into_json()
    }
}
