//! Fault injection for degrade's own tests: with `DEGRADE_FAULT=<point>` in its environment, a debug build of
//! degrade kills itself with SIGKILL just before or just after a durable step of a night (no destructor, no
//! flush, no goodbye to the database: what a power cut or the OOM killer does), so a test can prove the next
//! degrade finishes what this one left (`pipeline::interrupted`); or loses a committed write's
//! acknowledgement once (a connection that dropped before the answer), so a test can prove the retry writes
//! nothing twice and that what is not retried is found again. A release build refuses to start with the
//! variable set ([`refuse_in_release`]): a service's environment must not be able to make it die.
//!
//! It lives in `store`, the lowest layer whose steps are durable, so the pipeline (a night's steps) and the
//! courier in `notify` (an alert's claim, post and record) name their points from one list, [`Step`].

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::StoreError;

/// The variable naming the point to die at.
pub const VARIABLE: &str = "DEGRADE_FAULT";

/// The durable steps of a night and of an alert's delivery, in the order a night takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// The night's run row is written `running` (`Store::create_run`).
    RunCreated,
    /// Its measured results, in one transaction (`Store::finish_run`).
    ResultsStored,
    /// Its telemetry, in a transaction of its own (`Store::save_telemetry`).
    TelemetryStored,
    /// Its capacity search (`Store::save_capacity`).
    CapacityStored,
    /// Its verdict, with the run's status (`confirming` for a regression to confirm).
    VerdictStored,
    /// A confirmation rerun's run row, linked to the first run.
    RerunCreated,
    /// The rerun's measured results.
    RerunStored,
    /// The rerun's verdict.
    RerunJudged,
    /// The pair's statuses, in one transaction conditional on `confirming` (`Store::end_confirmation`).
    PairDecided,
    /// The night's episodes and their outbox messages, in one transaction (`pipeline::alerting`).
    AlertsWritten,
    /// The run stamped alerted (`Store::mark_alerted`).
    AlertedStamped,
    /// An outbox message claimed for one attempt (`Store::claim_message`).
    MessageClaimed,
    /// The webhook post itself (not a database write: only a kill before or after it).
    MessagePosted,
    /// The attempt recorded, the message marked sent (`Store::record_attempt`).
    MessageMarkedSent,
}

/// What happens at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum When {
    /// SIGKILL just before the step's write.
    Before,
    /// SIGKILL just after it committed.
    After,
    /// The write committed and its acknowledgement lost, once: the caller sees a dropped connection.
    Unacknowledged,
}

/// One place a test can make degrade fail: a step and what happens there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FaultPoint {
    /// The durable step.
    pub step: Step,
    /// Killed before it, after it, or its acknowledgement lost.
    pub when: When,
}

impl Step {
    /// Every step, in a night's order.
    pub const ALL: [Self; 14] = [
        Self::RunCreated,
        Self::ResultsStored,
        Self::TelemetryStored,
        Self::CapacityStored,
        Self::VerdictStored,
        Self::RerunCreated,
        Self::RerunStored,
        Self::RerunJudged,
        Self::PairDecided,
        Self::AlertsWritten,
        Self::AlertedStamped,
        Self::MessageClaimed,
        Self::MessagePosted,
        Self::MessageMarkedSent,
    ];

    /// The step's name in `DEGRADE_FAULT`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RunCreated => "run-created",
            Self::ResultsStored => "results-stored",
            Self::TelemetryStored => "telemetry-stored",
            Self::CapacityStored => "capacity-stored",
            Self::VerdictStored => "verdict-stored",
            Self::RerunCreated => "rerun-created",
            Self::RerunStored => "rerun-stored",
            Self::RerunJudged => "rerun-judged",
            Self::PairDecided => "pair-decided",
            Self::AlertsWritten => "alerts-written",
            Self::AlertedStamped => "alerted-stamped",
            Self::MessageClaimed => "message-claimed",
            Self::MessagePosted => "message-posted",
            Self::MessageMarkedSent => "message-marked-sent",
        }
    }

    /// Whether the step is a database write (every step but the post), so its acknowledgement can be lost.
    #[must_use]
    pub const fn writes(self) -> bool {
        !matches!(self, Self::MessagePosted)
    }

    /// Killed just before this step.
    #[must_use]
    pub const fn before(self) -> FaultPoint {
        FaultPoint { step: self, when: When::Before }
    }

    /// Killed just after this step.
    #[must_use]
    pub const fn after(self) -> FaultPoint {
        FaultPoint { step: self, when: When::After }
    }

    /// This step's acknowledgement lost once.
    #[must_use]
    pub const fn unacknowledged(self) -> FaultPoint {
        FaultPoint { step: self, when: When::Unacknowledged }
    }
}

