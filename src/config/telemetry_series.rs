//! `[[scenario.telemetry.series]]`: one series a telemetry source keeps, checked. A `scrape` source's series
//! reads samples of the exposition with selectors (`metric`, `minus`, `divide_by`); a `prometheus` source's
//! series is a PromQL `query` the server evaluates over the run's window. Both give the same stored series, so
//! the run page, the judge and the gates never ask where a series came from.

use toml::Spanned;

use super::checker::Checker;
use super::raw_config::RawSeries;
use crate::exposition::Selector;
use crate::model::{SHARE_UNIT, SeriesKind, Worse};

/// The longest PromQL expression a series may hold: a dashboard panel's query is a few hundred characters.
const LONGEST_QUERY: usize = 2000;

/// How a source is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// degrade scrapes the exposition endpoint itself during the measured stages.
    Scrape,
    /// A Prometheus server's HTTP API is queried after the run, over its measured window.
    Prometheus,
}

impl SourceKind {
    /// Its name in the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scrape => "scrape",
            Self::Prometheus => "prometheus",
        }
    }
}

impl std::str::FromStr for SourceKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "scrape" => Ok(Self::Scrape),
            "prometheus" => Ok(Self::Prometheus),
            other => Err(format!(
                "`{}` is not a telemetry kind; use `scrape` (degrade reads an exporter's /metrics itself) or \
                 `prometheus` (degrade queries a Prometheus server after the run)",
                crate::outside_text::clipped(other, 40)
            )),
        }
    }
}

/// What a series reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Reads {
    /// Samples of each scrape, summed (a `scrape` source).
    Samples {
        /// The samples summed into the series.
        metric: Selector,
        /// Samples summed and subtracted (memory used: total minus available).
        minus: Option<Selector>,
        /// Samples summed into the divisor: the series is then a share of them (CPU busy over all CPU time).
        divide_by: Option<Selector>,
    },
    /// A PromQL expression that gives one series, evaluated at each step (a `prometheus` source).
    Query(String),
}

/// One kept series: what to read and how to show it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSpec {
    /// Unique within its source: `CPU busy`.
    pub name: String,
    /// Where its values come from.
    pub reads: Reads,
    /// Gauge or counter (counters become rates).
    pub kind: SeriesKind,
    /// The unit of what it measures: `bytes`, `connections`, `transactions`, `CPU s`, or `share` (a fraction
    /// shown as a percentage).
    pub unit: String,
    /// Which direction is bad.
    pub worse: Worse,
}

impl SeriesSpec {
    /// The selector a scrape divides by, when the series is a share of one.
    #[must_use]
    pub fn divide_by(&self) -> Option<&Selector> {
        match &self.reads {
            Reads::Samples { divide_by, .. } => divide_by.as_ref(),
            Reads::Query(_) => None,
        }
    }

    /// The unit of the series' values: a share, the unit itself for a gauge, or per second for a counter.
    #[must_use]
    pub fn value_unit(&self) -> String {
        match (self.divide_by().is_some(), self.kind) {
            (true, _) => SHARE_UNIT.to_owned(),
            (false, SeriesKind::Gauge) => self.unit.clone(),
            (false, SeriesKind::Counter) => format!("{}/s", self.unit),
        }
    }

    /// For a counter, the unit its growth per 1,000 requests is told in.
    #[must_use]
    pub fn count_unit(&self) -> Option<String> {
        (self.kind == SeriesKind::Counter).then(|| self.unit.clone())
    }

    /// How the series is computed, in one line: `rate(sum(a)) / rate(sum(b))`, or its query (a counter's in
    /// `rate(…)`, as degrade takes it between steps), for `validate` and `probe`.
    #[must_use]
    pub fn formula(&self) -> String {
        let of = |text: String| match self.kind {
            SeriesKind::Gauge => text,
            SeriesKind::Counter => format!("rate({text})"),
        };
        let (metric, minus, divide_by) = match &self.reads {
            Reads::Query(query) => return of(query.split_whitespace().collect::<Vec<_>>().join(" ")),
            Reads::Samples { metric, minus, divide_by } => (metric, minus, divide_by),
        };
        let sum = |s: &Selector| format!("sum({s})");
        let mut numerator = sum(metric);
        if let Some(minus) = minus {
            numerator = format!("{numerator} - {}", sum(minus));
        }
        match divide_by {
            Some(divisor) => format!("{} / {}", of(numerator), of(sum(divisor))),
            None => of(numerator),
        }
    }
}

/// The listed `[[scenario.telemetry.series]]` of a source of `kind` (`None` when the kind itself is wrong:
/// each series is then checked for what it holds), each checked; `None` when any is wrong.
pub(super) fn resolve_series(
    checker: &mut Checker<'_>,
    prefix: &str,
    kind: Option<SourceKind>,
    raw: Vec<RawSeries>,
) -> Option<Vec<SeriesSpec>> {
    let mut series: Vec<SeriesSpec> = Vec::new();
    let mut valid = true;
    for (index, entry) in raw.into_iter().enumerate() {
        let field = format!("{prefix}.series[{index}]");
        if series.iter().any(|s| &s.name == entry.name.get_ref()) {
            let message = format!("another series of this source is named `{}`", entry.name.get_ref());
            checker.error(&entry.name, &format!("{field}.name"), message);
            valid = false;
        }
        match resolve_one(checker, &field, kind, entry) {
            Some(spec) => series.push(spec),
            None => valid = false,
        }
    }
    valid.then_some(series)
}

