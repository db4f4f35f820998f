//! Fan-out latency: how long until the *other* users see a change. A send with `fanout` notes its message's
//! correlation id with its intended start; when another session receives a push of a class with `fanout`
//! carrying that id, the delay from the send's intended start to the push's arrival is recorded on the send's
//! `WS fanout: <step>` endpoint, once per receiving session.
//!
//! Memory is bounded: an id is kept for the target's `timeout` (a later push is only counted in its class) and
//! at most [`MAX_KEPT`] ids are kept, the oldest let go first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Correlation ids kept at most: at 1 KiB a message and 10,000 sends a second for the default 10 s timeout,
/// the newest 6.5 s; a few MB.
const MAX_KEPT: usize = 65_536;

/// Where and when a correlated send went out.
#[derive(Debug, Clone, Copy)]
pub(super) struct Origin {
    /// Its fan-out endpoint.
    pub endpoint: usize,
    /// When the send was intended: fan-out is timed from here, like an await.
    pub intended: Instant,
    /// When it went out.
    pub sent: Instant,
    /// The sending session, whose own copies are not fan-out.
    pub session: u64,
    /// Whether the sending session counts in the results.
    pub measured: bool,
}

/// The correlation ids of recent sends, run-wide.
#[derive(Default)]
pub(in crate::engine) struct Fanouts {
    inner: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_id: HashMap<String, Origin>,
    /// Ids in the order they were sent, for letting the oldest go.
    order: VecDeque<(Instant, String)>,
}

impl Fanouts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a send carrying `id`, kept for `keep`; a later send with the same id replaces it.
    pub(super) fn sent(&self, id: String, origin: Origin, keep: Duration) {
        let mut kept = self.lock();
        let Kept { by_id, order } = &mut *kept;
        while let Some((at, _)) = order.front() {
            if order.len() < MAX_KEPT && origin.sent.saturating_duration_since(*at) <= keep {
                break;
            }
            let (at, old) = order.pop_front().expect("checked above");
            // Only if it was not sent again since.
            if by_id.get(&old).is_some_and(|o| o.sent == at) {
                by_id.remove(&old);
            }
        }
        order.push_back((origin.sent, id.clone()));
        by_id.insert(id, origin);
    }

    /// The send `id` came from, if another session than `session` sent it recently enough.
    pub(super) fn seen(&self, id: &str, session: u64) -> Option<Origin> {
        self.lock().by_id.get(id).copied().filter(|o| o.session != session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(session: u64, sent: Instant) -> Origin {
        Origin { endpoint: 0, intended: sent, sent, session, measured: true }
    }

    #[test]
    fn another_sessions_id_is_found_its_own_is_not_and_old_ones_are_let_go() {
        let fanouts = Fanouts::default();
        let start = Instant::now();
        fanouts.sent("a".into(), origin(1, start), Duration::from_secs(1));
        assert!(fanouts.seen("a", 2).is_some());
        assert!(fanouts.seen("a", 1).is_none(), "a session's own copy is not fan-out");
        fanouts.sent("b".into(), origin(1, start + Duration::from_secs(2)), Duration::from_secs(1));
        assert!(fanouts.seen("a", 2).is_none(), "kept no longer than the timeout");
        for n in 0..MAX_KEPT + 10 {
            fanouts.sent(n.to_string(), origin(1, start + Duration::from_secs(2)), Duration::from_mins(1));
        }
        assert_eq!(fanouts.lock().by_id.len(), MAX_KEPT);
        assert!(fanouts.seen("0", 2).is_none() && fanouts.seen(&(MAX_KEPT + 9).to_string(), 2).is_some());
    }
}
