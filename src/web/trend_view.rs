//! What one trend page shows, read from its query: the range, or a zoom by dates (`from=2026-11-01&to=…`) or
//! by runs (`from_run=120&to_run=140`, both ends included), and the scale. A zoom by runs is what a CI log or
//! an alert names; it is turned into the time between the two runs' starts.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;

use super::WebError;
use super::range::Range;
use super::trend_chart::Scale;
use crate::store::Store;

/// The query of the trend page.
#[derive(Deserialize)]
pub(super) struct TrendQuery {
    range: Option<String>,
    scale: Option<String>,
    pub(super) series: Option<String>,
    from: Option<String>,
    to: Option<String>,
    from_run: Option<String>,
    to_run: Option<String>,
}

/// A window narrower than the range links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Zoom {
    /// From one day to another, both included (`YYYY-MM-DD`).
    Dates(String, String),
    /// From one run to another, both included.
    Runs(i64, i64),
}

impl Zoom {
    /// The query parameters that keep this zoom, each after a `&`.
    pub(super) fn query(&self) -> String {
        match self {
            Self::Dates(from, to) => format!("&from={from}&to={to}"),
            Self::Runs(from, to) => format!("&from_run={from}&to_run={to}"),
        }
    }
}

/// What one page shows: the window, the scale and the series, parsed from the query.
pub(super) struct View {
    pub(super) range: Range,
    pub(super) window: (DateTime<Utc>, DateTime<Utc>),
    pub(super) zoom: Option<Zoom>,
    pub(super) scale: Scale,
}

impl View {
    /// Reads the query; a zoom by runs looks its runs up in `store`, which must belong to `scenario`.
    pub(super) async fn parse(
        query: &TrendQuery,
        now: DateTime<Utc>,
        store: &Store,
        scenario: &str,
    ) -> Result<Self, WebError> {
        fn given(field: Option<&String>) -> Option<&str> {
            field.map(|t| t.trim()).filter(|t| !t.is_empty())
        }
        let range = Range::parse(query.range.as_deref())?;
        let scale = match query.scale.as_deref() {
            None | Some("linear") => Scale::Linear,
            Some("log") => Scale::Log,
            Some(other) => return Err(WebError::BadRequest(format!("unknown scale `{other}`; use linear or log"))),
        };
        // The zoom form sends its empty fields too.
        let (from, to, from_run, to_run) = (
            given(query.from.as_ref()),
            given(query.to.as_ref()),
            given(query.from_run.as_ref()),
            given(query.to_run.as_ref()),
        );
        let by_dates = from.is_some() || to.is_some();
        let by_runs = from_run.is_some() || to_run.is_some();
        let (window, zoom) = match (by_dates, by_runs) {
            (false, false) => (range.window(now), None),
            (true, false) => dates(from, to, now)?,
            (false, true) => runs(from_run, to_run, store, scenario).await?,
            (true, true) => {
                return Err(WebError::BadRequest(
                    "zoom by dates (`from`, `to`) or by runs (`from_run`, `to_run`), not both".to_owned(),
                ));
            }
        };
        Ok(Self { range, window, zoom, scale })
    }

    /// The page's link with `range` and `scale` replaced, keeping the series.
    pub(super) fn link(range: &str, scale: Scale, series: Option<&str>) -> String {
        let mut link = format!("?range={range}");
        if scale == Scale::Log {
            link.push_str("&scale=log");
        }
        if let Some(series) = series {
            link.push_str(&format!("&series={}", series.get(..8).unwrap_or(series)));
        }
        link
    }
}

type Window = ((DateTime<Utc>, DateTime<Utc>), Option<Zoom>);

/// From one day to another, both included; `to` defaults to today and `from` to 30 days before `to`.
fn dates(from: Option<&str>, to: Option<&str>, now: DateTime<Utc>) -> Result<Window, WebError> {
    let day = |text: &str, field: &str| {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| WebError::BadRequest(format!("`{field}` must be a date like 2026-11-30, not `{text}`")))
    };
    let from = from.map(|t| day(t, "from")).transpose()?;
    let to = to.map(|t| day(t, "to")).transpose()?.unwrap_or_else(|| now.date_naive());
    let out_of_range = || WebError::BadRequest("the zoom's dates are out of range".to_owned());
    let from = match from {
        Some(from) => from,
        None => to.checked_sub_days(chrono::Days::new(30)).ok_or_else(out_of_range)?,
    };
    if from > to {
        return Err(WebError::BadRequest(format!("`from` ({from}) is after `to` ({to})")));
    }
    let start = from.and_time(chrono::NaiveTime::MIN).and_utc();
    let end = to.checked_add_days(chrono::Days::new(1)).ok_or_else(out_of_range)?;
    let end = end.and_time(chrono::NaiveTime::MIN).and_utc();
    Ok(((start, end), Some(Zoom::Dates(from.to_string(), to.to_string()))))
}

/// From one run's start to another's, both included; a missing end is the other run itself.
async fn runs(from: Option<&str>, to: Option<&str>, store: &Store, scenario: &str) -> Result<Window, WebError> {
    let number = |text: &str, field: &str| {
        text.parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .ok_or_else(|| WebError::BadRequest(format!("`{field}` must be a run number like 42, not `{text}`")))
    };
    let from = from.map(|t| number(t, "from_run")).transpose()?;
    let to = to.map(|t| number(t, "to_run")).transpose()?;
    let (from, to) = match (from, to) {
        (Some(from), Some(to)) => (from, to),
        (Some(one), None) | (None, Some(one)) => (one, one),
        (None, None) => return Err(WebError::BadRequest("a zoom by runs names `from_run` or `to_run`".to_owned())),
    };
    let started = |id: i64| async move {
        match store.find_run(id).await? {
            Some(run) if run.scenario == scenario => Ok(run.started_at),
            _ => Err(WebError::NotFound(format!("Scenario `{scenario}` has no run #{id}."))),
        }
    };
    let (start, end) = (started(from).await?, started(to).await?);
    if start > end {
        return Err(WebError::BadRequest(format!("run #{from} started after run #{to}")));
    }
    Ok(((start, end + chrono::Duration::milliseconds(1)), Some(Zoom::Runs(from, to))))
}
