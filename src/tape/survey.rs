//! One read through a tape when its scenario is loaded: every line checked (an error names file, line and
//! field), its routes with their shares and distinct ids, how many distinct requests it holds, and a hash of
//! its requests, so a new tape starts a new series.
//!
//! Memory does not grow with the tape: distinct requests and each route's distinct ids are counted by
//! [`DistinctCounter`] (exact while few, a 16 or 4 KiB sketch beyond), and at most [`MAX_SURVEYED_ROUTES`]
//! routes are told apart (a messy log's rest share one entry); nothing of the requests themselves is kept.

use std::collections::HashMap;
use std::path::Path;

use super::distinct::DistinctCounter;
use super::fnv::Fnv;
use super::format::{TapeError, TapeReader, TapeRequest};
use super::route::Router;

/// Routes told apart by a survey; requests of any further route are counted under [`OTHER_ROUTES`].
pub const MAX_SURVEYED_ROUTES: usize = 10_000;

/// The key shared by routes beyond a cap.
pub const OTHER_ROUTES: &str = "(other routes)";

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
    let mut ids: Vec<DistinctCounter> = Vec::new();
    let mut routes: Vec<RouteSurvey> = Vec::new();
    let mut route_index: HashMap<String, u32> = HashMap::new();
    let (mut sessions, mut last_session) = (0, None::<Option<String>>);
    while let Some(next) = reader.next_request() {
        let (_, request) = next?;
        requests += 1;
        distinct.add(request_hash(&request));
        let routed = router.route(request.method.as_str(), &request.target);
        let full = route_index.len() >= MAX_SURVEYED_ROUTES;
        let key = if full && !route_index.contains_key(&routed.key) { OTHER_ROUTES } else { routed.key.as_str() };
        let index = if let Some(&index) = route_index.get(key) {
            index as usize
        } else {
            routes.push(RouteSurvey { key: key.to_owned(), requests: 0, distinct_ids: 0 });
            ids.push(DistinctCounter::new(12));
            route_index.insert(key.to_owned(), (routes.len() - 1) as u32);
            routes.len() - 1
        };
        routes[index].requests += 1;
        if !routed.ids.is_empty() {
            let mut hash = Fnv::default();
            for id in &routed.ids {
                hash.add(id.as_bytes()).add(b"/");
            }
            ids[index].add(hash.value());
        }
        if request.session.is_none() || last_session.as_ref() != Some(&request.session) {
            sessions += 1;
        }
        last_session = Some(request.session);
    }
    for (route, ids) in routes.iter_mut().zip(&ids) {
        route.distinct_ids = ids.count();
    }
    routes.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.key.cmp(&b.key)));
    Ok(Survey { requests, distinct: distinct.count(), sessions, digest: format!("{:016x}", reader.digest()), routes })
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
