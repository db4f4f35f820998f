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
use super::row_cap::{RowHolders, RowLease};
use super::skew_tally::SkewTally;

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
    /// At most so many sessions hold one row at once (`max_sessions_per_row`); `None`: no cap.
    pub max_sessions_per_row: Option<u32>,
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
        Ok(Self {
            name: name.to_owned(),
            columns,
            rows: rows.into(),
            order,
            when_exhausted,
            max_sessions_per_row: None,
        })
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
    // `users.name` must read one column: a second one of the same name would be silently never read.
    // Unnamed columns (a spreadsheet's trailing commas) cannot be read by name at all: only names count.
    if let Some((i, name)) = columns.iter().enumerate().find(|(i, c)| !c.is_empty() && columns[..*i].contains(c)) {
        return Err(format!(
            "{}:1: column {} is named `{}` as an earlier one is: name each column once",
            path.display(),
            i + 1,
            crate::outside_text::printable(name)
        ));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, csv::Position::line);
            format!("{}:{line}: {e}", path.display())
        })?;
        // A quote never closed takes the next lines into one value, and the file reads rows short: a value whose
        // later lines hold a quote or a comma (rows swallowed) is refused, naming where it began. A quoted
        // value over lines of plain text (an address, a comment) is read as it is.
        let swallowed = |v: &str| v.split_once('\n').is_some_and(|(_, rest)| rest.contains(['"', ',']));
        if let Some(column) = record.iter().position(swallowed) {
            let line = record.position().map_or(0, csv::Position::line);
            return Err(format!(
                "{}:{line}: the value of `{}` runs over several lines: a quote opened and never closed? (a value \
                 that holds a line break is written in a JSON Lines feeder, as \"\\n\")",
                path.display(),
                crate::outside_text::printable(&columns.get(column).cloned().unwrap_or_default())
            ));
        }
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
    /// For a skewed order: what the run drew, beside what `validate` predicted.
    tally: Option<SkewTally>,
    /// With `max_sessions_per_row`: how many sessions hold each row.
    holders: Option<RowHolders>,
}

/// A session's draw from a feeder.
#[derive(Debug)]
pub enum Drawn<'c> {
    /// A row, held until the lease is dropped when the feeder caps its sessions per row.
    Row(&'c [Value], Option<RowLease<'c>>),
    /// A `stop` feeder ran out: no more sessions may start.
    OutOfData,
    /// Every row is held by as many sessions as `max_sessions_per_row` allows.
    EveryRowHeld(u32),
}

/// How often a row held to its cap is drawn again, in its own order, before the next free row is taken.
const REDRAWS: usize = 8;

