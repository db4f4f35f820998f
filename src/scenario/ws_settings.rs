//! The `[ws]` table, its `[[ws.push]]` classes (each its own counted endpoint), its keepalive pings (timed on
//! `WS ping`), and the order of a flow's socket steps: a send before any connect is found by `validate`, not by
//! the first session.

use super::raw_scenario::{RawStep, RawWs};
use super::scope::Scope;
use super::step_values::{duration, json_path};
use super::ws_plan::{DEFAULT_MAX_MESSAGE, Fanout, WsKeepalive, WsPush, WsSettings};
use super::ws_steps::{Kind, resolve_match};
use crate::config::{Checker, plain_name};

/// The shortest `[ws] ping_every`: more often, the pings would be most of a socket's traffic.
const MIN_PING_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// Whether a flow's socket is open at each step, so a send before any connect is found by `validate`.
#[derive(Debug, Default)]
pub(super) struct SocketOrder {
    open: bool,
}

impl SocketOrder {
    /// Checks that `raw` (at `field`) finds the socket as it needs it, and notes what it does to it.
    pub(super) fn check(&mut self, checker: &mut Checker<'_>, raw: &RawStep, field: &str) {
        let Some(ws) = &raw.ws else { return };
        let Ok(kind) = Kind::parse(ws.get_ref()) else { return };
        let message = match (kind, self.open) {
            (Kind::Connect, true) => {
                Some("the flow's socket is already open: a session holds one (add `ws = \"close\"` first)")
            }
            (Kind::Send | Kind::Await | Kind::Close, false) => {
                Some("no socket is open here: add a `ws = \"connect\"` step before it")
            }
            _ => None,
        };
        if let Some(message) = message {
            checker.error(ws, field, message);
        }
        self.open = match kind {
            Kind::Connect => true,
            Kind::Close => false,
            Kind::Send | Kind::Await => self.open,
        };
    }
}

/// `[ws]`: the message cap and the push classes, each its own endpoint (`WS push: cursor`), then the endpoint of
/// messages no class matches (`WS push: (other)`).
pub(super) fn resolve_ws(checker: &mut Checker<'_>, scope: &mut Scope<'_>, raw: &RawWs) -> Option<WsSettings> {
    let max_message = match &raw.max_message {
        Some(m) => checker.check(m, "ws.max_message", |m| {
            let bytes = super::step_values::body_size(m)?;
            usize::try_from(bytes)
                .ok()
                .filter(|b| (16..=64 << 20).contains(b))
                .ok_or_else(|| format!("`{m}` is out of range: from 16 bytes to 64MiB"))
        })?,
        None => DEFAULT_MAX_MESSAGE,
    };
    let mut pushes = Vec::new();
    for (i, push) in raw.pushes.iter().enumerate() {
        let field = format!("ws.push[{i}]");
        checker.check(&push.name, &format!("{field}.name"), |n| plain_name(n));
        let matcher =
            resolve_match(checker, &push.name, &field, &push.json, push.prefix_hex.as_ref(), push.offset.as_ref());
        let fanout = match &push.fanout {
            Some(path) => {
                let Some(compiled) = checker.check(path, &format!("{field}.fanout"), |p| json_path(p)) else {
                    continue;
                };
                Some(Fanout { path: compiled, path_text: path.get_ref().clone(), endpoint: 0 })
            }
            None => None,
        };
        if let Some(matcher) = matcher {
            let endpoint = scope.endpoint(&format!("WS push: {}", push.name.get_ref()));
            pushes.push(WsPush { endpoint, matcher, fanout });
        }
    }
    let other_pushes = scope.endpoint("WS push: (other)");
    let keepalive = match &raw.ping_every {
        Some(every) => {
            let every = checker.check(every, "ws.ping_every", |t| {
                let d = duration(t)?;
                if d >= MIN_PING_EVERY {
                    Ok(d)
                } else {
                    Err(format!("`{t}` is too often: at least 10ms between a socket's pings"))
                }
            })?;
            Some(WsKeepalive { every, endpoint: scope.endpoint("WS ping") })
        }
        None => None,
    };
    Some(WsSettings { max_message, pushes, other_pushes, keepalive })
}
