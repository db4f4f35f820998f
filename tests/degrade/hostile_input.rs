//! Input meant to break degrade: durations that overflow, sizes and ports out of range, files that never
//! end, names that walk up URLs, terminal escapes. Nothing may panic; every refusal names the field.

use std::path::Path;

use degrade::config::durations::LONGEST;
use degrade::scenario;

use crate::support::{degrade, project, text};

/// A scenario with one value replaced, at a known field.
fn scenario_with(field: &str, value: &str) -> String {
    let mut target = "base_url = \"http://127.0.0.1:9\"\n".to_owned();
    let mut step = "path = \"/a\"\n".to_owned();
    let mut stages = "[[load.stage]]\nduration = \"10s\"\nrate = 5\n".to_owned();
    match field {
        "target.timeout" | "target.connect_timeout" | "target.max_body" => {
            target.push_str(&format!("{} = \"{value}\"\n", field.trim_start_matches("target.")));
        }
        "target.base_url" => target = format!("base_url = \"{value}\"\n"),
        "think" => step.push_str(&format!("think = \"{value}\"\n")),
        "think.uniform" => step.push_str(&format!("think = {{ uniform = [\"1s\", \"{value}\"] }}\n")),
        "think.lognormal" => step.push_str(&format!("think = {{ lognormal = {{ median = \"{value}\" }} }}\n")),
        "stage" => stages = format!("[[load.stage]]\nduration = \"{value}\"\nrate = 5\n"),
        "two stages" => stages = format!("[[load.stage]]\nduration = \"{value}\"\nrate = 5\n").repeat(2),
        other => panic!("no field {other}"),
    }
    format!("[target]\n{target}[[flow]]\nname = \"f\"\n[[flow.step]]\n{step}[load]\nmodel = \"open\"\n{stages}")
}

/// Every field that takes a duration, size or URL, with values past every limit: parsing never panics, a
/// refusal names the field, and what is accepted stays inside the bounds the engine relies on.
#[test]
fn overflowing_values_are_refused_by_field_and_never_panic() {
    let durations = [
        "18446744073709551615s",
        "99999999999999999999999s",
        "584942417355years",
        "10000000h",
        "8days",
        "7days",
        "0s",
        "1ns",
        "-1s",
        "",
        "1e9s",
        "\\u001b[2J",
    ];
    let fields = [
        "target.timeout",
        "target.connect_timeout",
        "think",
        "think.uniform",
        "think.lognormal",
        "stage",
        "two stages",
    ];
    for field in fields {
        for value in durations {
            check_parse(field, value);
        }
    }
    for size in ["18446744073709551616", "0", "1EB", "-1MB", "4MB", "1 KiB", "x".repeat(10_000).as_str()] {
        check_parse("target.max_body", size);
    }
    for url in ["http://127.0.0.1:99999", "http://127.0.0.1:0", "http://[::1]:70000/x", "http://127.0.0.1:65535"] {
        check_parse("target.base_url", url);
    }
}

fn check_parse(field: &str, value: &str) {
    let text = scenario_with(field, value);
    match scenario::parse(Path::new("hostile.toml"), &text, None, &|_| None) {
        Ok(plan) => {
            assert!(plan.load.duration() <= LONGEST, "{field} = {value:?}: a run of {:?}", plan.load.duration());
            assert!(plan.target.timeout <= LONGEST && plan.target.max_body > 0, "{field} = {value:?}");
        }
        Err(errors) => {
            let shown = errors.to_string();
            let named = field.split(['.', ' ']).next().unwrap_or(field);
            assert!(shown.contains(named) || shown.contains("stage"), "{field} = {value:?}: {shown}");
            assert!(shown.len() < 2_000, "{field}: the error repeats the whole value: {} bytes", shown.len());
            assert!(!shown.contains('\u{1b}'), "{field}: a raw escape reached the message: {shown:?}");
        }
    }
}