impl FaultPoint {
    /// Every point, for the tests that hit each: before and after every step, and every write unacknowledged.
    #[must_use]
    pub fn all() -> Vec<Self> {
        Step::ALL
            .into_iter()
            .flat_map(|step| {
                let lost = step.writes().then(|| step.unacknowledged());
                [Some(step.before()), Some(step.after()), lost].into_iter().flatten()
            })
            .collect()
    }

    /// The name `DEGRADE_FAULT` takes: `before-results-stored`, `after-results-stored`,
    /// `unacknowledged-results-stored`.
    #[must_use]
    pub fn name(self) -> String {
        let when = match self.when {
            When::Before => "before",
            When::After => "after",
            When::Unacknowledged => "unacknowledged",
        };
        format!("{when}-{}", self.step.as_str())
    }

    /// The point `name` names, if any.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::all().into_iter().find(|p| p.name() == name)
    }
}

/// The point this process is to fail at, read once; none in a release build.
fn armed() -> Option<FaultPoint> {
    static ARMED: OnceLock<Option<FaultPoint>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let wanted = std::env::var(VARIABLE).ok()?;
        let point = FaultPoint::parse(&wanted);
        if point.is_none() {
            tracing::warn!("{VARIABLE} names no fault point; they are before-, after- or unacknowledged- and a step");
        }
        point.filter(|_| cfg!(debug_assertions))
    })
}

/// Kills this process on the spot when `DEGRADE_FAULT` names `point` (debug builds only).
pub fn reached(point: FaultPoint) {
    if armed() == Some(point) {
        tracing::warn!(point = point.name(), "{VARIABLE}: killing this degrade here, as a test asked");
        // SIGKILL to ourselves cannot fail for want of permission; if it somehow did, abort is the next best.
        #[cfg(target_os = "linux")]
        let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

/// Kills this process before `step` when `DEGRADE_FAULT` names that point.
pub fn before(step: Step) {
    reached(step.before());
}

/// Kills this process after `step` when `DEGRADE_FAULT` names that point, or fails once, as a database
/// connection that dropped before its answer, when it names `unacknowledged-` and `step` (debug builds
/// only): the write before it was committed, and the caller, seeing a database it could not reach, tries
/// again or leaves it to the next degrade. What it writes must then be written once.
///
/// # Errors
/// The first time `step` is reached with the variable naming it unacknowledged.
pub fn after(step: Step) -> Result<(), StoreError> {
    static FIRED: AtomicBool = AtomicBool::new(false);
    reached(step.after());
    if armed() != Some(step.unacknowledged()) || FIRED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    tracing::warn!(
        point = step.unacknowledged().name(),
        "{VARIABLE}: losing this write's acknowledgement, as a test asked"
    );
    let dropped = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the connection dropped (DEGRADE_FAULT)");
    Err(StoreError::Database(sqlx::Error::Io(dropped)))
}

/// A release build refuses to run with `DEGRADE_FAULT` set: it is for degrade's own tests.
///
/// # Errors
/// When the variable is set in a release build.
pub fn refuse_in_release() -> anyhow::Result<()> {
    if !cfg!(debug_assertions) && std::env::var_os(VARIABLE).is_some() {
        anyhow::bail!(
            "{VARIABLE} is set: it makes degrade kill itself for its own tests, and a release build refuses it"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_has_a_name_of_its_own_that_reads_back() {
        let all = FaultPoint::all();
        assert_eq!(all.len(), 3 * Step::ALL.len() - 1, "the post has no acknowledgement to lose");
        let names: std::collections::BTreeSet<String> = all.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), all.len());
        for point in all {
            assert_eq!(FaultPoint::parse(&point.name()), Some(point));
        }
        assert_eq!(FaultPoint::parse("results-stored"), None);
    }
}
