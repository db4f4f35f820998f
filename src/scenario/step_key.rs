//! The metric key of a step without a `name`: its method, its path with each template as `{name}`, and the
//! names of its query parameters, from its `query` table and its path alike, values left out
//! (`GET /boards/{board_id}/cards?page=&per_page=`). A tape's request to the same URL gets the same key
//! ([`crate::tape::query_shape`]: names sorted, each once, cache-busters and tracking parameters left out).
//!
//! Two steps that still share a key with different queries (`?status=open`, `?status=closed`) are measured as
//! one endpoint, which is worth a warning; and a key that differs from the one degrade made before query names
//! were part of keys (the path alone) makes the scenario a new workload series ([`StepKeys::changed`]).

use std::collections::BTreeMap;

use http::Method;
use toml::Spanned;

use crate::config::{Checker, ConfigWarning, WarningKind};
use crate::metrics::GrpcCode;
use crate::tape::query_shape::{QueryShape, decoded, parameters, shown};

/// The default keys made so far, and what each step's query was, for the warning.
#[derive(Debug, Default)]
pub(super) struct StepKeys {
    /// Per key, the first step that made it and the queries seen, as written.
    queries: BTreeMap<String, (String, Vec<WrittenQuery>)>,
    /// Whether some key names query parameters, or leaves a query out, where the key of earlier releases was
    /// the path as written: such a scenario's runs form a new workload series.
    pub changed: bool,
    /// Per gRPC method called by unnamed steps, the first such step and the outcomes it expects.
    calls: BTreeMap<String, (String, Vec<GrpcCode>)>,
}

/// A step's query as written: its text (`status=open&page={{ p }}`) and the names in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WrittenQuery {
    text: String,
    names: Vec<String>,
}

impl StepKeys {
    /// The key of step `step` (a field path such as `flow[0].step[2]`) sending `method` to `route` (its path
    /// template as [`super::template::Template::route`] writes it) with the `query` table; warns when an earlier
    /// step made the same key with another query.
    pub(super) fn key(
        &mut self,
        checker: &mut Checker<'_>,
        step: &str,
        method: &Method,
        route: &str,
        query: &BTreeMap<String, Spanned<String>>,
    ) -> String {
        let end = route.find(['?', '#']).unwrap_or(route.len());
        let path = &route[..end];
        // A fragment never goes to the server (the engine cuts it off).
        let inline = route[end..].strip_prefix('?').map_or("", |q| q.split('#').next().unwrap_or_default());
        let table: Vec<String> =
            query.keys().map(|k| form_urlencoded::byte_serialize(k.as_bytes()).collect()).collect();
        let shape =
            QueryShape::of_names(parameters(inline).map(|(name, _)| name).chain(table.iter().map(String::as_str)));
        let mut key = format!("{method} {path}");
        shape.push_to(&mut key);
        self.changed |= key != format!("{method} {route}");
        // Every name, those keys leave out too, compared decoded: what tells values apart from left-out names.
        let mut names: Vec<String> = parameters(inline)
            .map(|(n, _)| n)
            .chain(table.iter().map(String::as_str))
            .map(|n| shown(&decoded(n)))
            .collect();
        names.sort_unstable();
        names.dedup();
        let written: Vec<String> = std::iter::once(inline.to_owned())
            .filter(|q| !q.is_empty())
            .chain(query.iter().map(|(k, v)| format!("{k}={}", v.get_ref())))
            .collect();
        self.warn_if_merged(checker, step, &key, WrittenQuery { text: written.join("&"), names });
        key
    }

    /// Warns when an unnamed gRPC step calls the method of an earlier one (`key`, `gRPC pkg.Service/Method`)
    /// expecting other outcomes: a read and a call meant to fail with `NOT_FOUND` measured as one endpoint mix
    /// two latencies and two kinds of answer (a trial merged the guide's two examples so).
    pub(super) fn grpc_call(&mut self, checker: &mut Checker<'_>, step: &str, key: &str, expected: &[GrpcCode]) {
        let Some((first, seen)) = self.calls.get(key) else {
            self.calls.insert(key.to_owned(), (step.to_owned(), expected.to_vec()));
            return;
        };
        if seen.as_slice() == expected {
            return;
        }
        let outcomes = |codes: &[GrpcCode]| codes.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ");
        let message = format!(
            "{step} and {first} both call `{key}` expecting other outcomes ({} and {}), so they are measured as one \
             endpoint; give one of them a `name` to measure them apart",
            outcomes(expected),
            outcomes(seen)
        );
        checker.warnings.push(ConfigWarning::new(WarningKind::Setting, message));
    }

    /// Warns when `key` was made by an earlier step with another query: both are measured as one endpoint,
    /// which is right for `?page=1` and `?page=2` but not for two different searches.
    fn warn_if_merged(&mut self, checker: &mut Checker<'_>, step: &str, key: &str, query: WrittenQuery) {
        let Some((first, seen)) = self.queries.get_mut(key) else {
            self.queries.insert(key.to_owned(), (step.to_owned(), vec![query]));
            return;
        };
        if seen.contains(&query) {
            return;
        }
        let shown = |q: &WrittenQuery| if q.text.is_empty() { "no query".to_owned() } else { format!("`?{}`", q.text) };
        let differ = if query.names == seen[0].names {
            "differ only in their values".to_owned()
        } else {
            "differ only in parameters that metric keys leave out (cache-busters such as `_`, tracking parameters \
             such as `utm_source`, values sent as names)"
                .to_owned()
        };
        let message = format!(
            "{step} and {first} are both `{key}`: their queries ({} and {}) {differ}, so they are measured as one \
             endpoint; give one of them a `name` to measure them apart",
            shown(&query),
            shown(&seen[0])
        );
        checker.warnings.push(ConfigWarning::new(WarningKind::Setting, message));
        seen.push(query);
    }
}
