//! Turns a scenario file as written ([`super::raw_scenario`]) into a [`Plan`]: target, `[vars]`, feeders and load
//! here; flows and steps in [`super::steps`]. Every problem is recorded with its line, column and field, and
//! checking goes on, so one `validate` lists them all.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::feeder::{Feeder, Order, WhenExhausted};
use super::feeder_skew::{self, SkewKeys};
use super::plan::{Arrivals, Load, Plan, Stage, StageShape, Target};
use super::raw_scenario::{RawFeeder, RawLoad, RawScenario, RawStage, RawTarget, RawWs};
use super::scope::{Scope, header_templates};
use super::step_key::StepKeys;
use super::step_values::{body_size, duration};
use super::steps::resolve_flows;
use super::tape_source::resolve_tape;
use crate::config::{Checker, ConfigError, ConfigErrors, Location, http_url, plain_name};
use crate::model::LoadModel;

/// Open-model sessions in flight at most, unless `max_in_flight` says otherwise: enough for 1,000 req/s at
/// one-second latencies, small enough that a dead target cannot make the generator hoard memory.
const DEFAULT_MAX_IN_FLIGHT: usize = 1000;

pub(super) fn resolve(
    path: &Path,
    text: &str,
    raw: RawScenario,
    target_override: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, ConfigErrors> {
    let mut checker = Checker::new(path, text);
    // What `env("…")` gives templates is kept, so a server that echoes it back (a token in a debug page) never
    // gets it into a stored error sample.
    let read_from_env = std::cell::RefCell::new(Vec::new());
    let recording_env = |name: &str| {
        let value = env(name);
        if let Some(value) = &value {
            read_from_env.borrow_mut().push(value.clone());
        }
        value
    };
    let env: &dyn Fn(&str) -> Option<String> = &recording_env;
    let RawScenario { seed, target, vars, feeders, flows, tapes, load, ws, proto } = raw;
    let seed = seed.map_or(1, |s| s.into_inner().cast_unsigned());
    let constants = resolve_vars(&mut checker, vars);
    let (feeders, row_caps, unloaded) = resolve_feeders(&mut checker, feeders);
    let mut scope = Scope {
        constants: &constants,
        feeders: &feeders,
        env,
        variables: Vec::new(),
        endpoints: Vec::new(),
        keys: StepKeys::default(),
        next_draw: std::cell::Cell::new(0),
        protos: super::proto::resolve_protos(&mut checker, proto.as_ref()),
        protos_failed: false,
    };
    scope.protos_failed = proto.is_some() && scope.protos.is_none();
    let target = resolve_target(&mut checker, &scope, target, target_override);
    let has_tape = !tapes.is_empty();
    if let (Some(tape), false) = (tapes.first(), feeders.is_empty()) {
        checker.error(tape, "tape", "a scenario replaying a tape reads no [[data]]: its requests come from the tape");
    }
    if let (Some(tape), false) = (tapes.first(), flows.is_empty()) {
        checker.error(tape, "tape", "a scenario replays a tape or runs flows, not both: move one to its own scenario");
    }
    let flows = resolve_flows(&mut checker, &mut scope, flows);
    // Push classes are endpoints only where sockets are opened; `[ws]` alone is still checked.
    let has_ws = flows.iter().flat_map(|f| &f.steps).any(|s| s.ws.is_some());
    let ws = match (ws, has_ws) {
        (Some(raw), _) => super::ws_settings::resolve_ws(&mut checker, &mut scope, &raw).filter(|_| has_ws),
        (None, true) => super::ws_settings::resolve_ws(&mut checker, &mut scope, &RawWs::default()),
        (None, false) => None,
    };
    if flows.is_empty() && !has_tape && checker.errors.is_empty() {
        checker.errors.push(ConfigError::new(
            Location::WholeFile(path.to_owned()),
            "flow",
            "add at least one [[flow]] (or a [[tape]] to replay)",
        ));
    }
    let load = resolve_whole_load(&mut checker, path, load);
    if let Some(load) = &load {
        check_row_caps(&mut checker, &feeders, &row_caps, load);
        let ports = super::ws_capacity::ephemeral_ports();
        for warning in super::ws_capacity::warnings(&flows, load, ports) {
            checker.warnings.push(crate::config::ConfigWarning::new(crate::config::WarningKind::Setting, warning));
        }
    }
    if let Some(target) = &target {
        for warning in super::grpc_steps::deadlines_past_the_timeout(&flows, &scope.endpoints, target.timeout) {
            checker.warnings.push(crate::config::ConfigWarning::new(crate::config::WarningKind::Setting, warning));
        }
    }
    let tape = resolve_tape(&mut checker, tapes, load.as_ref(), &mut scope.endpoints);
    // A feeder whose file could not be read was said once: its columns are not "unknown variables" as well.
    checker.errors.retain(|e| !unloaded.iter().any(|name| e.message.contains(&format!("unknown variable `{name}."))));
    let Scope { variables, endpoints, keys, .. } = scope;
    // Tape keys had no query part before: any route with one is a key of this release.
    let query_keys = keys.changed || tape.as_ref().is_some_and(|t| t.survey.routes.iter().any(|r| r.key.contains('?')));
    match (checker.errors.is_empty(), target, load) {
        (true, Some(target), Some(load)) => Ok(Plan {
            source: path.to_owned(),
            source_text: text.to_owned(),
            hash: super::workload_hash(text, tape.as_ref().map(|t| t.survey.digest.as_str()), query_keys, 1.0, None),
            query_keys,
            seed,
            target,
            feeders,
            flows,
            ws,
            tape,
            endpoints,
            variables,
            load,
            segment: None,
            start_at: None,
            reshape: None,
            warnings: checker.warnings.into_iter().map(|w| w.message).collect(),
            env_values: crate::secret::Hidden::new(&read_from_env.into_inner()),
        }),
        _ => Err(ConfigErrors(checker.errors)),
    }
}

/// `[vars]`: constants every template may read, each named as a variable must be.
fn resolve_vars(
    checker: &mut Checker<'_>,
    vars: BTreeMap<String, toml::Spanned<toml::Value>>,
) -> BTreeMap<String, Value> {
    for (name, value) in &vars {
        checker.check(value, &format!("vars.{}", crate::outside_text::printable(name)), |_| plain_name(name));
    }
    vars.into_iter().map(|(k, v)| (k, serde_json::to_value(v.into_inner()).unwrap_or(Value::Null))).collect()
}

/// `[load]`, which every scenario needs.
fn resolve_whole_load(checker: &mut Checker<'_>, path: &Path, load: Option<toml::Spanned<RawLoad>>) -> Option<Load> {
    let Some(load) = load else {
        let message = "add a [load] table with `model` and at least one [[load.stage]]";
        checker.errors.push(ConfigError::new(Location::WholeFile(path.to_owned()), "load", message));
        return None;
    };
    resolve_load(checker, load)
}

fn resolve_target(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    raw: RawTarget,
    target_override: Option<&str>,
) -> Option<Target> {
    let RawTarget {
        base_url,
        timeout,
        connect_timeout,
        max_connections,
        max_body,
        headers,
        protocol,
        http2_connections,
        ca_file,
    } = raw;
    let base_url = match (target_override, &base_url) {
        (Some(url), _) => Some(url.trim_end_matches('/').to_owned()),
        (None, Some(url)) => checker.check(url, "target.base_url", |u| {
            let url = http_url(u)?;
            match url.parse::<http::Uri>() {
                Ok(uri) if uri.host().is_some() => Ok(url),
                _ => Err(format!("`{}` is not a valid URL", crate::secret::redact_url(u))),
            }
        }),
        (None, None) => {
            let message = "set [target] base_url, or `target` in the [[scenario]] of degrade.toml";
            checker.errors.push(ConfigError::new(Location::WholeFile(checker.path().to_owned()), "target", message));
            None
        }
    };
    let timeout = match &timeout {
        Some(t) => checker.check(t, "target.timeout", |t| positive(duration(t)?)),
        None => Some(Duration::from_secs(10)),
    };
    let connect_timeout = match &connect_timeout {
        Some(t) => checker.check(t, "target.connect_timeout", |t| positive(duration(t)?)),
        None => Some(Duration::from_secs(3)),
    };
    let max_connections = max_connections.and_then(|m| {
        checker.check(&m, "target.max_connections", |&m| {
            usize::try_from(m).ok().filter(|&m| m > 0).ok_or_else(|| format!("{m} is not a positive count"))
        })
    });
    let max_body = match &max_body {
        Some(size) => checker.check(size, "target.max_body", |size| match size {
            // A bare number is bytes, as the reference says (`max_body = 200`).
            toml::Value::Integer(bytes) => body_size(&bytes.to_string()),
            toml::Value::String(text) => body_size(text),
            other => {
                Err(format!("{} is not a size; write e.g. `4MB`, `512KiB` or a number of bytes", other.type_str()))
            }
        }),
        None => Some(DEFAULT_MAX_BODY),
    };
    let headers = header_templates(checker, scope, &headers, "target.headers", &[], &[]);
    let wire =
        super::target_protocol::resolve(checker, protocol.as_ref(), http2_connections.as_ref(), ca_file.as_ref());
    Some(Target {
        protocol: wire.protocol?,
        http2_connections: wire.http2_connections?,
        extra_roots: wire.extra_roots?,
        base_url: base_url?,
        timeout: timeout?,
        connect_timeout: connect_timeout?,
        max_connections,
        max_body: max_body?,
        headers,
    })
}

/// `[target] max_body` when unset: far above a JSON API's answers, far below what would strain a machine
/// when many requests read that much at once.
pub const DEFAULT_MAX_BODY: u64 = 4_000_000;

fn positive(d: Duration) -> Result<Duration, String> {
    if d.is_zero() { Err("must be longer than zero".to_owned()) } else { Ok(d) }
}

/// A `max_sessions_per_row` as written, kept to check it against the load once that is read.
struct RowCap {
    /// The feeder's index among the loaded feeders.
    feeder: usize,
    /// Its `[[data]]` table's index in the file.
    at: usize,
    cap: toml::Spanned<i64>,
}

/// The feeders, and each `max_sessions_per_row` given, for the check against the load.
/// The feeders that loaded, their row caps, and the names of those that did not (each with its error said).
fn resolve_feeders(checker: &mut Checker<'_>, raw: Vec<RawFeeder>) -> (Vec<Feeder>, Vec<RowCap>, Vec<String>) {
    let folder = checker.folder();
    let mut feeders: Vec<Feeder> = Vec::new();
    let mut caps = Vec::new();
    let mut unloaded = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let RawFeeder {
            name,
            file,
            order,
            when_exhausted,
            skew,
            hot_rows,
            hot_draws,
            weight_column,
            max_sessions_per_row,
        } = raw;
        let skew_keys = SkewKeys { skew, hot_rows, hot_draws, weight_column };
        let field = |f: &str| format!("data[{i}].{f}");
        let valid_name = checker.check(&name, &field("name"), |n| {
            let ok = !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_');
            if !ok {
                return Err(format!("`{n}` is not a feeder name; use letters, digits and `_`"));
            }
            if feeders.iter().any(|f| &f.name == n) {
                return Err(format!("a feeder named `{n}` already exists"));
            }
            Ok(n.clone())
        });
        feeder_skew::unused_keys(checker, i, order.as_ref().map_or("sequential", |o| o.get_ref()), &skew_keys);
        let plain_order = match &order {
            Some(o) => checker.check(o, &field("order"), |o| match o.as_str() {
                "sequential" => Ok(Order::Sequential),
                "random" => Ok(Order::Random),
                "shuffle" => Ok(Order::Shuffle),
                // Drawn over the rows once they are loaded.
                skewed if feeder_skew::is_skewed(skewed) => Ok(Order::Random),
                other => Err(format!("`{other}` is not an order; use {}", feeder_skew::ORDERS)),
            }),
            None => Some(Order::Sequential),
        };
        let when_exhausted = match &when_exhausted {
            Some(w) => checker.check(w, &field("when_exhausted"), |w| match w.as_str() {
                "wrap" => Ok(WhenExhausted::Wrap),
                "stop" => Ok(WhenExhausted::Stop),
                other => Err(format!("`{other}` is not a choice; use wrap or stop")),
            }),
            None => Some(WhenExhausted::Wrap),
        };
        let (Some(name), Some(plain_order), Some(when_exhausted)) = (valid_name, plain_order, when_exhausted) else {
            unloaded.push(name.into_inner());
            continue;
        };
        let load = |f: &String| Feeder::load(&name, &folder.join(f), plain_order, when_exhausted);
        let Some(mut feeder) = checker.check(&file, &field("file"), load) else {
            unloaded.push(name);
            continue;
        };
        if let Some(order) = order.as_ref().filter(|o| feeder_skew::is_skewed(o.get_ref())) {
            let Some(skewed) = feeder_skew::skewed_order(checker, i, order, &skew_keys, &feeder) else {
                unloaded.push(name);
                continue;
            };
            feeder.order = skewed;
        }
        if let Some(cap) = max_sessions_per_row {
            feeder.max_sessions_per_row = checker.check(&cap, &field("max_sessions_per_row"), |n| {
                u32::try_from(*n).ok().filter(|n| *n >= 1).ok_or_else(|| "a number of sessions, at least 1".to_owned())
            });
            caps.push(RowCap { feeder: feeders.len(), at: i, cap });
        }
        feeders.push(feeder);
    }
    (feeders, caps, unloaded)
}

