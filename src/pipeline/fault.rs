//! Fault injection for degrade's own tests: with `DEGRADE_FAULT=<point>` in its environment, a debug build of
//! degrade kills itself with SIGKILL when it reaches that point of a night (no destructor, no flush, no
//! goodbye to the database: what a power cut or the OOM killer does), so a test can prove the next degrade
//! finishes what this one left (`interrupted`). A release build refuses to start with the variable set
//! ([`refuse_in_release`]): a service's environment must not be able to make it die.

use std::sync::OnceLock;

/// The variable naming the point to die at.
pub const VARIABLE: &str = "DEGRADE_FAULT";

/// The points of a night where a test can kill degrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// A runner's night has its results stored and no verdict yet.
    ResultsStored,
}

impl FaultPoint {
    /// Every point, for the tests that hit each.
    pub const ALL: [Self; 1] = [Self::ResultsStored];

    /// The name `DEGRADE_FAULT` takes.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ResultsStored => "results-stored",
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
            tracing::warn!("{VARIABLE} names no fault point; known: results-stored");
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
