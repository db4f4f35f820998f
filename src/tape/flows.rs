//! `tape import --flows`: a HAR recording turned into a scenario of flows a user can read and edit.
//!
//! Each recorded page becomes a flow, each API request a step. Auto-correlation: values an answer gave (a
//! JSON field of at least three digits or four characters, or a relative `Location` header) that a later request of
//! the same page sends back — in its path, query, JSON body or a header — become an `extract` on the step
//! that received them and a `{{ variable }}` where they are used, so the replay creates its own objects and
//! uses their ids instead of the recorded ones. What is not correlated is scrubbed as an import is.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::import::is_static;
use super::scrub::Scrubber;
use super::sources::HarEntry;

/// A value found in an earlier answer and used later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correlation {
    /// The variable it became.
    pub variable: String,
    /// The step (route) whose answer gave it.
    pub from_step: String,
    /// Where in that answer: a JSONPath, or `header location`.
    pub from: String,
    /// How many later places use it.
    pub uses: usize,
}

/// What `--flows` produced.
#[derive(Debug, Clone)]
pub struct FlowsScenario {
    /// The scenario file's text.
    pub text: String,
    /// Flows written, with their step counts.
    pub flows: Vec<(String, usize)>,
    /// The correlations found.
    pub correlations: Vec<Correlation>,
}

/// An answer's value that a later request may use.
struct Known {
    /// What its variable would be called: the resource and the field (`boards_id`).
    name: String,
    /// Its variable, named when a later request first uses it.
    variable: Option<String>,
    step: usize,
    from: Extract,
}

#[derive(Clone)]
enum Extract {
    Json(String),
    Header(String),
}

/// One step being built.
struct StepDraft {
    route: String,
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    json: Option<Value>,
    body: Option<String>,
    status: Option<u16>,
    extract: BTreeMap<String, Extract>,
}

/// Builds the scenario from HAR `entries` (static assets left out), scrubbing with `scrubber`.
#[must_use]
pub fn scenario_from_har(entries: &[HarEntry], scrubber: &mut Scrubber, origin_note: &str) -> FlowsScenario {
    let mut pages: Vec<(String, Vec<&HarEntry>)> = Vec::new();
    for entry in entries {
        let path = entry.recorded.request.target.split('?').next().unwrap_or_default();
        if is_static(path) {
            continue;
        }
        let page = entry.page.clone().unwrap_or_else(|| "recording".to_owned());
        match pages.iter_mut().find(|(name, _)| *name == page) {
            Some((_, list)) => list.push(entry),
            None => pages.push((page, vec![entry])),
        }
    }
    let mut text = format!(
        "# Flows recorded in a browser ({origin_note}) by `degrade tape import --flows`: edit freely.\n\
         # Values an answer gave and a later request sent back are extracted into variables.\n\
         seed = 1\n\n[target]\nbase_url = \"http://127.0.0.1:8080\"   # a test deployment, never production\n\
         # headers = {{ authorization = \"Bearer {{{{ env(\\\"API_TOKEN\\\") }}}}\" }}   # auth never comes from the recording\n"
    );
    let mut flows = Vec::new();
    let mut correlations = Vec::new();
    for (page, entries) in &pages {
        let steps = correlate(entries, scrubber, &mut correlations);
        write_flow(&mut text, page, &steps);
        flows.push((page.clone(), steps.len()));
    }
    text.push_str(
        "\n[load]\nmodel = \"open\"\n\n  [[load.stage]]\n  duration = \"30s\"\n  from = 0.2\n  to = 1\n  measure = false\n\n  \
         [[load.stage]]\n  duration = \"5m\"\n  rate = 1                     # sessions per second\n",
    );
    FlowsScenario { text, flows, correlations }
}