/// A closed model's users each hold one row of a capped feeder at a time: more users than rows × cap could
/// never all start a session, so the plan is refused rather than run short.
fn check_row_caps(checker: &mut Checker<'_>, feeders: &[Feeder], caps: &[RowCap], load: &Load) {
    let peak_users =
        load.stages.iter().filter_map(|s| if let StageShape::Users(n) = s.shape { Some(n) } else { None }).max();
    let Some(users) = peak_users else { return };
    for RowCap { feeder, at, cap: spanned } in caps {
        let feeder = &feeders[*feeder];
        let Some(cap) = feeder.max_sessions_per_row else { continue };
        let room = feeder.rows.len() as u64 * u64::from(cap);
        if u64::from(users) > room {
            let message = format!(
                "{users} users at once need {users} sessions' rows, but {} × {} a row hold {room}: add rows, raise \
                 the cap or plan fewer users",
                crate::model::counted(feeder.rows.len(), "row", "rows"),
                crate::model::counted(cap as usize, "session", "sessions")
            );
            checker.error(spanned, &format!("data[{at}].max_sessions_per_row"), message);
        }
    }
}

fn resolve_load(checker: &mut Checker<'_>, raw: toml::Spanned<RawLoad>) -> Option<Load> {
    let span = raw.span();
    let RawLoad { model, arrivals, max_in_flight, stages } = raw.into_inner();
    let model = checker.check(&model, "load.model", |m| match m.as_str() {
        "open" => Ok(LoadModel::Open),
        "closed" => Ok(LoadModel::Closed),
        other => Err(format!("`{other}` is not a load model; use open (arrival rate) or closed (users)")),
    })?;
    let arrivals = match &arrivals {
        Some(a) => checker.check(a, "load.arrivals", |a| match a.as_str() {
            "uniform" => Ok(Arrivals::Uniform),
            "poisson" => Ok(Arrivals::Poisson),
            other => Err(format!("`{other}` is not an arrival process; use uniform or poisson")),
        }),
        None => Some(Arrivals::Uniform),
    };
    let max_in_flight = match &max_in_flight {
        Some(m) => checker.check(m, "load.max_in_flight", |&m| {
            usize::try_from(m).ok().filter(|&m| m > 0).ok_or_else(|| format!("{m} is not a positive count"))
        }),
        None => Some(DEFAULT_MAX_IN_FLIGHT),
    };
    if stages.is_empty() {
        let spanned = toml::Spanned::new(span.clone(), ());
        checker.error(&spanned, "load.stage", "add at least one [[load.stage]]");
    }
    let stages: Vec<Option<Stage>> =
        stages.into_iter().enumerate().map(|(i, s)| resolve_stage(checker, model, i, s)).collect();
    if !stages.is_empty() && stages.iter().all(|s| s.as_ref().is_some_and(|s| !s.measure)) {
        let spanned = toml::Spanned::new(span.clone(), ());
        checker.error(&spanned, "load.stage", "every stage has `measure = false`; nothing would be measured");
    }
    let stages = stages.into_iter().collect::<Option<Vec<_>>>()?;
    let measured: f64 = stages.iter().filter(|s| s.measure).map(Stage::planned_arrivals).sum();
    if model == LoadModel::Open && stages.iter().any(|s| s.measure) && measured < 1.0 {
        // Such a night measures nothing and fails: say it now, not at 2 a.m.
        let spanned = toml::Spanned::new(span.clone(), ());
        let message = format!(
            "the measured stages plan fewer than one arrival in all ({}); a night needs at least one request to \
             measure: raise a rate or a duration",
            (measured * 1000.0).floor() / 1000.0
        );
        checker.error(&spanned, "load.stage", &message);
    }
    // Each stage is at most a week, so the sum cannot overflow; a run of more than a week is refused whole.
    let total: Duration = stages.iter().map(|s| s.duration).sum();
    if total > crate::config::durations::LONGEST {
        let spanned = toml::Spanned::new(span, ());
        checker.error(&spanned, "load.stage", "the stages last more than a week in all; a night's run must end");
    }
    Some(Load { model, stages, arrivals: arrivals?, max_in_flight: max_in_flight? })
}

