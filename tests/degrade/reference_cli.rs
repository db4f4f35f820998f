//! The manual's command reference is degrade's command line: every subcommand clap knows has a section
//! headed with it, every argument and long option of that command (and no other) is in its section, with
//! each default and each possible value it shows in `--help`.

use std::collections::BTreeSet;

use clap::CommandFactory;

use crate::support::markdown::{page, sections};

/// Options every command takes, documented once at the top of the page.
const EVERY_COMMAND: [&str; 4] = ["config", "verbose", "help", "version"];

/// Every subcommand that does something, by its words after `degrade` (`tape import`), with its clap command.
fn leaf_commands(command: &clap::Command, words: &[String], into: &mut Vec<(String, clap::Command)>) {
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut path = words.to_vec();
        path.push(sub.get_name().to_owned());
        if sub.has_subcommands() {
            leaf_commands(sub, &path, into);
        } else {
            into.push((path.join(" "), sub.clone()));
        }
    }
}

#[test]
fn every_command_option_and_default_is_in_the_reference() {
    let text = page("reference/cli.md");
    let mut commands = Vec::new();
    leaf_commands(&degrade::cli::Cli::command(), &[], &mut commands);
    assert!(commands.len() >= 10, "{} commands", commands.len());
    let sections = sections(&text, 2);
    let documented: BTreeSet<String> = sections.iter().filter_map(|s| command_of(&s.title)).collect();
    let known: BTreeSet<String> = commands.iter().map(|(name, _)| name.clone()).collect();
    assert_eq!(documented, known, "the `degrade …` sections of reference/cli.md and degrade's commands");
    for (name, command) in &commands {
        let section = sections.iter().find(|s| command_of(&s.title).as_ref() == Some(name)).unwrap();
        section_matches(name, command, &section.text);
    }
    for option in EVERY_COMMAND {
        assert!(text.contains(&format!("`--{option}")), "reference/cli.md lacks `--{option}`");
    }
}

/// The command a section's title names: `tape import` of `` `degrade tape import SOURCE` `` (a title shows
/// a required argument, so that it is a command line degrade accepts).
fn command_of(title: &str) -> Option<String> {
    let words = title.strip_prefix("`degrade ")?.strip_suffix('`')?.split(' ');
    Some(words.take_while(|w| !w.chars().any(char::is_uppercase)).collect::<Vec<_>>().join(" "))
}

/// `text` names every argument of `command` with its defaults and values, and no long option it lacks.
fn section_matches(name: &str, command: &clap::Command, text: &str) {
    let mut longs = BTreeSet::new();
    for arg in command.get_arguments().filter(|a| !EVERY_COMMAND.contains(&a.get_id().as_str())) {
        let Some(long) = arg.get_long() else {
            let value = arg.get_value_names().and_then(|v| v.first()).map(ToString::to_string).unwrap_or_default();
            assert!(text.contains(&format!("`{value}`")), "`degrade {name}`: argument `{value}` is not described");
            continue;
        };
        longs.insert(long.to_owned());
        let row = text
            .lines()
            .find(|l| l.starts_with('|') && l.contains(&format!("`--{long}")))
            .unwrap_or_else(|| panic!("`degrade {name}`: no row for `--{long}`"));
        if !arg.get_action().takes_values() {
            continue;
        }
        for default in arg.get_default_values() {
            let default = default.to_string_lossy();
            assert!(
                row.contains(&format!("`{default}`")),
                "`degrade {name} --{long}`: default `{default}` not in {row}"
            );
        }
        for value in arg.get_possible_values().iter().filter(|v| !v.is_hide_set()) {
            let value = value.get_name();
            assert!(row.contains(&format!("`{value}`")), "`degrade {name} --{long}`: value `{value}` not in {row}");
        }
    }
    let named: BTreeSet<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter_map(|word| word.strip_prefix("--"))
        .filter(|long| long.starts_with(|c: char| c.is_ascii_alphanumeric()) && !EVERY_COMMAND.contains(long))
        .map(str::to_owned)
        .collect();
    let foreign: Vec<&String> = named.difference(&longs).collect();
    assert!(foreign.is_empty(), "`degrade {name}` does not take {foreign:?}, which its section names");
}
