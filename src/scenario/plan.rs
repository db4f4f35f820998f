//! The validated workload the engine runs: every duration parsed, every template compiled, every variable
//! and feeder column resolved to an index. The engine never re-checks a string from the file.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

use http::{HeaderName, Method};
use serde_json_path::JsonPath;

use crate::model::{LoadModel, Segment};
use crate::tape::Router;
use crate::tape::survey::Survey;

pub use super::assertion::{Assertion, Check};
use super::feeder::Feeder;
use super::json_template::JsonTemplate;
use super::template::Template;

/// A scenario ready to run.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct Plan {
    pub source: PathBuf,
    /// Its text, stored with every run so the run page shows what was run.
    pub source_text: String,
    /// Identifies the workload: runs with different hashes are different series and never compared.
    pub hash: String,
    /// Whether some metric key names query parameters (`GET /posts?userId=`), where releases before keys had
    /// them keyed the path alone (`GET /posts`): part of [`Plan::hash`], so the runs stored under the old keys
    /// stay a series of their own instead of being compared with endpoints they never had.
    pub query_keys: bool,
    /// All randomness derives from it.
    pub seed: u64,
    /// Where requests go.
    pub target: Target,
    /// Data files sessions draw rows from.
    pub feeders: Vec<Feeder>,
    /// What sessions do, chosen by weight (none when a tape is replayed).
    pub flows: Vec<Flow>,
    /// `[ws]`, when some step is a WebSocket step.
    pub ws: Option<super::ws_plan::WsSettings>,
    /// `[[tape]]`: recorded requests replayed instead of flows.
    pub tape: Option<TapeReplay>,
    /// Metric keys (step names); a step refers to one by index.
    pub endpoints: Vec<String>,
    /// Session variables set by `extract`; templates refer to one by index.
    pub variables: Vec<String>,
    /// How much load, in which shape.
    pub load: Load,
    /// The share of the load this process sends when a night is split across machines (`--segment K/N`,
    /// set by [`Plan::segmented`]); `None` sends it all.
    pub segment: Option<Segment>,
    /// When the load starts, if not at once: a segment of a split night waits for the shared start, after
    /// everything else is ready, so the N segments' schedules line up.
    pub start_at: Option<std::time::Instant>,
    /// How a smoke run reshaped the scenario, as its options read (`--duration 20s --rate-scale 0.1`);
    /// `None` for the scenario as written. Stored with each run, so pages can tell a smoke series apart.
    pub reshape: Option<String>,
    /// What is valid but probably not meant (two different requests measured as one endpoint, say).
    pub warnings: Vec<String>,
    /// The values templates read with `env("…")` (tokens, passwords): hidden wherever a target's answer
    /// quotes them back into an error sample.
    pub env_values: crate::secret::Hidden,
}

impl Plan {
    /// The metric keys a night's requests can be recorded under, in order, as `validate` lists them: every
    /// endpoint but those named only by WebSocket close steps (a close is sent, never measured or counted; the
    /// recorder still holds a slot for it, which stays empty).
    pub fn recorded_endpoints(&self) -> impl Iterator<Item = &str> {
        let close_only = move |index: usize| {
            let mut naming = self.flows.iter().flat_map(|f| &f.steps).filter(|s| s.endpoint == index).peekable();
            naming.peek().is_some() && naming.all(|s| matches!(s.ws, Some(super::ws_plan::WsAction::Close)))
        };
        self.endpoints.iter().enumerate().filter(move |&(i, _)| !close_only(i)).map(|(_, name)| name.as_str())
    }
}

/// `[[tape]]`: a tape replayed, each arrival (or closed-model user turn) taking its next request or session.
#[derive(Debug, Clone)]
pub struct TapeReplay {
    /// The tape file.
    pub file: PathBuf,
    /// Which request comes next.
    pub order: TapeOrder,
    /// `preserve = "mix"`: a run shorter than the tape takes requests spread over all of it, not its start.
    pub preserve_mix: bool,
    /// Route keys of the tape's requests (its `[[tape.route]]` patterns first).
    pub router: Router,
    /// Index into [`Plan::endpoints`] of each route the survey counted: its own metric key, or the one the
    /// least requested routes share past [`MAX_TAPE_ROUTES`](super::MAX_TAPE_ROUTES).
    pub endpoints: HashMap<String, usize>,
    /// The endpoint shared by the least requested routes when a tape has more than
    /// [`MAX_TAPE_ROUTES`](super::MAX_TAPE_ROUTES).
    pub other_routes: Option<usize>,
    /// Per endpoint, accepted statuses from `[[tape.expect]]`; `None` keeps the recorded status class.
    pub expect: Vec<Option<Vec<RangeInclusive<u16>>>>,
    /// What the tape holds, read when the scenario was loaded.
    pub survey: Survey,
    /// Requests the planned run sends (open model; `None` for the closed model, where the target's speed
    /// decides).
    pub planned_requests: Option<f64>,
    /// Each route's requests in the measured stages when the run replays only the tape's start (shorter than
    /// the tape, in order, without `preserve = "mix"`): counted from the tape, as its start's mix is not the
    /// whole tape's.
    pub first_part: Option<Vec<(String, u64)>>,
}

