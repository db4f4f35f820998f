//! `degrade detect`: the regression detector on raw series, JSON Lines in, JSON Lines out (DESIGN.md §6).
//!
//! Each input line is one metric of one endpoint: its nightly history and tonight's candidate. Each output
//! line says whether to alert and why. A line that cannot be read is reported on standard error with its line
//! number and field, and the command exits 2 after answering every readable line.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use super::Exit;
use crate::analysis::detector::{Change, Direction, Question, SeriesKind, detect};

/// One input line.
#[derive(Debug, Deserialize)]
struct Case {
    id: serde_json::Value,
    #[serde(default)]
    metric: String,
    #[serde(default)]
    kind: String,
    direction: Direction,
    history: Vec<Point>,
    candidate: Point,
}

#[derive(Debug, Deserialize)]
struct Point {
    value: f64,
}

/// One output line.
#[derive(Debug, Serialize)]
struct Answer {
    id: serde_json::Value,
    alert: bool,
    baseline: Option<f64>,
    delta_pct: Option<f64>,
    reason: String,
}

/// Settings for the detector, from the command line.
#[derive(Debug, clap::Args)]
pub struct DetectArgs {
    /// The smallest change, in percent, that counts as a regression.
    #[arg(long, default_value_t = 10.0, value_name = "PCT")]
    pub min_effect_pct: f64,
    /// Fewer history points than this: no alert, reason "inconclusive". 3 is the fewest from which a level
    /// can be told at all; with so few, only a very large jump is significant. (`degrade check` uses the
    /// scenario's `min_runs`, default 5.)
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub min_runs: u32,
}

pub(super) fn run(args: &DetectArgs) -> anyhow::Result<Exit> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut bad_lines = 0;
    for (index, line) in stdin.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let mut deserializer = serde_json::Deserializer::from_str(&line);
        match serde_path_to_error::deserialize::<_, Case>(&mut deserializer) {
            Ok(case) => {
                serde_json::to_writer(&mut stdout, &answer(case, args))?;
                stdout.write_all(b"\n")?;
            }
            Err(e) => {
                bad_lines += 1;
                let field = e.path().to_string();
                eprintln!("stdin:{}: {field}: {}", index + 1, e.inner());
            }
        }
    }
    stdout.flush()?;
    if bad_lines > 0 {
        eprintln!("error: {bad_lines} line{} could not be read", if bad_lines == 1 { "" } else { "s" });
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}

fn answer(case: Case, args: &DetectArgs) -> Answer {
    let Case { id, metric, kind, direction, history, candidate } = case;
    let history: Vec<f64> = history.iter().map(|p| p.value).collect();
    let kind = if kind.contains("error") || metric.contains("error") {
        SeriesKind::ErrorRate
    } else if direction == Direction::LowerIsWorse {
        SeriesKind::Throughput
    } else {
        SeriesKind::Latency
    };
    let question = Question {
        history: &history,
        candidate: candidate.value,
        direction,
        kind,
        min_effect_pct: args.min_effect_pct,
        min_runs: args.min_runs as usize,
    };
    let decision = detect(&question);
    Answer {
        id,
        alert: decision.change == Change::Regression,
        baseline: decision.baseline,
        delta_pct: decision.delta_pct,
        reason: decision.reason,
    }
}
