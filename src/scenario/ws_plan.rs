//! The validated WebSocket parts of a plan: what a WebSocket step does ([`WsAction`]), which message ends an
//! await ([`WsMatch`]), and the `[ws]` settings with their push classes ([`WsSettings`]). Checked from the
//! file by [`super::ws_steps`]; run by the engine's `ws` module.

use std::borrow::Cow;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::outside_text::printable;

use super::assertion::{Assertion, Check};
use super::json_template::JsonTemplate;
use super::template::{RenderContext, Template};

/// Most bytes of one WebSocket message unless `[ws] max_message` says otherwise: a collaboration protocol's
/// messages are small, and a socket's memory is bounded by it (a longer message is a `protocol` error).
pub const DEFAULT_MAX_MESSAGE: usize = 64 * 1024;

/// What a WebSocket step does. The step's `path` and `headers` are the connect's; its `extract` reads the
/// message an await matched.
#[derive(Debug, Clone)]
pub enum WsAction {
    /// Opens the session's socket (TCP, TLS for `https://` targets, then the upgrade to 101).
    Connect {
        /// Offered in `Sec-WebSocket-Protocol`; the server must choose one of them.
        subprotocols: Vec<String>,
    },
    /// Sends a message, then awaits its answer if `wait` is set.
    Send {
        /// The message.
        payload: WsPayload,
        /// The message that answers it.
        wait: Option<WsAwait>,
        /// Where its correlation id is, for fan-out latency.
        fanout: Option<Fanout>,
    },
    /// Awaits a message without sending one, timed from the step's intended start.
    Await(WsAwait),
    /// Closes the socket with 1000 (normal closure).
    Close,
}

impl WsAction {
    /// Whether the step is an endpoint with response times (a connect or an await), not only counted.
    #[must_use]
    pub fn is_timed(&self) -> bool {
        matches!(self, Self::Connect { .. } | Self::Await(_) | Self::Send { wait: Some(_), .. })
    }
}

/// A message to send, rendered when it is sent.
#[derive(Debug, Clone)]
pub enum WsPayload {
    /// `body = "…"`: a text message.
    Text(Template),
    /// `json = { … }`: a text message holding JSON.
    Json(JsonTemplate),
    /// `binary_hex = "…"`: a binary message, written in hexadecimal (after templating).
    Hex(Template),
    /// `binary_base64 = "…"`: a binary message, written in base64 (after templating).
    Base64(Template),
}

impl WsPayload {
    /// The expressions the message uses.
    #[must_use]
    pub fn expressions(&self) -> Vec<&super::template::Expr> {
        match self {
            Self::Json(json) => json.expressions(),
            Self::Text(t) | Self::Hex(t) | Self::Base64(t) => t.expressions().collect(),
        }
    }
}

/// An await: which message ends it, and how long after the send's intended time it may come.
#[derive(Debug, Clone)]
pub struct WsAwait {
    /// What the message must look like.
    pub matcher: WsMatch,
    /// Longest wait; past it the step fails as `timeout`. `None`: the target's `timeout`.
    pub timeout: Option<Duration>,
    /// The `eq` values written as templates (`eq = "{{ edit_id }}"`), by the index of their JSON assertion:
    /// rendered at each send, so an await can wait for the answer to *this* request.
    pub templated: Vec<(usize, Template)>,
}

impl WsAwait {
    /// The matcher of this send: its templated `eq` values rendered now.
    pub fn render(&self, cx: &mut RenderContext<'_>) -> Cow<'_, WsMatch> {
        if self.templated.is_empty() {
            return Cow::Borrowed(&self.matcher);
        }
        let mut matcher = self.matcher.clone();
        for (index, template) in &self.templated {
            if let Some(assertion) = matcher.json.get_mut(*index) {
                assertion.check = Check::Eq(template.render_value(cx));
            }
        }
        Cow::Owned(matcher)
    }
}

/// What a message must look like to match an await or a push class: every JSON assertion holds on it (read
/// as JSON) and it carries `prefix` at `offset`.
#[derive(Debug, Clone, Default)]
pub struct WsMatch {
    /// Checks on the message read as JSON; a message that is not JSON matches none.
    pub json: Vec<Assertion>,
    /// Bytes the message must hold at `offset`.
    pub prefix: Option<Vec<u8>>,
    /// Where `prefix` starts.
    pub offset: usize,
}

impl WsMatch {
    /// Whether `message`, read as JSON into `json` when a JSON assertion needs it, matches.
    #[must_use]
    pub fn matches(&self, message: &[u8], json: Option<&Value>) -> bool {
        if let Some(prefix) = &self.prefix {
            let end = self.offset.saturating_add(prefix.len());
            if message.get(self.offset..end) != Some(prefix.as_slice()) {
                return false;
            }
        }
        if self.json.is_empty() {
            return true;
        }
        json.is_some_and(|json| self.json.iter().all(|a| a.holds(json).is_ok()))
    }

