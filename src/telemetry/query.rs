//! Asking a Prometheus server: one PromQL expression over a time range (`/api/v1/query_range`) or at one
//! instant (`/api/v1/query`), POSTed as a form (a long expression fits no URL), with the source's
//! credentials, at most [`MAX_BODY`] bytes of answer read within its timeout and read with serde into the
//! API's own shapes. An expression must give one series: a reader of the run page sees one line per kept
//! series, and summing or averaging several is a choice only the query's author can make.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::scrape::MAX_BODY;
use crate::config::{ScrapeAuth, TelemetrySource};
use crate::engine::client::chain;

/// The most steps one `query_range` asks for: Prometheus refuses more than 11,000 points a series.
pub const MAX_STEPS: usize = 10_000;

/// Why a query gave nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryError {
    /// The server could not be asked, or did not answer as Prometheus does: asking it again for the source's
    /// next series would only wait as long again.
    Server(String),
    /// The server answered, and this expression gave nothing usable (bad PromQL, several series).
    Query(String),
}

impl QueryError {
    /// The reason, in words.
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            Self::Server(why) | Self::Query(why) => why,
        }
    }
}

/// One value at one instant: seconds since the Unix epoch, and the value (`NaN` when Prometheus says so).
pub type Sample = (f64, f64);

/// Asks Prometheus servers; cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct Prometheus {
    client: reqwest::Client,
}

impl Prometheus {
    /// A client as [`super::http_client`] makes it.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new() -> anyhow::Result<Self> {
        Ok(Self { client: super::http_client()? })
    }

    /// `query`'s values from `start` to `end` (Unix seconds), one every `step`, oldest first.
    ///
    /// # Errors
    /// Why nothing can be kept: never quoting the URL or a credential.
    pub async fn range(
        &self,
        source: &TelemetrySource,
        query: &str,
        (start, end): (f64, f64),
        step: Duration,
    ) -> Result<Vec<Sample>, QueryError> {
        let step = format!("{:.3}", step.as_secs_f64());
        let (start, end) = (format!("{start:.3}"), format!("{end:.3}"));
        let form = [("query", query), ("start", &start), ("end", &end), ("step", &step)];
        match self.ask(source, "query_range", &form).await? {
            Data::Matrix(series) => Ok(one(series)?.values),
            other => Err(unexpected(&other, "matrix")),
        }
    }

    /// `query`'s value now, or `None` when it gives no series.
    ///
    /// # Errors
    /// As [`Prometheus::range`].
    pub async fn instant(&self, source: &TelemetrySource, query: &str) -> Result<Option<f64>, QueryError> {
        match self.ask(source, "query", &[("query", query)]).await? {
            Data::Vector(series) if series.is_empty() => Ok(None),
            Data::Vector(series) => Ok(Some(one(series)?.value.1)),
            Data::Scalar(value) => Ok(Some(value.1)),
            other => Err(unexpected(&other, "vector")),
        }
    }

    async fn ask(&self, source: &TelemetrySource, api: &str, form: &[(&str, &str)]) -> Result<Data, QueryError> {
        let url = format!("{}/api/v1/{api}", source.url.trim_end_matches('/'));
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let request = self
            .client
            .post(url)
            .timeout(source.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body);
        let (request, unset) = authenticated(request, source.auth.as_ref());
        let answer = tokio::time::timeout(source.timeout, async {
            let response = request.send().await.map_err(|e| describe(e, source.timeout))?;
            let status = response.status();
            Ok((status, read_capped(response, source.timeout).await?))
        })
        .await
        .map_err(|_| no_answer_within(source.timeout))?;
        let (status, body) = answer?;
        interpret(status, &body, unset)
    }
}

/// An answer's data, or why there is none; `unset` names the variable that should have held the credentials.
fn interpret(status: reqwest::StatusCode, body: &[u8], unset: Option<&str>) -> Result<Data, QueryError> {
    // Prometheus answers a bad query with 400 or 422 and its error in the API's JSON; anything else that fails
    // is the server's (or a proxy's) and says nothing of the query.
    let parsed: Result<Answer, _> = serde_json::from_slice(body);
    match parsed {
        Ok(Answer { status: Status::Success, data: Some(data), .. }) if status.is_success() => Ok(data),
        Ok(Answer { status: Status::Error, error_type, error, .. }) => Err(QueryError::Query(format!(
            "Prometheus refused the query ({}): {}",
            crate::outside_text::clipped(error_type.as_deref().unwrap_or("error"), 40),
            crate::outside_text::clipped(error.as_deref().unwrap_or("no reason given"), 300)
        ))),
        _ if !status.is_success() => {
            let hint =
                unset.map_or_else(String::new, |var| format!(" ({var}, which holds its credentials, is not set)"));
            Err(QueryError::Server(format!("Prometheus answered {status}{hint}")))
        }
        Ok(_) => Err(QueryError::Server("the answer says success but holds no data".to_owned())),
        Err(e) => Err(QueryError::Server(format!(
            "the answer is not Prometheus' query API JSON ({})",
            crate::outside_text::clipped(&e.to_string(), 200)
        ))),
    }
}

