//! Requests whose path or query carries a NUL (`%00`) are answered 400 before any handler reads the store:
//! no scenario, run or endpoint name can hold one (`validate` refuses control characters in names), and
//! PostgreSQL's text type refuses it outright, so a lookup would fail with a 500 instead of saying "no such".

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use super::error::WebError;

/// Refuses a request whose path or query, percent-decoded, holds U+0000.
pub(super) async fn refuse(request: Request, next: Next) -> Response {
    let uri = request.uri();
    let raw = uri.path_and_query().map_or(uri.path(), axum::http::uri::PathAndQuery::as_str);
    if carries_nul(raw) {
        let path = uri.path().to_owned();
        return WebError::BadRequest("A URL cannot carry a NUL character (%00).".to_owned()).answer_for(&path);
    }
    next.run(request).await
}

/// Whether `raw` holds a NUL, written as is or percent-encoded (`%00`, either case of letters aside).
fn carries_nul(raw: &str) -> bool {
    raw.contains('\0') || raw.as_bytes().windows(3).any(|w| w == b"%00")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_is_found_written_either_way() {
        assert!(carries_nul("/scenarios/a%00b"));
        assert!(carries_nul("/api/v1/scenarios/x/trend?endpoint=GET%20%2F%00"));
        assert!(!carries_nul("/scenarios/a%2500b"), "an escaped percent sign is text");
        assert!(!carries_nul("/runs/100"));
    }
}
