//! `degrade run`: runs one scenario now, with a live progress line, stores the run with all its results in
//! one transaction, and prints the per-endpoint table and the validity verdict.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use chrono::Utc;
use indicatif::{ProgressBar, ProgressStyle};

use super::run_report::{RunFormat, RunReport};
use super::{ConfigSource, Exit, print_stdout, shutdown_signal};
use crate::config::{Config, ScenarioConfig};
use crate::engine::{self, Progress};
use crate::scenario::{self, Plan};
use crate::store::{NewRun, RunStatus, Store};

/// What to run and how.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A [[scenario]] name from degrade.toml, or a scenario file's path. Default: the only scenario.
    pub scenario: Option<String>,
    /// Stretch or shrink the whole plan to this length (e.g. 20s for a smoke run); stages keep their shares.
    #[arg(long, value_name = "DURATION", value_parser = |s: &str| humantime::parse_duration(s).map_err(|e| e.to_string()))]
    pub duration: Option<Duration>,
    /// Multiply every rate and user count (e.g. 0.1 for a gentle smoke run).
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0, value_parser = positive_factor)]
    pub rate_scale: f64,
    /// The build under test, instead of asking the scenario's version_url or version_command.
    #[arg(long, value_name = "ID")]
    pub build: Option<String>,
    /// How to print the result.
    #[arg(long, short, value_enum, default_value_t = RunFormat::Human)]
    pub format: RunFormat,
}

fn positive_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// The scenario to run: its name (the key of its runs), its plan and its config entry, if any.
struct Chosen {
    name: String,
    plan: Plan,
    config: Option<ScenarioConfig>,
}

pub(super) async fn run(source: &ConfigSource, args: RunArgs) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults()?;
    let chosen = choose(&config, args.scenario.as_deref())?;
    let scaled = args.duration.is_some() || (args.rate_scale - 1.0).abs() > f64::EPSILON;
    let plan = if scaled { chosen.plan.scaled(args.duration, args.rate_scale) } else { chosen.plan };
    let build_id = match (&args.build, chosen.config.as_ref().and_then(|c| c.build.version.as_ref())) {
        (Some(id), _) => Some(id.clone()),
        (None, Some(version)) => Some(crate::build::resolve_version(version).await?),
        (None, None) => None,
    };
    let store = Store::connect(&config.database)
        .await
        .with_context(|| format!("cannot open the database {}", config.database))?;
    let outcome = run_and_store(&store, &chosen.name, plan, build_id).await;
    store.close().await;
    let report = outcome?;
    print_stdout(&report.render(args.format))?;
    Ok(match report.status {
        RunStatus::Finished => Exit::Ok,
        RunStatus::Invalid => Exit::Inconclusive,
        _ => Exit::Error,
    })
}

fn choose(config: &Config, wanted: Option<&str>) -> anyhow::Result<Chosen> {
    let env = |name: &str| std::env::var(name).ok();
    let entry = match wanted {
        Some(name) => config.scenario(name).cloned(),
        None => match config.scenarios.as_slice() {
            [only] => Some(only.clone()),
            [] => bail!(
                "no [[scenario]] in {}; name a scenario file: degrade run scenarios/x.toml",
                config.source.display()
            ),
            many => {
                let names: Vec<&str> = many.iter().map(|s| s.name.as_str()).collect();
                bail!("several scenarios are configured; name one: {}", names.join(", "))
            }
        },
    };
    let (name, file, target) = match (&entry, wanted) {
        (Some(s), _) => (s.name.clone(), s.file.clone(), s.target.clone()),
        (None, Some(path))
            if std::path::Path::new(path).extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"))
                && std::path::Path::new(path).is_file() =>
        {
            let file = PathBuf::from(path);
            let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            (stem, file, None)
        }
        (None, Some(name)) => {
            let names: Vec<&str> = config.scenarios.iter().map(|s| s.name.as_str()).collect();
            bail!("no [[scenario]] is named `{name}` and no such .toml file exists (configured: {})", names.join(", "))
        }
        (None, None) => unreachable!("no name means the only configured scenario"),
    };
    let plan = scenario::load(&file, target.as_deref(), &env).map_err(|errors| {
        let count = errors.0.len();
        anyhow::anyhow!("{errors}\n{count} problem{} in the scenario", if count == 1 { "" } else { "s" })
    })?;
    Ok(Chosen { name, plan, config: entry })
}

async fn run_and_store(store: &Store, name: &str, plan: Plan, build_id: Option<String>) -> anyhow::Result<RunReport> {
    let new_run = NewRun {
        scenario: name.to_owned(),
        build_id: build_id.clone(),
        seed: plan.seed.cast_signed(),
        scenario_hash: plan.hash.clone(),
        scenario_source: Some(plan.source_text.clone()),
        started_at: Utc::now(),
    };
    let id = store.create_run(&new_run).await.context("cannot record the run's start")?;
    let plan = Arc::new(plan);
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let ctrl_c = tokio::spawn(async move {
        shutdown_signal().await;
        stop_tx.send_replace(true);
    });
    let bar = progress_bar(&plan);
    let measurement = engine::run(Arc::clone(&plan), stop, |p| update(&bar, p)).await;
    bar.finish_and_clear();
    ctrl_c.abort();
    if let Err(e) = store.finish_run(id, &measurement.results).await {
        let _ = store.end_run(id, RunStatus::Failed, &format!("storing the results failed: {e}"), Utc::now()).await;
        return Err(e).context("cannot store the run's results");
    }
    Ok(RunReport { id, scenario: name.to_owned(), build_id, status: measurement.results.status, measurement })
}

fn progress_bar(plan: &Plan) -> ProgressBar {
    let bar = ProgressBar::new(plan.load.duration().as_millis() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:24}] {msg}")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    bar
}

fn update(bar: &ProgressBar, p: &Progress) {
    bar.set_position(p.elapsed.as_millis() as u64);
    let left = p.planned.saturating_sub(p.elapsed);
    bar.set_message(format!(
        "stage {}/{} · {}s of {}s, {}s left · {} req/s · {} requests, {} errors · p95 {:.1} ms",
        p.stage,
        p.stages,
        p.elapsed.as_secs(),
        p.planned.as_secs(),
        left.as_secs(),
        p.snapshot.last_second_rate,
        p.snapshot.requests,
        p.snapshot.errors,
        p.snapshot.last_second_p95_us as f64 / 1000.0
    ));
}
