//! The time axis under a trend chart: dates under evenly spaced points (runs are slots, not times), and a
//! labelled tick wherever the build changed, never a line per night.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::trend_geometry::{BOTTOM, LEFT, RIGHT, WIDTH, slot_x};
use crate::outside_text::xml_escape;
use crate::store::ChartPoint;

/// Room a date label needs per character, in the chart's units, at the largest text it gets (a phone shows
/// chart text at 20 units: a digit is about 12 wide), and the room beside it.
const LABEL_CHARACTER: f64 = 12.0;
const LABEL_MARGIN: f64 = 18.0;
/// Past this many build changes a chart draws no build ticks: about one every 10 px of plot, a tick per night.
const MAX_BUILD_TICKS: usize = 60;
/// Build labels closer than this to the previous one are left to their tick's tooltip.
const BUILD_LABEL_GAP: f64 = 64.0;
/// A build label's baseline under the axis: a row below the dates.
const BUILD_LABEL_BELOW: f64 = 34.0;

/// Dates under evenly spaced points, and a labelled tick wherever the build changed.
pub(super) fn time_axis(svg: &mut String, points: &[&ChartPoint]) {
    let count = points.len();
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{BOTTOM}\" x2=\"{}\" y2=\"{BOTTOM}\" stroke=\"currentColor\" stroke-opacity=\"0.5\"/>",
        WIDTH - RIGHT
    );
    let (Some(first), Some(last)) = (points.first(), points.last()) else { return };
    let mut format = DateFormat::spanning(first.started_at, last.started_at);
    let mut indexes = label_indexes(count, format.width());
    // Runs minutes apart (a new user's first tries) would read 15:31, 15:31, 15:32: their seconds tell them apart.
    let labelled: Vec<DateTime<Utc>> = indexes.iter().map(|&i| points[i].started_at).collect();
    if format.telling_apart(&labelled) != format {
        format = DateFormat::SECONDS;
        indexes = label_indexes(count, format.width());
    }
    for index in indexes {
        // The newest label near the plot's edge ends there rather than centring on its point, so enlarged text
        // on a narrow screen is not cut off by the chart's border.
        let x = slot_x(index, count);
        let (x, anchor) =
            if index + 1 == count && x > WIDTH - RIGHT - 40.0 { (WIDTH - RIGHT, "end") } else { (x, "middle") };
        let _ = write!(
            svg,
            "<text class=\"date\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"{anchor}\" fill-opacity=\"0.8\">{}</text>",
            BOTTOM + 16.0,
            points[index].started_at.format(format.pattern)
        );
    }
    let builds: Vec<Option<&str>> = points.iter().map(|p| p.build_id.as_deref()).collect();
    build_ticks(svg, &builds, |i| slot_x(i, count), BOTTOM);
}

/// How a time axis writes its dates: a pattern and the characters it writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DateFormat {
    pub pattern: &'static str,
    characters: f64,
}

impl DateFormat {
    const TIME: Self = Self { pattern: "%H:%M", characters: 5.0 };
    const SECONDS: Self = Self { pattern: "%H:%M:%S", characters: 8.0 };
    const DAY: Self = Self { pattern: "%m-%d", characters: 5.0 };
    const MONTH: Self = Self { pattern: "%Y-%m", characters: 7.0 };

    /// The format of an axis from `first` to `last`: the time within one day; month and day; the year and
    /// month over about a year or more, where month and day alone repeat across years.
    pub(super) fn spanning(first: DateTime<Utc>, last: DateTime<Utc>) -> Self {
        if first.date_naive() == last.date_naive() {
            Self::TIME
        } else if last - first > chrono::Duration::days(300) {
            Self::MONTH
        } else {
            Self::DAY
        }
    }

    /// This format, or one with seconds where it would write two neighbouring `times` alike (runs minutes
    /// apart, a new user's first tries, read `15:31, 15:31, 15:32`).
    pub(super) fn telling_apart(self, times: &[DateTime<Utc>]) -> Self {
        let alike =
            times.windows(2).any(|w| w[0].format(self.pattern).to_string() == w[1].format(self.pattern).to_string());
        if self == Self::TIME && alike { Self::SECONDS } else { self }
    }

    /// The room one label takes, in the chart's units.
    fn width(self) -> f64 {
        LABEL_CHARACTER * self.characters + LABEL_MARGIN
    }
}

/// The points of `count` that get a date label `width` units wide: every `stride`-th one back from the newest,
/// which always has one, the stride the fewest slots that keep labels apart. A constant stride matters: six
/// labels picked among eight points by rounding skipped the fourth (12-01) between labelled neighbours, and
/// a gap in a regular row reads as a missing date.
fn label_indexes(count: usize, width: f64) -> Vec<usize> {
    if count == 0 {
        return Vec::new();
    }
    let slot = (WIDTH - LEFT - RIGHT) / count as f64;
    let stride = (width / slot).ceil().max(1.0) as usize;
    let mut indexes: Vec<usize> = (0..count).rev().step_by(stride).collect();
    indexes.reverse();
    indexes
}

