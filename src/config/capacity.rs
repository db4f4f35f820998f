//! Checks `[scenario.capacity]` into a [`CapacitySearch`]: safe by default, so a maximum rate and a maximum
//! total time must be given (no open-ended ramp against someone's service), the zone must have a limit to
//! leave, and the start rate must lie under the maximum.

use std::time::Duration;

use toml::Spanned;

use super::checker::Checker;
use super::raw_config::RawCapacity;
use crate::analysis::capacity::{CapacitySearch, DEFAULT_ZONE_NAME, Growth, MAX_SEARCH_RATE};
use crate::analysis::{AbsoluteGates, Gates};
use crate::metrics::interval::requests_needed;

/// Climbing doubles the rate unless told otherwise: a knee ten times the start rate is bracketed in four steps.
const DEFAULT_FACTOR: f64 = 2.0;
/// Three bisections narrow the bracket to an eighth of a doubling, about 9 % of the rate: within the min effect.
const DEFAULT_REFINE_STEPS: u32 = 3;
/// One more hold, then another, before the point estimate decides.
const DEFAULT_MAX_HOLDS: u32 = 3;
/// The shortest default hold: a step needs a few seconds past the target's own warm-up of a new rate.
const SHORTEST_DEFAULT_HOLD: Duration = Duration::from_secs(5);
/// The longest zone name: it is part of a sentence in a verdict and an alert.
const MAX_ZONE_NAME: usize = 40;

/// The search as `raw` asks for it, with the zone `gates` holds (`None` when the gates were wrong: the
/// search is still checked, so every mistake shows at once).
pub(super) fn resolve_capacity(
    checker: &mut Checker<'_>,
    prefix: &str,
    raw: &Spanned<RawCapacity>,
    gates: Option<&Gates>,
) -> Option<CapacitySearch> {
    let RawCapacity {
        start_rate,
        step_factor,
        step_increment,
        hold,
        max_holds,
        max_rate,
        max_time,
        refine_steps,
        zone_name,
    } = raw.get_ref();
    let field = |name: &str| format!("{prefix}.capacity.{name}");
    if let Some(gates) = gates
        && zone_is_empty(gates)
    {
        checker.error(
            raw,
            &format!("{prefix}.capacity"),
            format!(
                "the zone has no limits: a capacity search judges each step against [scenario.gates] max_p75_ms, \
                 max_p95_ms, max_p99_ms or max_error_rate_pct, and the `limits` of the scenario's telemetry \
                 sources; set at least one in {prefix}.gates or a source's limits"
            ),
        );
    }
    if let Some(gates) = gates
        && !zone_is_empty(gates)
        && gates.absolute.max_error_rate_pct.is_none()
        && gates.absolute.max_p75_ms.or(gates.absolute.max_p95_ms).or(gates.absolute.max_p99_ms).is_none()
    {
        let message = format!(
            "{prefix}.capacity: the zone limits only the server's telemetry, so a step whose requests fail fast \
             holds it; set {prefix}.gates max_error_rate_pct to keep failures out of the zone"
        );
        checker.warnings.push(super::ConfigWarning::new(super::WarningKind::Setting, message));
    }
    let max_rate = if let Some(rate) = max_rate {
        checker.check(rate, &field("max_rate"), |r| rate_value(*r))
    } else {
        checker.error(raw, &field("max_rate"), "is required: a capacity search never climbs without a ceiling");
        None
    };
    let max_time = if let Some(time) = max_time {
        checker.check(time, &field("max_time"), |t| positive_duration(t))
    } else {
        checker.error(raw, &field("max_time"), "is required: a capacity search never runs without a time limit");
        None
    };
    let start_rate = match start_rate {
        Some(rate) => checker.check(rate, &field("start_rate"), |r| {
            let rate = rate_value(*r)?;
            match max_rate {
                Some(max) if rate > max => Err(format!("{rate} is above max_rate ({max}): the search starts under it")),
                _ => Ok(rate),
            }
        }),
        None => max_rate.map(|max| (max / 32.0).max(1.0)),
    };
    let growth = growth(checker, &field, step_factor.as_ref(), step_increment.as_ref());
    let max_holds = count(checker, max_holds.as_ref(), &field("max_holds"), 1..=10, DEFAULT_MAX_HOLDS);
    let refine_steps = count(checker, refine_steps.as_ref(), &field("refine_steps"), 0..=10, DEFAULT_REFINE_STEPS);
    let hold = match hold {
        Some(hold) => checker.check(hold, &field("hold"), |h| positive_duration(h)),
        None => start_rate.map(|rate| default_hold(rate, gates.map(|g| &g.absolute))),
    };
    let zone_name = match zone_name {
        Some(name) => checker.check(name, &field("zone_name"), |n| zone_name_value(n)),
        None => Some(DEFAULT_ZONE_NAME.to_owned()),
    };
    let search = CapacitySearch {
        start_rate: start_rate?,
        growth: growth?,
        hold: hold?,
        max_holds: max_holds?,
        max_rate: max_rate?,
        max_time: max_time?,
        refine_steps: refine_steps?,
        zone_name: zone_name?,
    };
    if search.max_time < search.hold {
        checker.error(raw, &field("max_time"), "is shorter than one hold: the search could not run a single step");
        return None;
    }
    Some(search)
}