impl TapeReplay {
    /// The metric key (endpoint index) of a request with route `key`. A key the survey did not count is a query
    /// shape it folded into its path's `?(other queries)`, or a route past its cap of routes: (other routes).
    #[must_use]
    pub fn endpoint(&self, key: &str) -> usize {
        if let Some(&endpoint) = self.endpoints.get(key) {
            return endpoint;
        }
        let folded =
            crate::tape::route_tally::other_queries(key).and_then(|shared| self.endpoints.get(&shared).copied());
        folded.or(self.other_routes).unwrap_or(0)
    }
}

/// The order a tape is replayed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapeOrder {
    /// As recorded, again from the start at the end.
    Sequential,
    /// A seeded shuffle (within windows of 65,536 requests), every pass differently.
    Shuffle,
    /// Each arrival replays one recorded session (consecutive requests with the same `s=`) in order, with
    /// the recorded pauses between them.
    Session,
}

/// `[target]`.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http(s)://host[:port][/prefix]` without a trailing slash; step paths are appended to it.
    pub base_url: String,
    /// Longest a request may take, connecting and reading the body included; a slower one is a `timeout`.
    pub timeout: Duration,
    /// Longest a TCP (and TLS) connect may take.
    pub connect_timeout: Duration,
    /// Connections (so requests in flight) at most; `None` for no limit. Like a browser's six per host, or
    /// the client pool of a service calling this one: beyond it, requests wait for a free connection.
    pub max_connections: Option<usize>,
    /// Most bytes of a response body that are read; past it the request fails as `body_too_large` and its
    /// connection is dropped, so no answer can grow the generator's memory.
    pub max_body: u64,
    /// Sent with every request unless a step sets the same header.
    pub headers: Vec<(HeaderName, Template)>,
    /// Which HTTP the requests go over (`[target] protocol`).
    pub protocol: Protocol,
    /// HTTP/2 connections kept to the target (`[target] http2_connections`), their streams shared by all
    /// requests.
    pub http2_connections: usize,
    /// Certificates trusted besides the Mozilla roots (`[target] ca_file`): a private CA, a self-signed test
    /// server.
    pub extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
}

/// Which HTTP a target is spoken to in (`[target] protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/1.1 on keep-alive connections: degrade's own client.
    #[default]
    Http1,
    /// HTTP/2 only: ALPN `h2` over TLS (refused otherwise), h2c with prior knowledge over plain TCP.
    Http2,
    /// HTTP/2 when TLS's ALPN agrees to it, else HTTP/1.1; HTTP/1.1 over plain TCP.
    Auto,
}

impl Protocol {
    /// The values `[target] protocol` takes, for messages.
    pub const NAMES: &str = "\"http1\", \"http2\" or \"auto\"";

    /// The value written in a scenario.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "http1" => Some(Self::Http1),
            "http2" => Some(Self::Http2),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }
}

/// One `[[flow]]`: a user journey.
#[derive(Debug, Clone)]
pub struct Flow {
    /// As written.
    pub name: String,
    /// Relative frequency among flows.
    pub weight: u32,
    /// Session variables rendered once when a session starts (`session_vars`), by variable index: a draw
    /// made there holds for the whole session, as a feeder's row does.
    pub session_vars: Vec<(usize, super::template::Template)>,
    /// In order; a failed step ends the session, since later steps usually depend on it.
    pub steps: Vec<Step>,
}

/// One request of a flow.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct Step {
    /// Index into [`Plan::endpoints`].
    pub endpoint: usize,
    pub method: Method,
    /// Path below the base URL, starting with `/`.
    pub path: Template,
    /// Query parameters, percent-encoded when rendered.
    pub query: Vec<(String, Template)>,
    /// Step headers; they win over target headers of the same name.
    pub headers: Vec<(HeaderName, Template)>,
    /// The request body, if any.
    pub body: Option<Body>,
    /// What a successful response looks like.
    pub expect: Expect,
    /// Values taken from the response into session variables.
    pub extract: Vec<Extraction>,
    /// Pause after this step before the next one starts.
    pub think: Option<Think>,
    /// What a WebSocket step does; `None` for an HTTP request.
    pub ws: Option<super::ws_plan::WsAction>,
    /// `protocol`: the HTTP this step's requests go over, when not `[target] protocol`.
    pub protocol: Option<Protocol>,
    /// A gRPC call (`grpc = "package.Service/Method"`): its request is the body, framed; its outcome the
    /// `grpc-status`.
    pub grpc: Option<GrpcCall>,
    /// `decode`: the message type an HTTP step's Protobuf answer is read as for `expect` and `extract`.
    pub decode: Option<prost_reflect::MessageDescriptor>,
}

/// What a gRPC step calls, and how long it may take.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// The method, resolved in the `[proto]` files: its input and output types, and whether the server streams.
    pub method: prost_reflect::MethodDescriptor,
    /// `deadline`: sent as `grpc-timeout`, and the longest degrade waits (at most `[target] timeout`); past it
    /// the call is `grpc_deadline_exceeded`, as a gRPC client's own deadline ends it.
    pub deadline: Option<Duration>,
    /// A server-streaming call's second endpoint (index into [`Plan::endpoints`]): the time to its first
    /// message, beside the step's own endpoint, timed to its last.
    pub first_message: Option<usize>,
}