fn resolve_stage(
    checker: &mut Checker<'_>,
    model: LoadModel,
    index: usize,
    raw: toml::Spanned<RawStage>,
) -> Option<Stage> {
    let field = |f: &str| format!("load.stage[{index}].{f}");
    let stage_position = toml::Spanned::new(raw.span(), ());
    let RawStage { duration: length, rate, from, to, users, measure } = raw.into_inner();
    let length = checker.check(&length, &field("duration"), |d| positive(duration(d)?));
    let rate_value = |c: &mut Checker<'_>, v: &toml::Spanned<f64>, name: &str| {
        c.check(v, &field(name), |&r| {
            if !(r.is_finite() && r >= 0.0) {
                Err(format!("{r} is not a rate (arrivals per second)"))
            } else if r > super::plan::MAX_RATE {
                Err(format!(
                    "{r} arrivals per second is more than one generator can plan (at most {:.0}); spread the load \
                     over several scenarios or machines",
                    super::plan::MAX_RATE
                ))
            } else {
                Ok(r)
            }
        })
    };
    let shape = match (model, rate, from, to, users) {
        (LoadModel::Open, Some(rate), None, None, None) => {
            rate_value(checker, &rate, "rate").map(|r| StageShape::Rate { from: r, to: r })
        }
        (LoadModel::Open, None, Some(from), Some(to), None) => {
            let (from, to) = (rate_value(checker, &from, "from"), rate_value(checker, &to, "to"));
            Some(StageShape::Rate { from: from?, to: to? })
        }
        (LoadModel::Closed, None, None, None, Some(users)) => checker
            .check(&users, &field("users"), |&u| {
                u32::try_from(u).ok().filter(|&u| u > 0).ok_or_else(|| format!("{u} is not a positive user count"))
            })
            .map(StageShape::Users),
        // A stray `users` is named where it stands, not as a missing `rate` (a trial's message pointed at `rate`).
        (LoadModel::Open, _, _, _, Some(users)) => {
            let message = "`users` is for the closed model (`[load] model = \"closed\"`); an open-model stage \
                           takes `rate`, or `from` and `to` (arrivals per second)";
            checker.error(&users, &field("users"), message);
            None
        }
        (LoadModel::Open, ..) => {
            let message = "an open-model stage takes `rate`, or `from` and `to` (arrivals per second)";
            checker.error(&stage_position, &field("rate"), message);
            None
        }
        (LoadModel::Closed, ..) => {
            checker.error(&stage_position, &field("users"), "a closed-model stage takes `users` only");
            None
        }
    };
    Some(Stage { duration: length?, shape: shape?, measure: measure.unwrap_or(true) })
}