/// The steps of one page, with values from earlier answers replaced by variables.
fn correlate(entries: &[&HarEntry], scrubber: &mut Scrubber, correlations: &mut Vec<Correlation>) -> Vec<StepDraft> {
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    let mut named: Vec<String> = Vec::new();
    let mut steps: Vec<StepDraft> = Vec::new();
    let router = super::Router::default();
    for entry in entries {
        let request = &entry.recorded.request;
        let (path, query) = request.target.split_once('?').map_or((request.target.as_str(), ""), |(p, q)| (p, q));
        let route = router.route(request.method.as_str(), path).key;
        let mut use_value = |value: &str, steps: &mut Vec<StepDraft>| -> Option<String> {
            let found = known.get_mut(value)?;
            let variable = found.variable.clone().unwrap_or_else(|| {
                let base = found.name.clone();
                let name = (1..=named.len() + 1)
                    .map(|i| if i == 1 { base.clone() } else { format!("{base}_{i}") })
                    .find(|n| !named.contains(n))
                    .unwrap_or(base);
                named.push(name.clone());
                name
            });
            found.variable = Some(variable.clone());
            let found = &*found;
            let step = &mut steps[found.step];
            step.extract.entry(variable.clone()).or_insert_with(|| found.from.clone());
            let from = match &found.from {
                Extract::Json(path) => path.clone(),
                Extract::Header(name) => format!("header {name}"),
            };
            match correlations.iter_mut().find(|c| c.variable == variable) {
                Some(c) => c.uses += 1,
                None => correlations.push(Correlation {
                    variable: variable.clone(),
                    from_step: step.route.clone(),
                    from,
                    uses: 1,
                }),
            }
            Some(format!("{{{{ {variable} }}}}"))
        };
        // Segment by segment (`/boards/{{ boards_id }}` keeps the route in sight), else the whole path (a
        // Location header).
        let segments: Vec<Option<String>> = path.split('/').map(|segment| use_value(segment, &mut steps)).collect();
        let path = if segments.iter().any(Option::is_some) {
            path.split('/')
                .zip(segments)
                .map(|(segment, used)| used.unwrap_or_else(|| scrubbed(scrubber, None, segment)))
                .collect::<Vec<_>>()
                .join("/")
        } else {
            use_value(path, &mut steps).unwrap_or_else(|| path.to_owned())
        };
        let query = form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| {
                let value = use_value(&v, &mut steps).unwrap_or_else(|| scrubbed(scrubber, Some(&k), &v));
                (k.into_owned(), value)
            })
            .collect();
        let mut headers = Vec::new();
        let mut plain = Vec::new();
        for (name, value) in &entry.recorded.headers {
            match use_value(value, &mut steps) {
                Some(template) => headers.push((name.clone(), template)),
                None => plain.push((name.clone(), value.clone())),
            }
        }
        headers.extend(scrubber.headers(&plain).into_iter().filter(|(n, _)| n != "accept-encoding"));
        let json = request.body.as_deref().and_then(|b| serde_json::from_str::<Value>(b).ok()).filter(Value::is_object);
        let json = json.map(|mut json| {
            template_json(&mut json, None, &mut |name, value| {
                use_value(value, &mut steps).or_else(|| scrubber.value(name, value))
            });
            json
        });
        let body = if json.is_some() { None } else { request.body.clone() };
        if json.is_some() {
            headers.retain(|(n, _)| n != "content-type");
        }
        steps.push(StepDraft {
            route,
            method: request.method.to_string(),
            path,
            query,
            headers,
            json,
            body,
            status: request.status,
            extract: BTreeMap::new(),
        });
        learn(&mut known, steps.len() - 1, &steps[steps.len() - 1].route, entry);
    }
    steps
}

fn scrubbed(scrubber: &mut Scrubber, name: Option<&str>, value: &str) -> String {
    scrubber.value(name, value).unwrap_or_else(|| value.to_owned())
}

/// Replaces, in a JSON body, every scalar for which `replace(field name, value as text)` gives text.
fn template_json(value: &mut Value, name: Option<&str>, replace: &mut dyn FnMut(Option<&str>, &str) -> Option<String>) {
    match value {
        Value::Object(object) => object.iter_mut().for_each(|(k, v)| template_json(v, Some(k), replace)),
        Value::Array(items) => items.iter_mut().for_each(|v| template_json(v, name, replace)),
        Value::String(s) => {
            if let Some(new) = replace(name, s) {
                *s = new;
            }
        }
        Value::Number(n) => {
            if let Some(new) = replace(name, &n.to_string()) {
                *value = Value::String(new);
            }
        }
        _ => {}
    }
}