/// A request body.
#[derive(Debug, Clone)]
pub enum Body {
    /// `json = { … }`: sent as `application/json`.
    Json(JsonTemplate),
    /// `body = "…"`: sent as written (after templating).
    Text(Template),
    /// `json` of a gRPC step, or of an HTTP step with `proto = "package.Message"`: the JSON rendered, then
    /// encoded as that Protobuf message.
    Proto(ProtoBody),
    /// `body_hex` or `body_file`: these bytes, as they are.
    Bytes(bytes::Bytes),
}

/// A Protobuf body built from a JSON template.
#[derive(Debug, Clone)]
pub struct ProtoBody {
    /// The message type.
    pub message: prost_reflect::MessageDescriptor,
    /// The message as JSON (proto3's JSON mapping).
    pub json: JsonTemplate,
    /// Framed as one gRPC message (a flag byte and a 4-byte length first).
    pub grpc_framed: bool,
}

/// What a successful response looks like.
#[derive(Debug, Clone)]
pub struct Expect {
    /// Accepted status codes; by default 200–399.
    pub status: Vec<RangeInclusive<u16>>,
    /// Checks on the JSON body (a gRPC or `decode` step's answer decoded to JSON).
    pub json: Vec<Assertion>,
    /// gRPC steps: the accepted `grpc-status` codes; `OK` by default.
    pub grpc_status: Vec<crate::metrics::GrpcCode>,
}

/// One `extract` entry.
#[derive(Debug, Clone)]
pub struct Extraction {
    /// Index into [`Plan::variables`].
    pub variable: usize,
    /// Where the value comes from.
    pub from: ExtractFrom,
}

/// Where an extracted value comes from.
#[derive(Debug, Clone)]
pub enum ExtractFrom {
    /// The first value a JSONPath selects in the body (path as written kept for messages).
    Json(JsonPath, String),
    /// A response header.
    Header(HeaderName),
}

/// A pause between steps, as users pause between clicks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    /// Always the same.
    Constant(Duration),
    /// Evenly spread between the two.
    Uniform(Duration, Duration),
    /// Log-normal with this median and shape: most pauses short, a few long, as real users pause.
    LogNormal {
        /// The median pause.
        median: Duration,
        /// Standard deviation of the pause's logarithm.
        sigma: f64,
    },
}

/// `[load]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// Open (arrival rate) or closed (concurrent users).
    pub model: LoadModel,
    /// In order.
    pub stages: Vec<Stage>,
    /// Open model: how arrivals are spaced.
    pub arrivals: Arrivals,
    /// Open model: sessions in flight at most; an arrival over the cap is counted as `dropped`.
    pub max_in_flight: usize,
}

impl Load {
    /// The whole run's planned length.
    #[must_use]
    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The measured stages' length.
    #[must_use]
    pub fn measured_duration(&self) -> Duration {
        self.stages.iter().filter(|s| s.measure).map(|s| s.duration).sum()
    }

    /// Planned arrivals per second over the measured stages (open model); 0 for the closed model, which
    /// plans users, not a rate.
    #[must_use]
    pub fn target_rate(&self) -> f64 {
        let secs = self.measured_duration().as_secs_f64();
        if self.model == LoadModel::Closed || secs == 0.0 {
            return 0.0;
        }
        let arrivals: f64 = self.stages.iter().filter(|s| s.measure).map(Stage::planned_arrivals).sum();
        arrivals / secs
    }
}

/// How open-model arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Evenly: exactly the planned count, the least noisy night to night.
    Uniform,
    /// Poisson process: independent users, with the bursts that brings.
    Poisson,
}

/// The highest arrival rate a stage may plan, per second: ten times what one generator has been measured to
/// send (about 120,000 requests a second at its 8.5 µs a request, `ci/bench-engine.sh`). Past it a plan is a
/// typo (`rate = 1e300`), not a load, and would only be cut short by the stage's end.
pub const MAX_RATE: f64 = 1_000_000.0;

/// One `[[load.stage]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// How long it lasts.
    pub duration: Duration,
    /// Rate ramp or users.
    pub shape: StageShape,
    /// Whether its requests count in the results; warm-up stages are recorded in the timeline only.
    pub measure: bool,
}

impl Stage {
    /// Arrivals the stage plans: the integral of its rate (0 for a users stage).
    #[must_use]
    pub fn planned_arrivals(&self) -> f64 {
        match self.shape {
            StageShape::Rate { from, to } => f64::midpoint(from, to) * self.duration.as_secs_f64(),
            StageShape::Users(_) => 0.0,
        }
    }
}

/// What a stage asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StageShape {
    /// Open model: arrivals per second, ramping linearly from `from` to `to` (equal for a steady stage).
    Rate {
        /// Rate at the stage's start.
        from: f64,
        /// Rate at its end.
        to: f64,
    },
    /// Closed model: concurrent users.
    Users(u32),
}
