//! Every example the README and the manual write for degrade to read is one degrade accepts: each `toml`
//! block is checked by the real checkers, as `degrade.toml` or as a scenario file, and each `tape` block is
//! read line by line by the tape reader. A scenario fragment (a `[[tape]]` table alone, flows without a
//! load) is completed with what it leaves out, never changed; the data files examples name are written.

use std::io::Write as _;
use std::path::Path;

use degrade::config::Config;
use degrade::tape::format::{HEADER, TapeRequest};
use toml::{Table, Value};

use crate::support::quoted::{blocks, documents};
use crate::support::toml_keys::{check_config, top_level};

/// What `env("…")` reads in the examples.
fn env(name: &str) -> Option<String> {
    (name == "API_TOKEN").then(|| "example-token".to_owned())
}

/// The text of a block, or of the file its lone `{{#include path}}` names (relative to the document).
fn block_text(document: &str, text: &str) -> String {
    let Some(path) = text.trim().strip_prefix("{{#include ").and_then(|rest| rest.strip_suffix("}}")) else {
        return text.to_owned();
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(document);
    let file = dir.parent().unwrap().join(path.trim());
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{document}: {}: {e}", file.display()))
}

#[test]
fn every_toml_example_is_accepted_by_degrade() {
    let config_keys = top_level(check_config);
    let mut checked = 0;
    let mut refused = Vec::new();
    for (document, markdown) in documents() {
        for block in blocks(&markdown).into_iter().filter(|b| b.info == "toml") {
            let text = block_text(&document, &block.text);
            let place = format!("{document}:{}", block.line);
            let table: Table = match text.parse() {
                Ok(table) => table,
                Err(e) => {
                    refused.push(format!("{place}: not TOML: {e}"));
                    continue;
                }
            };
            let is_config = table.keys().any(|k| config_keys.contains(k));
            let problems = if is_config { config_problems(&text, &table) } else { scenario_problems(table) };
            if !problems.is_empty() {
                refused.push(format!("{place}:\n{problems}"));
            }
            checked += 1;
        }
    }
    assert!(refused.is_empty(), "TOML examples degrade refuses:\n{}", refused.join("\n"));
    assert!(checked >= 10, "only {checked} TOML examples found");
}

/// The problems `degrade validate` would report for a `degrade.toml` example, with its scenario files written.
fn config_problems(text: &str, table: &Table) -> String {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = table.get("scenario").and_then(Value::as_array).cloned().unwrap_or_default();
    for entry in scenarios {
        if let Some(file) = entry.get("file").and_then(Value::as_str) {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, toml::to_string(&completed(Table::new())).unwrap()).unwrap();
        }
    }
    let path = dir.path().join("degrade.toml");
    std::fs::write(&path, text).unwrap();
    match Config::load_with_env(&path, &env) {
        Ok(config) => config
            .scenarios
            .iter()
            .filter_map(|s| degrade::scenario::load(&s.file, s.target.as_deref(), &env).err())
            .map(|e| e.to_string())
            .collect(),
        Err(errors) => errors.to_string(),
    }
}

/// The problems the scenario checker finds in an example, completed, beside the data files examples name.
fn scenario_problems(table: Table) -> String {
    let dir = tempfile::tempdir().unwrap();
    write_data_files(dir.path());
    let path = dir.path().join("scenario.toml");
    let text = toml::to_string(&completed(table)).unwrap();
    std::fs::write(&path, &text).unwrap();
    degrade::scenario::load(&path, None, &env).err().map(|e| format!("{e}\n{text}")).unwrap_or_default()
}

/// `table` with a target, a load and a flow where it has none: what a fragment leaves to the rest of its file.
fn completed(mut table: Table) -> Table {
    let fragment = |text: &str| text.parse::<Table>().unwrap();
    let target = table.entry("target").or_insert_with(|| Value::Table(Table::new()));
    if let Some(target) = target.as_table_mut() {
        target.entry("base_url").or_insert_with(|| "http://127.0.0.1:3000".into());
    }
    if !table.contains_key("load") {
        table.extend(fragment("[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"10s\"\nrate = 5\n"));
    }
    if !table.contains_key("flow") && !table.contains_key("tape") {
        table.extend(fragment("[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/\"\n"));
    }
    table
}

/// The data files the examples name: feeders of users and of boards, a tape of the routes they expect, and the
/// gRPC chapter's `.proto` files (its own and the demo's).
fn write_data_files(dir: &Path) {
    std::fs::write(dir.join("users.csv"), "email,password\ngrace@example.com,secret\n").unwrap();
    std::fs::write(dir.join("boards.csv"), "id,name\n1,roadmap\n2,retro\n").unwrap();
    // The `.proto` file the gRPC chapter's examples name, as the chapter shows it.
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/guide/boards.proto");
    std::fs::copy(proto, dir.join("boards.proto")).unwrap();
    std::fs::write(dir.join("demo.proto"), degrade::demo::grpc::DEMO_PROTO).unwrap();
    let tape = format!("{HEADER}\nGET\t/api/boards/1\t200\nGET\t/users/grace\t200\n");
    std::fs::write(dir.join("access.tape"), &tape).unwrap();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(tape.as_bytes()).unwrap();
    std::fs::write(dir.join("access.tape.gz"), gzip.finish().unwrap()).unwrap();
}

#[test]
fn every_tape_example_is_read_by_the_tape_reader() {
    let mut checked = 0;
    for (document, markdown) in documents() {
        for block in blocks(&markdown).into_iter().filter(|b| b.info == "tape") {
            let mut lines = block.text.lines();
            assert_eq!(lines.next(), Some(HEADER), "{document}:{}: a tape starts with its version line", block.line);
            for line in lines.filter(|l| !l.starts_with('#')) {
                assert!(
                    TapeRequest::parse(line).is_ok(),
                    "{document}:{}: {line:?}: {:?}",
                    block.line,
                    TapeRequest::parse(line)
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 1, "no tape example found");
}