/// Remembers the values `entry`'s answer gave, to be found in later requests.
fn learn(known: &mut BTreeMap<String, Known>, step: usize, route: &str, entry: &HarEntry) {
    let resource = route.rsplit('/').find(|s| !s.starts_with('{') && !s.is_empty()).unwrap_or("answer");
    let resource: String =
        resource.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    let name = |field: &str| {
        let field: String =
            field.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
        format!("{resource}_{field}")
    };
    // The body first: `$.id` reads better than the end of a Location header, and is where ids usually are.
    let json = entry.response_body.as_deref().filter(|_| entry.response_type.contains("json"));
    let mut values = Vec::new();
    if let Some(json) = json.and_then(|body| serde_json::from_str::<Value>(body).ok()) {
        collect_values(&json, "$".to_owned(), "", &mut values);
    }
    // The first answer that gave a value is where it came from; later answers only repeat it.
    for (path, field, value) in values {
        if known.contains_key(&value) {
            continue;
        }
        known.insert(value, Known { name: name(&field), variable: None, step, from: Extract::Json(path) });
    }
    // A relative Location is a whole path a later request may open as it is.
    let location = entry.response_headers.iter().find(|(n, _)| n == "location").map(|(_, v)| v.clone());
    if let Some(location) = location.filter(|l| l.starts_with('/') && !known.contains_key(l)) {
        let from = Extract::Header("location".to_owned());
        known.insert(location, Known { name: name("location"), variable: None, step, from });
    }
}

/// Scalars distinctive enough to recognise later: integers of 3+ digits, strings of 4+ characters that are
/// not plain words (they hold a digit, or are 8+ characters long without spaces).
fn collect_values(value: &Value, path: String, field: &str, out: &mut Vec<(String, String, String)>) {
    match value {
        Value::Object(object) => {
            for (key, v) in object {
                let simple = key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                let child =
                    if simple { format!("{path}.{key}") } else { format!("{path}['{}']", key.replace('\'', "\\'")) };
                collect_values(v, child, key, out);
            }
        }
        // The first few items of a list: a later request usually opens one of the first.
        Value::Array(items) => {
            for (i, v) in items.iter().take(3).enumerate() {
                collect_values(v, format!("{path}[{i}]"), field, out);
            }
        }
        Value::Number(n) if n.as_i64().is_some_and(|i| i.abs() >= 100) => {
            out.push((path, field.to_owned(), n.to_string()));
        }
        Value::String(s)
            if s.len() >= 4 && !s.contains(' ') && (s.chars().any(|c| c.is_ascii_digit()) || s.len() >= 8) =>
        {
            out.push((path, field.to_owned(), s.clone()));
        }
        _ => {}
    }
}

fn write_flow(text: &mut String, page: &str, steps: &[StepDraft]) {
    let _ = write!(text, "\n[[flow]]\nname = {}\nweight = 1\n", toml_string(page));
    for step in steps {
        let _ = write!(
            text,
            "\n  [[flow.step]]\n  method = {}\n  path = {}\n",
            toml_string(&step.method),
            toml_string(&step.path)
        );
        if !step.query.is_empty() {
            let _ =
                writeln!(text, "  query = {}", inline(step.query.iter().map(|(k, v)| (k.as_str(), toml_string(v)))));
        }
        if !step.headers.is_empty() {
            let _ = writeln!(
                text,
                "  headers = {}",
                inline(step.headers.iter().map(|(k, v)| (k.as_str(), toml_string(v))))
            );
        }
        if let Some(json) = &step.json {
            let value: toml::Value =
                serde_json::from_value(strip_nulls(json.clone())).unwrap_or(toml::Value::String(String::new()));
            let _ = writeln!(text, "  json = {value}");
        } else if let Some(body) = &step.body {
            let _ = writeln!(text, "  body = {}", toml_string(body));
        }
        if let Some(status) = step.status {
            let _ = writeln!(text, "  expect = {{ status = \"{}xx\" }}", status / 100);
        }
        if !step.extract.is_empty() {
            let extract = step.extract.iter().map(|(variable, from)| {
                let spec = match from {
                    Extract::Json(path) => toml_string(path),
                    Extract::Header(name) => format!("{{ header = {} }}", toml_string(name)),
                };
                (variable.as_str(), spec)
            });
            let _ = writeln!(text, "  extract = {}", inline(extract));
        }
    }
}

/// TOML has no null: a null field is left out.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(object) => {
            Value::Object(object.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().filter(|v| !v.is_null()).map(strip_nulls).collect()),
        other => other,
    }
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn inline<'a>(pairs: impl Iterator<Item = (&'a str, String)>) -> String {
    let items: Vec<String> = pairs
        .map(|(k, v)| {
            let bare = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            format!("{} = {v}", if bare { k.to_owned() } else { toml_string(k) })
        })
        .collect();
    format!("{{ {} }}", items.join(", "))
}
