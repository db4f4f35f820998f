//! The keys a TOML file may hold, read from the program itself: each table is probed with a key no one
//! would write, and the checker's refusal ("unknown field `zz_probe`, expected one of `a`, `b`") lists the
//! keys it accepts there. Each accepted key is then probed as a table and as an array of tables, so nested
//! tables (`[scenario.build]`, `[[flow.step]]`, inline `expect = { … }`) are walked too, whatever the Rust
//! types behind them (spanned values, maps of free keys, values read by hand).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use degrade::config::Config;

/// The key no file holds.
const PROBE: &str = "zz_probe";

/// Checks a file's text as degrade does; the empty string when it is accepted, else every problem.
pub type Checker = fn(&str) -> String;

/// `degrade.toml`, checked by the configuration's own parser.
pub fn check_config(text: &str) -> String {
    match Config::parse_with_env(Path::new("degrade.toml"), text, &|_| None) {
        Ok(_) => String::new(),
        Err(errors) => errors.to_string(),
    }
}

/// A scenario file, checked by the scenario's own parser.
pub fn check_scenario(text: &str) -> String {
    match degrade::scenario::parse(Path::new("scenario.toml"), text, None, &|_| None) {
        Ok(_) => String::new(),
        Err(errors) => errors.to_string(),
    }
}

/// Whether a table is written `[name]` or `[[name]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Table,
    Array,
}

/// The keys a file accepts, each by the TOML header of the table it is in (`[server]`, `[[flow.step]]`;
/// `""` at the top level) and its name.
#[derive(Debug, Default)]
pub struct Keys {
    /// Keys holding values, with the values of those serde reads as a closed set (`kind = "slack" | "json"`).
    pub values: BTreeMap<(String, String), Vec<String>>,
    /// Keys holding tables of keys of their own (`build` in `[[scenario]]`, `expect` in `[[flow.step]]`).
    pub tables: BTreeSet<(String, String)>,
}

/// Every key `check` accepts, walked from the top level down.
pub fn accepted_keys(check: Checker) -> Keys {
    let mut keys = Keys::default();
    let walked = walk(check, &mut Vec::new(), &mut keys);
    assert!(walked, "the top level refused no probe: is the checker's unknown-key message still serde's?");
    keys
}

fn walk(check: Checker, path: &mut Vec<(String, Kind)>, keys: &mut Keys) -> bool {
    let Some(fields) = refused(&check(&format!("{}{PROBE} = 1\n", headers(path))), "unknown field") else {
        return false;
    };
    for field in fields {
        let nested = [Kind::Table, Kind::Array].into_iter().any(|kind| {
            path.push((field.clone(), kind));
            let walked = walk(check, path, keys);
            path.pop();
            walked
        });
        if nested {
            keys.tables.insert((header(path), field));
        } else {
            let values = variants(check, path, &field);
            keys.values.insert((header(path), field), values);
        }
    }
    true
}

/// The variants serde names for `field`, tried as a string and as a list of strings.
fn variants(check: Checker, path: &[(String, Kind)], field: &str) -> Vec<String> {
    ["\"zz_probe\"", "[\"zz_probe\"]"]
        .into_iter()
        .find_map(|value| refused(&check(&format!("{}{field} = {value}\n", headers(path))), "unknown variant"))
        .unwrap_or_default()
}

/// The names serde lists after "`what` `zz_probe`, expected …", if `errors` says so.
fn refused(errors: &str, what: &str) -> Option<Vec<String>> {
    let needle = format!("{what} `{PROBE}`, ");
    let rest = &errors[errors.find(&needle)? + needle.len()..];
    let line = rest.lines().next().unwrap_or_default();
    Some(crate::support::markdown::code_spans(line))
}

/// The table headers that open `path`: `[[flow]]`, `[[flow.step]]`, `[flow.step.expect]`.
fn headers(path: &[(String, Kind)]) -> String {
    (1..=path.len()).map(|depth| header(&path[..depth]) + "\n").collect()
}

/// The header of the innermost table of `path`; `""` for the top level.
fn header(path: &[(String, Kind)]) -> String {
    let Some((_, kind)) = path.last() else { return String::new() };
    let name: Vec<&str> = path.iter().map(|(name, _)| name.as_str()).collect();
    match kind {
        Kind::Table => format!("[{}]", name.join(".")),
        Kind::Array => format!("[[{}]]", name.join(".")),
    }
}

/// The top-level keys `check` accepts.
pub fn top_level(check: Checker) -> BTreeSet<String> {
    refused(&check(&format!("{PROBE} = 1\n")), "unknown field").unwrap_or_default().into_iter().collect()
}
