//! `[[tape]]`: checks a scenario's tape source, reads the tape once ([`crate::tape::survey`]), gives each of its
//! routes a metric key, and says how realistic the planned run is with it.

use std::ops::RangeInclusive;

use toml::Spanned;

use super::plan::{Load, TapeOrder, TapeReplay};
use super::raw_scenario::{RawTape, RawTapeExpect};
use super::step_values::parse_statuses;
use crate::config::{Checker, ConfigWarning, WarningKind};
use crate::model::{LoadModel, thousands};
use crate::tape::Router;
use crate::tape::route_tally::OTHER_ROUTES;
use crate::tape::survey::survey;

/// Routes with a metric key of their own; the least requested beyond them share one, "(other routes)",
/// so a messy log cannot make thousands of series.
pub const MAX_TAPE_ROUTES: usize = 100;

/// The run goes through its tape more often than this: warned about. Production sent each distinct request
/// of the tape `requests / distinct` times; a run making `n` passes sends each `n` times that, so past a
/// couple of passes the service's caches hold far more of the run's data than production's did.
pub const PASSES_WARNED: f64 = 2.0;

/// Checks `raw` (the scenario's `[[tape]]` tables) and reads its tape; route keys are added to `endpoints`.
pub(super) fn resolve_tape(
    checker: &mut Checker<'_>,
    raw: Vec<Spanned<RawTape>>,
    load: Option<&Load>,
    endpoints: &mut Vec<String>,
) -> Option<TapeReplay> {
    let mut tapes = raw.into_iter();
    let first = tapes.next()?;
    for extra in tapes {
        checker.error(&extra, "tape", "one [[tape]] per scenario: import both logs into one tape");
    }
    let RawTape { file, order, preserve, routes, expect } = first.into_inner();
    let (order, preserve_mix) = (resolve_order(checker, order.as_ref()), resolve_preserve(checker, preserve.as_ref()));
    let patterns: Vec<String> = routes.iter().map(|r| r.pattern.get_ref().clone()).collect();
    let router = match Router::new(&patterns) {
        Ok(router) => Some(router),
        Err(message) => {
            let wrong = routes.iter().find(|r| Router::new(&[r.pattern.get_ref().clone()]).is_err());
            checker.error(wrong.map_or(&file, |r| &r.pattern), "tape.route.pattern", message);
            None
        }
    };
    let path = checker.folder().join(file.get_ref());
    let router = router?;
    // The one check of every file a scenario reads: a device or a pipe would never end or never start.
    let regular = super::bounded_file::regular_file(&path).map_err(|p| p.about(&path.display().to_string()));
    checker.check(&file, "tape.file", |_| regular)?;
    let survey = checker.check(&file, "tape.file", |_| match survey(&path, &router) {
        Ok(survey) if survey.requests == 0 => Err(format!("{} holds no requests", path.display())),
        Ok(survey) => Ok(survey),
        Err(error) => Err(error.to_string()),
    })?;
    let mut replay = TapeReplay {
        file: path,
        order: order?,
        preserve_mix: preserve_mix?,
        router,
        endpoints: std::collections::HashMap::new(),
        other_routes: None,
        expect: Vec::new(),
        planned_requests: None,
        first_part: None,
        survey,
    };
    for (index, (route, hits)) in routes.iter().zip(&replay.survey.pattern_hits).enumerate() {
        if *hits == 0 {
            let message = format!(
                "{}: tape.route[{index}].pattern `{}` matches no request of the tape (its path segments as \
                 recorded, and a query part exactly its names and fixed values)",
                checker.location(&route.pattern),
                route.pattern.get_ref()
            );
            checker.warnings.push(ConfigWarning::new(WarningKind::Setting, message));
        }
    }
    add_endpoints(&mut replay, endpoints);
    resolve_expect(checker, &mut replay, endpoints, expect);
    if replay.order == TapeOrder::Session && replay.survey.sessions == replay.survey.requests {
        let message = "order = \"session\", but the tape records no sessions (no s= fields): each arrival replays \
                       one request, as with \"sequential\"";
        checker.warnings.push(ConfigWarning::new(WarningKind::Setting, message.to_owned()));
    }
    if let Some(load) = load {
        replay.planned_requests = planned_requests(&replay, load);
        if let Some(warning) = replay.realism().filter(|_| replay.warned()) {
            checker.warnings.push(ConfigWarning::new(WarningKind::Setting, warning));
        }
        let first_part = first_part(&replay, load);
        replay.first_part = checker.check(&file, "tape.file", |_| first_part.map_err(|e| e.to_string()))?;
    }
    Some(replay)
}