    /// Whether matching reads the message as JSON.
    #[must_use]
    pub fn needs_json(&self) -> bool {
        !self.json.is_empty()
    }
}

/// A JSONPath to a correlation id: in a sent message, and in the pushes that carry it to other sessions.
#[derive(Debug, Clone)]
pub struct Fanout {
    /// The compiled path.
    pub path: serde_json_path::JsonPath,
    /// As written, for messages.
    pub path_text: String,
    /// The sender's fan-out endpoint (`WS fanout: <step name>`); unused on a push class.
    pub endpoint: usize,
}

impl Fanout {
    /// The correlation id `json` carries, as text (a number and its decimal string are one id).
    #[must_use]
    pub fn id(&self, json: &Value) -> Option<String> {
        match self.path.query(json).first()? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

/// A `[[ws.push]]` class: messages nobody awaited that match it are counted on its own endpoint.
#[derive(Debug, Clone)]
pub struct WsPush {
    /// Its endpoint (`WS push: name`), an index into the plan's endpoints.
    pub endpoint: usize,
    /// What its messages look like.
    pub matcher: WsMatch,
    /// Where its messages carry the correlation id of another session's send.
    pub fanout: Option<Fanout>,
}

/// `[ws]`, for a scenario with WebSocket steps.
#[derive(Debug, Clone)]
pub struct WsSettings {
    /// Most bytes of one message (and one frame).
    pub max_message: usize,
    /// Classes of messages nobody awaited, in the order they are tried.
    pub pushes: Vec<WsPush>,
    /// The endpoint of messages nobody awaited that match no class (`WS push: (other)`).
    pub other_pushes: usize,
    /// Pings of degrade's own on every open socket, timed (`[ws] ping_every`).
    pub keepalive: Option<WsKeepalive>,
}

/// `[ws] ping_every`: a ping on each open socket this often while its session reads it, its round trip to the
/// pong timed on its own endpoint, `WS ping`.
#[derive(Debug, Clone, Copy)]
pub struct WsKeepalive {
    /// Between two pings of a socket.
    pub every: Duration,
    /// `WS ping`.
    pub endpoint: usize,
}

/// How a binary message is written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Hexadecimal digits, either case; spaces between bytes allowed.
    Hex,
    /// Standard base64 with padding.
    Base64,
}

impl Encoding {
    /// The bytes `text` writes.
    pub fn decode(self, text: &str) -> Result<Vec<u8>, String> {
        match self {
            Self::Hex => {
                let digits: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                data_encoding::HEXLOWER_PERMISSIVE
                    .decode(digits.as_bytes())
                    .map_err(|e| format!("`{}` is not hexadecimal bytes: {e}", printable(text)))
            }
            Self::Base64 => base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| format!("`{}` is not base64: {e}", printable(text))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::plan::Check;

    fn ack() -> Assertion {
        let path = serde_json_path::JsonPath::parse("$.type").unwrap();
        Assertion { path, path_text: "$.type".into(), check: Check::Eq(Value::from("ack")) }
    }

    #[test]
    fn a_message_matches_only_when_its_prefix_and_every_assertion_hold() {
        let binary = WsMatch { json: Vec::new(), prefix: Some(vec![0x81, 0xab]), offset: 1 };
        assert!(binary.matches(&[0, 0x81, 0xab, 7], None));
        assert!(!binary.matches(&[0x81, 0xab], None), "the prefix is looked for at its offset");
        assert!(!binary.matches(&[0, 0x81], None), "a message shorter than offset + prefix");
        let json = WsMatch { json: vec![ack()], prefix: None, offset: 0 };
        let message = br#"{"type":"ack"}"#;
        let parsed: Value = serde_json::from_slice(message).unwrap();
        assert!(json.matches(message, Some(&parsed)));
        let cursor: Value = serde_json::json!({"type": "cursor"});
        assert!(!json.matches(message, Some(&cursor)));
        assert!(!json.matches(b"not json", None), "a message that is not JSON matches no JSON assertion");
    }

    #[test]
    fn binary_messages_are_read_from_hex_with_spaces_and_from_base64() {
        assert_eq!(Encoding::Hex.decode("01 AB cd").unwrap(), [1, 0xab, 0xcd]);
        assert!(Encoding::Hex.decode("0g").unwrap_err().contains("not hexadecimal"));
        assert!(Encoding::Hex.decode("abc").is_err(), "an odd number of digits");
        assert_eq!(Encoding::Base64.decode("AQID").unwrap(), [1, 2, 3]);
        assert!(Encoding::Base64.decode("A").is_err());
    }
}
