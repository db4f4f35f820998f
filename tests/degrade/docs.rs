//! The README (and the manual in `docs/`, once it exists) cannot drift from the program: every `degrade`
//! command it writes, in a shell block or inline, is one degrade's own command line accepts, and every block
//! of degrade's output it quotes is marked with the test that makes degrade print it (`support::quoted`).

use clap::Parser;
use clap::error::ErrorKind;

use crate::support::quoted::{blocks, documents};

/// Fence info strings of blocks that are input, not output: commands (checked here), configuration and
/// tapes (checked by `manual_examples`), `.proto` files (compiled by `manual_examples` and `grpc`), JSON, and the CI and service files of `ci/recipes/`, the
/// `Containerfile` and the Kubernetes recipe (checked by `kubernetes`), which the manual includes as they are.
const INPUT_BLOCKS: [&str; 9] = ["sh", "toml", "json", "yaml", "tape", "ini", "groovy", "dockerfile", "proto"];

#[test]
fn every_quoted_output_names_the_test_that_prints_it() {
    let tests = test_sources();
    let mut unmarked = Vec::new();
    let mut unchecked = Vec::new();
    for (path, text) in documents() {
        for block in blocks(&text) {
            // An input block may quote degrade's output too (the API's JSON); then a test compares it.
            match block.marker {
                None if INPUT_BLOCKS.contains(&block.info.as_str()) => {}
                None => unmarked.push(format!("{path}:{}", block.line)),
                Some(name) if !tests.contains(&format!("assert_quoted(\"{name}\"")) => {
                    unchecked.push(format!("{path}:{} ({name})", block.line));
                }
                Some(_) => {}
            }
        }
    }
    assert!(unmarked.is_empty(), "output blocks without `<!-- output: NAME -->` before them: {unmarked:?}");
    assert!(unchecked.is_empty(), "output blocks no test compares with what degrade prints: {unchecked:?}");
}

#[test]
fn every_command_written_in_the_docs_is_one_degrade_accepts() {
    let mut refused = Vec::new();
    let mut seen = 0;
    for (path, text) in documents() {
        for (line, command) in commands(&text) {
            seen += 1;
            // `--help` and `--version` end the parse with their text, which is what was asked for.
            let refusal = degrade::cli::Cli::try_parse_from(&command)
                .err()
                .filter(|e| !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion));
            if let Some(e) = refusal {
                let first = e.to_string().lines().next().unwrap_or_default().to_owned();
                refused.push(format!("{path}:{line}: `{}`: {first}", command.join(" ")));
            }
        }
    }
    assert!(seen > 20, "only {seen} commands found: is the README still read?");
    assert!(refused.is_empty(), "commands the docs write that degrade refuses:\n{}", refused.join("\n"));
}

/// Every `degrade …` command of a shell block (continued lines joined, comments, redirections and pipes
/// left out) and of an inline code span, with the line it is on. A span holding a placeholder (`[--x N]`,
/// `<id>`, `…`) is a synopsis, not a command.
fn commands(markdown: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    for block in blocks(markdown).into_iter().filter(|b| b.info == "sh") {
        for (offset, line) in block.text.replace("\\\n", " ").lines().enumerate() {
            found.extend(command(line).map(|c| (block.line + 1 + offset, c)));
        }
    }
    // A code span may go on over a line break; fenced blocks are blanked, keeping the line numbers.
    let prose = prose(markdown);
    let mut line = 1;
    for (index, piece) in prose.split('`').enumerate() {
        let span = piece.replace('\n', " ");
        if index % 2 == 1 && span.starts_with("degrade ") && !span.contains(['[', '<', '…', '|']) {
            found.extend(command(&span).map(|c| (line, c)));
        }
        line += piece.matches('\n').count();
    }
    found
}

/// `markdown` with the lines of its fenced blocks left empty.
fn prose(markdown: &str) -> String {
    let mut fenced = false;
    let mut out = String::with_capacity(markdown.len());
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        if !fenced && !fence {
            out += line;
        }
        fenced ^= fence;
        out.push('\n');
    }
    out
}

/// The words of one command line if it runs degrade (`degrade …`, or `cargo run --release -- …`).
fn command(line: &str) -> Option<Vec<String>> {
    let words = shlex::split(line.trim())?;
    let start = if words.first().is_some_and(|w| w == "degrade") {
        1
    } else if words.starts_with(&["cargo".into(), "run".into(), "--release".into(), "--".into()]) {
        4
    } else {
        return None;
    };
    let ends = [">", ">>", "<", "|", "&&", ";", "2>&1", "&"];
    let args = words[start..].iter().take_while(|w| !ends.contains(&w.as_str()) && !w.starts_with('#'));
    Some(std::iter::once("degrade".to_owned()).chain(args.cloned()).collect())
}

/// The source of every integration test, of both binaries, where the `assert_quoted` calls are.
fn test_sources() -> String {
    let mut all = String::new();
    for binary in ["tests/degrade", "tests/nights"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(binary);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                all += &std::fs::read_to_string(path).unwrap();
            }
        }
    }
    all
}

#[test]
fn commands_are_read_as_a_shell_reads_them() {
    let line = "degrade check --run 42 --format markdown >> \"$GITHUB_STEP_SUMMARY\"   # in CI";
    assert_eq!(command(line).unwrap(), ["degrade", "check", "--run", "42", "--format", "markdown"]);
    assert_eq!(command("cargo run --release -- demo").unwrap(), ["degrade", "demo"]);
    assert_eq!(command("$EDITOR degrade.toml"), None);
    let markdown =
        "Try `degrade run --duration 20s` or `degrade demo-target [--port N]`.\n```sh\ndegrade \\\n  check\n```\n";
    let found: Vec<String> = commands(markdown).into_iter().map(|(_, c)| c.join(" ")).collect();
    assert_eq!(found, ["degrade check", "degrade run --duration 20s"]);
}