fn resolve_order(checker: &mut Checker<'_>, order: Option<&Spanned<String>>) -> Option<TapeOrder> {
    let Some(order) = order else { return Some(TapeOrder::Sequential) };
    checker.check(order, "tape.order", |o| match o.as_str() {
        "sequential" => Ok(TapeOrder::Sequential),
        "shuffle" => Ok(TapeOrder::Shuffle),
        "session" => Ok(TapeOrder::Session),
        other => Err(format!("`{other}` is not an order; use sequential, shuffle or session")),
    })
}

fn resolve_preserve(checker: &mut Checker<'_>, preserve: Option<&Spanned<String>>) -> Option<bool> {
    let Some(preserve) = preserve else { return Some(false) };
    checker.check(preserve, "tape.preserve", |p| match p.as_str() {
        "mix" => Ok(true),
        other => Err(format!("`{other}` cannot be preserved; the choice is `mix`")),
    })
}

/// Gives the most requested routes a metric key each, and the rest one shared key. Every route of the survey
/// is mapped, so the replay tells a route the survey counted among the rest from a query shape it folded into
/// its path's `?(other queries)` ([`TapeReplay::endpoint`]).
fn add_endpoints(replay: &mut TapeReplay, endpoints: &mut Vec<String>) {
    for route in replay.survey.routes.iter().take(MAX_TAPE_ROUTES) {
        replay.endpoints.insert(route.key.clone(), endpoints.len());
        endpoints.push(route.key.clone());
    }
    if replay.survey.routes.len() > MAX_TAPE_ROUTES {
        // The survey may have folded routes into this key already; then it is the one endpoint for the rest.
        let other = replay.endpoints.get(OTHER_ROUTES).copied().unwrap_or_else(|| {
            endpoints.push(OTHER_ROUTES.to_owned());
            endpoints.len() - 1
        });
        replay.other_routes = Some(other);
        for route in &replay.survey.routes[MAX_TAPE_ROUTES..] {
            replay.endpoints.insert(route.key.clone(), other);
        }
    } else {
        replay.other_routes = replay.endpoints.get(OTHER_ROUTES).copied();
    }
    replay.expect = vec![None; endpoints.len()];
}

/// `[[tape.expect]]`: the statuses accepted for a route with a metric key of its own, instead of its recorded
/// class. The route may be written with its query's names in any order (`GET /posts?_sort=&_order=`).
fn resolve_expect(checker: &mut Checker<'_>, replay: &mut TapeReplay, endpoints: &[String], rules: Vec<RawTapeExpect>) {
    for rule in rules {
        let statuses = checker.check(&rule.status, "tape.expect.status", parse_statuses);
        let endpoint = checker.check(&rule.route, "tape.expect.route", |route| {
            let own = |key: &str| replay.endpoints.get(key).copied().filter(|&i| endpoints[i] == key);
            let route = route.trim();
            let canonical = route.split_once(' ').map(|(method, target)| Router::default().route(method, target).key);
            own(route).or_else(|| canonical.and_then(|key| own(&key))).ok_or_else(|| {
                let known: Vec<&str> = replay.survey.routes.iter().take(5).map(|r| r.key.as_str()).collect();
                format!(
                    "the tape has no route `{route}` with a metric key of its own; its routes include {}",
                    known.join(", ")
                )
            })
        });
        if let (Some(statuses), Some(endpoint)) = (statuses, endpoint) {
            replay.expect[endpoint] = Some(statuses);
        }
    }
}

/// Requests the run will send: its planned arrivals (warm-up included: those requests reach the service
/// too), each one request or one recorded session.
pub(super) fn planned_requests(replay: &TapeReplay, load: &Load) -> Option<f64> {
    if load.model == LoadModel::Closed {
        return None;
    }
    let arrivals: f64 = load.stages.iter().map(super::Stage::planned_arrivals).sum();
    let per_arrival = if replay.order == TapeOrder::Session { replay.survey.requests_per_session() } else { 1.0 };
    Some(arrivals * per_arrival)
}