fn resolve_one(
    checker: &mut Checker<'_>,
    prefix: &str,
    source: Option<SourceKind>,
    raw: RawSeries,
) -> Option<SeriesSpec> {
    let field = |f: &str| format!("{prefix}.{f}");
    let anchor = raw.name.clone();
    let name = checker.check(&raw.name, &field("name"), |n| series_name(n));
    let reads = resolve_reads(checker, prefix, source, &anchor, raw.metric, raw.minus, raw.divide_by, raw.query);
    let kind = checker.check(&raw.kind, &field("kind"), |k| k.parse::<SeriesKind>());
    let unit = checker.check(&raw.unit, &field("unit"), |u| series_unit(u));
    let worse = match &raw.worse {
        Some(w) => checker.check(w, &field("worse"), |w| w.parse::<Worse>()),
        None => Some(Worse::Higher),
    };
    Some(SeriesSpec { name: name?, reads: reads?, kind: kind?, unit: unit?, worse: worse? })
}

/// `metric` (with `minus` and `divide_by`) for a scrape, `query` for a Prometheus server; never both.
#[allow(clippy::too_many_arguments, reason = "the four keys that say what a series reads, each with its span")]
fn resolve_reads(
    checker: &mut Checker<'_>,
    prefix: &str,
    source: Option<SourceKind>,
    anchor: &Spanned<String>,
    metric: Option<Spanned<String>>,
    minus: Option<Spanned<String>>,
    divide_by: Option<Spanned<String>>,
    query: Option<Spanned<String>>,
) -> Option<Reads> {
    let field = |f: &str| format!("{prefix}.{f}");
    let selector = |checker: &mut Checker<'_>, value: &Spanned<String>, f: &str| {
        checker.check(value, &field(f), |text| Selector::parse(text))
    };
    match (source, metric, query) {
        (Some(SourceKind::Prometheus) | None, None, Some(query)) => {
            let stray = minus.as_ref().map(|m| (m, "minus")).or(divide_by.as_ref().map(|d| (d, "divide_by")));
            if let Some((value, key)) = stray {
                checker.error(value, &field(key), "a query does its own arithmetic: write it in the PromQL");
                return None;
            }
            checker.check(&query, &field("query"), |q| promql_text(q)).map(Reads::Query)
        }
        (Some(SourceKind::Scrape) | None, Some(metric), None) => {
            let metric = selector(checker, &metric, "metric");
            // `Err` when given and wrong (the error is recorded), so each optional selector is checked too.
            let minus = minus.map(|m| selector(checker, &m, "minus").ok_or(())).transpose();
            let divide_by = divide_by.map(|d| selector(checker, &d, "divide_by").ok_or(())).transpose();
            Some(Reads::Samples { metric: metric?, minus: minus.ok()?, divide_by: divide_by.ok()? })
        }
        (Some(SourceKind::Prometheus), Some(metric), _) => {
            checker.error(
                &metric,
                &field("metric"),
                "a `prometheus` source's series is a `query` (PromQL), not a `metric` selector",
            );
            None
        }
        (Some(SourceKind::Scrape), _, Some(query)) => {
            checker.error(
                &query,
                &field("query"),
                "a `scrape` source's series reads a `metric` selector; a `query` needs kind = \"prometheus\"",
            );
            None
        }
        (None, Some(metric), Some(_)) => {
            checker.error(&metric, &field("metric"), "give `metric` or `query`, not both");
            None
        }
        (Some(SourceKind::Scrape), None, None) => {
            checker.error(
                anchor,
                &field("metric"),
                "missing: the selector of the samples it sums, e.g. `node_memory_MemFree_bytes`",
            );
            None
        }
        (Some(SourceKind::Prometheus) | None, None, None) => {
            checker.error(
                anchor,
                &field("query"),
                "missing: the PromQL expression it keeps, e.g. `sum(rate(http_requests_total[1m]))`",
            );
            None
        }
    }
}

/// A PromQL expression: not blank, no control character but line breaks and tabs (PromQL allows them), at
/// most [`LONGEST_QUERY`] characters. Its grammar is the server's to judge: `telemetry probe` asks it.
fn promql_text(query: &str) -> Result<String, String> {
    if let Some(c) = query.chars().find(|&c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')) {
        return Err(format!("holds a control character ({}), which PromQL does not", c.escape_unicode()));
    }
    match query.trim() {
        "" => Err("a series needs a PromQL query, e.g. `sum(rate(http_requests_total[1m]))`".to_owned()),
        q if q.chars().count() > LONGEST_QUERY => Err(format!("is longer than {LONGEST_QUERY} characters")),
        q => Ok(q.to_owned()),
    }
}

/// A source's name: shown on the run page and stored with the run.
pub(super) fn source_name(name: &str) -> Result<String, String> {
    short_text(name, "a source needs a name, e.g. `api-host`", 60)
}

/// A series' name: a label on the run page.
fn series_name(name: &str) -> Result<String, String> {
    short_text(name, "a series needs a name, e.g. `CPU busy`", 60)
}

/// A unit: `bytes`, `CPU s`.
fn series_unit(unit: &str) -> Result<String, String> {
    short_text(unit, "a series needs a unit, e.g. `bytes`, `connections`, `transactions`", 30)
}

/// Printable text on one line, not blank (`empty` says what is missing) and at most `longest` characters:
/// it labels a chart and a table cell.
fn short_text(text: &str, empty: &str, longest: usize) -> Result<String, String> {
    super::checker::plain_name(text)?;
    match text.trim() {
        "" => Err(empty.to_owned()),
        t if t.chars().count() > longest => Err(format!("is longer than {longest} characters")),
        t => Ok(t.to_owned()),
    }
}