/// A labelled tick wherever the build changed, on an axis at `axis_y` whose point `i` stands at `x(i)`; none
/// where it changes at nearly every point (a nightly build on a year-long range): ticks would be a line per
/// night, and each point's tooltip names its build. The capacity trend draws them too.
pub(super) fn build_ticks(svg: &mut String, builds: &[Option<&str>], x: impl Fn(usize) -> f64, axis_y: f64) {
    let changes: Vec<(usize, &str, &str)> = builds
        .windows(2)
        .enumerate()
        .scan(None::<&str>, |previous, (i, pair)| {
            *previous = pair[0].or(*previous);
            let change = match (*previous, pair[1]) {
                (Some(before), Some(now)) if before != now => Some((i + 1, before, now)),
                _ => None,
            };
            Some(change)
        })
        .flatten()
        .collect();
    if changes.len() > MAX_BUILD_TICKS {
        return;
    }
    let mut last_label = f64::NEG_INFINITY;
    for (i, before, now) in changes {
        let x = x(i);
        let change = xml_escape(&format!("build {before} → {now}"));
        let _ = write!(
            svg,
            "<line class=\"build-change\" x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"currentColor\" \
             stroke-width=\"2\"><title>{change}</title></line>",
            axis_y - 5.0,
            axis_y + 5.0
        );
        if x - last_label >= BUILD_LABEL_GAP {
            let label: String = now.chars().take(10).collect();
            let _ = write!(
                svg,
                "<text class=\"build-label\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}<title>{change}</title></text>",
                axis_y + BUILD_LABEL_BELOW,
                xml_escape(&label)
            );
            last_label = x;
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    /// Nightly points from 2026-11-28, one a day, build 1.0.n.
    fn nights(count: u32) -> Vec<ChartPoint> {
        (0..count)
            .map(|n| ChartPoint {
                endpoint: "(all)".into(),
                started_at: chrono::Utc.with_ymd_and_hms(2026, 11, 28, 22, 0, 0).unwrap() + chrono::Days::new(n.into()),
                runs: 1,
                run_id: Some(i64::from(n) + 1),
                status: None,
                p50_ms: 1.0,
                p95_ms: 2.0,
                p99_ms: 3.0,
                error_pct: 0.0,
                rate: 10.0,
                p95_range_ms: (2.0, 2.0),
                p99_max_ms: 3.0,
                error_pct_max: 0.0,
                regressed: 0,
                invalid: 0,
                build_id: Some(format!("1.0.{n}")),
            })
            .collect()
    }

    fn dates(points: &[ChartPoint]) -> Vec<String> {
        let refs: Vec<&ChartPoint> = points.iter().collect();
        let mut svg = String::new();
        time_axis(&mut svg, &refs);
        svg.split("<text class=\"date\"").skip(1).map(|t| t.split('>').nth(1).unwrap().replace("</text", "")).collect()
    }

    #[test]
    fn eight_nights_get_eight_dates_and_none_is_skipped_between_its_neighbours() {
        // The demo's week: six labels picked among eight points by rounding left out 12-01.
        assert_eq!(dates(&nights(8)), ["11-28", "11-29", "11-30", "12-01", "12-02", "12-03", "12-04", "12-05"]);
    }

    #[test]
    fn more_nights_are_labelled_at_one_stride_ending_on_the_newest() {
        let month = dates(&nights(30));
        assert_eq!(month.last().map(String::as_str), Some("12-27"), "the newest night is always named");
        let days: Vec<u32> = nights(30)
            .iter()
            .filter(|p| month.contains(&p.started_at.format("%m-%d").to_string()))
            .map(|p| p.run_id.unwrap() as u32)
            .collect();
        let strides: Vec<u32> = days.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(strides.len() >= 4 && strides.windows(2).all(|w| w[0] == w[1]), "{month:?}");
        assert_eq!(label_indexes(1, 72.0), [0]);
        assert!(label_indexes(0, 72.0).is_empty());
    }

    #[test]
    fn runs_minutes_apart_are_told_apart_by_their_seconds() {
        let mut tries = nights(4);
        for (n, point) in tries.iter_mut().enumerate() {
            point.started_at = chrono::Utc.with_ymd_and_hms(2026, 12, 7, 15, 31, 0).unwrap()
                + chrono::Duration::seconds(40 * n as i64);
        }
        assert_eq!(dates(&tries), ["15:31:00", "15:31:40", "15:32:20", "15:33:00"]);
        // An hour apart, minutes are enough.
        for (n, point) in tries.iter_mut().enumerate() {
            point.started_at =
                chrono::Utc.with_ymd_and_hms(2026, 12, 7, 9, 0, 0).unwrap() + chrono::Duration::hours(n as i64);
        }
        assert_eq!(dates(&tries), ["09:00", "10:00", "11:00", "12:00"]);
    }
}
