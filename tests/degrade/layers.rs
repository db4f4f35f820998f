//! The module layering of `src/`, checked on the source text: a top-level module may use only modules of
//! a lower layer, so no two modules import each other and the pure ones (`model`, `metrics`, `analysis`)
//! never reach for SQL, configuration or I/O. ARCHITECTURE.md draws the same table.

use std::collections::BTreeMap;
use std::path::Path;

/// Each top-level module of `src/` with its layer, lowest first. A module may use any module of a lower
/// layer, never one of its own layer or above.
const LAYERS: &[(&str, u8)] = &[
    // Helpers with no knowledge of the domain.
    ("secret", 0),
    ("outside_text", 0),
    ("clock", 0),
    // The vocabulary every other layer speaks.
    ("model", 1),
    // The Prometheus text format, read with the helpers' escaping and nothing of the domain.
    ("exposition", 1),
    // Pure figures and judgement: data in, data out.
    ("metrics", 2),
    ("analysis", 3),
    // The SQL layer: keeps the vocabulary, knows nothing of configuration.
    ("store", 4),
    ("config", 5),
    // Recorded traffic: formats, scrubbing, routes; knows nothing of scenarios.
    ("tape", 6),
    ("scenario", 7),
    ("report", 7),
    ("engine", 8),
    ("latest_build", 9),
    ("notify", 9),
    ("telemetry", 9),
    ("pipeline", 10),
    ("scheduler", 11),
    ("web", 11),
    ("service", 12),
    ("demo", 12),
    ("cli", 13),
];

fn layer_of(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(name, _)| *name == module).map(|(_, layer)| *layer)
}

/// A line of code without its comment and with string literals emptied, so neither `"http://"` nor a
/// path in a message hides or fakes an import.
fn code_of(line: &str) -> String {
    let (mut code, mut in_string, mut escaped) = (String::new(), false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (true, '\\') if !escaped => escaped = true,
            (true, '"') if !escaped => {
                in_string = false;
                code.push('"');
            }
            (true, _) => escaped = false,
            (false, '"') => {
                in_string = true;
                code.push('"');
            }
            (false, '/') if chars.peek() == Some(&'/') => break,
            (false, _) => code.push(c),
        }
    }
    code
}

/// The top-level modules a file of `src/` names, as `crate::name` or through enough `super::` to reach the
/// crate root from its `depth` (1 for `src/a.rs` and `src/a/mod.rs`, 2 for `src/a/b.rs`, …). A `crate::{…}`
/// group would hide its names from this test, so it is refused.
fn crate_paths(file: &Path, module: &str, depth: usize, found: &mut BTreeMap<(String, String), String>) {
    let text = std::fs::read_to_string(file).unwrap();
    let root = "super::".repeat(depth);
    for (number, line) in text.lines().enumerate() {
        let code = code_of(line);
        let place = format!("{}:{}", file.display(), number + 1);
        assert!(!code.contains("crate::{"), "{place}: name the module in each import, not `crate::{{…}}`");
        let name_at = |start: usize| -> String {
            code[start..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect()
        };
        let from_crate = code.match_indices("crate::").map(|(at, _)| name_at(at + "crate::".len()));
        // Through `super::`, only names of top-level modules count: a test module's `super::helper` is local.
        let from_super = code
            .match_indices(root.as_str())
            .map(|(at, _)| name_at(at + root.len()))
            .filter(|name| layer_of(name).is_some());
        for used in from_crate.chain(from_super) {
            if !used.is_empty() && used != module && used != "super" {
                found.entry((module.to_owned(), used)).or_insert(place.clone());
            }
        }
    }
}

fn walk(dir: &Path, module: &str, depth: usize, found: &mut BTreeMap<(String, String), String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, module, depth + 1, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let own_depth = if path.file_name().is_some_and(|n| n == "mod.rs") { depth } else { depth + 1 };
            crate_paths(&path, module, own_depth, found);
        }
    }
}

