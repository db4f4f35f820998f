//! Opening a session's socket: a new connection from the engine's client (TCP, TLS for an `https://` target),
//! then the upgrade request with the target's and the step's headers and the offered subprotocols. A refused
//! upgrade is classed by its status like a request's, a subprotocol the server did not agree to is a
//! `protocol` error, and the whole connect is bounded by the target's `timeout`.

use std::time::Instant;

use http::HeaderValue;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::super::client::Failure;
use super::socket::{Socket, read_failure};
use crate::metrics::ErrorClass;
use crate::scenario::plan::Step;
use crate::scenario::template::RenderContext;

/// Opens the socket of a `connect` step; on success, when the 101 arrived; on failure, when it was decided
/// (a timeout at exactly the target's `timeout`).
pub(super) async fn open(
    shared: &super::WsRun<'_>,
    step: &Step,
    subprotocols: &[String],
    config: WebSocketConfig,
    cx: &mut RenderContext<'_>,
) -> Result<(Socket, Instant), (Failure, Instant)> {
    let started = Instant::now();
    let timeout = shared.plan.target.timeout;
    let request = upgrade_request(shared, step, subprotocols, cx).map_err(|f| (f, Instant::now()))?;
    let opening = async {
        let stream = shared.client.open_stream(false).await?;
        tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await.map_err(handshake_failure)
    };
    match tokio::time::timeout(timeout, opening).await {
        Ok(Ok((socket, _response))) => {
            let settings = shared.plan.ws.as_ref().expect("a plan with WebSocket steps has [ws] settings");
            Ok((Socket::new(socket, settings, timeout), Instant::now()))
        }
        Ok(Err(failure)) => Err((failure, Instant::now())),
        Err(_) => {
            let message = format!("no 101 Switching Protocols within {}", humantime::format_duration(timeout));
            Err((Failure::new(ErrorClass::Timeout, message), started + timeout))
        }
    }
}

/// The upgrade request: `ws(s)://host/prefix/path`, the target's headers the step does not set, the step's, and
/// `Sec-WebSocket-Protocol`.
fn upgrade_request(
    shared: &super::WsRun<'_>,
    step: &Step,
    subprotocols: &[String],
    cx: &mut RenderContext<'_>,
) -> Result<http::Request<()>, Failure> {
    let client = &shared.client;
    let scheme = if client.is_tls() { "wss" } else { "ws" };
    let path = super::super::request::rendered_path(&step.path, cx);
    let url = format!("{scheme}://{}{}{path}", client.host_header(), client.prefix());
    let bad = |what: String| Failure::new(ErrorClass::Protocol, what);
    let mut request = url.into_client_request().map_err(|e| bad(format!("the socket's path `{path}`: {e}")))?;
    let headers = request.headers_mut();
    let target = shared.plan.target.headers.iter().filter(|(n, _)| !step.headers.iter().any(|(s, _)| s == n));
    for (name, template) in target.chain(&step.headers) {
        let value = template.render(cx);
        let value =
            HeaderValue::try_from(value).map_err(|_| bad(format!("the {name} header rendered to an invalid value")))?;
        headers.insert(name.clone(), value);
    }
    if !subprotocols.is_empty() {
        let offered = HeaderValue::try_from(subprotocols.join(", ")).map_err(|_| bad("subprotocols".to_owned()))?;
        headers.insert(http::header::SEC_WEBSOCKET_PROTOCOL, offered);
    }
    Ok(request)
}

/// A failed upgrade in the engine's classes: a refusal by its status, a subprotocol disagreement as
/// `protocol`, the connection's errors as for a request.
fn handshake_failure(error: WsError) -> Failure {
    match error {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            let body = super::super::failure::body_excerpt(response.body().as_deref().unwrap_or_default());
            Failure::new(
                super::super::failure::class_of_status(status),
                format!("the upgrade was answered {status} instead of 101: {}", body.unwrap_or_default()),
            )
        }
        WsError::Protocol(ProtocolError::SecWebSocketSubProtocolError(e)) => {
            Failure::new(ErrorClass::Protocol, format!("the server did not agree to a subprotocol offered: {e}"))
        }
        other => read_failure(other),
    }
}
