//! Asking a gRPC server for its descriptors through its reflection service (`grpc.reflection.v1`, falling back
//! to `v1alpha`), as grpcurl and ghz do, so a scenario can describe a service nobody gave a `.proto` file for.
//!
//! Why once, into a file, rather than at every load: a scenario is checked completely when it is loaded
//! (`validate` on a laptop, `serve` at start), before the night's deploy brings the target up, and a night
//! must measure the same calls as the nights before it. `degrade proto fetch` writes what the server says as
//! a descriptor set (`.protoset`, protoc's `--descriptor_set_out` format, grpcurl's and ghz's `--protoset`),
//! which `[proto] files` reads like a `.proto` file: the methods are pinned in the repository, and a server
//! whose API changed shows as a diff.
//!
//! The protocol is one bidirectional stream; degrade sends each round's requests at once and half-closes, which
//! every server answers in order. Memory is bounded: at most [`MAX_FILES`] files and [`MAX_BYTES`] in all.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, bail};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::{FileDescriptorProto, FileDescriptorSet};

/// Most files one service's descriptors may take: Google's largest public APIs import a few dozen.
pub const MAX_FILES: usize = 1_000;
/// Most bytes of descriptors in all, and of one answer.
pub const MAX_BYTES: usize = 32 * 1024 * 1024;
/// The reflection service's versions, newest first.
const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// `grpc.reflection.v1.ServerReflectionRequest` (v1alpha's is the same).
#[derive(Clone, PartialEq, prost::Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Asked", tags = "3, 4, 7")]
    asked: Option<Asked>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Asked {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// `grpc.reflection.v1.ServerReflectionResponse`, the parts degrade reads.
#[derive(Clone, PartialEq, prost::Message)]
struct ReflectionResponse {
    #[prost(oneof = "Answered", tags = "4, 6, 7")]
    answered: Option<Answered>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answered {
    #[prost(message, tag = "4")]
    Files(FileDescriptors),
    #[prost(message, tag = "6")]
    Services(ServiceList),
    #[prost(message, tag = "7")]
    Error(ReflectionError),
}

#[derive(Clone, PartialEq, prost::Message)]
struct FileDescriptors {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ServiceList {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceName>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ServiceName {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ReflectionError {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// What a server described: its services (reflection's own left out) and every file they need.
#[derive(Debug)]
pub struct Described {
    /// The services asked for, or every service the server listed.
    pub services: Vec<String>,
    /// The files, each once, in the order they arrived.
    pub files: FileDescriptorSet,
    /// The pool they make, checked: every type they name is among them.
    pub pool: DescriptorPool,
}

/// Asks the server at `base` (an `http://` URL for h2c, `https://` for TLS with ALPN h2) for `services` (every
/// service it lists when empty) and the files that describe them, with their imports.
///
/// # Errors
/// When the server cannot be reached, serves no reflection, does not know a service, or sends descriptors
/// that do not make a whole pool.
pub async fn describe(client: &reqwest::Client, base: &str, services: &[String]) -> anyhow::Result<Described> {
    let mut server = Reflection { client, base: base.trim_end_matches('/'), path: None };
    let services = if services.is_empty() {
        let listed = server.ask(vec![Asked::ListServices(String::new())]).await?;
        let mut names = Vec::new();
        for answer in listed {
            if let Answered::Services(list) = answer {
                names.extend(list.service.into_iter().map(|s| s.name));
            }
        }
        names.retain(|n| !n.starts_with("grpc.reflection."));
        if names.is_empty() {
            bail!("the server lists no service besides reflection");
        }
        names
    } else {
        services.to_vec()
    };
    let mut files = Files::default();
    let asked = services.iter().map(|s| Asked::FileContainingSymbol(s.clone())).collect();
    files.take(server.ask(asked).await?, &services)?;
    // Imports the server did not send with the files that need them, asked for by name until none is missing.
    loop {
        let missing = files.missing();
        if missing.is_empty() {
            break;
        }
        let asked = missing.iter().cloned().map(Asked::FileByFilename).collect();
        files.take(server.ask(asked).await?, &missing)?;
        if let Some(still) = files.missing().iter().find(|m| missing.contains(m)) {
            bail!("the server did not send `{still}`, which its descriptors import");
        }
    }
    let files = FileDescriptorSet { file: files.in_order.into_values().collect() };
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_set(files.clone()).context("the server's descriptors do not make a whole set")?;
    Ok(Described { services, files, pool })
}

/// The files received so far, by name.
#[derive(Default)]
struct Files {
    in_order: BTreeMap<String, FileDescriptorProto>,
    bytes: usize,
}

impl Files {
    /// Keeps every file of `answers`, or fails on the server's error for one of `asked`.
    fn take(&mut self, answers: Vec<Answered>, asked: &[String]) -> anyhow::Result<()> {
        for (answer, what) in answers.into_iter().zip(asked.iter().chain(std::iter::repeat(&String::new()))) {
            match answer {
                Answered::Files(files) => {
                    for bytes in files.file_descriptor_proto {
                        self.bytes += bytes.len();
                        let file = FileDescriptorProto::decode(bytes.as_slice())
                            .context("the server sent a file descriptor that does not decode")?;
                        self.in_order.entry(file.name().to_owned()).or_insert(file);
                    }
                }
                Answered::Error(e) => bail!(
                    "the server could not describe `{}`: {} (gRPC status {})",
                    crate::outside_text::printable(what),
                    crate::outside_text::printable(&e.error_message),
                    e.error_code
                ),
                Answered::Services(_) => bail!("the server answered a list of services where files were asked for"),
            }
            if self.in_order.len() > MAX_FILES || self.bytes > MAX_BYTES {
                bail!("the server's descriptors pass {MAX_FILES} files or {} MiB", MAX_BYTES >> 20);
            }
        }
        Ok(())
    }

    /// The imports of the files received that were not received themselves.
    fn missing(&self) -> Vec<String> {
        let wanted: BTreeSet<&String> = self.in_order.values().flat_map(|f| &f.dependency).collect();
        wanted.into_iter().filter(|name| !self.in_order.contains_key(*name)).cloned().collect()
    }
}

/// The server's reflection service, at the first of [`PATHS`] it answers.
struct Reflection<'a> {
    client: &'a reqwest::Client,
    base: &'a str,
    path: Option<&'static str>,
}

impl Reflection<'_> {
    /// One round: `asked` sent on one stream, half-closed, and the answers read in order.
    async fn ask(&mut self, asked: Vec<Asked>) -> anyhow::Result<Vec<Answered>> {
        let mut body = Vec::new();
        for request in asked.into_iter().map(|asked| ReflectionRequest { host: String::new(), asked: Some(asked) }) {
            let message = request.encode_to_vec();
            body.push(0);
            body.extend_from_slice(&u32::try_from(message.len()).unwrap_or(u32::MAX).to_be_bytes());
            body.extend_from_slice(&message);
        }
        let paths: Vec<&'static str> = self.path.map_or_else(|| PATHS.to_vec(), |p| vec![p]);
        let mut unimplemented = None;
        for path in paths {
            match self.post(path, body.clone()).await? {
                Posted::Answers(answers) => {
                    self.path = Some(path);
                    return Ok(answers);
                }
                Posted::Unimplemented(why) => unimplemented = Some(why),
            }
        }
        bail!("the server has no reflection service ({})", unimplemented.unwrap_or_default())
    }

    async fn post(&self, path: &str, body: Vec<u8>) -> anyhow::Result<Posted> {
        let url = format!("{}{path}", self.base);
        let response = self
            .client
            .post(&url)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                let base = crate::outside_text::printable(self.base);
                // Reached, but no HTTP/2 answer came: an HTTP/1.1 server answers h2c's preface with garbage (an
                // invalid frame to h2) or closes the connection.
                // A connect that failed or timed out reached nothing; a request that timed out after it did
                // (the server read h2c's preface and said nothing) was reached.
                let said = if e.is_connect() {
                    format!("cannot reach {base}")
                } else if self.base.starts_with("http://") {
                    format!("{base} was reached but gave no HTTP/2 answer, which gRPC runs on (h2c on an http:// URL)")
                } else {
                    format!("no gRPC answer from {base}")
                };
                anyhow::Error::new(e).context(said)
            })?;
        if response.status() != reqwest::StatusCode::OK {
            bail!("the server answered HTTP {} to {path}", response.status().as_u16());
        }
        // A trailers-only answer carries the status in the headers: the usual way to say "no such service".
        let status = response.headers().get("grpc-status").and_then(|s| s.to_str().ok()).map(str::to_owned);
        let message = response.headers().get("grpc-message").and_then(|s| s.to_str().ok()).unwrap_or("").to_owned();
        match status.as_deref() {
            Some("12") => return Ok(Posted::Unimplemented(format!("{path}: UNIMPLEMENTED {message}"))),
            Some(code) if code != "0" => {
                bail!("the reflection service answered gRPC status {code} {}", crate::outside_text::printable(&message))
            }
            _ => {}
        }
        let bytes = read_capped(response).await?;
        Ok(Posted::Answers(messages(&bytes)?))
    }
}

enum Posted {
    Answers(Vec<Answered>),
    Unimplemented(String),
}

/// The body, refused past [`MAX_BYTES`].
async fn read_capped(mut response: reqwest::Response) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.context("the reflection answer broke off")? {
        if bytes.len() + chunk.len() > MAX_BYTES {
            bail!("the reflection answer passed {} MiB", MAX_BYTES >> 20);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The length-prefixed messages of a gRPC body.
fn messages(mut body: &[u8]) -> anyhow::Result<Vec<Answered>> {
    let mut answers = Vec::new();
    while !body.is_empty() {
        let Some((&[compressed, a, b, c, d], rest)) = body.split_first_chunk::<5>() else {
            bail!("the reflection answer ends inside a message's prefix");
        };
        if compressed != 0 {
            bail!("the reflection answer is compressed, which degrade did not ask for");
        }
        let length = u32::from_be_bytes([a, b, c, d]) as usize;
        if rest.len() < length {
            bail!("the reflection answer ends inside a message");
        }
        let response = ReflectionResponse::decode(&rest[..length]).context("a reflection answer does not decode")?;
        answers.extend(response.answered);
        body = &rest[length..];
    }
    Ok(answers)
}