impl Cursor {
    /// A cursor at the first row, shuffled with `seed` if the feeder asks for it.
    #[must_use]
    pub fn new(feeder: &Feeder, seed: u64) -> Self {
        let mut permutation = Vec::new();
        if feeder.order == Order::Shuffle {
            permutation = (0..feeder.rows.len()).collect();
            permutation.shuffle(&mut SmallRng::seed_from_u64(seed));
        }
        let tally = match &feeder.order {
            Order::Skewed(draw) => SkewTally::new(feeder.name.clone(), draw),
            _ => None,
        };
        let holders = feeder.max_sessions_per_row.map(|cap| RowHolders::new(feeder.rows.len(), cap));
        Self { next: AtomicUsize::new(0), first: 0, step: 1, permutation, tally, holders }
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

    /// What a skewed feeder drew so far; `None` for the other orders.
    #[must_use]
    pub fn tally(&self) -> Option<&SkewTally> {
        self.tally.as_ref()
    }

    /// The next row for a session.
    pub fn draw<'c>(&'c self, feeder: &'c Feeder, rng: &mut SmallRng) -> Drawn<'c> {
        let Some(holders) = &self.holders else {
            return match self.pick(feeder, rng) {
                Some(index) => self.hand_out(feeder, index, None),
                None => Drawn::OutOfData,
            };
        };
        let mut last = 0;
        for _ in 0..REDRAWS {
            let Some(index) = self.pick(feeder, rng) else { return Drawn::OutOfData };
            if let Some(lease) = holders.take(index) {
                return self.hand_out(feeder, index, Some(lease));
            }
            last = index;
        }
        match holders.take_next_free(last) {
            Some((index, lease)) => self.hand_out(feeder, index, Some(lease)),
            None => Drawn::EveryRowHeld(holders.cap()),
        }
    }

    /// Row `index`, counted for a skewed order at its own rank.
    fn hand_out<'c>(&'c self, feeder: &'c Feeder, index: usize, lease: Option<RowLease<'c>>) -> Drawn<'c> {
        if let (Some(tally), Order::Skewed(draw)) = (&self.tally, &feeder.order)
            && let Some(rank) = draw.rank_of_index(index as u64)
        {
            tally.record(rank);
        }
        Drawn::Row(&feeder.rows[index], lease)
    }

    /// The index the order gives next, or `None` when a `stop` feeder has run out.
    fn pick(&self, feeder: &Feeder, rng: &mut SmallRng) -> Option<usize> {
        let len = feeder.rows.len();
        Some(match &feeder.order {
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feeder(order: Order, when_exhausted: WhenExhausted) -> Feeder {
        let rows: Vec<Vec<Value>> = (0..4).map(|i| vec![Value::from(i)]).collect();
        Feeder {
            name: "n".into(),
            columns: vec!["i".into()],
            rows: rows.into(),
            order,
            when_exhausted,
            max_sessions_per_row: None,
        }
    }

    fn draws(feeder: &Feeder, count: usize) -> Vec<Option<i64>> {
        let cursor = Cursor::new(feeder, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        (0..count)
            .map(|_| match cursor.draw(feeder, &mut rng) {
                Drawn::Row(row, _) => Some(row[0].as_i64().unwrap()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_csv_that_would_read_wrong_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| {
            let file = dir.path().join("f.csv");
            std::fs::write(&file, text).unwrap();
            Feeder::load("f", &file, Order::Sequential, WhenExhausted::Wrap).map(|f| f.rows.len())
        };
        assert_eq!(load("name,query\nCafé,x\n\"Q4 plan\",q\n"), Ok(2));
        // A quote never closed would take the rest of the file into one value.
        let error = load("name,query\n\"Café Roadmap 1,Café x\n\"Q4 plan 3\",Q4\n").unwrap_err();
        assert!(error.ends_with("f.csv:2: the value of `name` runs over several lines: a quote opened and never closed? (a value that holds a line break is written in a JSON Lines feeder, as \"\\n\")"), "{error}");
        assert_eq!(load("name,address\nJane,\"12 Main St\nSpringfield\"\n"), Ok(1), "a value over lines of text");
        assert_eq!(load("id,name,,\n1,a,,\n"), Ok(1), "a spreadsheet's trailing commas");
        let error = load("name,query,name\na,b,c\n").unwrap_err();
        assert!(
            error.ends_with("f.csv:1: column 3 is named `name` as an earlier one is: name each column once"),
            "{error}"
        );
    }

    #[test]
    fn sequential_wraps_or_stops() {
        let wrap = draws(&feeder(Order::Sequential, WhenExhausted::Wrap), 6);
        assert_eq!(wrap, [0, 1, 2, 3, 0, 1].map(Some));
        let stop = draws(&feeder(Order::Sequential, WhenExhausted::Stop), 5);
        assert_eq!(stop, [Some(0), Some(1), Some(2), Some(3), None]);
    }

    #[test]
    fn a_capped_row_is_not_handed_out_again_until_given_back() {
        let capped = Feeder { max_sessions_per_row: Some(1), ..feeder(Order::Random, WhenExhausted::Wrap) };
        let cursor = Cursor::new(&capped, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut held: Vec<(i64, Option<RowLease<'_>>)> = (0..4)
            .map(|_| match cursor.draw(&capped, &mut rng) {
                Drawn::Row(row, lease) => (row[0].as_i64().unwrap(), lease),
                other => panic!("four rows, one session each: {other:?}"),
            })
            .collect();
        let mut rows: Vec<i64> = held.iter().map(|(row, _)| *row).collect();
        rows.sort_unstable();
        assert_eq!(rows, [0, 1, 2, 3], "each row once while the others are held");
        assert!(matches!(cursor.draw(&capped, &mut rng), Drawn::EveryRowHeld(1)));
        let (given_back, _) = held.remove(2);
        match cursor.draw(&capped, &mut rng) {
            Drawn::Row(row, _) => assert_eq!(row[0].as_i64(), Some(given_back)),
            other => panic!("row {given_back} was given back: {other:?}"),
        }
    }

    #[test]
    fn shuffle_gives_every_row_once_per_pass() {
        let mut pass: Vec<_> = draws(&feeder(Order::Shuffle, WhenExhausted::Wrap), 4).into_iter().flatten().collect();
        pass.sort_unstable();
        assert_eq!(pass, [0, 1, 2, 3]);
    }
}
