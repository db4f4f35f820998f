//! HAR 1.2 recordings (browser developer tools, proxies): every entry a request with its answer.
//!
//! A HAR is one JSON document, so it is read whole (at most [`MAX_HAR_BYTES`]); recordings of a browser
//! session are megabytes, not gigabytes. Entries keep their answers for `tape import --flows`, which
//! correlates values from earlier answers with later requests.

use base64::Engine as _;
use serde::Deserialize;

use super::{Malformed, Recorded, method, target};
use crate::tape::format::TapeRequest;
use crate::tape::lines::LineReader;

/// The largest HAR read: it is parsed whole, so this bounds the memory an import takes (a browser session's
/// recording is a few megabytes).
pub const MAX_HAR_BYTES: u64 = 256_000_000;

/// One entry: the request as recorded, and its answer.
#[derive(Debug, Clone)]
pub struct HarEntry {
    /// The request, its headers and host.
    pub recorded: Recorded,
    /// The page (`pageref`) it belongs to, if any.
    pub page: Option<String>,
    /// The answer's headers.
    pub response_headers: Vec<(String, String)>,
    /// The answer's body as text, when the recording kept it.
    pub response_body: Option<String>,
    /// The answer's MIME type.
    pub response_type: String,
}

#[derive(Deserialize)]
struct Har {
    log: HarLog,
}

#[derive(Deserialize)]
struct HarLog {
    #[serde(default)]
    pages: Vec<Page>,
    #[serde(default)]
    entries: Vec<MaybeEntry>,
}

/// A recorded page: its id (what entries' `pageref` names) and its title.
#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    id: String,
    #[serde(default)]
    title: String,
}

/// An entry, or whatever else stands in its place (malformed): each is read into its own type at once, so
/// the document is never held twice, as a tree and as entries.
#[derive(Deserialize)]
#[serde(untagged)]
enum MaybeEntry {
    Entry(Box<Entry>),
    Other(serde_json::Value),
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
    #[serde(default)]
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
    #[serde(default)]
    params: Vec<NameValue>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: i64,
    #[serde(default)]
    headers: Vec<NameValue>,
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

/// Reads a HAR: its entries in order, each a request or why it is not one.
pub fn read_har(lines: LineReader) -> Result<Vec<Result<HarEntry, Malformed>>, String> {
    let bytes = lines.read_rest(MAX_HAR_BYTES).map_err(|e| format!("cannot read it: {e}"))?;
    let har: Har = serde_json::from_slice(&bytes).map_err(|e| format!("not a HAR file: {e}"))?;
    let titles = har.log.pages;
    // A page is named by its title where the recording has one (`Boards`; with its id when two pages share
    // it, as a page visited twice does), by its id otherwise.
    let page_name = |id: &str| {
        let title = titles.iter().find(|p| p.id == id).map(|p| p.title.trim()).filter(|t| !t.is_empty());
        match title {
            Some(title) if titles.iter().filter(|p| p.title.trim() == title).count() == 1 => title.to_owned(),
            Some(title) => format!("{title} ({id})"),
            None => id.to_owned(),
        }
    };
    Ok(har
        .log
        .entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let line = index as u64 + 1;
            match entry {
                MaybeEntry::Entry(entry) => entry_of(*entry)
                    .map(|mut entry| {
                        entry.page = entry.page.as_deref().map(page_name);
                        entry
                    })
                    .map_err(|message| Malformed::new(line, message)),
                MaybeEntry::Other(raw) => {
                    // Read again, for the reason it is not an entry.
                    let why = serde_json::from_value::<Entry>(raw).err().map_or_else(String::new, |e| e.to_string());
                    Err(Malformed::new(line, format!("not a HAR entry: {why}")))
                }
            }
        })
        .collect())
}

fn entry_of(entry: Entry) -> Result<HarEntry, String> {
    let Entry { pageref, started_date_time, request, response } = entry;
    let method = method(&request.method).map_err(|e| format!("request.method: {e}"))?;
    let (target, host) = target(&request.url).map_err(|e| format!("request.url: {e}"))?;
    let pairs =
        |list: Vec<NameValue>| list.into_iter().map(|h| (h.name.to_ascii_lowercase(), h.value)).collect::<Vec<_>>();
    let mut headers = pairs(request.headers);
    // HTTP/2 recordings name the pseudo-headers; they are not headers of an HTTP/1.1 request.
    headers.retain(|(name, _)| !name.starts_with(':'));
    let body = request.post_data.and_then(|data| {
        if !data.mime_type.is_empty() && !headers.iter().any(|(n, _)| n == "content-type") {
            headers.push(("content-type".to_owned(), data.mime_type.clone()));
        }
        match data.text.filter(|t| !t.is_empty()) {
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
        Some(time) => Some(
            super::time(time)
                .ok_or_else(|| format!("startedDateTime: `{}` is not an ISO 8601 time", super::excerpt(time)))?,
        ),
        None => None,
    };
    let response = response.unwrap_or(Response { status: 0, headers: Vec::new(), content: None });
    // Browsers record 0 for a request that got no answer (blocked, aborted).
    tape.status = u16::try_from(response.status).ok().filter(|s| (100..=599).contains(s));
    let (response_body, response_type) = match response.content {
        Some(Content { mime_type, text: Some(text), encoding }) => {
            let text = if encoding.as_deref() == Some("base64") {
                base64::engine::general_purpose::STANDARD
                    .decode(text.as_bytes())
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
            } else {
                Some(text)
            };
            (text, mime_type)
        }
        Some(Content { mime_type, .. }) => (None, mime_type),
        None => (None, String::new()),
    };
    Ok(HarEntry {
        recorded: Recorded { request: tape, headers, host },
        page: pageref,
        response_headers: pairs(response.headers),
        response_body,
        response_type,
    })
}
