//! One read through a tape when its scenario is loaded: every line checked (an error names file, line and
//! field), its routes with their shares and distinct ids, how many distinct requests it holds, and a hash of
//! its requests, so a new tape starts a new series.
//!
//! Memory does not grow with the tape: distinct requests and each route's distinct ids are counted by
//! [`DistinctCounter`] (exact while few, a 16 or 4 KiB sketch beyond), and routes are told apart within the
//! caps of [`RouteTally`] (16 query shapes a path, 10,000 routes; a messy log's rest share one entry each);
//! nothing of the requests themselves is kept.

use std::path::Path;

use super::distinct::DistinctCounter;
use super::fnv::Fnv;
use super::format::{TapeError, TapeReader, TapeRequest};
use super::route::Router;
use super::route_tally::{OTHER_QUERIES, RouteTally};

/// What a tape holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Survey {
    /// Requests (lines that are not comments).
    pub requests: u64,
    /// Distinct requests: method, target, headers and body all equal count once (estimated within ~1 %
    /// beyond 4,096).
    pub distinct: u64,
    /// Recorded sessions: runs of consecutive requests with the same `s=` (each request alone when unset).
    pub sessions: u64,
    /// A hash of its requests (comments left out), hex.
    pub digest: String,
    /// Its routes, the most requested first.
    pub routes: Vec<RouteSurvey>,
    /// Per `[[tape.route]]` pattern, in order, the requests it matches (an earlier one may route them): one that
    /// matches none is mistyped.
    pub pattern_hits: Vec<u64>,
}

/// One route of a tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSurvey {
    /// `GET /boards/{id}`.
    pub key: String,
    /// Its requests in the tape.
    pub requests: u64,
    /// Distinct values of its placeholders (distinct objects it touches); 0 for a route without any.
    pub distinct_ids: u64,
}

impl Survey {
    /// The routes whose method and path had more query shapes than one path keeps apart: the key their
    /// further shapes share (`GET /search?(other queries)`).
    pub fn shared_query_routes(&self) -> impl Iterator<Item = &RouteSurvey> {
        self.routes.iter().filter(|r| r.key.ends_with(OTHER_QUERIES))
    }

    /// Requests per recorded session, on average.
    #[must_use]
    pub fn requests_per_session(&self) -> f64 {
        self.requests as f64 / self.sessions.max(1) as f64
    }
}

/// Reads the whole tape at `file`, routing with `router`.
pub fn survey(file: &Path, router: &Router) -> Result<Survey, TapeError> {
    let mut reader = TapeReader::open(file)?;
    let mut requests = 0_u64;
    let mut distinct = DistinctCounter::new(14);
    // Per route: its requests, and the distinct values of its placeholders (a 4 KiB sketch at most).
    let mut tally: RouteTally<(u64, Option<DistinctCounter>)> = RouteTally::default();
    let (mut sessions, mut last_session) = (0, None::<Option<String>>);
    let mut pattern_hits = vec![0; router.pattern_count()];
    while let Some(next) = reader.next_request() {
        let (_, request) = next?;
        requests += 1;
        for index in router.patterns_matching(request.method.as_str(), &request.target) {
            if let Some(hits) = pattern_hits.get_mut(index) {
                *hits += 1;
            }
        }
        distinct.add(request_hash(&request));
        let routed = router.route(request.method.as_str(), &request.target);
        let (_, (count, ids)) = tally.entry(&routed.key);
        *count += 1;
        if !routed.ids.is_empty() {
            let mut hash = Fnv::default();
            for id in &routed.ids {
                hash.add(id.as_bytes()).add(b"/");
            }
            ids.get_or_insert_with(|| DistinctCounter::new(12)).add(hash.value());
        }
        if request.session.is_none() || last_session.as_ref() != Some(&request.session) {
            sessions += 1;
        }
        last_session = Some(request.session);
    }
    let mut routes: Vec<RouteSurvey> = tally
        .into_routes()
        .into_iter()
        .map(|(key, (requests, ids))| RouteSurvey { key, requests, distinct_ids: ids.map_or(0, |i| i.count()) })
        .collect();
    routes.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.key.cmp(&b.key)));
    let digest = format!("{:016x}", reader.digest());
    Ok(Survey { requests, distinct: distinct.count(), sessions, digest, routes, pattern_hits })
}

/// Each route's requests among the tape's requests `from..to` (counted from 0), reading no further: what a run
/// replaying the tape's start sends. Routes are told apart as [`survey`] tells them.
pub fn routes_between(file: &Path, router: &Router, from: u64, to: u64) -> Result<Vec<(String, u64)>, TapeError> {
    let mut reader = TapeReader::open(file)?;
    let mut tally: RouteTally<u64> = RouteTally::default();
    let mut at = 0_u64;
    while at < to
        && let Some(next) = reader.next_request()
    {
        let (_, request) = next?;
        // Routed before the warm-up's end too: a path's first query shapes are the ones the survey kept apart.
        let (_, count) = tally.entry(&router.route(request.method.as_str(), &request.target).key);
        *count += u64::from(at >= from);
        at += 1;
    }
    Ok(tally.into_routes())
}

fn request_hash(request: &TapeRequest) -> u64 {
    let mut hash = Fnv::default();
    hash.add(request.method.as_str().as_bytes()).add(b" ").add(request.target.as_bytes());
    for (name, value) in &request.headers {
        hash.add(b"\n").add(name.as_bytes()).add(b":").add(value.as_bytes());
    }
    if let Some(body) = &request.body {
        hash.add(b"\n\n").add(body.as_bytes());
    }
    hash.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_survey_counts_routes_ids_and_distinct_requests() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.tape");
        let text = "# degrade tape 1\n# a comment\nGET\t/b/1\t200\nGET\t/b/1\t200\nGET\t/b/2\t200\tt=2026-11-30T10:00:00Z\n\
                    POST\t/b\t201\ts=x\tb={}\nGET\t/b/1/c\t200\ts=x\n";
        std::fs::write(&file, text).unwrap();
        let survey = survey(&file, &Router::default()).unwrap();
        assert_eq!((survey.requests, survey.distinct, survey.sessions), (5, 4, 4));
        let routes: Vec<(&str, u64, u64)> =
            survey.routes.iter().map(|r| (r.key.as_str(), r.requests, r.distinct_ids)).collect();
        assert_eq!(routes, [("GET /b/{id}", 3, 2), ("GET /b/{id}/c", 1, 1), ("POST /b", 1, 0)]);
        std::fs::write(&file, text.replace("# a comment\n", "")).unwrap();
        assert_eq!(super::survey(&file, &Router::default()).unwrap().digest, survey.digest, "comments are not content");
        std::fs::write(&file, text.replace("/b/2", "/b/3")).unwrap();
        assert_ne!(super::survey(&file, &Router::default()).unwrap().digest, survey.digest);
        std::fs::write(&file, "GET\t/b/1\t200\nGET\t/b/1\tok\n").unwrap();
        let error = super::survey(&file, &Router::default()).unwrap_err();
        assert_eq!((error.line, error.field), (2, "status"));
    }
}
