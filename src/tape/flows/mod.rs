//! `tape import --flows`: a HAR recording turned into a scenario of flows a user can read and edit.
//!
//! Each recorded page becomes a flow, each API request a step. Auto-correlation: values an answer gave (a
//! JSON field of at least three digits or four characters, or a relative `Location` header) that a later
//! request of the same page sends back — in its path, query, JSON body or a header — become an `extract` on the step
//! that received them and a `{{ variable }}` where they are used, so the replay creates its own objects and
//! uses their ids instead of the recorded ones. What is not correlated is scrubbed as an import is. A gRPC
//! call becomes a `grpc` step (`grpc`), its recorded bytes shown only when nothing in them is private.
//! `recording` reads the HAR: it holds the entries it uses, at most 10,000 from 256 MB of HAR.

mod answers;
mod grpc;
mod recording;
mod write;

use std::collections::BTreeMap;

use serde_json::Value;

use super::MAX_JSON_TREE_BYTES;
use super::import::is_static;
use super::private_values::percent_decode;
use super::scrub::{Counter, ScrubRules, Scrubber};
use super::sources::HarEntry;
use answers::{learn, unread};
pub use grpc::GrpcDraft;
pub use recording::{MAX_ENTRIES, MAX_HAR_BYTES, Recording, read_recording};
use write::write_flow;

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

/// A JSON answer too long to be read for values (over [`crate::tape::MAX_JSON_TREE_BYTES`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadAnswer {
    /// The entry's number in the recording.
    pub entry: u64,
    /// The step (route) it answered.
    pub step: String,
    /// Its length.
    pub bytes: usize,
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
    /// Answers nothing was correlated from, for their length.
    pub unread: Vec<UnreadAnswer>,
    /// The gRPC steps written, with their recorded bytes or why they were withheld.
    pub grpc: Vec<GrpcDraft>,
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
    /// Its method and path as a route (`POST /boards/{id}`), scrubbed: what its variables are named after.
    route: String,
    /// Its metric key as `tape import` makes it, query names and all (`GET /search?page=&q=`): its `name`.
    name: String,
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    json: Option<Value>,
    body: Option<String>,
    status: Option<u16>,
    extract: BTreeMap<String, Extract>,
    grpc: Option<GrpcDraft>,
    /// It opened a WebSocket: written as a `ws = "connect"` step, its messages not copied.
    websocket: bool,
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
        // A page's title may name its user ("Orders of jane@example.com").
        let page = entry
            .page
            .as_deref()
            .map_or_else(|| "recording".to_owned(), |p| scrubber.value(None, p).unwrap_or_else(|| p.to_owned()));
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
    let mut unread_answers = Vec::new();
    let mut grpc_steps = Vec::new();
    for (page, entries) in &pages {
        let steps = correlate(entries, scrubber, &mut correlations);
        grpc_steps.extend(steps.iter().filter_map(|step| step.grpc.clone()));
        unread_answers.extend(entries.iter().zip(&steps).filter_map(|(entry, step)| unread(entry, &step.route)));
        write_flow(&mut text, page, &steps);
        flows.push((page.clone(), steps.len()));
    }
    text.push_str(
        "\n[load]\nmodel = \"open\"\n\n  [[load.stage]]\n  duration = \"30s\"\n  from = 0.2\n  to = 1\n  measure = false\n\n  \
         [[load.stage]]\n  duration = \"5m\"\n  rate = 1                     # sessions per second\n",
    );
    if !grpc_steps.is_empty() {
        let head = text.find("\n[[flow]]").unwrap_or(text.len());
        text.insert_str(head, grpc::PROTO_NOTE);
    }
    FlowsScenario { text, flows, correlations, unread: unread_answers, grpc: grpc_steps }
}

/// The steps of one page, with values from earlier answers replaced by variables.
fn correlate(entries: &[&HarEntry], scrubber: &mut Scrubber, correlations: &mut Vec<Correlation>) -> Vec<StepDraft> {
    let mut page = Page { known: BTreeMap::new(), named: Vec::new(), steps: Vec::new(), correlations };
    for entry in entries {
        let step = page.step(entry, scrubber);
        page.steps.push(step);
        learn(&mut page.known, page.steps.len() - 1, &page.steps[page.steps.len() - 1].route, entry);
    }
    page.steps
}

/// One page being turned into steps: the values its answers gave so far, and the variables named.
struct Page<'c> {
    known: BTreeMap<String, Known>,
    named: Vec<String>,
    steps: Vec<StepDraft>,
    correlations: &'c mut Vec<Correlation>,
}

