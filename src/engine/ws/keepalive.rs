//! Keepalive pings of degrade's own (`[ws] ping_every`): while its session reads an open socket, a ping every
//! `every`, and the round trip to its pong timed on `WS ping`, without coordinated omission: each ping is
//! intended on the socket's schedule, so a server that holds a pong back holds the next ping back too, and the
//! next one's wait shows it. Pings due while the session was busy elsewhere (an HTTP step between WebSocket
//! steps) are not owed: the schedule resumes when reading does. A ping with no pong within the target's
//! `timeout` is a `timeout` error at exactly its timeout. One ping is outstanding at a time, so a socket's
//! keepalive holds 8 bytes of payload and a few instants.

use std::time::{Duration, Instant};

use tokio_tungstenite::tungstenite::Message;

use super::super::recorder::{Recorder, Sample};
use crate::metrics::ErrorClass;
use crate::scenario::ws_plan::WsKeepalive;

/// A socket's keepalive.
pub(super) struct Keepalive {
    every: Duration,
    timeout: Duration,
    endpoint: usize,
    /// When the next ping is intended.
    next: Instant,
    outstanding: Option<Ping>,
    /// Pings sent: the next one's payload.
    sent: u64,
}

/// A ping waiting for its pong.
struct Ping {
    payload: [u8; 8],
    intended: Instant,
    sent: Instant,
}

impl Keepalive {
    /// Pings every `settings.every` from `opened`; a pong may take up to `timeout`.
    pub(super) fn new(settings: WsKeepalive, timeout: Duration, opened: Instant) -> Self {
        let WsKeepalive { every, endpoint } = settings;
        Self { every, timeout, endpoint, next: opened + every, outstanding: None, sent: 0 }
    }

    /// Reading resumes at `now`: a ping overdue while nobody read the socket is intended from now.
    pub(super) fn resume(&mut self, now: Instant) {
        if self.outstanding.is_none() && self.next < now {
            self.next = now;
        }
    }

    /// When the reader must next call [`Self::due`]: the outstanding ping's timeout, else the next ping.
    pub(super) fn wake(&self) -> Instant {
        self.outstanding.as_ref().map_or(self.next, |ping| ping.sent + self.timeout)
    }

    /// At `now`, past [`Self::wake`]: records the outstanding ping as timed out, or returns the ping to send.
    pub(super) fn due(&mut self, now: Instant, recorder: &Recorder, measured: bool) -> Option<Message> {
        if let Some(ping) = &self.outstanding {
            let deadline = ping.sent + self.timeout;
            if now < deadline {
                return None;
            }
            let message = format!("no pong within {}", humantime::format_duration(self.timeout));
            let (intended, sent) = (ping.intended, ping.sent);
            self.outstanding = None;
            self.record(recorder, measured, [intended, sent, deadline], Some((ErrorClass::Timeout, message)));
            return None;
        }
        if now < self.next {
            return None;
        }
        self.sent += 1;
        let payload = self.sent.to_be_bytes();
        self.outstanding = Some(Ping { payload, intended: self.next, sent: now });
        self.next += self.every;
        Some(Message::Ping(payload.to_vec().into()))
    }

    /// A pong arrived at `arrived`: the outstanding ping's round trip, if it answers that one (a late pong of a
    /// ping already timed out, or one the server sent unasked, is not).
    pub(super) fn pong(&mut self, payload: &[u8], arrived: Instant, recorder: &Recorder, measured: bool) {
        if self.outstanding.as_ref().is_some_and(|ping| ping.payload == payload)
            && let Some(ping) = self.outstanding.take()
        {
            self.record(recorder, measured, [ping.intended, ping.sent, arrived], None);
        }
    }

    fn record(&self, recorder: &Recorder, measured: bool, times: [Instant; 3], failure: Option<(ErrorClass, String)>) {
        let [intended, sent, end] = times;
        // Counted in flight for the moment, as every timed sample is.
        recorder.dispatching(self.endpoint, measured);
        let (dispatched, sent) = (Some(sent), Some(sent));
        recorder.record(Sample { endpoint: self.endpoint, intended, dispatched, sent, end, failure, measured });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: Duration = Duration::from_millis(100);

    fn keepalive(opened: Instant) -> Keepalive {
        Keepalive::new(WsKeepalive { every: EVERY, endpoint: 0 }, Duration::from_secs(1), opened)
    }

    fn ms(d: Duration) -> u64 {
        d.as_millis() as u64
    }

    #[test]
    fn a_late_pong_holds_the_next_ping_back_and_both_waits_are_timed_from_the_schedule() {
        let opened = Instant::now();
        let recorder = Recorder::new(opened, vec!["WS ping".to_owned()]);
        let mut k = keepalive(opened);
        assert_eq!(k.wake(), opened + EVERY);
        assert!(k.due(opened + EVERY / 2, &recorder, true).is_none(), "not yet due");
        let first_sent = opened + EVERY;
        let Some(Message::Ping(payload)) = k.due(first_sent, &recorder, true) else { panic!("a ping is due") };
        assert_eq!(payload.as_ref(), 1_u64.to_be_bytes());
        // The server holds the pong 350 ms: the ping due at 200 ms waits, and the reader wakes for the timeout.
        assert_eq!(k.wake(), first_sent + Duration::from_secs(1));
        assert!(k.due(opened + 2 * EVERY, &recorder, true).is_none());
        k.pong(&[9; 8], opened + 3 * EVERY, &recorder, true);
        assert!(k.outstanding.is_some(), "a pong that does not carry the ping's payload answers nothing");
        let first_pong = first_sent + Duration::from_millis(350);
        k.pong(&payload, first_pong, &recorder, true);
        let Some(Message::Ping(second)) = k.due(first_pong, &recorder, true) else { panic!("overdue") };
        k.pong(&second, first_pong + Duration::from_millis(1), &recorder, true);
        let recorded = recorder.finish();
        let ping = &recorded.endpoints[0];
        assert_eq!((ping.requests, ping.error_count()), (2, 0));
        // Intended at 100 and 200 ms: 350 ms and 251 ms, not 1 ms for the second.
        // (The histogram keeps three significant digits: within a millisecond.)
        assert!(ms(Duration::from_micros(ping.response.max())).abs_diff(350) <= 1, "{}", ping.response.max());
        assert!(ms(Duration::from_micros(ping.response.min())).abs_diff(251) <= 1, "{}", ping.response.min());
    }

    #[test]
    fn a_ping_without_a_pong_times_out_at_its_timeout_and_reading_that_resumes_owes_no_missed_ping() {
        let opened = Instant::now();
        let recorder = Recorder::new(opened, vec!["WS ping".to_owned()]);
        let mut k = keepalive(opened);
        let sent = opened + EVERY;
        assert!(k.due(sent, &recorder, true).is_some());
        assert!(k.due(k.wake(), &recorder, true).is_none(), "the timeout sends nothing");
        assert!(k.outstanding.is_none());
        // The session did something else for 5 s: the next ping is intended when reading resumes.
        let back = opened + Duration::from_secs(5);
        k.resume(back);
        assert_eq!(k.wake(), back);
        let recorded = recorder.finish();
        let ping = &recorded.endpoints[0];
        assert_eq!((ping.requests, ping.error_count()), (1, 1));
        assert!(ms(Duration::from_micros(ping.response.max())).abs_diff(1_000) <= 1, "at exactly its timeout");
    }
}
