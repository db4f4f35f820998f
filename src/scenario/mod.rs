//! Scenario files (`scenarios/*.toml`): the workload, declarative, no scripting language.
//!
//! Parse, then validate into a different type: `raw_scenario` mirrors the file, `planner` and `steps` check it
//! and build a [`Plan`], which is all the engine sees. Every error names file, line, column and field.

mod assertion;
mod bounded_file;
pub mod distribution;
pub mod night_sizes;
pub mod feeder;
pub mod feeder_use;
mod feeder_skew;
mod grpc_steps;
mod http_bodies;
pub mod json_template;
pub mod plan;
mod planner;
mod proto;
mod proto_json;
pub mod reflection;
mod raw_scenario;
pub mod skew_shapes;
pub mod skew_tally;
pub mod row_cap;
mod step_key;
mod step_values;
mod scope;
mod steps;
mod target_protocol;
mod ws_capacity;
mod ws_settings;
mod ws_steps;
pub mod tape_source;
pub mod template;
pub mod ws_plan;

use std::path::Path;
use std::time::Duration;

pub use plan::{Load, Plan, Stage, StageShape, TapeOrder, TapeReplay, Think};
pub use tape_source::MAX_TAPE_ROUTES;
pub(crate) use target_protocol::certificates;

use crate::config::{ConfigError, ConfigErrors, Location, parse_raw};

/// The commented example scenario `degrade init` writes; the tests load it, so it always validates.
pub const EXAMPLE_SCENARIO: &str = include_str!("example.toml");

