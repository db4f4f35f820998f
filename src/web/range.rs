//! The time ranges of the trend pages (`?range=7d|30d|90d|1y|all`).

use chrono::{DateTime, Duration, Utc};

use super::WebError;

/// A trend page's time range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// The last 7 days.
    Week,
    /// The last 30 days.
    Month,
    /// The last 90 days.
    Quarter,
    /// The last 365 days.
    Year,
    /// Everything stored.
    All,
}

impl Range {
    /// Every range, in the order the selector shows them.
    pub const ALL: [Self; 5] = [Self::Week, Self::Month, Self::Quarter, Self::Year, Self::All];

    /// Parses `?range=`; missing means 30 days.
    pub fn parse(text: Option<&str>) -> Result<Self, WebError> {
        match text {
            None => Ok(Self::Month),
            Some(text) => Self::ALL
                .into_iter()
                .find(|r| r.as_str() == text)
                .ok_or_else(|| WebError::BadRequest(format!("unknown range `{text}`; use 7d, 30d, 90d, 1y or all"))),
        }
    }

    /// The query value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Week => "7d",
            Self::Month => "30d",
            Self::Quarter => "90d",
            Self::Year => "1y",
            Self::All => "all",
        }
    }

    /// How many time buckets a trend line over this range is merged into when it holds more than
    /// `store::trends::MAX_RUN_POINTS` runs (up to that, every run is a point of its own): a few a day over a
    /// month, about daily over a quarter, weekly over a year (its 365 days and the day ahead are 52.3 weeks)
    /// and about monthly over everything, so the longest page stays within a few times the cost of the
    /// shortest (measured by `ci/bench-dashboard.sh`).
    #[must_use]
    pub fn points(self) -> u32 {
        match self {
            Self::Week | Self::Month => 60,
            Self::Quarter => 90,
            Self::Year => 53,
            Self::All => 40,
        }
    }

    /// The window `[from, to)` this range covers at `now`.
    #[must_use]
    pub fn window(self, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        let days = match self {
            Self::Week => 7,
            Self::Month => 30,
            Self::Quarter => 90,
            Self::Year => 365,
            Self::All => return (DateTime::<Utc>::MIN_UTC, now + Duration::days(1)),
        };
        (now - Duration::days(days), now + Duration::days(1))
    }
}
