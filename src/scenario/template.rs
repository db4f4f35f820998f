//! `{{ … }}` templates in paths, queries, headers and bodies.
//!
//! An expression is a name (`board_id`, a session variable or `[vars]` constant; `users.email`, a feeder
//! column) or one of a closed set of functions: `uuid()`, `randint(a, b)`, `choice(x, y, …)`, `seq()`, `now()`
//! (or `now("unix")`, `now("unix_ms")`), `env("NAME")`, the skewed draws, and the encoders `u16be(x)`,
//! `u32be(x)`, `u64be(x)` (an integer as big-endian hexadecimal bytes, of any one expression). Names are resolved when the scenario is loaded, so a
//! typo is an error at `validate` time, not a runtime surprise; `env` is read then too. A template that is
//! exactly one expression keeps its JSON type (`"{{ randint(1, 9) }}"` renders a number in a JSON body).

use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use rand::rngs::SmallRng;
use serde_json::Value;

use super::distribution::Draw;
use super::skew_tally::SkewTally;

mod parse;

pub use parse::FUNCTIONS;
use parse::parse_expr;

/// A compiled template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Expr(Expr),
}

/// One resolved expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A column of the row the session drew from a feeder.
    Feeder {
        /// Index of the feeder.
        feeder: usize,
        /// Index of the column.
        column: usize,
    },
    /// A session variable set by an earlier step's `extract`.
    Variable(usize),
    /// A `[vars]` constant or an `env("…")` value read at load time.
    Constant(Value),
    /// A random UUID (version 4), from the session's seeded generator.
    Uuid,
    /// A random integer in `[low, high]`.
    RandInt(i64, i64),
    /// One of the values, at random.
    Choice(Vec<Value>),
    /// 1, 2, 3, … across the whole run.
    Seq,
    /// The current time: RFC 3339, Unix seconds or Unix milliseconds.
    Now(NowFormat),
    /// A skewed draw: `zipf(…)`, `hotspot(…)`, `weighted(…)` and the others of [`super::distribution`].
    Draw {
        /// What it draws.
        draw: Draw,
        /// Its number among the plan's draws, given as the scenario is loaded: where a run counts what it
        /// drew ([`DrawTallies`]).
        site: usize,
    },
    /// `u16be(x)`, `u32be(x)`, `u64be(x)`: the integer `x` gives as big-endian bytes, in hexadecimal, for a
    /// binary WebSocket message's request id (`binary_hex = "01 {{ u32be(seq()) }}"`).
    BigEndian(Width, Box<Expr>),
}

impl Expr {
    /// The expression whose value this one writes: itself, or what an encoder encodes.
    #[must_use]
    pub fn source(&self) -> &Expr {
        match self {
            Self::BigEndian(_, inner) => inner.source(),
            other => other,
        }
    }

    fn source_mut(&mut self) -> &mut Expr {
        match self {
            Self::BigEndian(_, inner) => inner.source_mut(),
            other => other,
        }
    }
}

/// The width of a big-endian encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// `u16be`: 2 bytes.
    U16,
    /// `u32be`: 4 bytes.
    U32,
    /// `u64be`: 8 bytes.
    U64,
}

impl Width {
    fn of(function: &str) -> Option<Self> {
        match function {
            "u16be" => Some(Self::U16),
            "u32be" => Some(Self::U32),
            "u64be" => Some(Self::U64),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::U16 => "u16be",
            Self::U32 => "u32be",
            Self::U64 => "u64be",
        }
    }

    /// `value` (an integer, or a string of one) in hexadecimal, two digits a byte; a value that is no such
    /// integer is written as words, which no hexadecimal message accepts: the send fails saying which value.
    fn hex(self, value: &Value) -> String {
        let bytes = match self {
            Self::U16 => 2,
            Self::U32 => 4,
            Self::U64 => 8,
        };
        let number = match value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match number.filter(|n| bytes == 8 || *n < 1 << (8 * bytes)) {
            Some(n) => format!("{n:0width$x}", width = bytes * 2),
            None => format!("({value} is not a {} integer)", self.name()),
        }
    }
}

/// How `now()` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NowFormat {
    /// `2026-11-30T05:24:53.123Z`.
    Rfc3339,
    /// Seconds since the Unix epoch.
    Unix,
    /// Milliseconds since the Unix epoch.
    UnixMs,
}

/// What the compiler asks about names: `Ok(expr)` if the dotted name is known here, `Err(message)` if not.
pub type Resolver<'a> = dyn Fn(&[&str]) -> Result<Expr, String> + 'a;

/// What rendering reads: the session's feeder rows and variables, its random generator, the run's counter.
pub struct RenderContext<'a> {
    /// Per feeder, the row this session drew (`None` for feeders its flow does not use).
    pub rows: &'a [Option<&'a [Value]>],
    /// Per session variable, its value once extracted.
    pub variables: &'a [Option<Value>],
    /// The session's generator, seeded from the run's seed.
    pub rng: &'a mut SmallRng,
    /// The run-wide counter behind `seq()`.
    pub seq: &'a AtomicU64,
    /// The run's counts of what its skewed draws drew.
    pub tallies: &'a DrawTallies,
}

/// Per draw site of a plan ([`Expr::Draw`]'s `site`), the counts of what a run drew there; sites without a
/// shape over keys (sizes, `latest`), and anything rendered outside a run, count nothing.
#[derive(Debug, Default)]
pub struct DrawTallies {
    by_site: Vec<Option<SkewTally>>,
}

