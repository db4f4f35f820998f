//! The JUnit XML rendering: one test suite per check, one test case per endpoint × metric (and per absolute
//! gate); regressions and breached gates are failures carrying the numbers, inconclusive and too-few lines are
//! skipped.

use super::{CheckReport, interval_text, signed_pct, with_unit};
use crate::analysis::judge::finding;

pub(super) fn render(report: &CheckReport) -> String {
    let failures = report
        .findings
        .iter()
        .filter(|f| matches!(f.outcome.as_str(), finding::REGRESSION | finding::GATE_BREACHED))
        .count();
    let skipped = report
        .findings
        .iter()
        .filter(|f| matches!(f.outcome.as_str(), finding::INCONCLUSIVE | finding::TOO_FEW))
        .count();
    let name = escape(&format!("degrade check {} run #{}", report.scenario, report.run_id));
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
        escape(&report.baseline_line()),
        escape(&report.summary)
    );
    for f in &report.findings {
        let case = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(&format!("{}.{}", report.scenario, f.endpoint)),
            escape(&f.metric)
        );
        let numbers = format!(
            "baseline {}, tonight {}{}, change {}, limit {}",
            f.baseline_value.map_or_else(|| "n/a".to_owned(), |v| with_unit(&f.metric, v)),
            with_unit(&f.metric, f.candidate_value),
            interval_text(f).map(|i| format!(" ({i})")).unwrap_or_default(),
            signed_pct(f.delta_pct),
            f.limit.map_or_else(|| "n/a".to_owned(), |v| with_unit(&f.metric, v)),
        );
        out += &match f.outcome.as_str() {
            finding::REGRESSION | finding::GATE_BREACHED => format!(
                "{case}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                escape(&format!("{} {}: {numbers}", f.endpoint, f.metric)),
                f.outcome,
                escape(&f.reason)
            ),
            finding::INCONCLUSIVE | finding::TOO_FEW => {
                format!("{case}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", escape(&f.reason))
            }
            _ => format!(
                "{case}>\n      <system-out>{}</system-out>\n    </testcase>\n",
                escape(&format!("{numbers}: {}", f.reason))
            ),
        };
    }
    out + "  </testsuite>\n</testsuites>\n"
}

/// Escapes text for XML attributes and content; drops the control characters XML 1.0 cannot hold.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(escape("GET /a?b=1&c=<x> \"q\" 'y'\u{1}"), "GET /a?b=1&amp;c=&lt;x&gt; &quot;q&quot; &apos;y&apos;");
    }
}