/// Each route's requests in the measured stages, when the run replays only the tape's start: a sequential or
/// session order without `preserve = "mix"` takes it from the first line (a shuffle draws from its window, near
/// enough to the whole mix). The warm-up takes the first of them.
fn first_part(replay: &TapeReplay, load: &Load) -> Result<Option<Vec<(String, u64)>>, crate::tape::format::TapeError> {
    let Some(planned) = replay.planned_requests else { return Ok(None) };
    let whole = replay.passes().is_some_and(|passes| passes >= 1.0);
    if whole || replay.preserve_mix || replay.order == TapeOrder::Shuffle {
        return Ok(None);
    }
    let every: f64 = load.stages.iter().map(super::Stage::planned_arrivals).sum();
    let measured: f64 = load.stages.iter().filter(|s| s.measure).map(super::Stage::planned_arrivals).sum();
    let warm_up = if every > 0.0 { planned * (1.0 - measured / every) } else { 0.0 };
    let routes = crate::tape::survey::routes_between(
        &replay.file,
        &replay.router,
        warm_up.round() as u64,
        planned.round() as u64,
    )?;
    Ok(Some(routes))
}

impl TapeReplay {
    /// How many times the planned run sends each distinct request of the tape, on average.
    #[must_use]
    pub fn repeats(&self) -> Option<f64> {
        self.planned_requests.map(|planned| planned / self.survey.distinct.max(1) as f64)
    }

    /// How many times the planned run goes through the whole tape.
    #[must_use]
    pub fn passes(&self) -> Option<f64> {
        self.planned_requests.map(|planned| planned / self.survey.requests.max(1) as f64)
    }

    /// Whether the realism report is a warning: more than [`PASSES_WARNED`] passes over the tape.
    #[must_use]
    pub fn warned(&self) -> bool {
        self.passes().is_some_and(|passes| passes > PASSES_WARNED)
    }

    /// The realism report in one sentence: what the run sends against what the tape holds.
    #[must_use]
    pub fn realism(&self) -> Option<String> {
        let (planned, repeats, passes) = (self.planned_requests?, self.repeats()?, self.passes()?);
        let (distinct, requests) = (self.survey.distinct as f64, self.survey.requests as f64);
        let production = requests / distinct.max(1.0);
        Some(if self.warned() {
            format!(
                "this run sends {} requests from a tape of {} distinct ones: each repeats {repeats:.0}× \
                 ({passes:.1} passes over the tape, where production sent each {production:.1}×); caches will be \
                 warmer than production (import a longer log, or plan fewer requests)",
                thousands(planned),
                thousands(distinct)
            )
        } else if passes < 1.0 {
            let spread =
                if self.preserve_mix { "spread over all of it (preserve = \"mix\")" } else { "its first part" };
            format!(
                "this run sends {} requests, {:.0} % of the tape's {}: {spread}",
                thousands(planned),
                passes * 100.0,
                thousands(requests)
            )
        } else {
            format!(
                "this run sends {} requests from a tape of {} distinct ones: each about {repeats:.1}× ({passes:.1} \
                 passes over the tape)",
                thousands(planned),
                thousands(distinct)
            )
        })
    }
}

/// Whether `status` is what a replay of a request recorded with `recorded` should get, by default: the
/// same class, except that a recorded server error is never what is expected (2xx and 3xx are), and 2xx and
/// 3xx count as one (a cache may answer 304 where production answered 200).
#[must_use]
pub fn recorded_class_accepts(recorded: Option<u16>, status: u16) -> bool {
    let ok = |s: u16| (200..=399).contains(&s);
    match recorded {
        Some(r) if (400..=499).contains(&r) => (400..=499).contains(&status),
        Some(r) if (100..=199).contains(&r) => (100..=199).contains(&status),
        _ => ok(status),
    }
}

/// The accepted statuses of `[[tape.expect]]`, or the recorded class: whether `status` passes.
#[must_use]
pub fn accepts(rule: Option<&[RangeInclusive<u16>]>, recorded: Option<u16>, status: u16) -> bool {
    rule.map_or_else(|| recorded_class_accepts(recorded, status), |ranges| ranges.iter().any(|r| r.contains(&status)))
}
