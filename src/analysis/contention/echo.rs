//! Whether tonight's machine was slower in itself, by the loopback echo the generator times during every run
//! (`LoadSummary::machine_echo_p50_us`, `engine::echo_probe`): two of its threads bounce a byte over loopback
//! TCP a hundred times a second, and no build of the target can change how long that takes, unless it takes
//! the machine's CPU. A host can hold a guest back in ways it does not account as stolen time (a busy
//! hyperthread sibling, a lower clock, memory bandwidth taken by other guests); the echo sees them all.
//!
//! Measured with `bench-verdicts` on a 2-core VM: the echo's median round trip was 24–28 µs on 20 quiet
//! nights of one morning, and 41 µs on the night every endpoint read 30–60 % slower with nothing stolen (55–72
//! µs on the quiet nights of another day, 73–80 in a host spell there): its level moves from day to day, so
//! tonight is only ever compared with the baseline nights' median.

use super::host::OwnWork;
use super::{MachineLoad, MachineSlowdown, UsualMachine, median};

/// Tonight's echo at least this many times the usual night's: a machine a quarter slower at its own
/// round trip. Quiet nights stayed within 12 % of their median on the VM above.
pub(super) const SLOWER_FACTOR: f64 = 1.25;

/// A machine slower at its own loopback round trip than on the baseline nights.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowerMachine {
    /// Tonight's median echo round trip, µs.
    pub tonight_us: f64,
    /// The baseline nights' median of the same, µs.
    pub usual_us: f64,
    /// How many baseline nights had the figure.
    pub nights: usize,
}

impl SlowerMachine {
    /// One clause for people.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "the machine itself was slower than on the baseline nights (a loopback round trip between two of the \
             generator's threads took {:.0} µs at the median, against {:.0} µs on the median of {} baseline nights)",
            self.tonight_us, self.usual_us, self.nights
        )
    }
}

/// Compares tonight's echo with the baseline nights'; `None` when it was within [`SLOWER_FACTOR`] of usual,
/// when the machine's own work grew by more than [`OWN_WORK_POINTS`](super::host::OWN_WORK_POINTS) (a build
/// that burns more CPU slows the echo too, and that is the build's doing), or when the figures are missing
/// (runs stored before the echo was measured).
#[must_use]
pub fn slower_machine(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<SlowerMachine> {
    echo_slower(tonight, baseline).filter(|(_, own)| !own.grew()).map(|(slower, _)| slower)
}

/// Tonight's echo took [`SLOWER_FACTOR`] times the usual or longer, whatever the machine's own work did: the
/// figures, and that work. `None` when it did not, or when the figures are missing.
pub(super) fn echo_slower(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<(SlowerMachine, OwnWork)> {
    let tonight = tonight.filter(|t| t.busy_pct.is_finite())?;
    let tonight_us = tonight.echo_p50_us.filter(|e| e.is_finite() && *e > 0.0)?;
    let (usual_us, nights) = median(baseline.iter().filter_map(|n| n.echo_p50_us).filter(|e| *e > 0.0))?;
    let own = |busy: f64, stolen: Option<f64>| busy - stolen.filter(|s| s.is_finite()).unwrap_or(0.0);
    let (usual_own, _) = median(baseline.iter().filter_map(|n| Some(own(n.busy_pct?, n.stolen_pct))))?;
    let work = OwnWork { tonight_pct: own(tonight.busy_pct, tonight.stolen_pct), usual_pct: usual_own };
    (tonight_us >= SLOWER_FACTOR * usual_us).then_some((SlowerMachine { tonight_us, usual_us, nights }, work))
}

/// How many times as long tonight's echo took as the baseline nights' median (at least 1), whatever else
/// held the machine back: the most its slowdown can do to a request is read from it (`standout`).
#[must_use]
pub fn machine_slowdown(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<MachineSlowdown> {
    let tonight_us = tonight?.echo_p50_us.filter(|e| e.is_finite() && *e > 0.0)?;
    let (usual_us, _) = median(baseline.iter().filter_map(|n| n.echo_p50_us).filter(|e| *e > 0.0))?;
    Some(MachineSlowdown((tonight_us / usual_us).max(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quiet nights of the morning above: about 6 % busy, nothing stolen, echo 24–28 µs.
    fn quiet_morning() -> Vec<UsualMachine> {
        [(5.3, 24.0), (5.3, 24.0), (6.0, 25.0), (5.9, 26.0), (5.8, 28.0), (5.5, 26.0), (5.7, 24.0), (6.2, 28.0)]
            .map(|(busy, echo)| UsualMachine { busy_pct: Some(busy), stolen_pct: Some(0.0), echo_p50_us: Some(echo) })
            .to_vec()
    }

    fn tonight(busy_pct: f64, echo_us: f64) -> MachineLoad {
        MachineLoad { busy_pct, stolen_pct: Some(0.0), cores: 2, secs: 30.0, echo_p50_us: Some(echo_us) }
    }

    #[test]
    fn a_night_whose_echo_took_far_longer_was_on_a_slower_machine() {
        // Run #33 of that morning: every endpoint 30-60 % slower, 7.7 % busy, nothing stolen.
        let slower = slower_machine(Some(tonight(7.7, 41.0)), &quiet_morning()).expect("1.6 times the usual");
        assert_eq!((slower.usual_us, slower.nights), (25.5, 8));
        assert!(slower.describe().contains("took 41 µs at the median, against 26 µs on the median of 8"));
    }

    #[test]
    fn the_usual_spread_and_a_hungrier_build_are_not_a_slower_machine() {
        assert_eq!(slower_machine(Some(tonight(6.3, 31.0)), &quiet_morning()), None, "within a quarter of usual");
        assert_eq!(slower_machine(Some(tonight(16.0, 45.0)), &quiet_morning()), None, "its own work grew 10 points");
        assert_eq!(slower_machine(Some(tonight(6.0, 45.0)), &quiet_morning()[..2]), None, "two nights are too few");
        let unmeasured = MachineLoad { echo_p50_us: None, ..tonight(6.0, 45.0) };
        assert_eq!(slower_machine(Some(unmeasured), &quiet_morning()), None);
    }
}
