//! Durations as people write them (humantime's `500ms`, `90s`, `10m`, `25h`), bounded: every duration in
//! degrade.toml, a scenario file or on the command line is at most [`LONGEST`], so no sum of stages, no
//! deadline (`Instant + Duration`) and no rate derived from them can overflow.

use std::time::Duration;

/// The longest duration accepted anywhere: a week. A nightly run, a timeout or a think time longer than
/// that is a typo, and it keeps every sum of them far inside the clock's range.
pub const LONGEST: Duration = Duration::from_hours(7 * 24);

/// Parses `text`, at most [`LONGEST`]; `examples` name a few valid values for the error message.
pub fn parse(text: &str, examples: &str) -> Result<Duration, String> {
    let shown: String = text.chars().take(40).collect();
    let parsed = humantime::parse_duration(text).map_err(|e| {
        let why = match e {
            // humantime's own list names months and years, which no duration here may be.
            humantime::DurationError::UnknownUnit { unit, .. } => {
                let unit: String = unit.chars().take(12).collect();
                format!("`{unit}` is no unit: use ms, s, m, h or d, alone or together (1h30m)")
            }
            humantime::DurationError::NumberOverflow => "the number is too large".to_owned(),
            other => other.to_string(),
        };
        format!("`{shown}` is not a duration like {examples}: {why}")
    })?;
    if parsed > LONGEST {
        return Err(format!("`{shown}` is longer than a week, the longest duration degrade takes"));
    }
    Ok(parsed)
}

/// [`parse`], and longer than zero.
pub fn parse_positive(text: &str, examples: &str) -> Result<Duration, String> {
    match parse(text, examples)? {
        d if d.is_zero() => Err("must be longer than zero".to_owned()),
        d => Ok(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_bounded_and_zero_is_refused_where_it_means_nothing() {
        assert_eq!(parse("90s", "90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("7days", "90s"), Ok(LONGEST));
        assert!(parse("18446744073709551615s", "90s").unwrap_err().contains("longer than a week"));
        assert!(parse("99999999999999999999999s", "90s").unwrap_err().contains("is not a duration like 90s"));
        assert_eq!(parse_positive("0s", "90s"), Err("must be longer than zero".to_owned()));
        assert!(parse(&"9".repeat(1_000_000), "90s").unwrap_err().len() < 200);
        assert_eq!(
            parse("5x", "20s or 2m"),
            Err("`5x` is not a duration like 20s or 2m: `x` is no unit: use ms, s, m, h or d, alone or together \
                 (1h30m)"
                .to_owned())
        );
    }
}
