//! Whether tonight's machine was held back, against the baseline nights: busier with other work (the share
//! of all its cores' time that was busy, `LoadSummary::machine_cpu_busy_pct`), kept waiting by its host
//! (the share its hypervisor stole, `LoadSummary::machine_cpu_stolen_pct`; the rule is in `host`), or slower
//! in itself (the generator's loopback echo, `LoadSummary::machine_echo_p50_us`; the rule is in `echo`).
//!
//! A noisy neighbour that lasts (another job, a busy loop on one core, another guest on the same host) slows
//! every endpoint in a run and in its confirmation rerun alike, so the rerun cannot tell it from a
//! regression; this can. It never hides a slowdown on a machine as quiet as usual, nor one whose own CPU could
//! have made the machine busier, nor one of a route far beyond what every other route went through
//! (`standout`), and it only ever turns a latency regression into "cannot tell": error rates and absolute
//! gates are not excused.
//!
//! Tonight is compared with the same machine's usual night (the baseline nights' median), since what else
//! runs there is the machine's own business. Measured on a 2-core VM running the demo: 6 % busy on quiet
//! nights, 55 % with a busy loop on one core; 0.1–0.5 % of the cores' time stolen on ordinary nights, 2–3 %
//! in a spell that slowed every endpoint's p50 by 20–29 %.

mod echo;
mod host;
mod standout;

use std::collections::BTreeSet;

pub use echo::{SlowerMachine, machine_slowdown, slower_machine};
pub use host::{HeldBack, OwnWork, held_back_by_host};
pub use standout::MachineSlowdown;

use super::judge::{Judgement, counted_findings};
use crate::model::{Finding, FindingOutcome, Metric, OVERALL_ENDPOINT, VerdictOutcome};

/// Busier by at least this many percentage points of the machine's CPU than the usual night: a quarter of
/// the machine taken by work that was not there (one core of four; half a core of two). Less than that
/// leaves a small machine spare time and is lost in a big one's.
const BUSIER_POINTS: f64 = 25.0;
/// The usual figure needs a few nights behind it, like any baseline (a median of one or two is a guess).
const MIN_NIGHTS: usize = 3;
/// Tonight's machine, as the run stored it.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineLoad {
    /// The busy share of all cores' time during the run, percent.
    pub busy_pct: f64,
    /// The share of all cores' time the hypervisor stole (inside `busy_pct`), percent; `None` for runs
    /// stored before it was measured.
    pub stolen_pct: Option<f64>,
    pub cores: u32,
    /// How long the run measured, seconds.
    pub secs: f64,
    /// The median loopback echo round trip between two generator threads, µs; `None` for runs stored
    /// before it was measured.
    pub echo_p50_us: Option<f64>,
}

/// A busier machine tonight than on the baseline nights.
#[derive(Debug, Clone, PartialEq)]
pub struct BusierMachine {
    /// Tonight's busy share of the machine's CPU, percent.
    pub tonight_pct: f64,
    /// The baseline nights' median of the same, percent.
    pub usual_pct: f64,
    /// How many baseline nights had the figure.
    pub nights: usize,
    /// CPU time, in core-seconds, the machine spent tonight beyond the usual night's share.
    pub extra_core_secs: f64,
}

impl BusierMachine {
    /// One clause for people.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "the machine was busier than on the baseline nights (its CPU was {:.0} % busy during the run, against \
             {:.0} % on the median of {} baseline nights: {:.1} CPU-seconds more",
            self.tonight_pct, self.usual_pct, self.nights, self.extra_core_secs
        )
    }
}

/// What held tonight's machine back.
#[derive(Debug, Clone, PartialEq)]
pub enum Contention {
    /// Other work on the machine itself.
    Busier(BusierMachine),
    /// Its host, taking CPU time for other guests.
    HeldBack(HeldBack),
    /// The machine slower in itself, by its loopback echo.
    Slower(SlowerMachine),
}

/// One baseline night's machine figures, as stored (`None` where not measured).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsualMachine {
    /// Busy share of all cores' time, percent.
    pub busy_pct: Option<f64>,
    /// Stolen share of all cores' time, percent.
    pub stolen_pct: Option<f64>,
    /// The median loopback echo round trip, µs.
    pub echo_p50_us: Option<f64>,
}

