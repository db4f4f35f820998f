//! Slack incoming-webhook messages: `text` (the notification line, also what clients without blocks show)
//! plus `blocks` with the scenario, the build, the suspects and each regressed endpoint with baseline →
//! tonight and the change. Mattermost and Rocket.Chat accept the same body.

use serde_json::{Value, json};

use super::{Alert, Event, Links, Worse};
use crate::model::CapacityChange;
use crate::report::{change_text, with_unit};

/// Endpoint lines listed before "…and N more": Slack truncates long sections, and ten say enough.
const LISTED: usize = 10;
/// Slack rejects (400) a header longer than 150 characters and a text object longer than 3000, and a
/// rejected message is never retried: long scenario names and deploy logs are clipped instead.
const HEADER_LIMIT: usize = 150;
const TEXT_LIMIT: usize = 3000;

pub(super) fn payload(alert: &Alert, links: &Links) -> Value {
    let scenario = escape(&alert.scenario);
    let (headline, title) = match alert.event {
        Event::Regression => (
            format!("degrade: {scenario} regressed{}{}", on_build(alert), capacity_fell(alert)),
            format!("Regression in {scenario}"),
        ),
        Event::RegressionWidened => (
            format!("degrade: {scenario} regressed further{}{}", on_build(alert), capacity_fell(alert)),
            format!("Regression in {scenario} widened"),
        ),
        // "Passes again", not "recovered": a slowdown that held long enough to become the level passes too, and
        // the summary says which it was.
        Event::Recovery => {
            (format!("degrade: {scenario} passes again{}", on_build(alert)), format!("{scenario} passes again"))
        }
        Event::MissingRun => (format!("degrade: no recent run of {scenario}"), format!("Missing run of {scenario}")),
        Event::RunFailed => (format!("degrade: a run of {scenario} failed"), format!("Run of {scenario} failed")),
        Event::RunFailedResolved => {
            (format!("degrade: {scenario} is measured again"), format!("{scenario} measured again"))
        }
        Event::MissingRunResolved => {
            (format!("degrade: runs of {scenario} have resumed"), format!("Runs of {scenario} resumed"))
        }
        Event::UnjudgedResolved => (format!("degrade: {scenario} is judged again"), format!("{scenario} judged again")),
        Event::Unjudged => {
            (format!("degrade: {scenario} has gone unjudged"), format!("{scenario} not judged for nights in a row"))
        }
        Event::Test => (format!("degrade: test message for {scenario}"), "degrade test message".to_owned()),
    };
    let mut blocks = vec![
        json!({ "type": "header", "text": { "type": "plain_text", "text": clip(&title, HEADER_LIMIT) } }),
        section(&facts(alert, links)),
    ];
    if let Some(capacity) = &alert.capacity {
        blocks.push(section(&capacity_line(capacity)));
    }
    // The capacity has its own line above: the list says what else got worse.
    let worse: Vec<Worse> =
        alert.worse.iter().filter(|w| alert.capacity.is_none() || w.metric != "capacity").cloned().collect();
    if !worse.is_empty() {
        blocks.push(section(&worse_lines(&worse)));
    }
    let mut context = escape(&alert.summary);
    if let Some(url) = &links.scenario {
        context.push_str(&format!(" · <{url}|Trend of {scenario}>"));
    }
    blocks.push(json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": clip(&context, TEXT_LIMIT) }] }));
    json!({ "text": headline, "blocks": blocks })
}

/// What a re-sent message says first: Slack cannot drop a duplicate by its idempotency key, so the reader is
/// told why the same alert may show twice.
pub(super) const SENT_AGAIN: &str =
    "Sent again: degrade stopped while sending this alert, so it may have arrived once already.";

/// `payload` (a message [`payload`] made) marked as a re-send: its notification text and a first context block
/// say so. A body that is not such a message is sent as it is.
pub(super) fn said_again(payload: &str) -> String {
    let Ok(mut message) = serde_json::from_str::<Value>(payload) else { return payload.to_owned() };
    if let Some(text) = message.get("text").and_then(Value::as_str) {
        message["text"] = Value::String(clip(&format!("{SENT_AGAIN} {text}"), TEXT_LIMIT));
    }
    if let Some(blocks) = message.get_mut("blocks").and_then(Value::as_array_mut) {
        blocks.insert(0, json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": SENT_AGAIN }] }));
    }
    message.to_string()
}

fn on_build(alert: &Alert) -> String {
    alert.build_id.as_ref().map(|b| format!(" on build {}", escape(b))).unwrap_or_default()
}

/// `: capacity 4,000 → 3,100 req/s (-22.5 %)`, for the notification line of a regression whose capacity fell.
fn capacity_fell(alert: &Alert) -> String {
    alert.capacity.as_ref().map(|c| format!(": {}", c.headline())).unwrap_or_default()
}

/// `*Capacity* 4,000 → 3,100 req/s (-22.5 %): left the green zone on p75 of `POST /orders` …`.
fn capacity_line(capacity: &CapacityChange) -> String {
    let words = capacity.describe();
    let words = words.strip_prefix("capacity ").unwrap_or(&words);
    format!("*Capacity* {}", escape(words))
}

fn section(text: &str) -> Value {
    json!({ "type": "section", "text": { "type": "mrkdwn", "text": clip(text, TEXT_LIMIT) } })
}

/// `text` cut to at most `limit` characters, ending in `…` when cut.
fn clip(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(limit - 1).collect();
    clipped.push('…');
    clipped
}

/// Scenario, run, build and suspects, one per line.
fn facts(alert: &Alert, links: &Links) -> String {
    let mut lines = vec![format!("*Scenario* `{}`", escape(&alert.scenario))];
    if let Some(id) = alert.run_id {
        let run = links.run.as_ref().map_or_else(|| format!("#{id}"), |url| format!("<{url}|#{id}>"));
        lines.push(format!("*Run* {run}"));
    }
    if let Some(build) = &alert.build_id {
        lines.push(format!("*Build* `{}`", escape(build)));
    }
    if !alert.builds_since_last_good.is_empty()
        && matches!(alert.event, Event::Regression | Event::RegressionWidened | Event::RunFailed)
    {
        let since = alert.last_good_run_id.map(|id| format!(" (#{id})")).unwrap_or_default();
        let builds: Vec<String> = alert.builds_since_last_good.iter().map(|b| format!("`{}`", escape(b))).collect();
        lines.push(format!("*Builds since the last good run{since}* {}", builds.join(", ")));
    }
    lines.join("\n")
}

/// `• `GET /items/{id}` p95: 120.0 ms → 180.0 ms (+50.0 %)`, worst first.
fn worse_lines(worse: &[Worse]) -> String {
    let mut lines: Vec<String> = worse
        .iter()
        .take(LISTED)
        .map(|w| {
            let tonight = with_unit(&w.metric, w.tonight);
            let change = match w.baseline {
                Some(baseline) => {
                    format!(
                        "{} → {tonight} ({})",
                        with_unit(&w.metric, baseline),
                        change_text(w.baseline, w.tonight, w.delta_pct)
                    )
                }
                None => tonight,
            };
            format!("• `{}` {}: {change}", escape(&w.endpoint).replace('`', "'"), escape(&w.metric))
        })
        .collect();
    if worse.len() > LISTED {
        lines.push(format!("…and {} more", worse.len() - LISTED));
    }
    lines.join("\n")
}

/// Slack's mrkdwn treats `&`, `<` and `>` as control characters; everything else is literal.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::Alert;

    #[test]
    fn long_texts_are_clipped_to_what_slack_accepts() {
        let name = "s".repeat(200);
        let log = "deploy step failed\n".repeat(400);
        let alert = Alert::about(Event::RunFailed, &name, log, chrono::Utc::now());
        let links = Links { run: None, scenario: Some("https://degrade.example.com/scenarios/x".to_owned()) };
        let message = payload(&alert, &links);
        let header = message["blocks"][0]["text"]["text"].as_str().unwrap();
        let context = message["blocks"][2]["elements"][0]["text"].as_str().unwrap();
        assert_eq!(header.chars().count(), HEADER_LIMIT);
        assert_eq!(context.chars().count(), TEXT_LIMIT);
        assert!(context.ends_with('…'));
    }
}
