//! The JUnit XML rendering: one test suite per check, one test case per endpoint × metric (and per absolute
//! gate); regressions and breached gates are failures carrying the numbers, inconclusive and too-few lines are
//! skipped.

use super::{CheckReport, change_text, interval_text, with_unit};
use crate::model::FindingOutcome;
use crate::outside_text::xml_escape;

/// A check that could not judge at all (the target down, a run that failed, no database) as a JUnit document
/// with one errored test case, `message` its reason: a CI step that publishes the report shows the error
/// instead of an empty file (a trial's `check --run-now --format junit > degrade.xml` left 0 bytes).
#[must_use]
pub fn error_document(scenario: Option<&str>, message: &str) -> String {
    one_case_document(scenario, "error", message)
}

/// A check that had nothing to judge here and is no failure (a segment that sent its share while another
/// merges the night, or an invalid night) as a JUnit document with one skipped test case saying why.
#[must_use]
pub fn skipped_document(scenario: Option<&str>, message: &str) -> String {
    one_case_document(scenario, "skipped", message)
}

/// One test case whose only child is `<{tag} message="…">`: `error` counts as an error, `skipped` as skipped.
fn one_case_document(scenario: Option<&str>, tag: &str, message: &str) -> String {
    let name = xml_escape(&format!("degrade check {}", scenario.unwrap_or("(no scenario)")));
    let message = xml_escape(message);
    let counts = match tag {
        "error" => "errors=\"1\"",
        _ => "skipped=\"1\"",
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{name}\" tests=\"1\" {counts}>\n  \
         <testsuite name=\"{name}\" tests=\"1\" {counts}>\n    <testcase classname=\"{name}\" name=\"check\">\
         <{tag} message=\"{message}\">{message}</{tag}></testcase>\n  </testsuite>\n</testsuites>\n"
    )
}

pub(super) fn render(report: &CheckReport) -> String {
    let failures = report.findings.iter().filter(|f| f.outcome.is_failure()).count();
    let skipped = report
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.outcome,
                FindingOutcome::Inconclusive
                    | FindingOutcome::TooFew
                    | FindingOutcome::Excused
                    | FindingOutcome::Unconfirmed
            )
        })
        .count();
    let name = xml_escape(&format!("degrade check {} run #{}", report.scenario, report.run_id));
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out += &format!(
        "<testsuites name=\"{name}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n",
        report.findings.len()
    );
    out += &format!(
        "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" timestamp=\"{}\">\n",
        report.findings.len(),
        report.started_at.format("%Y-%m-%dT%H:%M:%S")
    );
    out += &format!(
        "    <properties><property name=\"baseline\" value=\"{}\"/><property name=\"verdict\" value=\"{}\"/></properties>\n",
        xml_escape(&report.baseline_line()),
        xml_escape(&report.summary)
    );

    for f in &report.findings {
        let case = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&format!("{}.{}", report.scenario, f.endpoint)),
            xml_escape(&f.metric)
        );
        let numbers = format!(
            "baseline {}, tonight {}{}, change {}, limit {}",
            f.baseline_value.map_or_else(|| "n/a".to_owned(), |v| with_unit(&f.metric, v)),
            with_unit(&f.metric, f.candidate_value),
            interval_text(f).map(|i| format!(" ({i})")).unwrap_or_default(),
            change_text(f.baseline_value, f.candidate_value, f.delta_pct),
            f.limit.map_or_else(|| "n/a".to_owned(), |v| with_unit(&f.metric, v)),
        );
        out += &match f.outcome {
            o if o.is_failure() => format!(
                "{case}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                xml_escape(&format!("{} {}: {numbers}", f.endpoint, f.metric)),
                f.outcome,
                xml_escape(&f.reason)
            ),
            FindingOutcome::Inconclusive
            | FindingOutcome::TooFew
            | FindingOutcome::Excused
            | FindingOutcome::Unconfirmed => {
                format!("{case}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_escape(&f.reason))
            }
            _ => format!(
                "{case}>\n      <system-out>{}</system-out>\n    </testcase>\n",
                xml_escape(&format!("{numbers}: {}", f.reason))
            ),
        };
    }
    // A run with a confirmation (a night's first run, or its rerun): this says what the pair decided, which the
    // cases alone do not (a refuted pair read as a plain pass). After the cases, where the schema puts it.
    if let Some(confirmation) = &report.confirmation {
        out += &format!("    <system-out>confirmation: {}</system-out>\n", xml_escape(confirmation));
    }
    out + "  </testsuite>\n</testsuites>\n"
}
