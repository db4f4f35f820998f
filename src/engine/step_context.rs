//! What a step's templates and extractions read and write: the session's rows, variables and generator, shared by
//! HTTP and WebSocket steps.

use serde_json::Value;

use crate::scenario::template::RenderContext;

/// What a step's templates and extractions read and write.
pub(super) struct StepContext<'a, 'r> {
    pub rows: &'a [Option<&'r [Value]>],
    pub variables: &'a mut [Option<Value>],
    pub rng: &'a mut rand::rngs::SmallRng,
    pub seq: &'a std::sync::atomic::AtomicU64,
    pub tallies: &'a crate::scenario::template::DrawTallies,
    pub measured: bool,
}

impl StepContext<'_, '_> {
    pub(super) fn render(&mut self) -> RenderContext<'_> {
        RenderContext {
            rows: self.rows,
            variables: self.variables,
            rng: self.rng,
            seq: self.seq,
            tallies: self.tallies,
        }
    }
}
