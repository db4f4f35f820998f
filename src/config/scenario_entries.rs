//! Checks each `[[scenario]]`: its name, file, target, schedule, latest-build settings, gates and telemetry
//! sources (`telemetry.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::checker::{Checker, http_url};
use super::raw_config::{RawBuild, RawGates, RawScenario};
use super::schedule::{RunBy, Schedule, parse_timezone};
use super::{BuildConfig, DeployCommand, HealthCheck, Location, ScenarioConfig, VersionSource};
use crate::analysis::{AbsoluteGates, Gates};
use crate::model::Metric;

fn duration(text: &str) -> Result<Duration, String> {
    super::durations::parse(text, "90s, 10m or 25h")
}

pub(super) fn resolve_scenarios(
    checker: &mut Checker<'_>,
    raw: Vec<RawScenario>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<ScenarioConfig> {
    let mut seen: BTreeMap<String, Location> = BTreeMap::new();
    let mut scenarios = Vec::new();
    for (index, scenario) in raw.into_iter().enumerate() {
        let prefix = format!("scenario[{index}]");
        let location = checker.location(&scenario.name);
        if let Some(first) = seen.get(scenario.name.get_ref()) {
            let message =
                format!("duplicate scenario name `{}`; it is already used at {first}", scenario.name.get_ref());
            checker.error(&scenario.name, &format!("{prefix}.name"), message);
        } else {
            seen.insert(scenario.name.get_ref().clone(), location);
        }
        if let Some(scenario) = resolve_scenario(checker, &prefix, scenario, env) {
            scenarios.push(scenario);
        }
    }
    scenarios
}

/// A scenario name: letters, digits, `-`, `_` and `.`, not only dots (`..` would walk up a URL), at most
/// 100 characters. It appears in URLs, file names of reports and alert messages.
pub(crate) fn scenario_name(name: &str) -> Result<String, String> {
    let valid = !name.is_empty()
        && name.len() <= 100
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.chars().all(|c| c == '.');
    if valid {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "`{}` is not a scenario name; use letters, digits, `-`, `_` and `.`, at most 100 (it appears in URLs)",
            crate::outside_text::clipped(name, 40)
        ))
    }
}

/// `run_by` and `catch_up`, which only mean something with a `schedule` that `serve` runs.
fn who_runs(
    checker: &mut Checker<'_>,
    prefix: &str,
    (run_by, catch_up): (Option<Spanned<String>>, Option<Spanned<bool>>),
    scheduled: bool,
) -> (Option<RunBy>, bool) {
    let field = |name: &str| format!("{prefix}.{name}");
    let run_by = match &run_by {
        Some(who) => checker.check(who, &field("run_by"), |w| {
            let run_by = RunBy::parse(w)?;
            if run_by == RunBy::Elsewhere && !scheduled {
                return Err("run_by = \"elsewhere\" needs the `schedule` the nights run on: serve watches for \
                            them by it (and says missing_run when one does not come)"
                    .to_owned());
            }
            Ok(run_by)
        }),
        None => Some(RunBy::Serve),
    };
    let catch_up = match (&catch_up, run_by) {
        (Some(flag), Some(RunBy::Elsewhere)) if *flag.get_ref() => {
            let message = "serve runs no night of a schedule run elsewhere, so it catches none up: remove catch_up";
            checker.error(flag, &field("catch_up"), message.to_owned());
            false
        }
        (Some(flag), _) => *flag.get_ref(),
        (None, _) => false,
    };
    (run_by, catch_up)
}

