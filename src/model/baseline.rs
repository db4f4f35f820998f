//! Baseline specs: which earlier runs a candidate run is compared with.
//!
//! The spec is what users type (`--baseline last-7d`, `baseline = "last-10"` in `degrade.toml`); parsing
//! it here means the config, the CLI and the dashboard accept exactly the same words.

use std::fmt;
use std::str::FromStr;

/// The largest N in `last-Nd` and `last-N`: ten years of nightly runs.
pub const MAX_COUNT: u32 = 3650;

/// Which runs of the same scenario form the baseline. Only finished, valid runs ever count, and the
/// candidate never counts in its own baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineSpec {
    /// `last-Nd`: runs started in the N days before the candidate.
    LastDays(u32),
    /// `last-N`: the N runs before the candidate.
    LastRuns(u32),
    /// `run:ID`: one named run.
    Run(i64),
    /// `build:ID`: the runs of one build.
    Build(String),
}

/// `last-7d`: the baseline of a scenario that names none, of `check` without `--baseline`, and of the demo. A
/// week of nights is enough history for the judge's level and noise, and short enough to follow a slow drift.
impl Default for BaselineSpec {
    fn default() -> Self {
        Self::LastDays(7)
    }
}

impl FromStr for BaselineSpec {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "unknown baseline `{spec}`; use last-7d (last N days), last-10 (last N runs), run:42 or build:1.4.2"
            )
        };
        if let Some(rest) = spec.strip_prefix("last-") {
            let (number, days) = match rest.strip_suffix('d') {
                Some(number) => (number, true),
                None => (rest, false),
            };
            let n: u32 = number.parse().ok().filter(|n| (1..=MAX_COUNT).contains(n)).ok_or_else(bad)?;
            return Ok(if days { Self::LastDays(n) } else { Self::LastRuns(n) });
        }
        if let Some(id) = spec.strip_prefix("run:") {
            return id.parse().map(Self::Run).map_err(|_| bad());
        }
        match spec.strip_prefix("build:") {
            Some(build) if !build.is_empty() => Ok(Self::Build(build.to_owned())),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for BaselineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LastDays(n) => write!(f, "last-{n}d"),
            Self::LastRuns(n) => write!(f, "last-{n}"),
            Self::Run(id) => write!(f, "run:{id}"),
            Self::Build(build) => write!(f, "build:{build}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_form() {
        for (text, spec) in [
            ("last-7d", BaselineSpec::LastDays(7)),
            ("last-10", BaselineSpec::LastRuns(10)),
            ("run:42", BaselineSpec::Run(42)),
            ("build:1.4.2", BaselineSpec::Build("1.4.2".into())),
        ] {
            assert_eq!(text.parse::<BaselineSpec>().unwrap(), spec);
            assert_eq!(spec.to_string(), text);
        }
    }

    #[test]
    fn rejects_the_rest() {
        for text in ["last-0d", "last-7x", "last-", "last-99999999d", "last-3651", "run:abc", "build:", "yesterday"] {
            let err = text.parse::<BaselineSpec>().unwrap_err();
            assert!(err.contains(&format!("unknown baseline `{text}`")), "{err}");
        }
    }
}
