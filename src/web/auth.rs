//! Access control: `POST` routes need the API token; with `pages_require_token` every page does too.
//!
//! The token is accepted as `Authorization: Bearer <token>` (scripts, CI) or as the password of HTTP Basic
//! authentication with any user name (browsers, which then prompt for it). Comparison takes the same time
//! whatever the guess, so the token cannot be found byte by byte. `/healthz` and the stylesheet stay open
//! for load balancers and the login prompt.
//!
//! A browser sends a saved basic-auth login with any request to this host, also a form posted by another
//! site: so a state-changing request that a browser marks as coming from another site (`Sec-Fetch-Site`, or
//! an `Origin` that is not this host) is refused whatever it carries. Scripts send neither header.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;

use super::{AppState, WebError};
use crate::secret::Secret;

/// Lets a request through, or answers 401/403 in its place.
pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == "/healthz" || path.starts_with("/static/") {
        return next.run(request).await;
    }
    let reads = request.method() == Method::GET || request.method() == Method::HEAD;
    let path = path.to_owned();
    if !reads && from_another_site(request.headers(), state.config.server.public_url.as_deref()) {
        return WebError::Forbidden(
            "Refused: this request was sent by a page of another site. Use the dashboard itself, or send the \
             API token from a script."
                .into(),
        )
        .answer_for(&path);
    }
    let needs_token = !reads || state.config.server.pages_require_token;
    if !needs_token {
        return next.run(request).await;
    }
    let refusal = match &state.config.server.api_token {
        None => WebError::Forbidden(
            "This degrade has no API token configured; set the variable named by [server] api_token_env \
             (default DEGRADE_API_TOKEN) to allow this."
                .into(),
        ),
        Some(token) => match presents(request.headers(), token) {
            Presented::Token => return next.run(request).await,
            Presented::Nothing => WebError::Unauthorized(
                "This needs the API token: send it as `Authorization: Bearer <token>`, or as the password of \
                 basic auth."
                    .into(),
            ),
            Presented::Other => WebError::Unauthorized(
                "The token sent is not the API token; check the value of the variable named by [server] \
                 api_token_env."
                    .into(),
            ),
        },
    };
    let mut response = refusal.answer_for(&path);
    if response.status() == StatusCode::UNAUTHORIZED {
        let challenge = header::HeaderValue::from_static("Basic realm=\"degrade\", charset=\"UTF-8\"");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// Whether a browser says the request comes from a page of another site: `Sec-Fetch-Site` other than
/// `same-origin` or `none` (typed in the address bar), or else an `Origin` that is neither the `Host` nor
/// `[server] public_url` (behind a proxy that rewrites `Host`, the public URL is what the browser shows).
fn from_another_site(headers: &HeaderMap, public_url: Option<&str>) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        return !matches!(site, "same-origin" | "none");
    }
    let Some(origin) = text("origin") else { return false };
    let public_origin = public_url.map(|url| {
        let authority_start = url.find("://").map_or(0, |s| s + 3);
        let end = url[authority_start..].find('/').map_or(url.len(), |e| authority_start + e);
        &url[..end]
    });
    let same_host = origin.split_once("://").is_some_and(|(_, authority)| text("host") == Some(authority));
    !same_host && public_origin.is_none_or(|public| !public.eq_ignore_ascii_case(origin))
}

/// What a request's `Authorization` header holds.
#[derive(Debug, PartialEq, Eq)]
enum Presented {
    /// No credentials at all.
    Nothing,
    /// Credentials, but not the token.
    Other,
    /// The token, as a bearer token or a basic-auth password (the scheme's name in any case, as HTTP has it).
    Token,
}

fn presents(headers: &HeaderMap, token: &Secret) -> Presented {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Presented::Nothing };
    let matches = value.to_str().ok().is_some_and(|value| carries(value, token));
    if matches { Presented::Token } else { Presented::Other }
}

fn carries(value: &str, token: &Secret) -> bool {
    let Some((scheme, credentials)) = value.trim_start().split_once(' ') else { return false };
    if scheme.eq_ignore_ascii_case("bearer") {
        return constant_time_eq(credentials.trim().as_bytes(), token.expose().as_bytes());
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(credentials.trim()) else { return false };
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
            presents(&headers, &token) == Presented::Token
        };
        let basic =
            |credentials: &str| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        assert!(with("Bearer s3cret-token"));
        assert!(with("bearer s3cret-token"));
        assert!(with(&basic("anyone:s3cret-token")));
        assert!(!with("Bearer s3cret-tokem"));
        assert!(!with("Bearer s3cret"));
        assert!(!with(&basic("s3cret-token")));
        assert!(!with("Token s3cret-token"));
        assert_eq!(presents(&HeaderMap::new(), &token), Presented::Nothing);
        let mut wrong = HeaderMap::new();
        wrong.insert(header::AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert_eq!(presents(&wrong, &token), Presented::Other);
    }

    fn from_another_site_here(headers: &HeaderMap) -> bool {
        from_another_site(headers, Some("https://degrade.example.com/"))
    }

    #[test]
    fn a_request_a_browser_sent_from_another_site_is_told_apart() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, value.parse().unwrap());
            }
            headers
        };
        assert!(!from_another_site_here(&headers(&[])), "a script sends neither header");
        assert!(!from_another_site_here(&headers(&[("sec-fetch-site", "same-origin"), ("origin", "http://x")])));
        assert!(!from_another_site_here(&headers(&[("sec-fetch-site", "none")])));
        assert!(from_another_site_here(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(from_another_site_here(&headers(&[("sec-fetch-site", "same-site")])));
        let ours = [("origin", "http://127.0.0.1:8080"), ("host", "127.0.0.1:8080")];
        assert!(!from_another_site_here(&headers(&ours)));
        assert!(from_another_site_here(&headers(&[("origin", "https://evil.example"), ("host", "127.0.0.1:8080")])));
        assert!(from_another_site_here(&headers(&[("origin", "null"), ("host", "127.0.0.1:8080")])));
        // Behind a proxy that rewrites Host, the browser's origin is the public URL's.
        let proxied = [("origin", "https://degrade.example.com"), ("host", "127.0.0.1:8080")];
        assert!(!from_another_site_here(&headers(&proxied)));
    }
}