fn resolve_scenario(
    checker: &mut Checker<'_>,
    prefix: &str,
    raw: RawScenario,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<ScenarioConfig> {
    let RawScenario {
        name,
        file,
        target,
        schedule,
        timezone,
        run_by,
        catch_up,
        missing_run_grace,
        baseline,
        build,
        gates,
        telemetry,
        capacity,
    } = raw;
    let field = |name: &str| format!("{prefix}.{name}");
    let name = checker.check(&name, &field("name"), |n| scenario_name(n));
    let folder = checker.folder();
    let file = checker.check(&file, &field("file"), |f| existing_file(&folder, f));
    let target = target.and_then(|t| checker.check(&t, &field("target"), |t| http_url(t)));
    let timezone = match &timezone {
        Some(tz) => checker.check(tz, &field("timezone"), |tz| parse_timezone(tz)),
        None => Some(chrono_tz::Tz::UTC),
    };
    let schedule = match (&schedule, timezone) {
        (Some(expression), Some(tz)) => {
            checker.check(expression, &field("schedule"), |e| Schedule::parse(e, tz)).map(Some)
        }
        // The timezone is wrong, but the expression is still checked (in UTC), so both mistakes are reported.
        (Some(expression), None) => {
            let _ = checker.check(expression, &field("schedule"), |e| Schedule::parse(e, chrono_tz::Tz::UTC));
            None
        }
        (None, _) => Some(None),
    };
    // A schedule written but wrong is scheduled too: its own error is enough.
    let (run_by, catch_up) = who_runs(checker, prefix, (run_by, catch_up), !matches!(schedule, Some(None)));
    let missing_run_grace = match &missing_run_grace {
        Some(grace) => checker.check(grace, &field("missing_run_grace"), |g| duration(g)),
        None => Some(Duration::from_hours(1)),
    };
    let baseline = match &baseline {
        Some(spec) => checker.check(spec, &field("baseline"), |s| s.parse()),
        None => Some(crate::model::BaselineSpec::default()),
    };
    let build = resolve_build(checker, prefix, build);
    let gates = resolve_gates(checker, prefix, gates);
    let telemetry = super::telemetry::resolve_telemetry(checker, prefix, telemetry, env);
    // The sources' limits are gates like the latency limits: the judge reads them from the gates.
    let gates = gates.map(|mut gates| {
        gates.telemetry_limits = telemetry.iter().flatten().flat_map(|s| s.limits.iter().cloned()).collect();
        gates
    });
    let capacity = match &capacity {
        // With its telemetry sources wrong, the zone's limits are not known: their own errors say enough.
        Some(raw) => {
            let known = gates.as_ref().filter(|_| telemetry.is_some());
            super::capacity::resolve_capacity(checker, prefix, raw, known).map(Some)
        }
        None => Some(None),
    };
    Some(ScenarioConfig {
        name: name?,
        file: file?,
        target,
        schedule: schedule?,
        run_by: run_by?,
        catch_up,
        missing_run_grace: missing_run_grace?,
        baseline: baseline?,
        build: build?,
        gates: gates?,
        telemetry: telemetry?,
        capacity: capacity?,
    })
}

fn existing_file(folder: &Path, file: &str) -> Result<PathBuf, String> {
    let path = folder.join(file);
    if path.is_file() {
        Ok(path)
    } else if path.exists() {
        Err(format!("scenario file `{file}` is not a regular file (a directory, device or pipe)"))
    } else {
        Err(format!("scenario file `{file}` does not exist (looked for {})", path.display()))
    }
}

fn resolve_build(checker: &mut Checker<'_>, prefix: &str, raw: RawBuild) -> Option<BuildConfig> {
    let RawBuild {
        version_url,
        version_pointer,
        version_command,
        deploy_command,
        deploy_timeout,
        health_url,
        health_timeout,
    } = raw;
    let field = |name: &str| format!("{prefix}.build.{name}");
    let (version_pointer_given, has_version_url) = (version_pointer.is_some(), version_url.is_some());
    let pointer = version_pointer.and_then(|p| {
        checker.check(&p, &field("version_pointer"), |p| {
            if p.is_empty() || p.starts_with('/') {
                Ok(p.clone())
            } else {
                Err(format!("`{p}` is not a JSON pointer; it starts with `/`, e.g. `/build/id`"))
            }
        })
    });
    let version = match (version_url, version_command) {
        (Some(_), Some(command)) => {
            checker.error(&command, &field("version_command"), "give either version_url or version_command, not both");
            None
        }
        (Some(url), None) => {
            checker.check(&url, &field("version_url"), |u| http_url(u)).map(|url| VersionSource::Url { url, pointer })
        }
        (None, Some(command)) => Some(VersionSource::Command(command.into_inner())),
        (None, None) => None,
    };
    // Every value is checked before any `?`, so one bad value never hides another.
    let orphans = [
        (version_pointer_given && !has_version_url, "version_pointer", "version_url"),
        (deploy_timeout.is_some() && deploy_command.is_none(), "deploy_timeout", "deploy_command"),
        (health_timeout.is_some() && health_url.is_none(), "health_timeout", "health_url"),
    ];
    for (orphan, name, needs) in orphans {
        if orphan {
            let message = format!("{}: ignored without {needs}", field(name));
            checker.warnings.push(super::ConfigWarning::new(super::WarningKind::Setting, message));
        }
    }
    let deploy_timeout = timeout_or(checker, deploy_timeout, &field("deploy_timeout"), 600);
    let health_timeout = timeout_or(checker, health_timeout, &field("health_timeout"), 300);
    let health_url = health_url.map(|url| checker.check(&url, &field("health_url"), |u| http_url(u)));
    let deploy = match deploy_command {
        Some(command) => Some(DeployCommand { command: command.into_inner(), timeout: deploy_timeout? }),
        None => None,
    };
    let health = match health_url {
        Some(url) => Some(HealthCheck { url: url?, timeout: health_timeout? }),
        None => None,
    };
    Some(BuildConfig { version, deploy, health })
}

fn timeout_or(
    checker: &mut Checker<'_>,
    value: Option<Spanned<String>>,
    field: &str,
    default_secs: u64,
) -> Option<Duration> {
    match value {
        Some(value) => checker.check(&value, field, |v| duration(v)),
        None => Some(Duration::from_secs(default_secs)),
    }
}

fn resolve_gates(checker: &mut Checker<'_>, prefix: &str, raw: RawGates) -> Option<Gates> {
    let RawGates {
        min_runs,
        min_effect_pct,
        metric_min_effect_pct,
        max_p75_ms,
        max_p95_ms,
        max_p99_ms,
        max_error_rate_pct,
        confirm,
        busy_machine_inconclusive,
    } = raw;
    let field = |name: &str| format!("{prefix}.gates.{name}");
    let min_runs = match &min_runs {
        Some(n) => checker.check(n, &field("min_runs"), |n| {
            u32::try_from(*n)
                .ok()
                .filter(|n| (2..=1000).contains(n))
                .ok_or_else(|| format!("{n} is out of range 2..=1000"))
        }),
        None => Some(Gates::default().min_runs),
    };
    let min_effect_pct = match &min_effect_pct {
        Some(pct) => checker.check(pct, &field("min_effect_pct"), |p| percentage(*p)),
        None => Some(Gates::default().min_effect_pct),
    };
    let mut per_metric = BTreeMap::new();
    for (metric, pct) in metric_min_effect_pct {
        let key = field(&format!("metric_min_effect_pct.{}", metric.get_ref()));
        let metric = checker.check(&metric, &key, |m| known_metric(m));
        let pct = checker.check(&pct, &key, |p| percentage(*p));
        if let (Some(metric), Some(pct)) = (metric, pct) {
            per_metric.insert(metric, pct);
        }
    }
    // `Some(None)`: not set; `None`: set but invalid (the error is recorded). All are checked before any `?`.
    let mut limit = |value: Option<Spanned<f64>>, name: &str| -> Option<Option<f64>> {
        match value {
            Some(v) => checker.check(&v, &field(name), |v| positive(*v)).map(Some),
            None => Some(None),
        }
    };
    let limits = [
        limit(max_p75_ms, "max_p75_ms"),
        limit(max_p95_ms, "max_p95_ms"),
        limit(max_p99_ms, "max_p99_ms"),
        limit(max_error_rate_pct, "max_error_rate_pct"),
    ];
    let [max_p75_ms, max_p95_ms, max_p99_ms, max_error_rate_pct] = limits;
    let absolute = AbsoluteGates {
        max_p75_ms: max_p75_ms?,
        max_p95_ms: max_p95_ms?,
        max_p99_ms: max_p99_ms?,
        max_error_rate_pct: max_error_rate_pct?,
    };
    Some(Gates {
        min_runs: min_runs?,
        min_effect_pct: min_effect_pct?,
        metric_min_effect_pct: per_metric,
        absolute,
        telemetry_limits: Vec::new(),
        confirm: confirm.unwrap_or(Gates::default().confirm),
        busy_machine_inconclusive: busy_machine_inconclusive.unwrap_or(Gates::default().busy_machine_inconclusive),
    })
}

fn percentage(value: f64) -> Result<f64, String> {
    if value > 0.0 && value <= 1000.0 { Ok(value) } else { Err(format!("{value} is not a percentage in (0, 1000]")) }
}

fn positive(value: f64) -> Result<f64, String> {
    if value > 0.0 && value.is_finite() { Ok(value) } else { Err(format!("{value} must be a positive number")) }
}

fn known_metric(metric: &str) -> Result<Metric, String> {
    match metric.parse() {
        Ok(metric) if Metric::JUDGED.contains(&metric) => Ok(metric),
        _ => {
            let names: Vec<_> = Metric::JUDGED.iter().map(|m| m.as_str()).collect();
            Err(format!("unknown metric `{metric}`; use one of {}", names.join(", ")))
        }
    }
}
