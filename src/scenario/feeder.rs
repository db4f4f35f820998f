//! `[[data]]` feeders: rows from CSV or JSON Lines files that spread requests over real data.
//!
//! A file is read once, when the scenario is loaded, so a missing file or a malformed line is reported by
//! `validate` with its line number. Each session draws one row per feeder its flow uses; [`Cursor`] decides
//! which, in the order the scenario asks for.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde_json::Value;

use super::bounded_file::FileProblem;
use super::distribution::Draw;

/// A loaded data file.
#[derive(Debug, Clone)]
pub struct Feeder {
    /// Its name in templates: `users.email` reads column `email` of feeder `users`.
    pub name: String,
    /// Column names, in file order.
    pub columns: Vec<String>,
    /// Rows, each with one value per column. CSV values stay strings (an id like `007` must not lose its
    /// zeros); JSON Lines values keep their JSON type.
    pub rows: Arc<[Vec<Value>]>,
    /// Which row comes next.
    pub order: Order,
    /// What happens after the last row.
    pub when_exhausted: WhenExhausted,
}

/// Which row a session draws.
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    /// File order.
    Sequential,
    /// Any row, independently each time (rows repeat).
    Random,
    /// A seeded permutation, then in that order: every row once before any repeats.
    Shuffle,
    /// A skewed draw of the row's index (`order = "zipf"`, `"hotspot"` or `"weighted"`; see
    /// `feeder_skew`): a few rows hot, many cold.
    Skewed(Draw),
}

/// What a feeder does after its last row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenExhausted {
    /// Start again from the first row.
    Wrap,
    /// Start no more sessions: the run ends early (and is invalid if that cuts its planned load).
    Stop,
}

impl Feeder {
    /// Reads `path` as CSV (with a header line) or JSON Lines (one object per line), by its extension.
    pub fn load(name: &str, path: &Path, order: Order, when_exhausted: WhenExhausted) -> Result<Self, String> {
        let text = super::bounded_file::read_text(path, MAX_FEEDER_BYTES).map_err(|problem| match problem {
            FileProblem::Unreadable(_) => problem.about(&path.display().to_string()),
            _ => format!(
                "{}; a feeder is a CSV or JSON Lines file, held in memory",
                problem.about(&path.display().to_string())
            ),
        })?;
        let is_json_lines = path.extension().is_some_and(|e| e == "jsonl" || e == "ndjson");
        let (columns, rows) = if is_json_lines { json_lines(path, &text)? } else { csv_rows(path, &text)? };
        if rows.is_empty() {
            return Err(format!("{} has no data rows", path.display()));
        }
        Ok(Self { name: name.to_owned(), columns, rows: rows.into(), order, when_exhausted })
    }
}

/// The largest feeder file read: every row is held in memory for the run.
pub const MAX_FEEDER_BYTES: u64 = 256_000_000;

fn csv_rows(path: &Path, text: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let columns: Vec<String> = reader
        .headers()
        .map_err(|e| format!("{}:1: cannot read the CSV header: {e}", path.display()))?
        .iter()
        .map(str::to_owned)
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, csv::Position::line);
            format!("{}:{line}: {e}", path.display())
        })?;
        rows.push(record.iter().map(|v| Value::String(v.to_owned())).collect());
    }
    Ok((columns, rows))
}

fn json_lines(path: &Path, text: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), String> {
    let mut columns: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = format!("{}:{}", path.display(), index + 1);
        let object = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err(format!("{at}: each line must be a JSON object")),
            Err(e) => return Err(format!("{at}: not JSON: {e}")),
        };
        if columns.is_empty() {
            columns = object.keys().cloned().collect();
        }
        let row = columns
            .iter()
            .map(|c| object.get(c).cloned().ok_or_else(|| format!("{at}: missing key `{c}` (the first line has it)")))
            .collect::<Result<_, _>>()?;
        rows.push(row);
    }
    Ok((columns, rows))
}

/// Hands out a feeder's rows during a run.
#[derive(Debug)]
pub struct Cursor {
    next: AtomicUsize,
    /// A segment of a split night takes rows `first`, `first + step`, … of the one machine's order, so the
    /// segments share the rows out instead of all starting at the first (`Cursor::segment`).
    first: usize,
    step: usize,
    /// For `Shuffle`: the seeded permutation of row indices.
    permutation: Vec<usize>,
}

impl Cursor {
    /// A cursor at the first row, shuffled with `seed` if the feeder asks for it.
    #[must_use]
    pub fn new(feeder: &Feeder, seed: u64) -> Self {
        let mut permutation = Vec::new();
        if feeder.order == Order::Shuffle {
            permutation = (0..feeder.rows.len()).collect();
            permutation.shuffle(&mut SmallRng::seed_from_u64(seed));
        }
        Self { next: AtomicUsize::new(0), first: 0, step: 1, permutation }
    }

    /// The cursor of `segment` of a split night: this segment's draws are every N-th of one machine's,
    /// starting at its index.
    #[must_use]
    pub fn segment(self, segment: Option<crate::model::Segment>) -> Self {
        match segment {
            Some(s) => Self { first: s.index() as usize, step: s.count() as usize, ..self },
            None => self,
        }
    }

    /// The next row, or `None` when a `stop` feeder has run out.
    pub fn draw<'f>(&self, feeder: &'f Feeder, rng: &mut SmallRng) -> Option<&'f [Value]> {
        let len = feeder.rows.len();
        let index = match &feeder.order {
            Order::Random => rng.random_range(0..len),
            // The draw was made for this feeder's rows: its indices are below their count.
            Order::Skewed(draw) => draw.sample(rng, 0).as_u64().map_or(0, |i| i as usize).min(len - 1),
            Order::Sequential | Order::Shuffle => {
                let n = self.first.saturating_add(self.next.fetch_add(1, Ordering::Relaxed).saturating_mul(self.step));
                if n >= len && feeder.when_exhausted == WhenExhausted::Stop {
                    return None;
                }
                let position = n % len;
                if feeder.order == Order::Shuffle { self.permutation[position] } else { position }
            }
        };
        Some(&feeder.rows[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feeder(order: Order, when_exhausted: WhenExhausted) -> Feeder {
        let rows: Vec<Vec<Value>> = (0..4).map(|i| vec![Value::from(i)]).collect();
        Feeder { name: "n".into(), columns: vec!["i".into()], rows: rows.into(), order, when_exhausted }
    }

    fn draws(feeder: &Feeder, count: usize) -> Vec<Option<i64>> {
        let cursor = Cursor::new(feeder, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        (0..count).map(|_| cursor.draw(feeder, &mut rng).map(|row| row[0].as_i64().unwrap())).collect()
    }

    #[test]
    fn sequential_wraps_or_stops() {
        let wrap = draws(&feeder(Order::Sequential, WhenExhausted::Wrap), 6);
        assert_eq!(wrap, [0, 1, 2, 3, 0, 1].map(Some));
        let stop = draws(&feeder(Order::Sequential, WhenExhausted::Stop), 5);
        assert_eq!(stop, [Some(0), Some(1), Some(2), Some(3), None]);
    }

    #[test]
    fn shuffle_gives_every_row_once_per_pass() {
        let mut pass: Vec<_> = draws(&feeder(Order::Shuffle, WhenExhausted::Wrap), 4).into_iter().flatten().collect();
        pass.sort_unstable();
        assert_eq!(pass, [0, 1, 2, 3]);
    }
}