/// What held tonight's machine back, if anything did: other work first (its excuse is the stricter one,
/// weighed against the slowdown's own CPU), then the host.
#[must_use]
pub fn contention(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<Contention> {
    let busy: Vec<Option<f64>> = baseline.iter().map(|n| n.busy_pct).collect();
    if let Some(busier) = busier_machine(tonight, &busy) {
        return Some(Contention::Busier(busier));
    }
    if let Some(held) = held_back_by_host(tonight, baseline) {
        return Some(Contention::HeldBack(held));
    }
    slower_machine(tonight, baseline).map(Contention::Slower)
}

/// The median of the finite figures, and how many there were: at least `MIN_NIGHTS`.
fn median(values: impl Iterator<Item = f64>) -> Option<(f64, usize)> {
    let mut values: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    if values.len() < MIN_NIGHTS {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    let value = if values.len() % 2 == 1 { values[middle] } else { f64::midpoint(values[middle - 1], values[middle]) };
    Some((value, values.len()))
}

/// Compares tonight's busy share with the baseline nights'; `None` when the machine was as quiet as usual, or
/// when the figures are missing (not Linux, runs stored before they were measured).
#[must_use]
pub fn busier_machine(tonight: Option<MachineLoad>, baseline: &[Option<f64>]) -> Option<BusierMachine> {
    let tonight = tonight.filter(|t| t.busy_pct.is_finite() && t.secs.is_finite())?;
    let (usual_pct, nights) = median(baseline.iter().flatten().copied())?;
    let extra_pct = tonight.busy_pct - usual_pct;
    (extra_pct >= BUSIER_POINTS).then(|| BusierMachine {
        tonight_pct: tonight.busy_pct,
        usual_pct,
        nights,
        extra_core_secs: extra_pct / 100.0 * f64::from(tonight.cores) * tonight.secs.max(0.0),
    })
}

/// A regressed judgement on a held-back machine, when every regression is a latency percentile (and, on a
/// busier machine, the slower requests cannot have made it that busy themselves): inconclusive, with the
/// findings kept, marked excused, so people see what moved; but the regressions that stand out from what
/// every other endpoint went through tonight (`standout`) stay the build's, and only the rest are excused.
/// Anything else (an error rate, a throughput, a breached gate) stands as judged.
///
/// Why the CPU budget: a build that burns more CPU on a target sharing the generator's machine also makes
/// the machine busier. Its slower requests took, together, `added_secs` longer than on the usual night
/// (requests × the rise of their mean), and cannot have burnt more CPU than that on every core at once;
/// when the machine's extra CPU time is beyond even that, it came from somewhere else. `added_secs` gives
/// that figure for an endpoint. Time stolen by the host was burnt by no process of the machine, so it has
/// no such budget (`held_back_by_host` rules out a hungrier build by its own work and by the stolen share of
/// what it asked for).
#[must_use]
pub fn not_blamed_on_the_build(
    judgement: Judgement,
    contention: &Contention,
    machine: Option<MachineSlowdown>,
    cores: u32,
    added_secs: impl Fn(&str) -> f64,
) -> Judgement {
    let failing: Vec<&Finding> = judgement.findings.iter().filter(|f| f.outcome.is_failure()).collect();
    let only_latency = failing.iter().all(|f| f.outcome == FindingOutcome::Regression && is_latency(f));
    if judgement.outcome != VerdictOutcome::Regressed || !only_latency {
        return judgement;
    }
    let (why, on, quieter) = match contention {
        Contention::Busier(busier) => {
            let budget = most_cpu_the_slowdown_could_burn(&failing, cores, added_secs);
            if busier.extra_core_secs <= budget {
                let why = format!(
                    "{}), no more than the slower requests could have burnt themselves (at most {budget:.1} CPU-seconds), as a build \
                     that burns more CPU beside the generator would",
                    busier.describe()
                );
                return counted_although(judgement, &why);
            }
            let why =
                format!("{}, while the slower requests could account for at most {budget:.1})", busier.describe());
            (why, "on a busier machine", "the machine")
        }
        Contention::HeldBack(held) => (held.describe(), "while the host held the machine back", "its host"),
        Contention::Slower(slower) => (slower.describe(), "on a slower machine", "the machine"),
    };
    let blamed = standout::standing_out(&judgement.findings, machine);
    let (findings, excused) = standout::excuse_the_rest(judgement.findings, &blamed, on, machine);
    if blamed.is_empty() {
        let summary = format!(
            "inconclusive: {why}; a slowdown measured {on} is not blamed on the build, so the {excused} latency \
             regression{} listed {} not counted; run it again when {quieter} is quieter",
            if excused == 1 { "" } else { "s" },
            if excused == 1 { "is" } else { "are" }
        );
        return Judgement { outcome: VerdictOutcome::Inconclusive, findings, summary };
    }
    if excused == 0 {
        // Every regression stands out: the night is judged as measured.
        return Judgement { findings, ..judgement };
    }
    let summary = format!(
        "{}; the excused latency regression{} measured {on}, not beyond what the rest of the run went through, \
         and {why}",
        counted_findings(VerdictOutcome::Regressed, &findings),
        if excused == 1 { " was" } else { "s were" }
    );
    Judgement { outcome: VerdictOutcome::Regressed, findings, summary }
}

/// What was not as usual about tonight's machine where the rules above lay no slowdown on it because the build
/// could have made it so: its host took more, or its loopback echo was slower, while its own work grew as a
/// build that burns more CPU beside the generator makes it grow. `None` when the machine was as usual, or
/// when a rule holds (`contention`).
#[must_use]
pub fn unusual_but_maybe_the_build(tonight: Option<MachineLoad>, baseline: &[UsualMachine]) -> Option<String> {
    let host = host::host_took_more(tonight, baseline);
    let echo = echo::echo_slower(tonight, baseline);
    let own = host.as_ref().map(|(_, own)| *own).or(echo.as_ref().map(|(_, own)| *own))?;
    if !own.grew() {
        return None;
    }
    let mut signs = Vec::new();
    if let Some((held, _)) = host {
        signs.push(format!(
            "its host kept {:.1} % of the CPU time from it (against {:.1} % on the median of {} baseline nights)",
            held.tonight_pct, held.usual_pct, held.nights
        ));
    }
    if let Some((slower, _)) = echo {
        signs.push(format!(
            "its loopback echo took {:.0} µs at the median (against {:.0} µs)",
            slower.tonight_us, slower.usual_us
        ));
    }
    Some(format!(
        "the machine was not as usual: {}; but its own work grew too ({:.0} % of its CPU against {:.0} %), as a \
         build that burns more CPU beside the generator makes it grow, so the slowdown is not laid on the machine; \
         a rerun on a quieter machine tells the two apart",
        signs.join(" and "),
        own.tonight_pct,
        own.usual_pct
    ))
}

/// A regressed judgement whose latency regressions are counted although the machine was not as usual says so
/// after its summary, so that whoever reads the verdict sees the machine beside it; any other judgement is
/// returned as it is.
#[must_use]
pub fn counted_although(judgement: Judgement, why: &str) -> Judgement {
    let latency_counted = judgement.findings.iter().any(|f| f.outcome == FindingOutcome::Regression && is_latency(f));
    if judgement.outcome != VerdictOutcome::Regressed || !latency_counted {
        return judgement;
    }
    let summary = format!("{}; counted although {why}", judgement.summary);
    Judgement { summary, ..judgement }
}

fn is_latency(f: &Finding) -> bool {
    matches!(f.metric.parse(), Ok(Metric::P50 | Metric::P95 | Metric::P99))
}

/// Core-seconds: the added time of every regressed endpoint (the `(all)` row aside, it sums the others), on
/// every core at once.
fn most_cpu_the_slowdown_could_burn(failing: &[&Finding], cores: u32, added_secs: impl Fn(&str) -> f64) -> f64 {
    let endpoints: BTreeSet<&str> =
        failing.iter().map(|f| f.endpoint.as_str()).filter(|e| *e != OVERALL_ENDPOINT).collect();
    let added: f64 = endpoints.into_iter().map(|e| added_secs(e).max(0.0)).sum();
    added * f64::from(cores.max(1))
}

#[cfg(test)]
#[path = "contention_tests.rs"]
mod tests;
