//! `degrade detect`: the regression detector on raw series, JSON Lines in, JSON Lines out (DESIGN.md §6).
//!
//! Each input line is one metric of one endpoint: its nightly history and tonight's candidate. Each output
//! line says whether to alert and why. With `--runs`, each line is a whole run instead (see `detect_runs`),
//! judged by the same judge as `degrade check`. A line that cannot be read (not UTF-8, not JSON, a missing
//! or wrong field) is reported on standard error with its line number and field, and the command exits 2
//! after answering every readable line.

use std::io::{BufRead, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::Exit;
use super::detect_runs::{RunCase, judge_case};
use crate::analysis::detector::{Change, Direction, Question, SeriesKind, detect};

/// One input line.
#[derive(Debug, Deserialize)]
struct Case {
    id: serde_json::Value,
    /// Optional: without it, a series whose direction is `lower_is_worse` is throughput, else latency.
    kind: Option<Kind>,
    direction: Direction,
    history: Vec<Point>,
    candidate: Point,
}

/// The kinds of series the detector knows; error rates follow their own rule.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Latency,
    Throughput,
    ErrorRate,
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
    #[arg(long, default_value_t = 10.0, value_name = "PCT", value_parser = positive_pct)]
    pub min_effect_pct: f64,
    /// Fewer history points than this: no alert, reason "inconclusive". 3 is the fewest from which a level
    /// can be told at all; with so few, only a very large jump is significant. (`degrade check` uses the
    /// scenario's `min_runs`, default 5.)
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub min_runs: u32,
    /// Judge whole runs instead of single series: each line holds the history nights' and tonight's
    /// per-endpoint figures, and the answer names the endpoints that regressed. The run's own
    /// `min_effect_pct` (else --min-effect-pct) and the default gates apply, as in `degrade check`.
    #[arg(long)]
    pub runs: bool,
}

fn positive_pct(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(pct) if pct.is_finite() && pct > 0.0 && pct <= 1000.0 => Ok(pct),
        _ => Err(format!("`{text}` is not a percentage in (0, 1000]")),
    }
}

pub(super) fn run(args: &DetectArgs) -> anyhow::Result<Exit> {
    if args.runs {
        answer_lines(|case: RunCase| judge_case(case, args.min_effect_pct))
    } else {
        answer_lines(|case: Case| answer(case, args))
    }
}

/// Reads one `C` per line of standard input and writes one JSON line per case that could be read.
fn answer_lines<C: DeserializeOwned, A: Serialize>(answer: impl Fn(C) -> A) -> anyhow::Result<Exit> {
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut bad_lines = 0;
    let mut bytes = Vec::new();
    for number in 1.. {
        bytes.clear();
        if stdin.read_until(b'\n', &mut bytes)? == 0 {
            break;
        }
        let Ok(line) = std::str::from_utf8(&bytes) else {
            bad_lines += 1;
            say!("stdin:{number}: not UTF-8 text");
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        let mut deserializer = serde_json::Deserializer::from_str(line);
        match serde_path_to_error::deserialize::<_, C>(&mut deserializer) {
            Ok(case) => {
                let written = serde_json::to_writer(&mut stdout, &answer(case)).map_err(std::io::Error::from);
                if let Err(e) = written.and_then(|()| stdout.write_all(b"\n")) {
                    return broken_pipe_is_done(e);
                }
            }
            Err(e) => {
                bad_lines += 1;
                say!("stdin:{number}: {}: {}", e.path(), e.inner());
            }
        }
    }
    if let Err(e) = stdout.flush() {
        return broken_pipe_is_done(e);
    }
    if bad_lines > 0 {
        say!("error: {bad_lines} line{} could not be read", if bad_lines == 1 { "" } else { "s" });
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}

/// A reader that stopped reading (`degrade detect | head`) ends the command without an error.
fn broken_pipe_is_done(error: std::io::Error) -> anyhow::Result<Exit> {
    if error.kind() == std::io::ErrorKind::BrokenPipe { Ok(Exit::Ok) } else { Err(error.into()) }
}

fn answer(case: Case, args: &DetectArgs) -> Answer {
    let Case { id, kind, direction, history, candidate } = case;
    let history: Vec<f64> = history.iter().map(|p| p.value).collect();
    let kind = match (kind, direction) {
        (Some(Kind::ErrorRate), _) => SeriesKind::ErrorRate,
        (Some(Kind::Throughput), _) | (None, Direction::LowerIsWorse) => SeriesKind::Throughput,
        (Some(Kind::Latency), _) | (None, Direction::HigherIsWorse) => SeriesKind::Latency,
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
