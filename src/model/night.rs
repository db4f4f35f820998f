//! Where a runner's night stands between its steps, read from what its run row already records (its status,
//! whether it has a verdict, its `alerted_at` stamp): the run page says it for a night not yet concluded, and
//! who carries it on. No column of its own: one would repeat those facts and could disagree with them.

use super::RunStatus;

/// A runner's night that is not concluded: the step it stopped after, and what comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NightStep {
    /// Recorded, its load under way (or cut off: a degrade that finds no live lease marks it aborted).
    Measuring,
    /// Its results stored, no verdict yet: the next degrade judges it against the baseline stored with it.
    Measured,
    /// Judged regressed, its confirmation rerun not decided yet.
    Confirming,
    /// Judged (or failed), its alerts not stamped yet: the next degrade alerts it, unless a later night was
    /// judged since.
    Judged,
}

/// What the run row says of a night, as [`NightStep::of`] reads it.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[allow(clippy::struct_excessive_bools, reason = "four independent facts of one run row, read together once")]
#[derive(Debug, Clone, Copy)]
pub struct NightRecord {
    pub status: RunStatus,
    /// Stored with a baseline to be judged against: a runner's night (not `degrade run`'s).
    pub runners: bool,
    /// A confirmation rerun: its pair is the first run's night.
    pub rerun: bool,
    pub judged: bool,
    pub alerted: bool,
}

impl NightStep {
    /// Where the night stands; `None` when it is concluded, or is no runner's night of its own.
    #[must_use]
    pub fn of(record: NightRecord) -> Option<Self> {
        if !record.runners || record.rerun || record.alerted {
            return None;
        }
        match record.status {
            RunStatus::Running => Some(Self::Measuring),
            RunStatus::Confirming => Some(Self::Confirming),
            RunStatus::Finished if !record.judged => Some(Self::Measured),
            RunStatus::Passed | RunStatus::Regressed | RunStatus::Failed => Some(Self::Judged),
            RunStatus::Finished | RunStatus::Invalid if record.judged => Some(Self::Judged),
            _ => None,
        }
    }

    /// The step in words, and who carries the night on: for the run page.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Measuring => {
                "measuring: the night is recorded and its load under way; if its degrade stopped, the next one \
                 marks it aborted once its lease has run out"
            }
            Self::Measured => {
                "measured, not judged yet: its degrade stopped before the verdict; the next degrade to touch the \
                 scenario judges it against the baseline stored with it, and alerts it"
            }
            Self::Confirming => {
                "confirming: a rerun of the same build decides this regression; if its degrade stopped, the next \
                 one decides the pair from the stored runs"
            }
            Self::Judged => {
                "judged, not alerted yet: its degrade stopped before the alerts were stored; the next degrade \
                 alerts it, unless a later night was judged since"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: RunStatus, judged: bool, alerted: bool) -> NightRecord {
        NightRecord { status, runners: true, rerun: false, judged, alerted }
    }

    #[test]
    fn a_night_is_where_its_run_row_says() {
        assert_eq!(NightStep::of(record(RunStatus::Running, false, false)), Some(NightStep::Measuring));
        assert_eq!(NightStep::of(record(RunStatus::Finished, false, false)), Some(NightStep::Measured));
        assert_eq!(NightStep::of(record(RunStatus::Confirming, true, false)), Some(NightStep::Confirming));
        assert_eq!(NightStep::of(record(RunStatus::Regressed, true, false)), Some(NightStep::Judged));
        assert_eq!(NightStep::of(record(RunStatus::Failed, false, false)), Some(NightStep::Judged));
        assert_eq!(NightStep::of(record(RunStatus::Regressed, true, true)), None, "concluded");
        assert_eq!(NightStep::of(record(RunStatus::Aborted, false, false)), None, "ended");
        let measured_alone = NightRecord { runners: false, ..record(RunStatus::Finished, false, false) };
        assert_eq!(NightStep::of(measured_alone), None, "degrade run measures only, never judged by design");
    }
}
