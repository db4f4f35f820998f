//! `degrade validate`: checks the config and every scenario file it names (or one scenario file alone),
//! and prints how they were understood.

use std::path::Path;

use chrono::Utc;

use super::{Exit, load_config, print_stdout};
use crate::config::{Config, ConfigErrors, ScenarioConfig};
use crate::model::LoadModel;
use crate::model::thousands;
use crate::scenario::{self, Plan, TapeOrder, TapeReplay};
use crate::secret::redact_url;

pub(super) fn run(config_path: &Path, scenario_file: Option<&Path>) -> anyhow::Result<Exit> {
    let env = |name: &str| std::env::var(name).ok();
    if let Some(file) = scenario_file {
        let plan = scenario::load(file, None, &env).map_err(|e| problems(&e))?;
        let mut lines = vec![format!("{} is valid.", file.display())];
        lines.extend(describe_plan(&plan));
        print_stdout(&(lines.join("\n") + "\n"))?;
        return Ok(Exit::Ok);
    }
    let config = load_config(config_path)?;
    let mut lines = describe(&config);
    let mut errors = Vec::new();
    for scenario in &config.scenarios {
        match scenario::load(&scenario.file, scenario.target.as_deref(), &env) {
            Ok(plan) => {
                lines.push(format!("  {} runs {}:", scenario.name, scenario.file.display()));
                lines.extend(describe_plan(&plan).into_iter().map(|l| format!("  {l}")));
            }
            Err(e) => errors.extend(e.0),
        }
    }
    if !errors.is_empty() {
        return Err(problems(&ConfigErrors(errors)));
    }
    print_stdout(&(lines.join("\n") + "\n"))?;
    Ok(Exit::Ok)
}

fn problems(errors: &ConfigErrors) -> anyhow::Error {
    let count = errors.0.len();
    anyhow::anyhow!("{errors}\n{count} problem{} in the scenarios", if count == 1 { "" } else { "s" })
}

/// The workload in a few lines: flows, endpoints (the metric keys), and the load.
fn describe_plan(plan: &Plan) -> Vec<String> {
    let flows: Vec<String> = plan.flows.iter().map(|f| format!("{} (weight {})", f.name, f.weight)).collect();
    let load = &plan.load;
    let secs = |d: std::time::Duration| humantime::format_duration(std::time::Duration::from_secs(d.as_secs()));
    let shape = match load.model {
        LoadModel::Open => format!("open model, {:.1} sessions/s measured", load.target_rate()),
        LoadModel::Closed => "closed model".to_owned(),
    };
    let mut lines = match &plan.tape {
        Some(tape) => describe_tape(tape),
        None => vec![format!("  flows     {}", flows.join(", "))],
    };
    lines.extend([
        format!("  endpoints {}", plan.recorded_endpoints().collect::<Vec<_>>().join(", ")),
        format!(
            "  load      {shape}, {} stage(s), {} in all ({} measured)",
            load.stages.len(),
            secs(load.duration()),
            secs(load.measured_duration())
        ),
        format!("  target    {}", redact_url(&plan.target.base_url)),
    ]);
    match crate::scenario::night_sizes::endpoint_nights(plan) {
        Some(nights) => lines.extend(nights.iter().map(|n| format!("  per night {}", n.describe()))),
        None => lines.push(
            "  per night each endpoint's requests depend on the target's speed (closed model): which percentiles \
             can be judged shows on the first run's page"
                .to_owned(),
        ),
    }
    for feeder in &plan.feeders {
        let cap = feeder.max_sessions_per_row.map_or(String::new(), |cap| {
            format!("; at most {cap} session{} a row at once", if cap == 1 { "" } else { "s" })
        });
        let (name, rows, columns) = (&feeder.name, feeder.rows.len(), feeder.columns.join(", "));
        lines.push(format!("  data      {name}: {rows} rows of {columns}{cap}"));
    }
    lines.extend(crate::scenario::skew_shapes::describe(plan).into_iter().map(|s| format!("  skew      {s}")));
    lines.extend(describe_grpc(plan));
    lines.extend(plan.warnings.iter().map(|w| format!("  warning   {w}")));
    lines
}