/// Whether the zone has no limit to leave: no absolute gate, and no telemetry source's bound (a zone of CPU alone
/// is a capacity guide's own).
fn zone_is_empty(gates: &Gates) -> bool {
    let absolute = &gates.absolute;
    [absolute.max_p75_ms, absolute.max_p95_ms, absolute.max_p99_ms, absolute.max_error_rate_pct]
        .iter()
        .all(Option::is_none)
        && gates.telemetry_limits.is_empty()
}

/// `step_factor` or `step_increment`, never both; doubling when neither is given.
fn growth(
    checker: &mut Checker<'_>,
    field: &dyn Fn(&str) -> String,
    factor: Option<&Spanned<f64>>,
    increment: Option<&Spanned<f64>>,
) -> Option<Growth> {
    match (factor, increment) {
        (Some(_), Some(increment)) => {
            checker.error(increment, &field("step_increment"), "give either step_factor or step_increment, not both");
            None
        }
        (Some(factor), None) => checker.check(factor, &field("step_factor"), |f| {
            if *f > 1.0 && *f <= 10.0 {
                Ok(Growth::Factor(*f))
            } else {
                Err(format!("{f} is not a factor in (1, 10]: each step's rate is the last one's times it"))
            }
        }),
        (None, Some(increment)) => {
            checker.check(increment, &field("step_increment"), |i| rate_value(*i).map(Growth::Increment))
        }
        (None, None) => Some(Growth::Factor(DEFAULT_FACTOR)),
    }
}

fn count(
    checker: &mut Checker<'_>,
    value: Option<&Spanned<i64>>,
    field: &str,
    range: std::ops::RangeInclusive<u32>,
    default: u32,
) -> Option<u32> {
    match value {
        Some(value) => checker.check(value, field, |n| {
            u32::try_from(*n).ok().filter(|n| range.contains(n)).ok_or_else(|| format!("{n} is out of range {range:?}"))
        }),
        None => Some(default),
    }
}

fn rate_value(rate: f64) -> Result<f64, String> {
    if rate > 0.0 && rate <= MAX_SEARCH_RATE {
        Ok(rate)
    } else {
        Err(format!("{rate} is not an arrival rate in (0, {MAX_SEARCH_RATE}] per second"))
    }
}

/// A name of 1 to [`MAX_ZONE_NAME`] characters, none of them a control character (it is printed in alerts).
fn zone_name_value(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_ZONE_NAME || name.chars().any(char::is_control) {
        return Err(format!(
            "is not a zone name: 1 to {MAX_ZONE_NAME} characters without control characters, e.g. \"green\""
        ));
    }
    Ok(name.to_owned())
}

fn positive_duration(text: &str) -> Result<Duration, String> {
    super::durations::parse_positive(text, "30s, 2m or 1h")
}

/// Long enough, at the start rate, for twice the requests the zone's strictest percentile needs to be bounded
/// (the too-few-requests rule), and never under [`SHORTEST_DEFAULT_HOLD`].
fn default_hold(start_rate: f64, gates: Option<&AbsoluteGates>) -> Duration {
    let strictest = gates.map_or(0.99, |g| match (g.max_p99_ms, g.max_p95_ms, g.max_p75_ms) {
        (Some(_), _, _) => 0.99,
        (None, Some(_), _) => 0.95,
        (None, None, Some(_)) => 0.75,
        (None, None, None) => 0.5,
    });
    let secs = (2 * requests_needed(strictest)) as f64 / start_rate;
    Duration::from_secs(secs.ceil().min(3600.0) as u64).max(SHORTEST_DEFAULT_HOLD)
}
