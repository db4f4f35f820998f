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
