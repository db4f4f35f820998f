//! Whether tonight's machine was held back by its host: a virtual machine whose hypervisor serves other
//! guests is descheduled now and then, every request in flight waits, and the guest itself stays as quiet as
//! usual. The kernel counts that time as stolen (`LoadSummary::machine_cpu_stolen_pct`).
//!
//! Measured with `bench-verdicts` on a 2-core VM: 0.07–1.2 % of the cores' time stolen on ordinary runs, 2.1–3.2 %
//! on the three runs of a spell that slowed every endpoint's p50 by 20–29 %, with the guest's own work at
//! 9–11 % of its CPU against 7–11 % on other nights.

use super::{MachineLoad, UsualMachine, median};

/// Stolen by the hypervisor: at least this many percentage points of the machine's CPU time more than on
/// the usual night. A hundredth of every core's time is enough to matter: it is not spread evenly, but
/// taken in slices of milliseconds during which every request in flight waits.
const STOLEN_POINTS: f64 = 1.0;
/// ... and at least this many times the usual share of the CPU time the machine asked for (busy, stolen
/// included). A build that burns more CPU asks for more and, from a host as busy as usual, has more stolen
/// in proportion; only a busier host takes a larger share of it.
const STOLEN_FACTOR: f64 = 2.0;
/// ... while the machine's own work (busy minus stolen) is at most this many points above the usual night.
/// A capped or fair-share host (a burstable instance out of credit, a CPU quota on the virtual cores)
/// answers more demand with a larger stolen share, so a build that burns more CPU could look like a busier
/// host; a twentieth of the machine is more than its own work varies from night to night (±2 points on the
/// VM above).
pub(super) const OWN_WORK_POINTS: f64 = 5.0;

/// More of tonight's machine time taken by its host than on the baseline nights.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldBack {
    /// Tonight's stolen share of all cores' time, percent.
    pub tonight_pct: f64,
    /// The baseline nights' median of the same, percent.
    pub usual_pct: f64,
    /// Tonight's stolen share of the time the machine asked for (busy), percent.
    pub tonight_of_busy_pct: f64,
    /// The baseline nights' median of the same, percent.
    pub usual_of_busy_pct: f64,
    /// How many baseline nights had the figures.
    pub nights: usize,
}

impl HeldBack {
    /// One clause for people.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "the machine's host held it back more than on the baseline nights (its hypervisor kept {:.1} % of \
             the CPU time from it during the run, {:.1} % of what it asked for, against {:.1} % and {:.1} % on \
             the median of {} baseline nights)",
            self.tonight_pct, self.tonight_of_busy_pct, self.usual_pct, self.usual_of_busy_pct, self.nights
        )
    }
}

/// The machine's own work (busy minus stolen), tonight and on the usual night, percent of its CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnWork {
    /// Tonight's, percent.
    pub tonight_pct: f64,
    /// The baseline nights' median, percent.
    pub usual_pct: f64,
}

impl OwnWork {
    /// Grown by more than [`OWN_WORK_POINTS`], as a build that burns more CPU beside the generator makes it.
    #[must_use]
    pub fn grew(self) -> bool {
        self.tonight_pct - self.usual_pct > OWN_WORK_POINTS
    }
}