/// Reads and checks the scenario file at `path`. `target_override` (the `[[scenario]] target` of
/// degrade.toml) replaces the file's `[target] base_url`; `env` answers `env("…")` in templates.
pub fn load(
    path: &Path,
    target_override: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, ConfigErrors> {
    let text = bounded_file::read_text(path, MAX_SCENARIO_BYTES).map_err(|problem| match problem {
        bounded_file::FileProblem::NotText(e) => ConfigError::not_utf8(path, &e),
        problem => ConfigError::new(Location::WholeFile(path.to_owned()), "", problem.about("the scenario file")),
    })?;
    parse(path, &text, target_override, env)
}

/// The largest scenario file read: a scenario is a page or two of TOML.
const MAX_SCENARIO_BYTES: u64 = 4_000_000;

/// Checks scenario `text` as if read from `path` (data files are found relative to it).
pub fn parse(
    path: &Path,
    text: &str,
    target_override: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, ConfigErrors> {
    let raw = parse_raw(path, text)?;
    planner::resolve(path, text, raw, target_override, env)
}

impl Plan {
    /// The plan with every stage stretched to total `duration` (if given) and every rate and user count
    /// multiplied by `rate_scale`: a short smoke run of the same shape. The workload hash changes with it,
    /// so a smoke run is never compared with full runs.
    ///
    /// # Errors
    /// When a scaled rate would pass [`plan::MAX_RATE`].
    pub fn scaled(mut self, duration: Option<Duration>, rate_scale: f64) -> Result<Self, String> {
        let total = self.load.duration().as_secs_f64();
        for stage in &mut self.load.stages {
            if let Some(d) = duration {
                stage.duration = Duration::from_secs_f64(stage.duration.as_secs_f64() / total * d.as_secs_f64());
            }
            stage.shape = match stage.shape {
                StageShape::Rate { from, to } if from.max(to) * rate_scale > plan::MAX_RATE => {
                    return Err(format!(
                        "--rate-scale {rate_scale} makes a stage plan {:.0} arrivals per second, more than one \
                         generator can plan (at most {:.0})",
                        from.max(to) * rate_scale,
                        plan::MAX_RATE
                    ));
                }
                StageShape::Rate { from, to } => StageShape::Rate { from: from * rate_scale, to: to * rate_scale },
                StageShape::Users(n) => StageShape::Users(((f64::from(n) * rate_scale).round() as u32).max(1)),
            };
        }
        let tape = self.tape.as_ref().map(|t| t.survey.digest.clone());
        self.hash = workload_hash(&self.source_text, tape.as_deref(), self.query_keys, rate_scale, duration);
        self.reshape = Some(reshape_words(duration, rate_scale));
        if let Some(tape) = &mut self.tape {
            // The tape's realism warning spoke of the planned night: say it again of this one.
            let warning = |tape: &TapeReplay| tape.realism().filter(|_| tape.warned());
            if let Some(before) = warning(tape) {
                self.warnings.retain(|w| !w.contains(&before));
            }
            tape.planned_requests = tape_source::planned_requests(tape, &self.load);
            self.warnings.extend(warning(tape));
        }
        Ok(self)
    }

    /// Segment `segment` of this plan (`degrade run --segment K/N`): the same schedule, of which the engine
    /// sends the arrivals or runs the users the segment owns, with the caps on sessions in flight and on
    /// connections divided the same way, so the N segments together hold what one machine would. The hash is
    /// kept: the merged night is the same workload as a single machine's.
    ///
    /// # Errors
    /// A replayed tape: its requests are handed out in the order sessions ask for them on one machine, which
    /// N machines cannot reproduce exactly.
    pub fn segmented(mut self, segment: crate::model::Segment) -> Result<Self, String> {
        if self.tape.is_some() && segment.count() > 1 {
            return Err(format!(
                "--segment {segment}: a scenario that replays a [[tape]] cannot be split across machines yet (its \
                 requests are handed out in one machine's order); run it on one machine"
            ));
        }
        self.load.max_in_flight = segment.share_of_cap(self.load.max_in_flight);
        self.target.max_connections = self.target.max_connections.map(|c| segment.share_of_cap(c));
        self.segment = Some(segment);
        Ok(self)
    }

    /// One step of a capacity search: the same requests, in the open model, arriving at `rate` a second for
    /// `hold`, every request measured. The hash is kept: a step is part of its night, never a series of its own.
    #[must_use]
    pub fn at_rate(&self, rate: f64, hold: Duration) -> Self {
        let mut step = self.clone();
        let rate = rate.clamp(f64::MIN_POSITIVE, plan::MAX_RATE);
        step.load.model = crate::model::LoadModel::Open;
        step.load.stages =
            vec![Stage { duration: hold, shape: StageShape::Rate { from: rate, to: rate }, measure: true }];
        if let Some(tape) = &mut step.tape {
            tape.planned_requests = tape_source::planned_requests(tape, &step.load);
        }
        step
    }
}

/// A smoke run's options as a user types them: `--duration 20s`, `--rate-scale 0.1`, or both.
fn reshape_words(duration: Option<Duration>, rate_scale: f64) -> String {
    // As one option a user can type: whole seconds, else milliseconds (`--duration 1500ms`).
    let typed =
        |d: Duration| if d.subsec_millis() == 0 { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) };
    let duration = duration.map(|d| format!("--duration {}", typed(d)));
    let scale = ((rate_scale - 1.0).abs() > f64::EPSILON).then(|| format!("--rate-scale {rate_scale}"));
    duration.into_iter().chain(scale).collect::<Vec<_>>().join(" ")
}

/// Identifies a workload: the scenario as parsed (so comments and spacing do not start a new series), the
/// requests of its tape (a new tape is a new series), whether its metric keys name query parameters (a change
/// of keys is a new series; a scenario whose keys did not change keeps its hash), plus any overrides; hashed
/// with [`Fnv`](crate::tape::fnv::Fnv), stable across Rust releases as a stored value must be.
pub(crate) fn workload_hash(
    text: &str,
    tape: Option<&str>,
    query_keys: bool,
    rate_scale: f64,
    duration: Option<Duration>,
) -> String {
    let canonical = text.parse::<toml::Table>().map_or_else(|_| text.to_owned(), |t| t.to_string());
    // Added only when true, so every hash stored before keys named query parameters is still computed alike.
    let keys = if query_keys { "\nkeys=query-names" } else { "" };
    let overrides = match (duration, rate_scale) {
        (None, s) if (s - 1.0).abs() < f64::EPSILON => String::new(),
        (d, s) => format!("\nrate_scale={s} duration={:?}", d.map(|d| d.as_millis())),
    };
    let tape = tape.map(|digest| format!("\ntape={digest}")).unwrap_or_default();
    let hash = crate::tape::fnv::Fnv::default().add((canonical + &tape + keys + &overrides).as_bytes()).value();
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::workload_hash;

    #[test]
    fn keys_naming_query_parameters_change_the_workload_and_nothing_else_does() {
        // FNV-1a of the text as it is (it is not TOML), as every release has hashed it: a scenario whose keys
        // did not change keeps its series.
        assert_eq!(workload_hash("not toml [", None, false, 1.0, None), "f3de72d37025f8d7");
        assert_eq!(workload_hash("not toml [", Some("abc"), false, 1.0, None), "b216029766575a2a");
        let keyed = workload_hash("not toml [", None, true, 1.0, None);
        assert_ne!(keyed, "f3de72d37025f8d7", "a change of keys is a new series");
        assert_ne!(workload_hash("not toml [", None, true, 0.5, None), keyed);
    }
}
