//! Access control: `POST` routes need the API token; with `pages_require_token` every page does too.
//!
//! The token is accepted as `Authorization: Bearer <token>` (scripts, CI) or as the password of HTTP Basic
//! authentication with any user name (browsers, which then prompt for it). Comparison takes the same time
//! whatever the guess, so the token cannot be found byte by byte. `/healthz` and the stylesheet stay open
//! for load balancers and the login prompt.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::AppState;
use crate::secret::Secret;

/// Lets a request through, or answers 401/403 in its place.
pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == "/healthz" || path.starts_with("/static/") {
        return next.run(request).await;
    }
    let needs_token = request.method() != Method::GET || state.config.server.pages_require_token;
    if !needs_token {
        return next.run(request).await;
    }
    match &state.config.server.api_token {
        None => (
            StatusCode::FORBIDDEN,
            "This degrade has no API token configured; set the variable named by [server] api_token_env \
             (default DEGRADE_API_TOKEN) to allow this.\n",
        )
            .into_response(),
        Some(token) if presents(request.headers(), token) => next.run(request).await,
        Some(_) => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic realm=\"degrade\", charset=\"UTF-8\"")],
            "Send the API token as `Authorization: Bearer <token>`, or as the password of basic auth.\n",
        )
            .into_response(),
    }
}

/// Whether the request carries `token` as a bearer token or a basic-auth password.
fn presents(headers: &HeaderMap, token: &Secret) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else { return false };
    if let Some(bearer) = value.strip_prefix("Bearer ") {
        return constant_time_eq(bearer.trim().as_bytes(), token.expose().as_bytes());
    }
    let Some(encoded) = value.strip_prefix("Basic ") else { return false };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else { return false };
    let password = decoded.iter().position(|b| *b == b':').map_or(&[][..], |colon| &decoded[colon + 1..]);
    constant_time_eq(password, token.expose().as_bytes())
}

/// Compares without stopping at the first difference (only the length can be learned from the timing).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_bearer_and_basic_and_nothing_else() {
        let token = Secret::new("s3cret-token");
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            presents(&headers, &token)
        };
        let basic =
            |credentials: &str| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        assert!(with("Bearer s3cret-token"));
        assert!(with(&basic("anyone:s3cret-token")));
        assert!(!with("Bearer s3cret-tokem"));
        assert!(!with("Bearer s3cret"));
        assert!(!with(&basic("s3cret-token")));
        assert!(!with("Token s3cret-token"));
        assert!(!presents(&HeaderMap::new(), &token));
    }
}
