//! The terminal rendering: only the findings that need attention, then the baseline and the verdict.

use super::{CheckReport, interval_text, signed_pct, with_unit};
use crate::model::FindingOutcome;

pub(super) fn render(report: &CheckReport) -> String {
    let mut lines = vec![format!("degrade check: {}", report.run_line()), report.baseline_line()];
    for f in &report.findings {
        let label = match f.outcome {
            FindingOutcome::Regression => "REGRESSION",
            FindingOutcome::GateBreached => "GATE",
            FindingOutcome::Improvement => "improved",
            FindingOutcome::TooFew => "too few",
            FindingOutcome::Excused => "excused",
            FindingOutcome::Unconfirmed => "unconfirmed",
            _ => continue,
        };
        let limit = f.limit.map(|l| format!(", limit {}", with_unit(&f.metric, l))).unwrap_or_default();
        let interval = interval_text(f).map(|i| format!(", tonight {i}")).unwrap_or_default();
        let numbers = match f.baseline_value {
            Some(base) => format!(
                "{} -> {} ({}{interval}{limit})",
                with_unit(&f.metric, base),
                with_unit(&f.metric, f.candidate_value),
                signed_pct(f.delta_pct)
            ),
            None => format!("{}{interval}{limit}", with_unit(&f.metric, f.candidate_value)),
        };
        lines.push(format!("  {label:<10}  {}  {}  {numbers}", f.endpoint, f.metric));
        lines.push(format!("  {:<10}  {}", "", f.reason));
    }
    if let Some(confirmation) = &report.confirmation {
        lines.push(format!("confirmation: {confirmation}"));
    }
    lines.push(format!("verdict: {}", report.summary));
    lines.join("\n") + "\n"
}