/// Each gRPC endpoint with the method it calls, resolved in the `[proto]` files: its request and answer types.
fn describe_grpc(plan: &Plan) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for step in plan.flows.iter().flat_map(|f| &f.steps) {
        let Some(call) = &step.grpc else { continue };
        let (method, deadline) = (&call.method, call.deadline.map(humantime::format_duration));
        let line = format!(
            "  grpc      {}: {} → {}{}{}",
            plan.endpoints[step.endpoint],
            method.input().full_name(),
            if method.is_server_streaming() { "stream of " } else { "" },
            method.output().full_name(),
            deadline.map(|d| format!(", deadline {d}")).unwrap_or_default()
        );
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// The tape a scenario replays: its size, how the run uses it, and its coverage per route.
fn describe_tape(tape: &TapeReplay) -> Vec<String> {
    let survey = &tape.survey;
    let order = match tape.order {
        TapeOrder::Sequential => "in recorded order",
        TapeOrder::Shuffle => "shuffled",
        TapeOrder::Session => "by recorded session",
    };
    // Without recorded sessions, each request is one: not worth a word.
    let sessions = if survey.sessions < survey.requests {
        format!(", {} recorded sessions", thousands(survey.sessions as f64))
    } else {
        String::new()
    };
    let mut lines = vec![format!(
        "  tape      {}: {} ({} distinct{sessions}), {}, replayed {order}{}",
        tape.file.display(),
        crate::model::counted(survey.requests as usize, "request", "requests"),
        thousands(survey.distinct as f64),
        crate::model::counted(survey.routes.len(), "route", "routes"),
        if tape.preserve_mix { ", spread to keep its route mix" } else { "" }
    )];
    match tape.realism() {
        // A warning says it already, below.
        Some(_) if tape.warned() => {}
        Some(realism) => lines.push(format!("  realism   {realism}")),
        None => lines.push("  realism   closed model: the requests sent depend on the target's speed".to_owned()),
    }
    for route in survey.routes.iter().take(10) {
        let share = route.requests as f64 / survey.requests.max(1) as f64 * 100.0;
        let ids = if route.distinct_ids == 0 {
            String::new()
        } else {
            format!(", {} distinct ids", thousands(route.distinct_ids as f64))
        };
        lines.push(format!("  route     {share:5.1} %  {}{ids}", crate::outside_text::printable(&route.key)));
    }
    lines
}

/// What the config means, in the words a user would check it against. Secrets show as set or not set.
fn describe(config: &Config) -> Vec<String> {
    let token = if config.server.api_token.is_some() { "set" } else { "not set: POST routes are refused" };
    let mut lines = vec![
        format!("{} is valid.", config.source.display()),
        format!("  database  {}", config.database),
        format!("  server    listens on {}, API token {token}", config.server.listen),
    ];
    if config.scenarios.is_empty() {
        lines.push("  no [[scenario]] yet: add one to run anything".to_owned());
    }
    lines.extend(config.scenarios.iter().flat_map(describe_scenario));
    for notify in &config.notifiers {
        let state = if notify.url.is_some() { "set" } else { "not set" };
        let (name, kind, env) = (&notify.name, notify.kind.as_str(), &notify.url_env);
        lines.push(format!("  notify    {name} ({kind}) via ${env} ({state})"));
    }
    lines
}

fn describe_scenario(scenario: &ScenarioConfig) -> Vec<String> {
    let target = scenario.target.as_ref().map(|t| format!(" against {}", redact_url(t))).unwrap_or_default();
    let mut lines = vec![format!("  scenario  {} from {}{target}", scenario.name, scenario.file.display())];
    match &scenario.schedule {
        Some(schedule) => {
            lines.push(format!("            schedule {}", schedule.understood_as()));
            if scenario.run_by == crate::config::RunBy::Elsewhere {
                lines.push(
                    "            run elsewhere (a CronJob, CI): serve only watches for its nights, alerting missing_run"
                        .to_owned(),
                );
            }
            if let Some(next) = schedule.next_after(Utc::now()) {
                lines.push(format!("            next run {}", next.format("%Y-%m-%d %H:%M:%S %Z")));
            }
        }
        None => lines.push("            no schedule: runs only when asked".to_owned()),
    }
    let gates = &scenario.gates;
    lines.push(format!(
        "            baseline {}, at least {} runs, regressions from {} %",
        scenario.baseline, gates.min_runs, gates.min_effect_pct
    ));
    lines.extend(super::telemetry::describe_sources(scenario));
    if let Some(capacity) = &scenario.capacity {
        lines.push(format!("            capacity search {}", capacity.describe()));
    }
    lines
}
