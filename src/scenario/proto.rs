//! `[proto]`: the `.proto` files a scenario's gRPC steps and Protobuf bodies are described by, compiled when the
//! scenario is loaded (protox, in Rust: no `protoc` to install), into the descriptor pool that steps resolve
//! their methods and message types in. An error in a `.proto` file is reported at its own line and column,
//! with the scenario's line that named it.

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};
use toml::Spanned;

use super::bounded_file::{FileProblem, regular_file};
use super::raw_scenario::RawProto;
use crate::config::Checker;

/// Most `.proto` files one scenario names: a service's API is a handful.
const MAX_PROTO_FILES: usize = 100;

/// Largest `.proto` file named: Google's largest API definitions are a few hundred kilobytes.
const MAX_PROTO_BYTES: u64 = 10_000_000;

/// Compiles `[proto] files` (relative to the scenario's folder) with `[proto] include` as import paths (each
/// file's own folder when none is given). `None` when there is no `[proto]` or it has an error (pushed).
pub(super) fn resolve_protos(checker: &mut Checker<'_>, raw: Option<&Spanned<RawProto>>) -> Option<DescriptorPool> {
    let raw = raw?;
    let folder = checker.folder();
    let RawProto { files, include } = raw.get_ref();
    if files.is_empty() || files.len() > MAX_PROTO_FILES {
        let message = format!("name from 1 to {MAX_PROTO_FILES} `.proto` files: `files = [\"api.proto\"]`");
        checker.error(raw, "proto.files", message);
        return None;
    }
    let files: Vec<(PathBuf, &Spanned<String>)> = files.iter().map(|f| (folder.join(f.get_ref()), f)).collect();
    // Looked at before protox reads them: a device or a named pipe would never end, a huge file fill memory.
    let mut unreadable = false;
    for (index, (path, spanned)) in files.iter().enumerate() {
        let problem = match regular_file(path) {
            Ok(metadata) if metadata.len() > MAX_PROTO_BYTES => {
                Some(FileProblem::TooLarge(MAX_PROTO_BYTES / 1_000_000))
            }
            Ok(_) => None,
            Err(problem) => Some(problem),
        };
        if let Some(problem) = problem {
            checker.error(*spanned, &format!("proto.files[{index}]"), problem.about(spanned.get_ref()));
            unreadable = true;
        }
    }
    if unreadable {
        return None;
    }
    let includes: Vec<PathBuf> = if include.is_empty() {
        let mut folders: Vec<PathBuf> =
            files.iter().map(|(path, _)| path.parent().map(Path::to_path_buf).unwrap_or_default()).collect();
        folders.dedup();
        folders
    } else {
        include.iter().map(|i| folder.join(i.get_ref())).collect()
    };
    let mut compiler = match protox::Compiler::new(&includes) {
        Ok(compiler) => compiler,
        Err(e) => {
            checker.error(raw, "proto.include", format!("cannot use the include folders: {}", described(&e)));
            return None;
        }
    };
    compiler.include_imports(true).include_source_info(false);
    let mut failed = false;
    for (index, (path, spanned)) in files.iter().enumerate().filter(|(_, (path, _))| !is_descriptor_set(path)) {
        if let Err(e) = compiler.open_file(path) {
            checker.error(*spanned, &format!("proto.files[{index}]"), described(&e));
            failed = true;
        }
    }
    let mut pool = compiler.descriptor_pool();
    for (index, (path, spanned)) in files.iter().enumerate().filter(|(_, (path, _))| is_descriptor_set(path)) {
        if let Err(problem) = add_descriptor_set(&mut pool, path) {
            checker.error(*spanned, &format!("proto.files[{index}]"), format!("{}: {problem}", spanned.get_ref()));
            failed = true;
        }
    }
    (!failed).then_some(pool)
}

/// A descriptor set (`degrade proto fetch`'s, or `protoc --descriptor_set_out`'s) rather than a `.proto` file.
fn is_descriptor_set(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "protoset" || e == "pb")
}

/// Adds the files of the descriptor set at `path` (already checked to be a regular file of bounded size).
fn add_descriptor_set(pool: &mut DescriptorPool, path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let set = <prost_reflect::prost_types::FileDescriptorSet as prost::Message>::decode(bytes.as_slice())
        .map_err(|e| format!("is not a descriptor set (protoc's --descriptor_set_out format): {e}"))?;
    // A file the `.proto` files already brought (a well-known type, most often) is the same file: skipped.
    let new: Vec<_> = set.file.into_iter().filter(|f| pool.get_file_by_name(f.name()).is_none()).collect();
    pool.add_file_descriptor_protos(new).map_err(|e| format!("its descriptors do not make a whole set: {e}"))
}

/// A protox error in words, with the file, line and column it points at when it points at one.
fn described(error: &protox::Error) -> String {
    let at = error.labels().and_then(|mut labels| labels.next()).and_then(|label| {
        let contents = error.source_code()?.read_span(label.inner(), 0, 0).ok()?;
        Some((contents.line() + 1, contents.column() + 1))
    });
    match (error.file(), at) {
        (Some(file), Some((line, column))) => format!("{file}:{line}:{column}: {error}"),
        (Some(file), None) if !error.to_string().contains(file) => format!("{file}: {error}"),
        _ => error.to_string(),
    }
}

/// The method `name` (`package.Service/Method`, as gRPC's path writes it, or `package.Service.Method`).
pub(super) fn method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, String> {
    // `/package.Service/Method` is the call's HTTP/2 path, as gRPC's tools print it: the same method.
    let written = name.strip_prefix('/').unwrap_or(name);
    let (service, method) = written
        .rsplit_once('/')
        .or_else(|| written.rsplit_once('.'))
        .ok_or_else(|| format!("`{name}` is not a method; write `package.Service/Method`"))?;
    let Some(found) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_owned()).collect();
        return Err(format!("no service `{service}` in the [proto] files (they define: {})", listed(&known)));
    };
    found.methods().find(|m| m.name() == method).ok_or_else(|| {
        let known: Vec<String> = found.methods().map(|m| m.name().to_owned()).collect();
        format!("service `{service}` has no method `{method}` (it has: {})", listed(&known))
    })
}

/// The message type `name` (`package.Message`).
pub(super) fn message(pool: &DescriptorPool, name: &str) -> Result<MessageDescriptor, String> {
    pool.get_message_by_name(name.trim_start_matches('.'))
        .ok_or_else(|| format!("no message type `{name}` in the [proto] files; write its full name, `package.Message`"))
}

/// Names for a message, the first ten.
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    let mut text = names.iter().take(10).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    if names.len() > 10 {
        text.push_str(", …");
    }
    text
}