#[test]
fn every_module_uses_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if ["lib", "main"].contains(&name.as_str()) {
            continue;
        }
        assert!(layer_of(&name).is_some(), "src/{name} is not in the layer table of tests/degrade/layers.rs");
        if path.is_dir() { walk(&path, &name, 1, &mut found) } else { crate_paths(&path, &name, 1, &mut found) }
    }
    let wrong: Vec<String> = found
        .iter()
        .filter(|((user, used), _)| layer_of(used).is_none_or(|used| used >= layer_of(user).unwrap()))
        .map(|((user, used), place)| format!("{user} uses {used} (first at {place})"))
        .collect();
    assert!(wrong.is_empty(), "imports against the layering:\n{}", wrong.join("\n"));
    // The check must have seen the imports it judges.
    assert!(found.contains_key(&("store".to_owned(), "model".to_owned())));
}

/// The module path of a file of `src/`: `src/tape/format.rs` is `tape::format`, `src/tape/mod.rs` is `tape`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    path
}

/// The module paths a file's code names (`crate::a::b`, `super::b`, `self::c`), resolved from `module`; its
/// `#[cfg(test)]` part is left out, since a test module's `super` is the file itself.
fn named_modules(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut named = Vec::new();
    for line in text.lines().take_while(|l| !l.trim_start().starts_with("#[cfg(test)]")) {
        let code = code_of(line);
        let starts = ["crate::", "super::", "self::"].into_iter().flat_map(|start| code.match_indices(start));
        for (at, _) in starts {
            // Only the start of a path: `super::super::x` is read once, from its first `super`.
            if code[..at].ends_with("::") {
                continue;
            }
            let words = path_words(&code[at..]);
            let mut path: Vec<String> = if words[0] == "crate" { Vec::new() } else { module.to_vec() };
            for word in words.iter().skip(usize::from(matches!(words[0], "crate" | "self"))) {
                if *word == "super" {
                    path.pop();
                } else {
                    path.push((*word).to_owned());
                }
            }
            named.push(path);
        }
    }
    named
}

/// The lower-case words a path starts with: `super::scrub::ScrubRules::default()` is `super`, `scrub`; a
/// word followed by anything but `::` (`run_replay(…)`) ends it.
fn path_words(code: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for segment in code.split("::") {
        let end = segment.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        let word = &segment[..end.unwrap_or(segment.len())];
        if word.is_empty() {
            break;
        }
        words.push(word);
        if end.is_some() {
            break;
        }
    }
    words
}

fn rust_files(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// Two files of one module that use each other cannot be read in order: one of them should own what both
/// need, or the shared part get a file of its own.
#[test]
fn no_two_files_of_a_module_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // (parent module, using child, used child) for children that are files or folders of the parent.
    let mut edges: BTreeMap<(Vec<String>, String, String), String> = BTreeMap::new();
    let is_child = |parent: &[String], name: &str| {
        let dir = parent.iter().fold(src.clone(), |dir, p| dir.join(p));
        dir.join(format!("{name}.rs")).is_file() || dir.join(name).join("mod.rs").is_file()
    };
    for file in &files {
        let module = module_path(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        for named in named_modules(&text, &module) {
            let common = module.iter().zip(&named).take_while(|(a, b)| a == b).count();
            if common >= module.len() || common >= named.len() {
                continue;
            }
            let parent = &module[..common];
            if is_child(parent, &module[common]) && is_child(parent, &named[common]) {
                let key = (parent.to_vec(), module[common].clone(), named[common].clone());
                edges.entry(key).or_insert_with(|| file.strip_prefix(&src).unwrap().display().to_string());
            }
        }
    }
    let pairs: Vec<String> = edges
        .iter()
        .filter(|((parent, a, b), _)| a < b && edges.contains_key(&(parent.clone(), b.clone(), a.clone())))
        .map(|((parent, a, b), at)| {
            let back = &edges[&(parent.clone(), b.clone(), a.clone())];
            format!("{}: {a} ↔ {b} (in {at} and {back})", parent.join("::"))
        })
        .collect();
    assert!(pairs.is_empty(), "files of one module that import each other:\n{}", pairs.join("\n"));
    assert!(edges.len() > 50, "only {} uses between sibling files found: is the source still read?", edges.len());
}
