//! Fault injection for degrade's own tests: with `DEGRADE_FAULT=<point>` in its environment, a debug build of
//! degrade kills itself with SIGKILL when it reaches that point of a night (no destructor, no flush, no
//! goodbye to the database: what a power cut or the OOM killer does), so a test can prove the next degrade
//! finishes what this one left (`interrupted`); or loses a committed write's acknowledgement once, so a test
//! can prove the retry writes nothing twice. A release build refuses to start with the variable set
//! ([`refuse_in_release`]): a service's environment must not be able to make it die.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::store::StoreError;

/// The variable naming the point to die at.
pub const VARIABLE: &str = "DEGRADE_FAULT";

/// The points of a night where a test can kill degrade, or lose a database write's acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// A runner's night has its results stored and no verdict yet: killed there.
    ResultsStored,
    /// The run's creation was written, and its acknowledgement lost (once): the pipeline tries again.
    RunCreatedUnacknowledged,
    /// The night's verdict was written, and its acknowledgement lost (once): the runner judges again.
    VerdictUnacknowledged,
    /// A night not to confirm has its verdict stored and no alerts yet: killed there.
    VerdictStored,
    /// A night that could not be done is stored `failed`, and not alerted yet: killed there.
    FailureStored,
}

impl FaultPoint {
    /// Every point, for the tests that hit each.
    pub const ALL: [Self; 5] = [
        Self::ResultsStored,
        Self::RunCreatedUnacknowledged,
        Self::VerdictUnacknowledged,
        Self::VerdictStored,
        Self::FailureStored,
    ];

    /// The name `DEGRADE_FAULT` takes.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ResultsStored => "results-stored",
            Self::RunCreatedUnacknowledged => "run-created-unacknowledged",
            Self::VerdictUnacknowledged => "verdict-unacknowledged",
            Self::VerdictStored => "verdict-stored",
            Self::FailureStored => "failure-stored",
        }
    }
}

/// The point this process is to die at, read once; none in a release build.
fn armed() -> Option<FaultPoint> {
    static ARMED: OnceLock<Option<FaultPoint>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let wanted = std::env::var(VARIABLE).ok()?;
        let point = FaultPoint::ALL.into_iter().find(|p| p.as_str() == wanted);
        if point.is_none() {
            let known: Vec<&str> = FaultPoint::ALL.iter().map(|p| p.as_str()).collect();
            tracing::warn!("{VARIABLE} names no fault point; known: {}", known.join(", "));
        }
        point.filter(|_| cfg!(debug_assertions))
    })
}

/// Kills this process on the spot when `DEGRADE_FAULT` names `point` (debug builds only).
pub fn reached(point: FaultPoint) {
    if armed() == Some(point) {
        tracing::warn!(point = point.as_str(), "{VARIABLE}: killing this degrade here, as a test asked");
        // SIGKILL to ourselves cannot fail for want of permission; if it somehow did, abort is the next best.
        #[cfg(target_os = "linux")]
        let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

/// Fails once, as a database connection that dropped before its answer, when `DEGRADE_FAULT` names `point`
/// (debug builds only): the write before it was committed, and the caller, seeing a database it could not
/// reach, tries again. What it writes must then be written once.
///
/// # Errors
/// The first time `point` is reached with the variable naming it.
pub fn lost_acknowledgement(point: FaultPoint) -> Result<(), StoreError> {
    static FIRED: AtomicBool = AtomicBool::new(false);
    if armed() != Some(point) || FIRED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    tracing::warn!(point = point.as_str(), "{VARIABLE}: losing this write's acknowledgement, as a test asked");
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
