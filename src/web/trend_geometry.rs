//! Where a trend chart's parts sit: the SVG's size, the plot's edges inside it, and the slot of each point.
//! The chart, its time axis and its marks all place things by these, so they are kept apart from each of
//! them.

/// The SVG's width and height, in px.
pub(super) const WIDTH: f64 = 720.0;
pub(super) const HEIGHT: f64 = 290.0;
/// The plot's left, right and top edges.
pub(super) const LEFT: f64 = 62.0;
pub(super) const RIGHT: f64 = 14.0;
pub(super) const TOP: f64 = 52.0;
/// The plot's bottom edge; below it, date labels and then build labels.
pub(super) const BOTTOM: f64 = 236.0;

/// The centre of point `index` of `count`, one slot each.
pub(super) fn slot_x(index: usize, count: usize) -> f64 {
    LEFT + (WIDTH - LEFT - RIGHT) * (index as f64 + 0.5) / count as f64
}
