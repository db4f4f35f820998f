//! One HAR entry, read from its text (which the scanner kept, at most [`super::MAX_ENTRY_BYTES`]) into a request
//! and what its answer gave. Nothing read takes more memory than the text it came from: request headers are
//! at most [`MAX_HEADERS`] and form fields at most [`MAX_FORM_FIELDS`] (a list of tiny items would otherwise
//! weigh several times its text), of the answer's headers only `Location` is kept, and of its body only up
//! to [`MAX_ANSWER_BYTES`]. A gRPC call's binary request is never kept as text: it is taken out of gRPC's
//! framing (from base64 when the recording encoded it) for `--flows` to judge ([`GrpcRequest`]).

use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::super::{Malformed, Recorded, excerpt, method, target, time};
use super::scan::Element;
use crate::tape::format::TapeRequest;
use crate::tape::grpc_body::{GrpcRequest, is_grpc};

/// The most headers a request may have; servers refuse far fewer (Apache 100), so a replay of more would
/// only be an error.
pub const MAX_HEADERS: usize = 256;

/// The most form fields (`postData.params`) a request may have: PHP reads 1,000 (`max_input_vars`).
pub const MAX_FORM_FIELDS: usize = 1000;

/// The longest answer body kept. Answers are kept only for `--flows` to read as JSON for values to
/// correlate, and a JSON tree takes up to ~35 times its text.
pub const MAX_ANSWER_BYTES: usize = crate::tape::MAX_JSON_TREE_BYTES;

/// One entry: the request as recorded, and what its answer gave.
#[derive(Debug, Clone)]
pub struct HarEntry {
    /// Its place among the log's entries, from 1.
    pub number: u64,
    /// The request, its headers and host.
    pub recorded: Recorded,
    /// The page (`pageref`) it belongs to, if any.
    pub page: Option<String>,
    /// The answer's `Location` header.
    pub location: Option<String>,
    /// The answer's body.
    pub answer: Answer,
    /// The answer's MIME type.
    pub response_type: String,
    /// The gRPC call it is, if its content type is gRPC's.
    pub grpc: Option<GrpcRequest>,
}

/// An answer's body as the recording kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Not recorded (or not UTF-8 text once decoded).
    Absent,
    /// The body's text.
    Text(String),
    /// Longer than [`MAX_ANSWER_BYTES`]: its length; the text was let go.
    TooLong(usize),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    #[serde(default)]
    pageref: Option<String>,
    #[serde(default)]
    started_date_time: Option<String>,
    request: Request,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default, deserialize_with = "headers")]
    headers: Vec<NameValue>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData {
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, deserialize_with = "form_fields")]
    params: Vec<NameValue>,
    /// `base64` when a tool recorded a binary body so (not in HAR 1.2, but common).
    #[serde(default)]
    encoding: Option<String>,
}

#[derive(Deserialize, Default)]
struct Response {
    #[serde(default)]
    status: i64,
    #[serde(default, rename = "headers", deserialize_with = "location")]
    location: Option<String>,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Content {
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    #[serde(default)]
    value: String,
}

/// The entry numbered `number`, from what the scanner saw of it, which kept at most `cap` bytes.
pub(super) fn read_entry(number: u64, element: Element, cap: usize) -> Result<HarEntry, Malformed> {
    let text = match element {
        Element::Object(text) => text,
        Element::TooLarge(length) => {
            let length = if length >= 1_000_000 {
                format!("{:.1} MB", length as f64 / 1e6)
            } else {
                format!("{length} bytes long")
            };
            let cap = if cap >= 1 << 20 { format!("{} MiB", cap >> 20) } else { format!("{} KiB", cap >> 10) };
            let message = format!("the entry is {length}, over the {cap} one entry may take (its answer included)");
            return Err(Malformed::new(number, message));
        }
        Element::Other(what) => return Err(Malformed::new(number, format!("not a HAR entry: {what}, not an object"))),
    };
    let entry = serde_json::from_slice::<Entry>(&text)
        .map_err(|e| Malformed::new(number, format!("not a HAR entry: {}", without_position(&e))))?;
    drop(text);
    entry_of(number, entry).map_err(|message| Malformed::new(number, message))
}

/// serde_json's message without its position, which counts from the entry's start, not the file's.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    text.rfind(" at line ").map_or_else(|| text.clone(), |end| text[..end].to_owned())
}

