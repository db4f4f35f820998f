//! The headers every dashboard answer carries so a browser keeps its pages to themselves: no script at all
//! (the pages have none), styles and images from degrade only, forms posted back to degrade only, and no page
//! shown inside another site's frame, where a hidden Acknowledge button could be clicked for someone.

use axum::http::HeaderValue;
use axum::http::header::{CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS};
use axum::response::Response;

/// Inline `style` attributes are allowed (the regression grid colours its cells with them); nothing else
/// inline is. `frame-ancestors 'none'` is the modern form of `X-Frame-Options: DENY`, kept for older browsers.
const POLICY: &str = "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                      form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Adds the headers to `response`, leaving any a handler set itself.
pub(super) async fn add(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in
        [(CONTENT_SECURITY_POLICY, POLICY), (X_FRAME_OPTIONS, "DENY"), (X_CONTENT_TYPE_OPTIONS, "nosniff")]
    {
        headers.entry(name).or_insert(HeaderValue::from_static(value));
    }
    response
}
