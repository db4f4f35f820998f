//! Small pieces every hand-drawn SVG of the dashboard needs: text made safe inside markup, and round
//! numbers for an axis.

/// Text safe inside SVG (and HTML) markup, in text and in attribute values.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// Four to eight round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) from `low` up to the first
/// tick at or above `high`.
#[must_use]
pub fn nice_ticks(low: f64, high: f64) -> Vec<f64> {
    let span = (high - low).max(f64::MIN_POSITIVE);
    let rough = span / 4.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().map(|m| m * power).find(|s| *s >= rough).unwrap_or(10.0 * power);
    let first = (low / step).floor();
    let mut ticks = Vec::new();
    let mut k = 0.0;
    loop {
        let tick = (first + k) * step;
        ticks.push(tick);
        if tick >= high || ticks.len() >= 12 {
            return ticks;
        }
        k += 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 33.0), [0.0, 10.0, 20.0, 30.0, 40.0]);
        assert_eq!(nice_ticks(0.0, 4.2), [0.0, 2.0, 4.0, 6.0]);
        assert_eq!(nice_ticks(0.0, 0.9), [0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
