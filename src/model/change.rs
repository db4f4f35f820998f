//! A relative change as every output writes it: the dashboard's tables, grid and sparklines, `degrade check`'s
//! text, Markdown and JUnit, the alerts and the judge's reasons. One rule, so the same change never reads
//! `+31531.5 %` in one place and `×316` in another.
//!
//! Up to a tenfold change a percentage reads best (`+31.9 %`, `-42.0 %`, `+640.0 %`). Past it a percentage is
//! a count of digits (`+3153.2 %` and `+31531.5 %` differ by one digit and a factor of ten), so it reads as a
//! factor with three significant digits: `×12.5`, `×316`, `×3160`. A fall to a tenth or less is its mirror, a
//! divisor (`÷20`, `÷316`): `-95.0 %` and `-99.5 %` look alike though one is ten times the other. A fall to
//! nothing stays `-100.0 %`. Where there is room for it (a page's tooltip) the exact percentage is
//! [`Change::exact`]; JSON keeps the number.

use std::fmt;

/// A tenfold change and more reads as a factor (a tenth and less as a divisor).
const FACTOR_FROM: f64 = 10.0;

/// A change from a baseline to tonight, in percent of the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    pct: f64,
}

/// How a change is written.
enum Reading {
    /// `+31.9 %`.
    Percent,
    /// `×316`: tonight is this many times the baseline.
    Times(f64),
    /// `÷20`: tonight is the baseline divided by this.
    Divided(f64),
}

impl Change {
    /// A change of `pct` percent (`+50.0` is half as much again).
    #[must_use]
    pub fn from_pct(pct: f64) -> Self {
        Self { pct }
    }

    /// The exact percentage, whatever the size: `+31531.5 %`, for a tooltip beside a factor.
    #[must_use]
    pub fn exact(self) -> String {
        if self.pct.is_finite() { format!("{:+.1} %", self.pct) } else { "n/a".to_owned() }
    }

    /// The change and, when it reads as a factor, its exact percentage too: `×316 (+31531.5 %)`, `+35.0 %`.
    /// For a tooltip, where both fit.
    #[must_use]
    pub fn spelled_out(self) -> String {
        match self.reading() {
            Reading::Percent => self.exact(),
            Reading::Times(_) | Reading::Divided(_) => format!("{self} ({})", self.exact()),
        }
    }

    /// The change in a grid's cell: `+35` (percent, the grid's legend says so), or the factor as everywhere.
    #[must_use]
    pub fn short(self) -> String {
        match self.reading() {
            Reading::Percent if self.pct.is_finite() => format!("{:+.0}", self.pct),
            _ => self.to_string(),
        }
    }

    fn reading(self) -> Reading {
        let ratio = 1.0 + self.pct / 100.0;
        match ratio {
            r if r.is_finite() && r >= FACTOR_FROM => Reading::Times(r),
            r if r > 0.0 && r <= 1.0 / FACTOR_FROM => Reading::Divided(1.0 / r),
            _ => Reading::Percent,
        }
    }
}

impl fmt::Display for Change {
    /// `+31.9 %`, `×316` or `÷20`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reading() {
            Reading::Percent => f.write_str(&self.exact()),
            Reading::Times(factor) => write!(f, "×{}", three_digits(factor)),
            Reading::Divided(factor) => write!(f, "÷{}", three_digits(factor)),
        }
    }
}

/// A factor of at least 10 with three significant digits (whole from 100 up): `12.5`, `22` (not `22.0`),
/// `316`, `3160`.
fn three_digits(factor: f64) -> String {
    if factor >= 99.95 {
        return format!("{factor:.0}");
    }
    let tenths = format!("{factor:.1}");
    match tenths.strip_suffix(".0") {
        Some(whole) => whole.to_owned(),
        None => tenths,
    }
}

#[cfg(test)]
mod tests {
    use super::Change;

    fn text(pct: f64) -> String {
        Change::from_pct(pct).to_string()
    }

    #[test]
    fn up_to_tenfold_a_change_reads_in_percent() {
        assert_eq!(text(31.94), "+31.9 %");
        assert_eq!(text(-42.0), "-42.0 %");
        assert_eq!(text(0.0), "+0.0 %");
        assert_eq!(text(260.0), "+260.0 %", "×3.6 is still a percentage");
        assert_eq!(text(899.9), "+899.9 %", "just under ×10");
        assert_eq!(text(-89.9), "-89.9 %", "just over a tenth");
    }

    #[test]
    fn past_tenfold_it_reads_as_a_factor_of_three_digits() {
        assert_eq!(text(900.0), "×10", "exactly ten times");
        assert_eq!(text(1150.0), "×12.5");
        assert_eq!(text(2095.7), "×22", "21.957 to a tenth is 22.0, written 22");
        assert_eq!(text(9252.7), "×93.5");
        assert_eq!(text(9895.0), "×100", "99.95 rounds up to a whole 100, never `×100.0`");
        assert_eq!(text(31531.5), "×316");
        assert_eq!(text(315_900.0), "×3160");
    }

    #[test]
    fn a_fall_to_a_tenth_or_less_reads_as_a_divisor_and_to_nothing_in_percent() {
        assert_eq!(text(-90.0), "÷10");
        assert_eq!(text(-95.0), "÷20");
        assert_eq!(text(-99.684), "÷316");
        assert_eq!(text(-100.0), "-100.0 %", "nothing left: no divisor says it");
    }

    #[test]
    fn the_exact_percentage_and_the_cell_keep_to_the_same_rule() {
        let huge = Change::from_pct(31531.5);
        assert_eq!(huge.exact(), "+31531.5 %");
        assert_eq!(huge.spelled_out(), "×316 (+31531.5 %)");
        assert_eq!(Change::from_pct(35.0).spelled_out(), "+35.0 %", "a percentage says it once");
        assert_eq!(huge.short(), "×316", "a cell says what the table says");
        assert_eq!(Change::from_pct(35.2).short(), "+35");
        assert_eq!(Change::from_pct(-12.6).short(), "-13");
        assert_eq!(Change::from_pct(-95.0).short(), "÷20");
        assert_eq!(Change::from_pct(f64::NAN).to_string(), "n/a", "never `NaN %`");
        assert_eq!(Change::from_pct(f64::INFINITY).short(), "n/a");
    }
}
