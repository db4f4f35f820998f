//! A route pattern the user gives (`--route`, `[[tape.route]] pattern`): a path with placeholder segments,
//! optionally a query part.
//!
//! - `/users/{name}`: the path; the request's query parameter names are appended to its key as by default
//!   (`GET /users/{name}?tab=`).
//! - `/posts?q={q}&page={p}`: the path, and exactly these parameter names (after the ones left out of every
//!   key, such as `utm_*`, see [`super::query_shape`]); `name={x}`, `name=` and a bare `name` take any value,
//!   `name=open` only that value, compared decoded. Key: `GET /posts?page=&q=`, with a fixed value shown
//!   (`GET /issues?state=open`), so two values of one parameter can be two endpoints.
//! - `/posts?` matches only requests without parameters; `/search?*` every request to the path whatever its
//!   query, keyed by the path alone (`GET /search`): the way to keep one endpoint for a path.

use super::query_shape::{MAX_PARAMETERS_READ, QueryShape, decoded, key_name, parameters, shown};

/// A path pattern given by the user: literal segments and placeholders, and what it asks of the query.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    /// The path part as written.
    path: String,
    /// `None` for a placeholder.
    segments: Vec<Option<String>>,
    query: QueryRule,
}

/// What a pattern asks of a request's query.
#[derive(Debug, Clone)]
enum QueryRule {
    /// No `?`: any query, whose names are appended to the key.
    Appended,
    /// `?*`: any query, left out of the key.
    Any,
    /// `?a={x}&b=v`: exactly these names, sorted by name.
    Exactly(Vec<Parameter>),
}

/// One parameter of a pattern's query.
#[derive(Debug, Clone)]
struct Parameter {
    /// As keys show it.
    name: String,
    /// `None` for any value; else the value required, decoded.
    value: Option<Vec<u8>>,
}

impl Pattern {
    /// Parses `text`, or says what is wrong with it.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        // A pattern names an endpoint, which is shown and stored: no control character either.
        if !text.starts_with('/') || text.contains(['#', ' ']) || text.contains(char::is_control) {
            return Err(format!("`{text}` is not a path pattern; write e.g. `/users/{{name}}` or `/posts?q={{q}}`"));
        }
        let (path, query) = text.split_once('?').map_or((text, None), |(p, q)| (p, Some(q)));
        let segments = path
            .split('/')
            .skip(1)
            .map(|s| {
                if s.starts_with('{') && s.ends_with('}') && s.len() > 2 {
                    Ok(None)
                } else if s.contains(['{', '}']) {
                    Err(format!("in `{text}`, `{s}`: a placeholder is a whole segment, `{{name}}`"))
                } else {
                    Ok(Some(s.to_owned()))
                }
            })
            .collect::<Result<_, _>>()?;
        let query = match query {
            None => QueryRule::Appended,
            Some("*") => QueryRule::Any,
            Some(query) => QueryRule::Exactly(query_parameters(text, query)?),
        };
        Ok(Self { path: path.to_owned(), segments, query })
    }

    /// The key of a request to `segments` with `query` (as sent, without the `?`), if the pattern matches it,
    /// with the values of its placeholders added to `ids` in order.
    pub(super) fn key<'a>(
        &self,
        method: &str,
        segments: &[&'a str],
        query: &'a str,
        ids: &mut Vec<&'a str>,
    ) -> Option<String> {
        if self.segments.len() != segments.len()
            || !self.segments.iter().zip(segments).all(|(p, s)| p.as_deref().is_none_or(|p| p == *s))
        {
            return None;
        }
        let from = ids.len();
        ids.extend(self.segments.iter().zip(segments).filter(|(p, _)| p.is_none()).map(|(_, s)| *s));
        let mut key = format!("{method} {}", self.path);
        match &self.query {
            QueryRule::Appended => QueryShape::of_query(query).push_to(&mut key),
            QueryRule::Any => {}
            QueryRule::Exactly(wanted) => {
                if !matches_exactly(wanted, query, ids) {
                    ids.truncate(from);
                    return None;
                }
                for (i, parameter) in wanted.iter().enumerate() {
                    key.push(if i == 0 { '?' } else { '&' });
                    key.push_str(&parameter.name);
                    key.push('=');
                    key.push_str(&parameter.value.as_deref().map(shown).unwrap_or_default());
                }
            }
        }
        Some(key)
    }
}

/// Whether `query` has exactly the names `wanted` lists, each with the value it requires; the values of its
/// placeholders are added to `ids`.
fn matches_exactly<'a>(wanted: &[Parameter], query: &'a str, ids: &mut Vec<&'a str>) -> bool {
    if QueryShape::of_query(query).names() != wanted.iter().map(|p| p.name.clone()).collect::<Vec<_>>() {
        return false;
    }
    for parameter in wanted {
        let mut values = parameters(query)
            .take(MAX_PARAMETERS_READ)
            .filter(|(n, _)| key_name(n).as_deref() == Some(&parameter.name));
        match &parameter.value {
            Some(required) => {
                if !values.all(|(_, v)| decoded(v) == *required) {
                    return false;
                }
            }
            None => ids.extend(values.next().map(|(_, v)| v)),
        }
    }
    true
}

/// The parameters of a pattern's query part, sorted by name.
fn query_parameters(text: &str, query: &str) -> Result<Vec<Parameter>, String> {
    let mut wanted: Vec<Parameter> = Vec::new();
    for (name, value) in parameters(query) {
        if name.contains(['{', '}']) {
            return Err(format!("in `{text}`, `{name}`: a parameter's name is fixed; a placeholder is its value"));
        }
        let Some(shown_name) = key_name(name) else {
            return Err(format!(
                "in `{text}`, `{name}` is never part of a route key (a cache-buster or tracking parameter, or a value \
                 rather than a name), so no pattern can ask for it"
            ));
        };
        if wanted.iter().any(|p| p.name == shown_name) {
            return Err(format!("in `{text}`, `{name}` is named twice"));
        }
        let value = if value.is_empty() || (value.starts_with('{') && value.ends_with('}') && value.len() > 2) {
            None
        } else if value.contains(['{', '}']) {
            return Err(format!("in `{text}`, `{value}`: a placeholder is a whole value, `{{name}}`"));
        } else {
            Some(decoded(value))
        };
        wanted.push(Parameter { name: shown_name, value });
    }
    wanted.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(wanted)
}