impl Page<'_> {
    /// `entry` as a step: each value an earlier answer gave replaced by its variable, the rest scrubbed.
    fn step(&mut self, entry: &HarEntry, scrubber: &mut Scrubber) -> StepDraft {
        let request = &entry.recorded.request;
        scrubber.counts.bodies += u64::from(entry.recorded.unreadable_body);
        let (path, query) = request.target.split_once('?').map_or((request.target.as_str(), ""), |(p, q)| (p, q));
        let query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
                let (name, value) = (percent_decode(name), percent_decode(raw));
                let value = self.use_value(&value).unwrap_or_else(|| {
                    literal(&scrubber.pair_value(Some(&name), raw, Counter::Query).unwrap_or(value))
                });
                (name, value)
            })
            .collect();
        let mut headers = Vec::new();
        let mut plain = Vec::new();
        for (name, value) in &entry.recorded.headers {
            match self.use_value(value) {
                Some(template) => headers.push((name.clone(), template)),
                None => plain.push((name.clone(), value.clone())),
            }
        }
        let kept = scrubber.headers(&plain).into_iter().filter(|(n, _)| n != "accept-encoding");
        headers.extend(kept.map(|(n, v)| (n, literal(&v))));
        let json = request
            .body
            .as_deref()
            .filter(|b| b.len() <= MAX_JSON_TREE_BYTES)
            .and_then(|b| serde_json::from_str::<Value>(b).ok())
            .filter(Value::is_object);
        let rules = scrubber.rules().clone();
        let json = json.map(|mut json| {
            template_json(&mut json, &rules, &mut |secret, name, value| {
                if secret {
                    scrubber.counts.fields += 1;
                    return Some(scrubber.secret(value));
                }
                self.use_value(value).or_else(|| scrubber.value(name, value)).or_else(|| Some(literal(value)))
            });
            json
        });
        let body = if json.is_some() { None } else { other_body(request.body.as_deref(), scrubber) };
        if json.is_some() {
            headers.retain(|(n, _)| n != "content-type");
        }
        let grpc = entry.grpc.as_ref().map(|call| grpc::draft(call, scrubber));
        if grpc.is_some() {
            headers.retain(|(n, _)| !grpc::is_transport(n));
        }
        // Routed as `tape import` routes a request, once scrubbed: the route names the step, and a private
        // segment (an email in a path) must not.
        let scrubbed = scrubber.target_uncounted(&request.target);
        let router = super::Router::default();
        let scrubbed_path = scrubbed.split('?').next().unwrap_or_default();
        StepDraft {
            route: router.route(request.method.as_str(), scrubbed_path).key,
            name: router.route(request.method.as_str(), &scrubbed).key,
            method: request.method.to_string(),
            path: self.path(path, scrubber),
            query,
            headers,
            json,
            body,
            status: request.status,
            extract: BTreeMap::new(),
            grpc,
            websocket: super::import::is_websocket(&entry.recorded.headers, request.status),
        }
    }

    /// Segment by segment (`/boards/{{ boards_id }}` keeps the route in sight), else the whole path (a
    /// `Location` header); segments that are not correlated are scrubbed.
    fn path(&mut self, path: &str, scrubber: &mut Scrubber) -> String {
        let segments: Vec<Option<String>> = path.split('/').map(|segment| self.use_value(segment)).collect();
        if !segments.iter().any(Option::is_some)
            && let Some(whole) = self.use_value(path)
        {
            return whole;
        }
        path.split('/')
            .zip(segments)
            .map(|(segment, used)| {
                used.unwrap_or_else(|| literal(&scrubber.path_segment(segment).unwrap_or_else(|| segment.to_owned())))
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The template of `value` if an earlier answer gave it: the answering step extracts it (named on first
    /// use), and the correlation is counted.
    fn use_value(&mut self, value: &str) -> Option<String> {
        let found = self.known.get_mut(value)?;
        let variable = found.variable.clone().unwrap_or_else(|| {
            let base = found.name.clone();
            let name = (1..=self.named.len() + 1)
                .map(|i| if i == 1 { base.clone() } else { format!("{base}_{i}") })
                .find(|n| !self.named.contains(n))
                .unwrap_or(base);
            self.named.push(name.clone());
            name
        });
        found.variable = Some(variable.clone());
        let step = &mut self.steps[found.step];
        step.extract.entry(variable.clone()).or_insert_with(|| found.from.clone());
        let from = match &found.from {
            Extract::Json(path) => path.clone(),
            Extract::Header(name) => format!("header {name}"),
        };
        match self.correlations.iter_mut().find(|c| c.variable == variable) {
            Some(c) => c.uses += 1,
            None => self.correlations.push(Correlation {
                variable: variable.clone(),
                from_step: step.route.clone(),
                from,
                uses: 1,
            }),
        }
        Some(format!("{{{{ {variable} }}}}"))
    }
}

/// A body that is not a JSON object read as a tree: a form is scrubbed pair by pair; anything else
/// (multipart, binary, JSON over [`MAX_JSON_TREE_BYTES`]) cannot be checked, so it is left out (and counted).
fn other_body(body: Option<&str>, scrubber: &mut Scrubber) -> Option<String> {
    let body = body?;
    let json = body.starts_with(['{', '[']);
    if !json && !body.contains(char::is_whitespace) && body.contains('=') {
        return Some(literal(&scrubber.pairs(body, Counter::Field)));
    }
    scrubber.counts.bodies += 1;
    None
}

/// Recorded text written where a scenario reads templates: `{{` would start one (and `{{ env("…") }}` in a
/// recording would send the user's secret), so it is broken apart.
fn literal(text: &str) -> String {
    text.replace("{{", "{ {")
}

/// Replaces, in a JSON body, every scalar for which `replace(under a secret name, field name, value as text)`
/// gives text; everything under a field whose name marks a secret is replaced whole.
fn template_json(value: &mut Value, rules: &ScrubRules, replace: &mut Replacer<'_>) {
    template_field(value, rules, false, None, replace);
}

/// What [`template_json`] asks of each scalar: whether it is under a secret name, its field, its text.
type Replacer<'a> = dyn FnMut(bool, Option<&str>, &str) -> Option<String> + 'a;

fn template_field(value: &mut Value, rules: &ScrubRules, secret: bool, name: Option<&str>, replace: &mut Replacer<'_>) {
    match value {
        Value::Object(object) => {
            for (key, field) in object.iter_mut() {
                let secret = secret || rules.is_secret(key);
                template_field(field, rules, secret, Some(key), replace);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| template_field(v, rules, secret, name, replace)),
        Value::String(s) => {
            if let Some(new) = replace(secret, name, s) {
                *s = new;
            }
        }
        Value::Number(n) => {
            if let Some(new) = replace(secret, name, &n.to_string()).filter(|new| *new != n.to_string()) {
                // A card number's placeholder is digits, and stays a number as the recording sent it.
                *value = new.parse::<u64>().map_or(Value::String(new), Value::from);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::*;
    use crate::tape::TapeRequest;
    use crate::tape::scrub::ScrubRules;
    use crate::tape::sources::{Answer, Recorded};

    fn entry(method: Method, target: &str, body: Option<&str>, answer: Option<&str>) -> HarEntry {
        let mut request = TapeRequest::new(method, target.to_owned());
        request.body = body.map(str::to_owned);
        request.status = Some(200);
        HarEntry {
            number: 1,
            recorded: Recorded { request, headers: Vec::new(), host: None, unreadable_body: false },
            page: None,
            location: None,
            answer: answer.map_or(Answer::Absent, |a| Answer::Text(a.to_owned())),
            response_type: "application/json".to_owned(),
            grpc: None,
        }
    }

    #[test]
    fn recorded_text_never_becomes_a_template_and_secret_objects_are_replaced_whole() {
        let entries = [
            entry(
                Method::POST,
                "/a?q={{%20env(%22AWS_SECRET%22)%20}}",
                Some(r#"{"password":{"old":"x1","new":"y2"},"n":"{{ uuid() }}"}"#),
                Some(r#"{"id":4711}"#),
            ),
            entry(Method::GET, "/users/jane@example.com/a/4711", None, None),
            entry(Method::POST, "/login", Some("user=jane&password=hunter2"), None),
        ];
        let mut scrubber = Scrubber::new(ScrubRules::default(), 9);
        let built = scenario_from_har(&entries, &mut scrubber, "test");
        let text = &built.text;
        assert!(!text.contains("{{ env(\"AWS") && !text.contains("{{ uuid"), "{text}");
        assert!(!text.contains("x1") && !text.contains("y2") && !text.contains("hunter2"), "{text}");
        assert!(!text.contains("jane@example.com"), "{text}");
        assert!(text.contains(r#"path = "/users/redacted-"#) && text.contains(r#"/a/{{ a_id }}""#), "{text}");
        assert!(text.parse::<toml::Table>().is_ok(), "{text}");
    }

    #[test]
    fn a_json_body_too_long_for_a_tree_is_left_out() {
        let long = format!(r#"{{"a":"b=c","n":[{}0]}}"#, "0,".repeat(MAX_JSON_TREE_BYTES / 2));
        let mut scrubber = Scrubber::new(ScrubRules::default(), 9);
        let built = scenario_from_har(&[entry(Method::POST, "/a", Some(&long), None)], &mut scrubber, "test");
        assert!(!built.text.contains("json =") && !built.text.contains("body ="), "a body of {} bytes", long.len());
        assert_eq!(scrubber.counts.bodies, 1);
    }
}