impl DrawTallies {
    /// The tallies of `sites`, each at its site number.
    #[must_use]
    pub fn new(sites: impl IntoIterator<Item = (usize, SkewTally)>) -> Self {
        let mut by_site: Vec<Option<SkewTally>> = Vec::new();
        for (site, tally) in sites {
            if by_site.len() <= site {
                by_site.resize_with(site + 1, || None);
            }
            by_site[site] = Some(tally);
        }
        Self { by_site }
    }

    fn record(&self, site: usize, rank: Option<u64>) {
        if let (Some(Some(tally)), Some(rank)) = (self.by_site.get(site), rank) {
            tally.record(rank);
        }
    }

    /// The tally of site `site`, if it counts.
    #[must_use]
    pub fn get(&self, site: usize) -> Option<&SkewTally> {
        self.by_site.get(site).and_then(Option::as_ref)
    }
}

impl Template {
    /// Compiles `text`, resolving names with `resolve` and `env("…")` with `env`.
    pub fn compile(text: &str, resolve: &Resolver<'_>, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| format!("`{{{{` without a closing `}}}}` in `{text}`"))?;
            let source = after[..close].trim();
            let expr = parse_expr(source, resolve, env).map_err(|e| format!("in `{{{{ {source} }}}}`: {e}"))?;
            parts.push(Part::Expr(expr));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// A template of fixed text.
    #[must_use]
    pub fn literal(text: &str) -> Self {
        Self { parts: vec![Part::Text(text.to_owned())] }
    }

    /// The text, if it has no expressions.
    #[must_use]
    pub fn as_literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Text(text)] => Some(text),
            _ => None,
        }
    }

    /// Whether it is one expression and nothing else (`{{ location }}`): a whole value, not a part of a text.
    #[must_use]
    pub fn is_one_expression(&self) -> bool {
        matches!(self.parts.as_slice(), [Part::Expr(_)])
    }

    /// The expressions it uses.
    pub fn expressions(&self) -> impl Iterator<Item = &Expr> {
        self.parts.iter().filter_map(|p| match p {
            Part::Expr(e) => Some(e),
            Part::Text(_) => None,
        })
    }

    /// Numbers its draws from `next` on (advancing it), so that each draw of a plan has a site of its own.
    pub fn number_draws(&mut self, next: &mut usize) {
        for part in &mut self.parts {
            if let Part::Expr(expr) = part
                && let Expr::Draw { site, .. } = expr.source_mut()
            {
                *site = *next;
                *next += 1;
            }
        }
    }

    /// The text with each expression replaced by `{name}`-style placeholders: the metric key of a step that
    /// has no name, so `/boards/{{ id }}` is one endpoint however many ids are requested.
    #[must_use]
    pub fn route(&self, names: &dyn Fn(&Expr) -> String) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Expr(e) => format!("{{{}}}", names(e)),
            })
            .collect()
    }

    /// Renders to text.
    pub fn render(&self, cx: &mut RenderContext<'_>) -> String {
        match self.parts.as_slice() {
            [Part::Text(text)] => text.clone(),
            _ => self.render_escaped(cx, str::to_owned),
        }
    }

    /// Renders to text with each expression's value passed through `escape` and what the scenario wrote as it
    /// is (its text and its `[vars]` constants): a path percent-encodes what a feeder row, a draw or an earlier
    /// answer puts in it.
    pub fn render_escaped(&self, cx: &mut RenderContext<'_>, escape: impl Fn(&str) -> String) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Expr(Expr::Constant(value)) => push_text(&mut out, value),
                Part::Expr(e) => {
                    let mut value = String::new();
                    push_text(&mut value, &eval(e, cx));
                    out.push_str(&escape(&value));
                }
            }
        }
        out
    }

    /// Renders to a JSON value: a lone expression keeps its type, anything else is a string.
    pub fn render_value(&self, cx: &mut RenderContext<'_>) -> Value {
        match self.parts.as_slice() {
            [Part::Expr(e)] => eval(e, cx),
            _ => Value::String(self.render(cx)),
        }
    }
}

fn push_text(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Null => {}
        other => out.push_str(&other.to_string()),
    }
}

fn eval(expr: &Expr, cx: &mut RenderContext<'_>) -> Value {
    match expr {
        Expr::Feeder { feeder, column } => {
            cx.rows.get(*feeder).copied().flatten().and_then(|row| row.get(*column)).cloned().unwrap_or(Value::Null)
        }
        Expr::Variable(index) => cx.variables.get(*index).cloned().flatten().unwrap_or(Value::Null),
        Expr::Constant(value) => value.clone(),
        Expr::Uuid => Value::String(uuid_v4(cx.rng.random())),
        Expr::RandInt(low, high) => Value::from(cx.rng.random_range(*low..=*high)),
        Expr::Choice(values) => values[cx.rng.random_range(0..values.len())].clone(),
        Expr::Seq => Value::from(cx.seq.fetch_add(1, Ordering::Relaxed) + 1),
        Expr::Draw { draw, site } => {
            let (value, rank) = draw.sample_ranked(cx.rng, cx.seq.load(Ordering::Relaxed));
            cx.tallies.record(*site, rank);
            value
        }
        Expr::BigEndian(width, inner) => Value::String(width.hex(&eval(inner, cx))),
        Expr::Now(format) => {
            let now = chrono::Utc::now();
            match format {
                NowFormat::Rfc3339 => Value::String(now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
                NowFormat::Unix => Value::from(now.timestamp()),
                NowFormat::UnixMs => Value::from(now.timestamp_millis()),
            }
        }
    }
}

/// Formats 16 random bytes as a version-4 UUID (RFC 9562 §5.4).
fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().fold(String::with_capacity(32), |mut hex, b| {
        hex.push_str(&format!("{b:02x}"));
        hex
    });
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