/// The request with the source's credentials, and the variable that should have held them when it is unset.
fn authenticated(
    request: reqwest::RequestBuilder,
    auth: Option<&ScrapeAuth>,
) -> (reqwest::RequestBuilder, Option<&str>) {
    match auth {
        Some(ScrapeAuth::Bearer { token: Some(token), .. }) => (request.bearer_auth(token.expose()), None),
        Some(ScrapeAuth::Basic { user, password: Some(password), .. }) => {
            (request.basic_auth(user, Some(password.expose())), None)
        }
        Some(ScrapeAuth::Bearer { var, token: None } | ScrapeAuth::Basic { var, password: None, .. }) => {
            (request, Some(var.as_str()))
        }
        None => (request, None),
    }
}

/// The body, refused past [`MAX_BODY`] bytes.
async fn read_capped(mut response: reqwest::Response, timeout: Duration) -> Result<Vec<u8>, QueryError> {
    let too_large = || {
        QueryError::Server(format!(
            "the answer is longer than {} MiB, the most degrade reads of one query",
            MAX_BODY >> 20
        ))
    };
    if response.content_length().is_some_and(|length| length > MAX_BODY as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(e, timeout))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The one series of a result; several are refused with the labels that tell them apart.
fn one<T: Labelled>(mut series: Vec<T>) -> Result<T, QueryError> {
    match series.len() {
        0 => Err(QueryError::Query("the query gave no series".to_owned())),
        1 => Ok(series.remove(0)),
        n => {
            let first: Vec<String> = series.iter().take(2).map(|s| labels(s.metric())).collect();
            Err(QueryError::Query(format!(
                "the query gave {n} series ({}, …); a kept series is one line: aggregate it to one, with sum(…), \
                 avg(…) or max(…), or pick one with a label matcher",
                first.join(", ")
            )))
        }
    }
}

fn labels(metric: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = metric.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    crate::outside_text::clipped(&format!("{{{}}}", pairs.join(",")), 120)
}

fn unexpected(data: &Data, wanted: &str) -> QueryError {
    let got = match data {
        Data::Matrix(_) => "matrix",
        Data::Vector(_) => "vector",
        Data::Scalar(_) => "scalar",
        Data::String(_) => "string",
    };
    QueryError::Query(format!("the query gave a {got} where a {wanted} was asked for"))
}

fn no_answer_within(timeout: Duration) -> QueryError {
    QueryError::Server(format!(
        "Prometheus did not answer within {} (the source's timeout)",
        humantime::format_duration(timeout)
    ))
}

/// What went wrong, with its causes but never the URL (reqwest puts it in its message).
fn describe(error: reqwest::Error, timeout: Duration) -> QueryError {
    if error.is_timeout() {
        return no_answer_within(timeout);
    }
    let kind = if error.is_connect() { "cannot connect to Prometheus" } else { "the query failed" };
    QueryError::Server(format!("{kind}: {}", crate::outside_text::clipped(&chain(&error.without_url()), 300)))
}

/// The API's envelope (`/api/v1/…`), as Prometheus documents it.
#[derive(Deserialize)]
struct Answer {
    status: Status,
    data: Option<Data>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Status {
    Success,
    Error,
}

/// A result, by its `resultType`.
#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Matrix(Vec<RangeSeries>),
    Vector(Vec<InstantSeries>),
    Scalar(Value),
    String(serde::de::IgnoredAny),
}

/// `[1700000000.123, "0.42"]`: Prometheus writes values as strings, so `NaN` and `+Inf` fit.
#[derive(Deserialize)]
struct Value(f64, #[serde(deserialize_with = "number")] f64);

#[derive(Deserialize)]
struct RangeSeries {
    metric: BTreeMap<String, String>,
    #[serde(deserialize_with = "samples")]
    values: Vec<Sample>,
}

#[derive(Deserialize)]
struct InstantSeries {
    metric: BTreeMap<String, String>,
    value: Value,
}

trait Labelled {
    fn metric(&self) -> &BTreeMap<String, String>;
}

impl Labelled for RangeSeries {
    fn metric(&self) -> &BTreeMap<String, String> {
        &self.metric
    }
}

impl Labelled for InstantSeries {
    fn metric(&self) -> &BTreeMap<String, String> {
        &self.metric
    }
}

fn number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    text.parse()
        .map_err(|_| serde::de::Error::custom(format!("`{}` is not a number", crate::outside_text::clipped(&text, 40))))
}

fn samples<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Sample>, D::Error> {
    let values = Vec::<Value>::deserialize(deserializer)?;
    Ok(values.into_iter().map(|Value(at, value)| (at, value)).collect())
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
