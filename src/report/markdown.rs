//! The Markdown rendering, for a PR comment or a CI job summary: a heading with the verdict, the baseline,
//! and a table of the findings that need attention (all of them in a collapsed section).

use super::{CheckReport, change_text, interval_text, with_unit};
use crate::model::{Finding, FindingOutcome, VerdictOutcome};

pub(super) fn render(report: &CheckReport) -> String {
    let icon = match report.outcome {
        VerdictOutcome::Passed => "✅",
        VerdictOutcome::Regressed => "❌",
        VerdictOutcome::Inconclusive => "⚠️",
    };
    let mut out = format!("### {icon} degrade: {}\n\n", cell(&report.summary));
    out += &format!("{}  \n{}\n\n", cell(&report.run_line()), cell(&report.baseline_line()));
    if let Some(confirmation) = &report.confirmation {
        out += &format!("Confirmation: {}\n\n", cell(confirmation));
    }
    let attention: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.outcome,
                FindingOutcome::Regression
                    | FindingOutcome::GateBreached
                    | FindingOutcome::Improvement
                    | FindingOutcome::TooFew
                    | FindingOutcome::Excused
                    | FindingOutcome::Unconfirmed
            )
        })
        .collect();
    if !attention.is_empty() {
        out += &table(&attention);
        out.push('\n');
    }
    // A run judged nothing (invalid, or no baseline yet): its summary says why, and an empty table says nothing.
    let all: Vec<&Finding> = report.findings.iter().collect();
    if !all.is_empty() {
        out += &format!("<details><summary>All {} checks</summary>\n\n{}\n</details>\n", all.len(), table(&all));
    }
    out
}

fn table(findings: &[&Finding]) -> String {
    let mut out = "| Endpoint | Metric | Baseline | Tonight | 95 % interval | Change | Limit | Result |\n".to_owned();
    out += "|---|---|---:|---:|---:|---:|---:|---|\n";
    for f in findings {
        let baseline = f.baseline_value.map(|v| with_unit(&f.metric, v)).unwrap_or_default();
        let limit = f.limit.map(|v| with_unit(&f.metric, v)).unwrap_or_default();
        let interval = interval_text(f).unwrap_or_default();
        out += &format!(
            "| `{}` | {} | {baseline} | {} | {interval} | {} | {limit} | {} |\n",
            f.endpoint.replace('`', "'"),
            f.metric,
            with_unit(&f.metric, f.candidate_value),
            change_text(f.baseline_value, f.candidate_value, f.delta_pct),
            f.outcome.as_str().replace('_', " ")
        );
    }
    out
}

/// Text safe inside a table cell or a heading: no pipes, no raw HTML.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}
