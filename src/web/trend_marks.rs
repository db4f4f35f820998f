//! The marks of a trend chart's points, each in a link to its run (or its bucket's days) that carries the
//! point's tooltip once for all of them: a dot on the line, a pin on a run where this endpoint regressed, a
//! ring on an unconfirmed run, and for a run never judged (invalid) a grey cross apart from the line. An
//! invalid run's figures say nothing about the build, so it neither joins the line nor sets the scale: one
//! above the scale sits on the plot's top edge under an arrow, its value in its tooltip.

use std::fmt::Write as _;

use chrono::Timelike;

use super::svg::{Px, format_value, push_integer, push_px};
use super::trend_chart::{ALARM, Axis, DENSE, OnScale, OverBuckets, TrendChart, bucket_zoom, push_date};
use super::trend_geometry::{BOTTOM, TOP, slot_x};
use crate::model::RunStatus;
use crate::outside_text::push_xml_escaped;
use crate::store::ChartPoint;

/// The colour of what was never judged: muted, so it never reads as a finding.
const NEVER_JUDGED: &str = "#8a8f98";

impl TrendChart<'_> {
    /// Every point's marks, in its link with its tooltip.
    pub(super) fn marks(&self, svg: &mut String, axis: &Axis, points: &[&ChartPoint]) {
        let count = points.len();
        let radius = if count > DENSE { 2.5 } else { 4.0 };
        // One buffer for every tooltip: a long range draws thousands of them.
        let mut tooltip = String::new();
        for (i, point) in points.iter().enumerate() {
            let close = self.open_link(svg, point, points.get(i + 1).copied());
            let value = (self.lines[0].value)(point);
            let place = if point.never_judged() { axis.place(value) } else { OnScale::Within };
            tooltip.clear();
            self.tooltip(&mut tooltip, point, place);
            svg.push_str("<title>");
            push_xml_escaped(svg, &tooltip);
            svg.push_str("</title>");
            let x = slot_x(i, count);
            if point.never_judged() {
                apart(svg, x, axis, value, place);
            } else {
                self.on_line(svg, point, x, axis.y(value), radius);
            }
            svg.push_str(close);
        }
    }

    /// Opens the point's link (its run, or its bucket's days) and returns what closes it.
    fn open_link(&self, svg: &mut String, point: &ChartPoint, next: Option<&ChartPoint>) -> &'static str {
        match (point.run_id, &self.zoom) {
            (Some(id), _) => {
                svg.push_str("<a href=\"/runs/");
                push_integer(svg, id.unsigned_abs());
                svg.push_str("\">");
                "</a>"
            }
            (None, Some(zoom)) => {
                svg.push_str("<a href=\"");
                push_xml_escaped(svg, &bucket_zoom(zoom, point, next));
                svg.push_str("\">");
                "</a>"
            }
            (None, None) => {
                svg.push_str("<g>");
                "</g>"
            }
        }
    }

    /// A point on the line: its dot, a pin where this endpoint regressed, a ring on an unconfirmed run, and a
    /// small cross under the axis for a bucket that holds invalid runs among valid ones.
    fn on_line(&self, svg: &mut String, point: &ChartPoint, x: f64, y: f64, radius: f64) {
        let regressed = self.main && point.regressed > 0;
        let (fill, r) = if regressed { (ALARM, radius + 1.5) } else { (self.lines[0].colour, radius) };
        svg.push_str("<circle class=\"point\" cx=\"");
        push_px(svg, x);
        svg.push_str("\" cy=\"");
        push_px(svg, y);
        svg.push_str("\" r=\"");
        push_px(svg, r);
        svg.push_str("\" fill=\"");
        svg.push_str(fill);
        svg.push_str("\"/>");
        let (px, py) = (Px(x), Px(y));
        if regressed {
            let _ =
                write!(svg, "<path class=\"pin\" d=\"M {px} {} l -5 -9 h 10 z\" fill=\"{ALARM}\"/>", Px(y - r - 2.0));
        }
        if matches!(point.status, Some(RunStatus::Unconfirmed | RunStatus::Confirming)) {
            let _ = write!(
                svg,
                "<circle class=\"unconfirmed\" cx=\"{px}\" cy=\"{py}\" r=\"{}\" fill=\"none\" stroke=\"#b9770e\" \
                 stroke-width=\"1.5\"/>",
                r + 3.0
            );
        }
        if point.invalid > 0 {
            let _ = write!(
                svg,
                "<text class=\"invalid-in-bucket\" x=\"{px}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" \
                 fill=\"{NEVER_JUDGED}\">×</text>",
                BOTTOM - 4.0
            );
        }
    }

    /// What hovering a point says, written onto `text`: the run (or the bucket), its build and time, the
    /// values with their unit, and the verdict; for a run never judged, that it is drawn apart.
    fn tooltip(&self, text: &mut String, point: &ChartPoint, place: OnScale) {
        match point.run_id {
            Some(id) => {
                let _ = write!(text, "run #{id}, ");
            }
            None => {
                let _ = write!(text, "{} runs from ", point.runs);
            }
        }
        let time = point.started_at.naive_utc();
        push_date(text, point);
        let _ = write!(text, " {:02}:{:02} UTC", time.hour(), time.minute());
        if let Some(build) = &point.build_id {
            let _ = write!(text, ", build {build}");
        }
        for (k, line) in self.lines.iter().enumerate() {
            let over = match (point.runs > 1, line.over_buckets) {
                (false, _) => "",
                (true, OverBuckets::Mean) => " mean",
                (true, OverBuckets::Worst) => " worst",
            };
            let separator = if k == 0 { ": " } else { ", " };
            let _ = write!(text, "{separator}{}{over} {}", line.name, format_value((line.value)(point), self.unit));
        }
        if let (Some(spread), true) = (self.spread, point.runs > 1) {
            let (low, high) = spread(point);
            let _ = write!(
                text,
                " ({} {} to {})",
                self.lines[0].name,
                format_value(low, self.unit),
                format_value(high, self.unit)
            );
        }
        if let Some(status) = point.status {
            let _ = write!(text, "; {status}");
        }
        self.tooltip_verdict(text, point, place);
    }

    /// The end of a tooltip: where the endpoint regressed, what was never judged, and where a bucket leads.
    fn tooltip_verdict(&self, text: &mut String, point: &ChartPoint, place: OnScale) {
        match (point.regressed, point.runs) {
            (0, _) => {}
            (_, 1) => text.push_str("; this endpoint regressed"),
            (n, _) => {
                let _ = write!(text, "; this endpoint regressed in {n} of them");
            }
        }
        if point.never_judged() {
            if point.status.is_none() {
                text.push_str("; all invalid");
            }
            text.push_str(": never judged, drawn apart from the line");
            match place {
                OnScale::Above => text.push_str(", above the chart's scale"),
                OnScale::Below => text.push_str(", below the chart's scale"),
                OnScale::Within => {}
            }
        } else if point.invalid > 0 {
            let _ = write!(text, "; {} of them invalid", point.invalid);
        }
        if point.run_id.is_none() && self.zoom.is_some() {
            text.push_str("; click to zoom in");
        }
    }
}

/// A point never judged: a grey cross at its value, or at the plot's edge beside an arrow pointing off the
/// scale when its value is beyond it (the arrow above the plot's top, or on its bottom edge).
fn apart(svg: &mut String, x: f64, axis: &Axis, value: f64, place: OnScale) {
    let y = match place {
        OnScale::Within => axis.y(value),
        OnScale::Above => TOP + 5.0,
        OnScale::Below => BOTTOM - 14.0,
    };
    let _ = write!(
        svg,
        "<path class=\"invalid-run\" d=\"M {} {} l 8 8 m 0 -8 l -8 8\" stroke=\"{NEVER_JUDGED}\" stroke-width=\"2\"/>",
        Px(x - 4.0),
        Px(y - 4.0)
    );
    let arrow = match place {
        OnScale::Within => return,
        OnScale::Above => format!("M {} {} l -5 7 h 10 z", Px(x), Px(TOP - 9.0)),
        OnScale::Below => format!("M {} {} l -5 -7 h 10 z", Px(x), Px(BOTTOM - 1.0)),
    };
    let _ = write!(svg, "<path class=\"off-scale\" d=\"{arrow}\" fill=\"{NEVER_JUDGED}\"/>");
}