#[test]
fn a_port_past_65535_is_refused_not_sent_to_port_80() {
    let errors = scenario::parse(
        Path::new("p.toml"),
        &scenario_with("target.base_url", "http://127.0.0.1:99999"),
        None,
        &|_| None,
    )
    .expect_err("port 99999 was accepted");
    assert!(errors.to_string().contains("has port `99999`: a port is a number from 1 to 65535"), "{errors}");
}

/// The command line's durations too: `--duration` of zero measures nothing, one past a week overflows.
#[test]
fn run_durations_on_the_command_line_are_bounded() {
    let (dir, _) = project("", &[("s.toml", &scenario_with("stage", "10s"))]);
    for (value, said) in [("18446744073709551615s", "longer than a week"), ("0s", "must be longer than zero")] {
        let output = degrade(dir.path(), &["run", "s.toml", "--duration", value], &[]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "--duration {value}: {stdout}{stderr}");
        assert!(stderr.contains(said), "--duration {value}: {stderr}");
    }
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
}

/// A feeder or scenario that is a device, not a file, is refused at once instead of read forever.
#[test]
fn devices_and_directories_are_not_read_as_files() {
    let feeder = "[[data]]\nname = \"d\"\nfile = \"/dev/zero\"\n";
    let (dir, _) = project("", &[("s.toml", &format!("{feeder}{}", scenario_with("stage", "10s")))]);
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/dev/zero is not a regular file"), "{stderr}");
    // A named pipe is refused without being opened (opening one waits for a writer).
    let fifo = std::process::Command::new("mkfifo").arg(dir.path().join("pipe.toml")).status().unwrap();
    assert!(fifo.success());
    let config = "[[scenario]]\nname = \"p\"\nfile = \"pipe.toml\"\ntarget = \"http://127.0.0.1:9\"\n";
    std::fs::write(dir.path().join("degrade.toml"), config).unwrap();
    let output = degrade(dir.path(), &["validate"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    std::fs::write(dir.path().join("degrade.toml"), "").unwrap();
    std::fs::create_dir(dir.path().join("folder.toml")).unwrap();
    let output = degrade(dir.path(), &["run", "folder.toml"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("folder.toml is not a regular file"), "{stderr}");
}

/// A tape or feeder that is a device, a named pipe or a kernel file is refused by `validate` at once, with the
/// scenario's file, line and field: `/dev/zero` would spin forever, a pipe would block forever, and
/// `/proc/self/environ` would put degrade's own environment in a request.
#[test]
fn a_tape_or_feeder_that_is_no_regular_file_is_refused_at_validate() {
    let (dir, _) = project("", &[]);
    let fifo = std::process::Command::new("mkfifo").arg(dir.path().join("pipe.tape")).status().unwrap();
    assert!(fifo.success());
    let load = "[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"3s\"\nrate = 5\n";
    for (tape, said) in [
        ("/dev/zero", "/dev/zero is not a regular file"),
        ("pipe.tape", "pipe.tape is not a regular file"),
        ("/proc/self/status", "is a file of the kernel's (under /proc or /sys)"),
    ] {
        let scenario = format!("[target]\nbase_url = \"http://127.0.0.1:9\"\n[[tape]]\nfile = \"{tape}\"\n{load}");
        std::fs::write(dir.path().join("s.toml"), scenario).unwrap();
        let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{tape}: {stderr}");
        assert!(stderr.contains("s.toml:4:8: tape.file: ") && stderr.contains(said), "{tape}: {stderr}");
    }
    let feeder = format!("[[data]]\nname = \"d\"\nfile = \"/proc/self/environ\"\n{}", scenario_with("stage", "10s"));
    std::fs::write(dir.path().join("s.toml"), feeder).unwrap();
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/proc/self/environ is a file of the kernel's"), "{stderr}");
}

/// A rate past what one generator can plan is refused at validate with its line and field, whether `rate` or a
/// ramp's `from`/`to`, and so is a `--rate-scale` that would take a stage past it.
#[test]
fn a_rate_no_generator_can_plan_is_refused() {
    let (dir, _) = project("", &[]);
    let head = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/a\"\n\
                [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"3s\"\n";
    for (shape, field) in [("rate = 1e300", "load.stage[0].rate"), ("from = 1e308\nto = 5", "load.stage[0].from")] {
        std::fs::write(dir.path().join("s.toml"), format!("{head}{shape}\n")).unwrap();
        let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{shape}: {stderr}");
        assert!(stderr.contains("s.toml:11:") && stderr.contains(field), "{shape}: {stderr}");
        assert!(stderr.contains("more than one generator can plan (at most 1000000)"), "{shape}: {stderr}");
    }
    std::fs::write(dir.path().join("s.toml"), format!("{head}rate = 500000\n")).unwrap();
    assert_eq!(degrade(dir.path(), &["validate", "s.toml"], &[]).status.code(), Some(0));
    let output = degrade(dir.path(), &["run", "s.toml", "--rate-scale", "4"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--rate-scale 4 makes a stage plan 2000000 arrivals per second"), "{stderr}");
}

/// A scenario named after its file follows the naming rule: `h#x?y` and `..` would break dashboard links.
#[test]
fn scenario_names_from_file_names_follow_the_naming_rule() {
    let scenario = scenario_with("stage", "10s");
    let (dir, _) = project("", &[("h#x?y.toml", &scenario), ("....toml", &scenario)]);
    for file in ["h#x?y.toml", "....toml"] {
        let output = degrade(dir.path(), &["run", file, "--duration", "1s"], &[]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{file}: {stderr}");
        assert!(stderr.contains("is not a scenario name") && stderr.contains("rename the file"), "{file}: {stderr}");
    }
}

/// A bad JSONPath in an earlier step's `extract` is one error, not also "extracted by a later step" where a
/// later step uses the name.
#[test]
fn a_bad_extraction_is_one_error_not_two() {
    let text = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n\
                [[flow.step]]\npath = \"/boards\"\nextract = { board_id = \"$.items[\" }\n\
                [[flow.step]]\npath = \"/boards/{{ board_id }}\"\n\
                [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"10s\"\nrate = 5\n";
    let errors = scenario::parse(Path::new("s.toml"), text, None, &|_| None).expect_err("a bad JSONPath passed");
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert!(errors.to_string().contains("flow[0].step[0].extract.board_id"), "{errors}");
}

/// A step that lacks its `path` is placed at its own `[[flow.step]]`, even when none of its keys has a place
/// of its own; a key written twice is named.
#[test]
fn a_step_without_a_path_and_a_key_written_twice_are_placed_and_named() {
    let text = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n\
                [[flow.step]]\npath = \"/boards\"\n\
                [[flow.step]]\nexpect = { status = 200 }\n\
                [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"10s\"\nrate = 5\n";
    let errors = scenario::parse(Path::new("s.toml"), text, None, &|_| None).expect_err("a step without a path");
    assert!(errors.to_string().contains("s.toml:7:1: flow[0].step[1].path: an HTTP step needs a `path`"), "{errors}");
    let twice = text.replace("path = \"/boards\"\n", "path = \"/boards\"\npath = \"/cards\"\n");
    let errors = scenario::parse(Path::new("s.toml"), &twice, None, &|_| None).expect_err("a key written twice");
    assert!(errors.to_string().contains("s.toml:7:1: invalid TOML: duplicate key `path`"), "{errors}");
}

/// Two steps with the same method, path and query parameter names but different values are one endpoint:
/// valid, but `validate` warns, naming both steps; so are two steps that differ only in a cache-buster.
#[test]
fn two_requests_measured_as_one_endpoint_are_warned_about() {
    let steps = "[[flow.step]]\npath = \"/search?q=shoes\"\n\
                 [[flow.step]]\npath = \"/search\"\nquery = { q = \"hats\" }\n\
                 [[flow.step]]\npath = \"/search\"\nquery = { q = \"hats\" }\n\
                 [[flow.step]]\npath = \"/search\"\nquery = { q = \"hats\", sort = \"price\" }\n\
                 [[flow.step]]\npath = \"/boards\"\n\
                 [[flow.step]]\npath = \"/boards\"\nquery = { _ = \"{{ now() }}\" }\n";
    let scenario = format!(
        "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n{steps}\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"10s\"\nrate = 5\n"
    );
    let (dir, _) = project("", &[("s.toml", &scenario)]);
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let values = "warning   flow[0].step[1] and flow[0].step[0] are both `GET /search?q=`: their queries (`?q=hats` and \
                  `?q=shoes`) differ only in their values, so they are measured as one endpoint; give one of them a \
                  `name` to measure them apart";
    assert!(stdout.contains(values), "{stdout}");
    let left_out = "warning   flow[0].step[5] and flow[0].step[4] are both `GET /boards`: their queries (`?_={{ now() }}` \
                    and no query) differ only in parameters that metric keys leave out";
    assert!(stdout.contains(left_out), "{stdout}");
    assert_eq!(
        stdout.matches("warning").count(),
        2,
        "the third step repeats the second, the fourth has a name more: {stdout}"
    );
}

/// A `[[scenario]] target` in degrade.toml is checked like a scenario's own base URL: a host with a space
/// is refused by validate instead of reaching the engine.
#[test]
fn a_configured_target_that_is_not_a_url_is_refused() {
    let config = "[[scenario]]\nname = \"s\"\nfile = \"s.toml\"\ntarget = \"http://ho st\"\n";
    let (dir, _) = project(config, &[("s.toml", &scenario_with("stage", "10s"))]);
    for args in [&["validate"][..], &["run", "--duration", "1s"]] {
        let output = degrade(dir.path(), args, &[]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("scenario[0].target: `http://ho st` is not a valid URL"), "{args:?}: {stderr}");
    }
}

/// A file that is not UTF-8 (saved as Latin-1, say) is refused at the line and column of the first byte that
/// is not, as an editor counts them, not at a byte index: the scenario, degrade.toml and a feeder alike.
#[test]
fn a_byte_that_is_not_utf8_is_placed_by_line_and_column() {
    let scenario = scenario_with("stage", "10s").replacen("name = \"f\"", "name = \"caf\u{e9}\"", 1);
    let at = scenario.find('\u{e9}').unwrap();
    let line = scenario[..at].matches('\n').count() + 1;
    let latin1 = |text: &str| -> Vec<u8> { text.chars().map(|c| u8::try_from(u32::from(c)).unwrap()).collect() };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), latin1(&scenario)).unwrap();
    std::fs::write(dir.path().join("degrade.toml"), latin1("[server]\n# r\u{e9}sum\u{e9}\n")).unwrap();
    std::fs::write(dir.path().join("users.csv"), latin1("name\nJos\u{e9}\n")).unwrap();
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("s.toml:{line}:12: not UTF-8 text")), "{stderr}");
    let output = degrade(dir.path(), &["validate"], &[]);
    let (_, stderr) = text(&output);
    assert!(stderr.contains("degrade.toml:2:4: not UTF-8 text"), "{stderr}");
    let feeder = scenario_with("stage", "10s").replacen(
        "[[flow]]",
        "[[data]]\nname = \"users\"\nfile = \"users.csv\"\n[[flow]]",
        1,
    );
    std::fs::write(dir.path().join("s.toml"), feeder).unwrap();
    let output = degrade(dir.path(), &["validate", "s.toml"], &[]);
    let (_, stderr) = text(&output);
    assert!(stderr.contains("users.csv:2:4: not UTF-8 text"), "{stderr}");
}
