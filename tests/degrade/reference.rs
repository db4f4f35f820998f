//! The manual's reference cannot drift from the program. Its pages list every key of `degrade.toml` and of a
//! scenario file that the checkers accept (walked from the checkers themselves, `support::toml_keys`) and
//! none they refuse, every value of a key serde reads as a closed set, every template function, every run
//! status, verdict, finding outcome and error class, and every exit code.

use std::collections::{BTreeMap, BTreeSet};

use degrade::cli::Exit;
use degrade::metrics::ErrorClass;
use degrade::model::{FindingOutcome, RunStatus, VerdictOutcome};
use degrade::scenario::template::{FUNCTIONS, Template};

use crate::support::markdown::{code_spans, page, tables_headed};
use crate::support::toml_keys::{Checker, accepted_keys, check_config, check_scenario};

/// The keys a reference page documents, by table header, with the text of each one's row.
fn documented_keys(markdown: &str) -> BTreeMap<(String, String), String> {
    let mut keys = BTreeMap::new();
    for table in tables_headed(markdown, "key") {
        for row in table.rows {
            let spans = code_spans(&row[0]);
            assert_eq!(spans.len(), 1, "a key row names one key, as `[table] key`: {row:?}");
            let (header, key) = match spans[0].rsplit_once(' ') {
                Some((header, key)) => (header.to_owned(), key.to_owned()),
                None => (String::new(), spans[0].clone()),
            };
            let place = format!("`[{header}] {key}`");
            assert!(keys.insert((header, key), row.join(" | ")).is_none(), "{place} is listed twice");
        }
    }
    keys
}

/// Compares the keys `check` accepts with those `page` documents, and each closed set's values with the row.
fn reference_matches_checker(reference: &str, check: Checker) {
    let accepted = accepted_keys(check);
    let documented = documented_keys(&page(reference));
    let name =
        |(header, key): &(String, String)| if header.is_empty() { key.clone() } else { format!("{header} {key}") };
    let missing: Vec<String> = accepted.values.keys().filter(|k| !documented.contains_key(*k)).map(name).collect();
    // A row may also describe a key that holds a table (`expect`), besides the rows of that table's keys.
    let known = |k: &&(String, String)| accepted.values.contains_key(*k) || accepted.tables.contains(*k);
    let refused: Vec<String> = documented.keys().filter(|k| !known(k)).map(name).collect();
    assert!(missing.is_empty(), "{reference} lacks keys degrade accepts: {missing:?}");
    assert!(refused.is_empty(), "{reference} lists keys degrade refuses: {refused:?}");
    assert!(accepted.values.len() > 10, "only {} keys walked: {accepted:?}", accepted.values.len());
    for (key, values) in &accepted.values {
        let row = &documented[key];
        for value in values {
            assert!(row.contains(&format!("`{value}`")), "{reference}: {} does not name `{value}`", name(key));
        }
    }
}

#[test]
fn the_configuration_reference_lists_exactly_the_keys_degrade_toml_accepts() {
    reference_matches_checker("reference/config.md", check_config);
}

#[test]
fn the_scenario_reference_lists_exactly_the_keys_a_scenario_accepts() {
    reference_matches_checker("reference/scenario.md", check_scenario);
}

/// The first cells of the tables of `page` headed `first`.
fn first_cells(page_text: &str, first: &str) -> BTreeSet<String> {
    let tables = tables_headed(page_text, first);
    assert!(!tables.is_empty(), "no table headed `{first}`");
    tables.iter().flat_map(|t| &t.rows).map(|row| code_spans(&row[0]).concat()).collect()
}

#[test]
fn the_reference_lists_every_status_verdict_outcome_and_error_class() {
    let text = page("reference/errors.md");
    let names = |all: &[&str]| all.iter().map(|&s| s.to_owned()).collect::<BTreeSet<String>>();
    let statuses: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(first_cells(&text, "status"), names(&statuses));
    let outcomes: Vec<&str> = FindingOutcome::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(first_cells(&text, "outcome"), names(&outcomes));
    let classes: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(first_cells(&text, "class"), names(&classes));
    let verdicts = [VerdictOutcome::Passed, VerdictOutcome::Regressed, VerdictOutcome::Inconclusive];
    // A new verdict breaks this match, and so the list above.
    for verdict in verdicts {
        match verdict {
            VerdictOutcome::Passed | VerdictOutcome::Regressed | VerdictOutcome::Inconclusive => {}
        }
    }
    let verdicts: Vec<&str> = verdicts.iter().map(|v| v.as_str()).collect();
    assert_eq!(first_cells(&text, "verdict"), names(&verdicts));
}

#[test]
fn the_exit_codes_are_the_four_the_commands_return() {
    let exits = [Exit::Ok, Exit::Regression, Exit::Error, Exit::Inconclusive];
    let expected: BTreeSet<(String, String)> = exits
        .iter()
        .map(|&exit| {
            // A new exit code breaks this match, and so the list above.
            let name = match exit {
                Exit::Ok => "ok",
                Exit::Regression => "regression",
                Exit::Error => "error",
                Exit::Inconclusive => "inconclusive",
            };
            ((exit as u8).to_string(), name.to_owned())
        })
        .collect();
    let tables = tables_headed(&page("reference/cli.md"), "code");
    let listed: BTreeSet<(String, String)> =
        tables.iter().flat_map(|t| &t.rows).map(|row| (row[0].clone(), row[1].clone())).collect();
    assert_eq!(listed, expected);
}

#[test]
fn the_template_reference_lists_every_function_and_each_example_compiles() {
    let text = page("reference/templates.md");
    let tables = tables_headed(&text, "function");
    let rows: Vec<&Vec<String>> = tables.iter().flat_map(|t| &t.rows).collect();
    let listed: BTreeSet<String> = rows.iter().map(|row| code_spans(&row[0]).concat()).collect();
    assert_eq!(listed, functions(FUNCTIONS), "the template functions degrade knows");
    let no_names = |names: &[&str]| Err(format!("`{}` is not a function call", names.join(".")));
    for row in rows {
        let example = code_spans(&row[2]).concat();
        let compiled = Template::compile(&example, &no_names, &|_| Some("set".to_owned()));
        assert!(compiled.is_ok(), "{example}: {compiled:?}");
    }
}

/// `FUNCTIONS`' list, split at the commas between calls (not those inside one).
fn functions(list: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let (mut depth, mut current) = (0, String::new());
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                found.insert(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    found.insert(current.trim().to_owned());
    found
}
