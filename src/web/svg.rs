//! Numbers for the dashboard's hand-drawn SVG: coordinates written cheaply, and round tick values for a
//! linear or a logarithmic axis, labelled with no more digits than they need; values with their units.

/// A coordinate written to a tenth of a unit with integer formatting: a trend page writes tens of thousands
/// of them, and exact float formatting was most of its cost.
#[derive(Clone, Copy)]
pub struct Px(pub f64);

impl std::fmt::Display for Px {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tenths = (self.0 * 10.0).round() as i64;
        let sign = if tenths < 0 { "-" } else { "" };
        write!(f, "{sign}{}.{}", (tenths / 10).abs(), (tenths % 10).abs())
    }
}

/// Writes `value` as [`Px`] displays it, straight onto `out`: a year of nightly runs is some 100,000
/// coordinates a page, and the formatting machinery was most of their cost.
pub fn push_px(out: &mut String, value: f64) {
    let tenths = (value * 10.0).round() as i64;
    if tenths < 0 {
        out.push('-');
    }
    let tenths = tenths.unsigned_abs();
    push_integer(out, tenths / 10);
    out.push('.');
    out.push(char::from(b'0' + (tenths % 10) as u8));
}

/// Writes `value`'s decimal digits onto `out`.
pub fn push_integer(out: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    digits[start..].iter().for_each(|d| out.push(char::from(*d)));
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

/// Ticks at 1, 2 and 5 times powers of ten within `[low, high]`.
#[must_use]
pub fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high && ticks.len() < 16 {
        for step in [1.0, 2.0, 5.0] {
            let tick = decade * step;
            if tick >= low && tick <= high {
                ticks.push(tick);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// A tick's text: no more digits than it needs.
#[must_use]
pub fn tick_label(value: f64) -> String {
    // Enough decimals for the tick's own size: 0.0002 % on a log axis must not read 0.
    let decimals = if value > 0.0 && value < 1.0 { (-value.log10().floor()) as usize + 2 } else { 3 };
    let text = format!("{value:.decimals$}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A value with its unit, to a sensible precision: `12.3 ms`, `0.25 %`, `41.0 req/s`.
#[must_use]
pub fn format_value(value: f64, unit: &str) -> String {
    let digits = match value.abs() {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    let separator = if unit == "%" { "" } else { " " };
    // Integer formatting: a trend page writes thousands of these, and exact float formatting is slow.
    let scale = 10_i64.pow(digits);
    let scaled = (value * scale as f64).round();
    if !scaled.is_finite() || scaled.abs() >= 9e15 {
        return format!("{value:.0}{separator}{unit}");
    }
    let scaled = scaled as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let (whole, fraction) = ((scaled / scale).abs(), (scaled % scale).abs());
    match digits {
        0 => format!("{sign}{whole}{separator}{unit}"),
        _ => format!("{sign}{whole}.{fraction:0width$}{separator}{unit}", width = digits as usize),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_their_units() {
        assert_eq!(format_value(12.345, "ms"), "12.3 ms");
        assert_eq!(format_value(0.25, "%"), "0.25%");
        assert_eq!(format_value(412.0, "req/s"), "412 req/s");
        assert_eq!(format_value(-0.05, "ms"), "-0.05 ms");
        assert_eq!(format_value(9.996, "ms"), "10.00 ms");
        assert_eq!(format_value(0.0, "%"), "0.00%");
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 33.0), [0.0, 10.0, 20.0, 30.0, 40.0]);
        assert_eq!(nice_ticks(0.0, 4.2), [0.0, 2.0, 4.0, 6.0]);
        assert_eq!(nice_ticks(0.0, 0.9), [0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(log_ticks(0.8, 120.0), [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(20.0), "20");
        assert_eq!(tick_label(0.0002), "0.0002");
        assert_eq!(Px(-3.04).to_string(), "-3.0");
        assert_eq!(Px(12.36).to_string(), "12.4");
    }
}