/// Compares tonight's stolen share with the baseline nights'; `None` when the host took no more than
/// usual, when the machine's own work grew too (see [`OWN_WORK_POINTS`]), or when the figures are missing.
#[must_use]
pub fn held_back_by_host(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<HeldBack> {
    host_took_more(tonight, baseline).filter(|(_, own)| !own.grew()).map(|(held, _)| held)
}

/// The host took more of tonight's machine than usual, whatever the machine's own work did: the figures, and
/// that work. `None` when it took no more, or when the figures are missing.
pub(super) fn host_took_more(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<(HeldBack, OwnWork)> {
    let tonight = tonight.filter(|t| t.busy_pct.is_finite() && t.busy_pct > 0.0)?;
    let tonight_pct = tonight.stolen_pct.filter(|s| s.is_finite())?;
    let nights: Vec<(f64, f64)> = baseline
        .iter()
        .filter_map(|n| Some((n.stolen_pct?, n.busy_pct?)))
        .filter(|(stolen, busy)| stolen.is_finite() && busy.is_finite() && *busy > 0.0)
        .collect();
    let (usual_pct, count) = median(nights.iter().map(|(stolen, _)| *stolen))?;
    let (usual_of_busy_pct, _) = median(nights.iter().map(|(stolen, busy)| stolen / busy * 100.0))?;
    let (usual_own_pct, _) = median(nights.iter().map(|(stolen, busy)| busy - stolen))?;
    let tonight_of_busy_pct = tonight_pct / tonight.busy_pct * 100.0;
    let more = tonight_pct - usual_pct >= STOLEN_POINTS && tonight_of_busy_pct >= STOLEN_FACTOR * usual_of_busy_pct;
    let own = OwnWork { tonight_pct: tonight.busy_pct - tonight_pct, usual_pct: usual_own_pct };
    more.then_some((HeldBack { tonight_pct, usual_pct, tonight_of_busy_pct, usual_of_busy_pct, nights: count }, own))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Ordinary nights of a `bench-verdicts` run on a 2-core VM: about 9 % busy (58 with a busy loop),
    /// 0.1–0.4 % stolen.
    pub(in crate::analysis::contention) fn ordinary_vm() -> Vec<UsualMachine> {
        [(9.6, 0.32), (9.2, 0.32), (8.2, 0.13), (8.9, 0.20), (58.2, 0.12), (9.4, 0.34), (9.0, 0.17)]
            .map(|(busy, stolen)| UsualMachine { busy_pct: Some(busy), stolen_pct: Some(stolen), echo_p50_us: None })
            .to_vec()
    }

    pub(in crate::analysis::contention) fn stolen(busy_pct: f64, stolen_pct: f64) -> MachineLoad {
        MachineLoad { busy_pct, stolen_pct: Some(stolen_pct), cores: 2, secs: 30.0, echo_p50_us: None }
    }

    #[test]
    fn a_host_spell_holds_the_machine_back() {
        // Night 16 of that run: every endpoint's p50 +24 %, the guest quiet, 3.2 % of its time stolen.
        let held = held_back_by_host(Some(stolen(14.1, 3.16)), &ordinary_vm()).expect("ten times the usual");
        assert_eq!((held.usual_pct, held.nights), (0.2, 7));
        assert!(
            held.describe().contains(
                "kept 3.2 % of the CPU time from it during the run, 22.4 % of what it asked for, against 0.2 % and \
                 2.2 % on the median of 7 baseline nights"
            ),
            "{}",
            held.describe()
        );
    }

    #[test]
    fn the_usual_theft_is_not_a_busier_host() {
        assert_eq!(held_back_by_host(Some(stolen(9.8, 1.19)), &ordinary_vm()), None, "less than a point more");
        assert_eq!(held_back_by_host(Some(stolen(14.1, 3.16)), &ordinary_vm()[..2]), None, "two nights are too few");
        let unmeasured = MachineLoad { stolen_pct: None, ..stolen(14.1, 0.0) };
        assert_eq!(held_back_by_host(Some(unmeasured), &ordinary_vm()), None, "not measured tonight");
        assert_eq!(held_back_by_host(Some(stolen(14.1, f64::NAN)), &ordinary_vm()), None);
    }

    #[test]
    fn a_hungrier_build_is_not_a_busier_host() {
        // Six times the guest's usual work, from a host as busy as usual: about the usual share stolen.
        assert_eq!(held_back_by_host(Some(stolen(60.0, 1.5)), &ordinary_vm()), None, "the usual share of its asking");
        // Three times the work on a capped host, which answers with a larger share: the guest's own work
        // (27 % against 9) says the demand grew here.
        assert_eq!(held_back_by_host(Some(stolen(30.0, 3.0)), &ordinary_vm()), None, "its own work grew");
    }
}