fn entry_of(number: u64, entry: Entry) -> Result<HarEntry, String> {
    let Entry { pageref, started_date_time, mut request, response } = entry;
    let method = method(&request.method).map_err(|e| format!("request.method: {e}"))?;
    let (target, host) = target(&request.url).map_err(|e| format!("request.url: {e}"))?;
    let mut headers: Vec<(String, String)> =
        request.headers.into_iter().map(|h| (h.name.to_ascii_lowercase(), h.value)).collect();
    // HTTP/2 recordings name the pseudo-headers; they are not headers of an HTTP/1.1 request.
    headers.retain(|(name, _)| !name.starts_with(':'));
    let content_type = |headers: &[(String, String)]| {
        headers.iter().find(|(n, _)| n == "content-type").map(|(_, v)| v.clone()).unwrap_or_default()
    };
    let grpc_type =
        is_grpc(&content_type(&headers)) || request.post_data.as_ref().is_some_and(|data| is_grpc(&data.mime_type));
    let grpc = grpc_type.then(|| {
        let path = target.split('?').next().unwrap_or_default();
        let data = request.post_data.take();
        GrpcRequest::new(path, data.and_then(|d| grpc_bytes(d.text, d.encoding.as_deref())).as_deref())
    });
    if grpc.is_some() && !headers.iter().any(|(n, _)| n == "content-type") {
        headers.push(("content-type".to_owned(), "application/grpc".to_owned()));
    }
    let mut unreadable_body = false;
    let body = request.post_data.and_then(|data| {
        if !data.mime_type.is_empty() && !headers.iter().any(|(n, _)| n == "content-type") {
            headers.push(("content-type".to_owned(), data.mime_type.clone()));
        }
        match data.text.filter(|t| !t.is_empty()) {
            // Scrubbed and replayed as what was sent: the base64 of a form is not a form to the scrubber, and a
            // card number inside it was kept as it was (a trial decoded it back from the tape).
            Some(text) if data.encoding.as_deref() == Some("base64") => {
                let text = base64::engine::general_purpose::STANDARD.decode(text.trim().as_bytes()).ok();
                let text = text.and_then(|bytes| String::from_utf8(bytes).ok());
                unreadable_body = text.is_none();
                text
            }
            Some(text) => Some(text),
            None if !data.params.is_empty() => Some(
                form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(data.params.iter().map(|p| (&p.name, &p.value)))
                    .finish(),
            ),
            None => None,
        }
    });
    let mut tape = TapeRequest::new(method, target);
    tape.body = body;
    tape.session.clone_from(&pageref);
    // A time that is there but cannot be read makes the entry malformed, rather than kept without its time.
    tape.time = match started_date_time.as_deref().filter(|t| !t.is_empty()) {
        Some(text) => {
            Some(time(text).ok_or_else(|| format!("startedDateTime: `{}` is not an ISO 8601 time", excerpt(text)))?)
        }
        None => None,
    };
    let response = response.unwrap_or_default();
    // Browsers record 0 for a request that got no answer (blocked, aborted).
    tape.status = u16::try_from(response.status).ok().filter(|s| (100..=599).contains(s));
    let (answer, response_type) = match response.content {
        Some(Content { mime_type, text: Some(text), encoding }) => (answer(text, encoding.as_deref()), mime_type),
        Some(Content { mime_type, .. }) => (Answer::Absent, mime_type),
        None => (Answer::Absent, String::new()),
    };
    Ok(HarEntry {
        number,
        recorded: Recorded { request: tape, headers, host, unreadable_body },
        page: pageref,
        location: response.location,
        answer,
        response_type,
        grpc,
    })
}

/// A gRPC body's bytes: decoded from base64 when so recorded, else the text's own bytes.
fn grpc_bytes(text: Option<String>, encoding: Option<&str>) -> Option<Vec<u8>> {
    let text = text.filter(|t| !t.is_empty())?;
    if encoding == Some("base64") {
        return base64::engine::general_purpose::STANDARD.decode(text.trim().as_bytes()).ok();
    }
    Some(text.into_bytes())
}

/// A recorded body, decoded from base64 if it was encoded, unless it is longer than [`MAX_ANSWER_BYTES`].
fn answer(text: String, encoding: Option<&str>) -> Answer {
    let base64 = encoding == Some("base64");
    // Four characters of base64 are three bytes; the length is known before anything is decoded.
    let length = if base64 { text.len() / 4 * 3 } else { text.len() };
    if length > MAX_ANSWER_BYTES {
        return Answer::TooLong(length);
    }
    if !base64 {
        return Answer::Text(text);
    }
    base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map_or(Answer::Absent, Answer::Text)
}

fn headers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<NameValue>, D::Error> {
    deserializer.deserialize_seq(AtMost { most: MAX_HEADERS, what: "request headers", item: PhantomData })
}

fn form_fields<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<NameValue>, D::Error> {
    deserializer.deserialize_seq(AtMost { most: MAX_FORM_FIELDS, what: "form fields", item: PhantomData })
}

/// A list of at most `most` items: one more makes the entry malformed.
struct AtMost<T> {
    most: usize,
    what: &'static str,
    item: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for AtMost<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of {}", self.what)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            if items.len() == self.most {
                return Err(de::Error::custom(format_args!("more than {} {}", self.most, self.what)));
            }
            items.push(item);
        }
        Ok(items)
    }
}

/// The answer's headers, of which only the first `Location` is kept (the one a later request may open).
fn location<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    struct FirstLocation;
    impl<'de> Visitor<'de> for FirstLocation {
        type Value = Option<String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of response headers")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
            let mut location = None;
            while let Some(header) = seq.next_element::<NameValue>()? {
                if location.is_none() && header.name.eq_ignore_ascii_case("location") {
                    location = Some(header.value);
                }
            }
            Ok(location)
        }
    }
    deserializer.deserialize_seq(FirstLocation)
}
