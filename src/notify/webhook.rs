//! One webhook post: JSON with an `Idempotency-Key`, a 10 s limit, no redirects, TLS through the engine's
//! rustls config. Failures are described without the URL (a secret), and say whether retrying can help.
//! The courier posts outbox messages through it; `degrade notify test` posts directly, without a database.

use std::time::Duration;

use crate::engine::client::{chain, tls_config};
use crate::secret::Secret;

/// How long one webhook request may take: a hanging receiver is retried like one that answered 500.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a post did not get through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    /// What happened, without the URL.
    pub message: String,
    /// Retrying cannot help: the receiver rejected the message itself (4xx other than 408 and 429).
    pub permanent: bool,
}

/// Posts to webhooks; cheap to clone.
#[derive(Clone)]
pub struct Webhooks {
    client: reqwest::Client,
}

impl Webhooks {
    /// The HTTP client webhooks are posted with.
    pub fn new() -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config())
            .timeout(REQUEST_TIMEOUT)
            // A webhook that redirects is misconfigured, and following it could carry the message elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("degrade/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client })
    }

    /// Posts `payload` to `url` with the idempotency key.
    pub async fn post(&self, url: &Secret, key: &str, payload: &str) -> Result<(), PostError> {
        let response = self
            .client
            .post(url.expose())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", key)
            .body(payload.to_owned())
            .send()
            .await
            .map_err(|e| PostError { message: describe(e), permanent: false })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = without_url(&answer_start(response).await, url.expose());
        let body = crate::outside_text::clipped(&body, 200);
        let permanent = status.is_client_error()
            && status != reqwest::StatusCode::REQUEST_TIMEOUT
            && status != reqwest::StatusCode::TOO_MANY_REQUESTS;
        Err(PostError { message: format!("the receiver answered {status}: {}", body.trim()), permanent })
    }
}

/// The first few KB of a receiver's answer, as text: enough for its error message, never its whole body.
async fn answer_start(mut response: reqwest::Response) -> String {
    const KEPT: usize = 4096;
    let mut bytes = Vec::new();
    while bytes.len() < KEPT {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk[..chunk.len().min(KEPT - bytes.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `text` (a receiver's answer, which may quote the request path) with every part of `url` that could be the
/// secret hidden: the URL itself, its path, and each long path segment (webhook tokens live there).
fn without_url(text: &str, url: &str) -> String {
    let mut out = text.replace(url, "[webhook URL]");
    if let Ok(parsed) = reqwest::Url::parse(url) {
        if parsed.path().len() > 1 {
            out = out.replace(parsed.path(), "/[webhook path]");
        }
        for segment in parsed.path_segments().into_iter().flatten().filter(|s| s.len() >= 8) {
            out = out.replace(segment, "***");
        }
        if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
            out = out.replace(query, "***");
        }
    }
    out
}

/// What went wrong, with the cause chain but never the URL (reqwest puts it in its message).
fn describe(error: reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
    } else if error.is_connect() {
        "cannot connect".to_owned()
    } else {
        "the request failed".to_owned()
    };
    format!("{kind}: {}", chain(&error.without_url()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_answers_never_quote_the_webhook_url() {
        let url = "https://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX";
        let answer = "<pre>Cannot POST /services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX</pre> (https://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX)";
        let shown = without_url(answer, url);
        assert!(!shown.contains("XXXXXXXX"), "{shown}");
        assert_eq!(shown, "<pre>Cannot POST /[webhook path]</pre> ([webhook URL])");
        assert_eq!(without_url("invalid_token", url), "invalid_token");
    }
}
