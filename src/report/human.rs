//! The terminal rendering: only the findings that need attention, then the baseline and the verdict. A CI
//! log is read by people: the figures too few requests could judge are one line, their reasons in JSON and
//! on the run page.

use super::{CheckReport, change_text, interval_text, with_unit};
use crate::analysis::capacity::CAPACITY_METRIC;
use crate::model::FindingOutcome;

pub(super) fn render(report: &CheckReport) -> String {
    let mut lines = vec![format!("degrade check: {}", report.run_line()), report.baseline_line()];
    for f in &report.findings {
        let label = match f.outcome {
            FindingOutcome::Regression => "REGRESSION",
            FindingOutcome::GateBreached => "GATE",
            FindingOutcome::Improvement => "improved",
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
                change_text(f.baseline_value, f.candidate_value, f.delta_pct)
            ),
            None => format!("{}{interval}{limit}", with_unit(&f.metric, f.candidate_value)),
        };
        lines.push(format!("  {label:<10}  {}  {}  {numbers}", f.endpoint, f.metric));
        lines.push(format!("  {:<10}  {}", "", f.reason));
    }
    lines.extend(quiet_capacity_lines(report));
    if let Some(line) = too_few_line(report) {
        lines.push(line);
    }
    if let Some(confirmation) = &report.confirmation {
        lines.push(format!("confirmation: {confirmation}"));
    }
    lines.push(format!("verdict: {}", report.summary));
    lines.join("\n") + "\n"
}

/// The capacity when no finding above showed it: it is a capacity night's headline, so a passing night says
/// what it held (`capacity    156 req/s, unchanged (baseline 158 req/s, -1.3 %)`), and a night not judged says
/// why (its reason), instead of leaving the figure out of the log.
fn quiet_capacity_lines(report: &CheckReport) -> Vec<String> {
    let quiet = report.findings.iter().filter(|f| {
        f.metric == CAPACITY_METRIC && matches!(f.outcome, FindingOutcome::NoChange | FindingOutcome::Inconclusive)
    });
    quiet
        .flat_map(|f| match (f.outcome, f.baseline_value) {
            (FindingOutcome::NoChange, Some(base)) => vec![format!(
                "  {:<10}  {}, unchanged (baseline {}, {})",
                "capacity",
                with_unit(&f.metric, f.candidate_value),
                with_unit(&f.metric, base),
                change_text(f.baseline_value, f.candidate_value, f.delta_pct)
            )],
            _ => vec![format!("  {:<10}  not judged", "capacity"), format!("  {:<10}  {}", "", f.reason)],
        })
        .collect()
}

/// How many figures of a run the too-few line names before it counts the rest.
const TOO_FEW_NAMED: usize = 6;

/// `  too few     3 figures had too few requests to judge: GET /a p99, …`, or `None` when none had.
fn too_few_line(report: &CheckReport) -> Option<String> {
    let too_few: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::TooFew)
        .map(|f| format!("{} {}", f.endpoint, f.metric))
        .collect();
    let (count, figures) = match too_few.len() {
        0 => return None,
        1 => (1, "figure"),
        n => (n, "figures"),
    };
    let mut named = too_few.iter().take(TOO_FEW_NAMED).cloned().collect::<Vec<_>>().join(", ");
    if count > TOO_FEW_NAMED {
        named += &format!(" and {} more", count - TOO_FEW_NAMED);
    }
    Some(format!(
        "  {:<10}  {count} {figures} had too few requests to judge: {named} (why, and how many are needed: \
         --format json, or the run page)",
        "too few"
    ))
}
