//! A scenario file exactly as the user wrote it.
//!
//! serde rejects unknown keys and wrong types here; every value whose meaning is checked later keeps its
//! position as [`Spanned`], so errors can name the line and column. Values with several accepted shapes
//! (`status`, `extract`, `think`) stay [`toml::Value`] and are read by hand in [`super::steps`], which gives
//! far clearer messages than serde's "did not match any variant".

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub seed: Option<Spanned<i64>>,
    #[serde(default)]
    pub target: RawTarget,
    #[serde(default)]
    pub vars: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default, rename = "data")]
    pub feeders: Vec<RawFeeder>,
    #[serde(default, rename = "flow")]
    pub flows: Vec<RawFlow>,
    #[serde(default, rename = "tape")]
    pub tapes: Vec<Spanned<RawTape>>,
    pub load: Option<Spanned<RawLoad>>,
    /// `[ws]`: WebSocket settings and push classes.
    pub ws: Option<RawWs>,
    /// `[proto]`: the `.proto` files gRPC steps and Protobuf bodies are described by.
    pub proto: Option<Spanned<RawProto>>,
}

/// `[proto]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProto {
    #[serde(default)]
    pub files: Vec<Spanned<String>>,
    #[serde(default)]
    pub include: Vec<Spanned<String>>,
}

/// `[target]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub base_url: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub connect_timeout: Option<Spanned<String>>,
    pub max_connections: Option<Spanned<i64>>,
    pub max_body: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    pub protocol: Option<Spanned<String>>,
    pub http2_connections: Option<Spanned<i64>>,
    pub ca_file: Option<Spanned<String>>,
}

/// One `[[data]]` feeder.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFeeder {
    pub name: Spanned<String>,
    pub file: Spanned<String>,
    pub order: Option<Spanned<String>>,
    pub when_exhausted: Option<Spanned<String>>,
    /// `order = "zipf"`: the skew s (0.99 by default).
    pub skew: Option<Spanned<f64>>,
    /// `order = "hotspot"`: the share of rows that are hot, and the share of draws they get.
    pub hot_rows: Option<Spanned<f64>>,
    pub hot_draws: Option<Spanned<f64>>,
    /// `order = "weighted"`: the column holding each row's weight.
    pub weight_column: Option<Spanned<String>>,
    /// At most so many sessions hold one row at once.
    pub max_sessions_per_row: Option<Spanned<i64>>,
}

/// One `[[tape]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTape {
    pub file: Spanned<String>,
    pub order: Option<Spanned<String>>,
    pub preserve: Option<Spanned<String>>,
    #[serde(default, rename = "route")]
    pub routes: Vec<RawTapeRoute>,
    #[serde(default)]
    pub expect: Vec<RawTapeExpect>,
}

/// One `[[tape.route]]`: a path pattern that names a route.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTapeRoute {
    pub pattern: Spanned<String>,
}

/// One `[[tape.expect]]`: the statuses accepted for a route.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTapeExpect {
    pub route: Spanned<String>,
    pub status: Spanned<toml::Value>,
}

/// One `[[flow]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlow {
    pub name: Spanned<String>,
    pub weight: Option<Spanned<i64>>,
    /// Session variables drawn once when a session starts: `{ board = "{{ zipf(1, 600, 0.99) }}" }`.
    #[serde(default)]
    pub session_vars: BTreeMap<String, Spanned<String>>,
    /// Spanned, so an error about a step as a whole (it lacks its `path`) points at it.
    #[serde(default, rename = "step")]
    pub steps: Vec<Spanned<RawStep>>,
}

/// One `[[flow.step]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    pub name: Option<Spanned<String>>,
    /// A WebSocket step: `connect`, `send`, `await` or `close` ([`super::ws_steps`]).
    pub ws: Option<Spanned<String>>,
    pub method: Option<Spanned<String>>,
    /// Required for HTTP and `ws = "connect"` steps; the checker says so when it is missing.
    pub path: Option<Spanned<String>>,
    pub subprotocols: Option<Spanned<Vec<String>>>,
    pub binary_hex: Option<Spanned<String>>,
    pub binary_base64: Option<Spanned<String>>,
    #[serde(rename = "await")]
    pub wait: Option<Spanned<RawAwait>>,
    /// A JSONPath to the correlation id of a `ws = "send"` step's message.
    pub fanout: Option<Spanned<String>>,
    #[serde(default)]
    pub query: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    pub json: Option<Spanned<toml::Value>>,
    pub body: Option<Spanned<String>>,
    pub expect: Option<RawExpect>,
    #[serde(default)]
    pub extract: BTreeMap<String, Spanned<toml::Value>>,
    pub think: Option<Spanned<toml::Value>>,
    /// This HTTP step's protocol, when not the target's.
    pub protocol: Option<Spanned<String>>,
    /// A gRPC step: `package.Service/Method`.
    pub grpc: Option<Spanned<String>>,
    /// A gRPC step's deadline.
    pub deadline: Option<Spanned<String>>,
    /// An HTTP step's `json` sent as this Protobuf message type.
    pub proto: Option<Spanned<String>>,
    /// The Protobuf message type an HTTP step's answer is decoded as.
    pub decode: Option<Spanned<String>>,
    /// Raw bytes for an HTTP step's body, in hexadecimal.
    pub body_hex: Option<Spanned<String>>,
    /// Raw bytes for an HTTP step's body, from this file.
    pub body_file: Option<Spanned<String>>,
}

/// `expect = { … }` of a step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub status: Option<Spanned<toml::Value>>,
    /// gRPC steps: the accepted codes, a name or a list of names.
    pub grpc_status: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub json: Vec<RawAssertion>,
}

/// One JSON assertion: a JSONPath and what must hold for the value it selects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAssertion {
    pub path: Spanned<String>,
    pub exists: Option<bool>,
    pub eq: Option<toml::Value>,
    pub lt: Option<f64>,
    pub gt: Option<f64>,
}

/// `[load]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub model: Spanned<String>,
    pub arrivals: Option<Spanned<String>>,
    pub max_in_flight: Option<Spanned<i64>>,
    #[serde(default, rename = "stage")]
    pub stages: Vec<Spanned<RawStage>>,
}

/// One `[[load.stage]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStage {
    pub duration: Spanned<String>,
    pub rate: Option<Spanned<f64>>,
    pub from: Option<Spanned<f64>>,
    pub to: Option<Spanned<f64>>,
    pub users: Option<Spanned<i64>>,
    pub measure: Option<bool>,
}

/// `[ws]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWs {
    pub max_message: Option<Spanned<String>>,
    pub ping_every: Option<Spanned<String>>,
    #[serde(default, rename = "push")]
    pub pushes: Vec<RawPush>,
}

/// One `[[ws.push]]`: a class of messages the server sends unasked, matched like an await.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPush {
    pub name: Spanned<String>,
    #[serde(default)]
    pub json: Vec<RawAssertion>,
    pub prefix_hex: Option<Spanned<String>>,
    pub offset: Option<Spanned<i64>>,
    pub fanout: Option<Spanned<String>>,
}

/// `await = { … }` of a WebSocket step: which message ends it, and how long it may take.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAwait {
    #[serde(default)]
    pub json: Vec<RawAssertion>,
    pub prefix_hex: Option<Spanned<String>>,
    pub offset: Option<Spanned<i64>>,
    pub timeout: Option<Spanned<String>>,
}
