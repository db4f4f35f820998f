//! The HTTP client of the request hot loop: hyper's pooled client over plain TCP or rustls, and the
//! classification of everything that can go wrong into an [`ErrorClass`].
//!
//! hyper rather than reqwest here: measured on this project's machines, reqwest costs about 1.5x the CPU per
//! request, and generator CPU is what limits how much load one machine can trustworthily send.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{ConfigBuilderExt, HttpsConnector};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::metrics::ErrorClass;

/// A pooled HTTP/1.1 client; connections are kept alive and reused, as a browser or mobile app would.
#[derive(Clone)]
pub struct HttpClient {
    inner: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

/// A failed exchange: its class and a message for the samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which class it counts in.
    pub class: ErrorClass,
    /// What happened, without the URL (which may carry tokens).
    pub message: String,
}

impl Failure {
    pub(crate) fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self { class, message: message.into() }
    }
}

impl HttpClient {
    /// A client whose TCP (and TLS) connects give up after `connect_timeout`.
    #[must_use]
    pub fn new(connect_timeout: Duration) -> Self {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect_timeout));
        http.enforce_http(false);
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_webpki_roots()
            .with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let inner = Client::builder(TokioExecutor::new()).pool_timer(TokioTimer::new()).build(https);
        Self { inner }
    }

    /// Sends `request` and reads the whole body.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<Bytes>, Failure> {
        let response = self.inner.request(request).await.map_err(|e| classify_client_error(&e))?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| classify_chain(&e, "reading the body"))?.to_bytes();
        Ok(Response::from_parts(parts, body))
    }

    /// GETs `url` and returns its body as text: for the `version_url` of a build, not for load.
    pub async fn get_text(&self, url: &str, timeout: Duration) -> Result<String, String> {
        let request = Request::get(url).body(Full::default()).map_err(|e| format!("bad URL: {e}"))?;
        let response = tokio::time::timeout(timeout, self.send(request))
            .await
            .map_err(|_| format!("no answer within {}", humantime::format_duration(timeout)))?
            .map_err(|f| f.message)?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        String::from_utf8(response.into_body().to_vec()).map_err(|_| "the answer is not UTF-8 text".to_owned())
    }
}

fn classify_client_error(error: &hyper_util::client::legacy::Error) -> Failure {
    if error.is_connect() {
        return Failure::new(ErrorClass::Connect, format!("cannot connect: {}", chain(error)));
    }
    classify_chain(error, "sending the request")
}

/// Classifies by the most specific cause in the chain: an I/O reset, or hyper's view of the exchange.
fn classify_chain(error: &(dyn std::error::Error + 'static), doing: &str) -> Failure {
    let message = format!("{doing}: {}", chain(error));
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
            if matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof) {
                return Failure::new(ErrorClass::Reset, message);
            }
        }
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() {
                return Failure::new(ErrorClass::Reset, message);
            }
            if hyper.is_parse() || hyper.is_parse_status() {
                return Failure::new(ErrorClass::Protocol, message);
            }
        }
        cause = e.source();
    }
    Failure::new(ErrorClass::Protocol, message)
}

/// The error and its causes on one line, without repeats.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cause = e.source();
    }
    out
}
