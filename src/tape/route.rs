//! Routes, not URLs: the metric key of a recorded request is its method, its path with the parts that vary
//! per object replaced by placeholders, and the names of its query parameters (`GET /boards/{id}/cards?page=`),
//! so a night's figures are kept per endpoint of the service, not per URL, and two kinds of request to one path
//! (`/posts?userId=3`, `/posts?q=rust`) are two endpoints.
//!
//! A path segment becomes `{id}` or `{date}` when it names one object or day ([`super::id_segments`]). The
//! query's names are read by [`super::query_shape`]. User patterns
//! ([`super::route_pattern`]: `/users/{name}`, `/posts?q={q}`) are tried first, in order: a pattern matches a
//! path with as many segments whose literal segments are equal, and a query as its query part says.

use super::id_segments::placeholder;
use super::query_shape::QueryShape;
use super::route_pattern::Pattern;

/// Turns request targets into route keys.
#[derive(Debug, Clone, Default)]
pub struct Router {
    patterns: Vec<Pattern>,
}

/// What a route key was made from: the key and the values that were replaced by placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed<'a> {
    /// `METHOD /path/{id}?name=`.
    pub key: String,
    /// The values of its placeholders, in order (the object a request touched).
    pub ids: Vec<&'a str>,
}

impl Router {
    /// A router trying `patterns` (e.g. `/users/{name}`, `/posts?q={q}`) before the built-in rules.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let patterns = patterns.iter().map(|p| Pattern::parse(p)).collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// The route of a request: `method`, the path of `target` and the names of its query parameters.
    #[must_use]
    pub fn route<'a>(&self, method: &str, target: &'a str) -> Routed<'a> {
        // Read once per request of a tape when its scenario loads, and by the replay: few allocations.
        let end = target.bytes().position(|b| b == b'?' || b == b'#').unwrap_or(target.len());
        let path = &target[..end];
        // A fragment never reaches the server.
        let query = target[end..].strip_prefix('?').map_or("", |q| q.split('#').next().unwrap_or_default());
        // Path parameters (`;jsessionid=…`) are not part of the route.
        let segments = path.split('/').skip(1).map(|s| s.find(';').map_or(s, |at| &s[..at]));
        let mut ids = Vec::new();
        if !self.patterns.is_empty() {
            let list: Vec<&str> = segments.clone().collect();
            if let Some((_, key)) = self.matched(method, &list, query, &mut ids) {
                return Routed { key, ids };
            }
        }
        let mut key = String::with_capacity(method.len() + target.len() + 8);
        key.push_str(method);
        key.push(' ');
        for segment in segments {
            key.push('/');
            match placeholder(segment) {
                Some(name) => {
                    key.push_str(name);
                    ids.push(segment);
                }
                None => key.push_str(segment),
            }
        }
        if key.len() == method.len() + 1 {
            key.push('/');
        }
        QueryShape::of_query(query).push_to(&mut key);
        Routed { key, ids }
    }

    /// How many `[[tape.route]]` patterns it has.
    #[must_use]
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// Every `[[tape.route]]` pattern a request matches, by index, whether or not an earlier one routes it: a
    /// pattern no request of a tape matches is worth a warning (one an earlier pattern shadows is not mistyped).
    #[must_use]
    pub fn patterns_matching(&self, method: &str, target: &str) -> Vec<usize> {
        if self.patterns.is_empty() {
            return Vec::new();
        }
        let end = target.bytes().position(|b| b == b'?' || b == b'#').unwrap_or(target.len());
        let query = target[end..].strip_prefix('?').map_or("", |q| q.split('#').next().unwrap_or_default());
        let list: Vec<&str> = target[..end].split('/').skip(1).map(|s| s.find(';').map_or(s, |at| &s[..at])).collect();
        let matches = |pattern: &Pattern| pattern.key(method, &list, query, &mut Vec::new()).is_some();
        self.patterns.iter().enumerate().filter(|(_, p)| matches(p)).map(|(i, _)| i).collect()
    }

    /// The first pattern matching a request's path `segments` and `query`: its index and the key it makes.
    fn matched<'a>(
        &self,
        method: &str,
        segments: &[&'a str],
        query: &'a str,
        ids: &mut Vec<&'a str>,
    ) -> Option<(usize, String)> {
        self.patterns
            .iter()
            .enumerate()
            .find_map(|(index, pattern)| pattern.key(method, segments, query, ids).map(|key| (index, key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(target: &str) -> String {
        Router::default().route("GET", target).key
    }

    #[test]
    fn ids_hashes_and_dates_become_placeholders() {
        assert_eq!(key("/boards/17/cards"), "GET /boards/{id}/cards");
        assert_eq!(key("/users/3f2b8c1e-9a4d-4e2b-8f6a-0c1d2e3f4a5b"), "GET /users/{id}");
        assert_eq!(key("/blobs/9f86d081884c7d65"), "GET /blobs/{id}");
        assert_eq!(key("/reports/2026-11-30/daily"), "GET /reports/{date}/daily");
        assert_eq!(key("/reports/20261130"), "GET /reports/{date}");
        assert_eq!(key("/files/Ab3dE6gH9jK2mN5pQ8sT1v"), "GET /files/{id}");
        assert_eq!(key("/"), "GET /");
        assert_eq!(key("/reset/redacted-abe1765f"), "GET /reset/{id}");
        assert_eq!(key("/boards/1;jsessionid=ABC"), "GET /boards/{id}");
        assert_eq!(key("/cards/9994-1600-4712-2636/limits"), "GET /cards/{id}/limits");
        assert_eq!(key("/cards/9994%201600%204712%202636"), "GET /cards/{id}");
        // Words stay: a kind of resource, a version, a short slug.
        assert_eq!(key("/api/v2/boards/"), "GET /api/v2/boards/");
        assert_eq!(key("/posts/how-to-cook"), "GET /posts/how-to-cook");
        assert_eq!(key("/cafe/deadbeef"), "GET /cafe/deadbeef");
    }

    #[test]
    fn query_parameter_names_are_part_of_the_key() {
        assert_eq!(key("/boards/17/cards?page=2"), "GET /boards/{id}/cards?page=");
        assert_eq!(key("/posts?userId=3"), "GET /posts?userId=");
        assert_eq!(key("/posts?q=rust"), "GET /posts?q=");
        assert_eq!(key("/posts?_sort=views&_order=desc"), "GET /posts?_order=&_sort=");
        assert_eq!(key("/posts?_order=asc&_sort=id"), "GET /posts?_order=&_sort=");
        assert_eq!(key("/posts?"), "GET /posts");
        assert_eq!(key("/posts?_=1700000000&utm_source=x"), "GET /posts");
        assert_eq!(key("/posts#top?q=1"), "GET /posts");
        assert_eq!(key("/posts?q=1#frag&page=2"), "GET /posts?q=");
        assert_eq!(key("/?q=1"), "GET /?q=");
    }

    fn router(patterns: &[&str]) -> Router {
        Router::new(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    fn refused(pattern: &str) -> String {
        Router::new(&[pattern.to_owned()]).unwrap_err()
    }

    #[test]
    fn user_patterns_win_and_name_their_values() {
        let router = router(&["/users/{name}"]);
        let routed = router.route("GET", "/users/jane?x=1");
        assert_eq!(routed, Routed { key: "GET /users/{name}?x=".to_owned(), ids: vec!["jane"] });
        assert_eq!(router.route("GET", "/users/jane").key, "GET /users/{name}");
        assert_eq!(router.route("GET", "/users/jane/cards").key, "GET /users/jane/cards");
        assert_eq!(router.route("DELETE", "/boards/9").ids, ["9"]);
        assert!(refused("users/{x}").contains("is not a path pattern"));
        assert!(refused("/users/a{x}").contains("a placeholder is a whole segment"));
    }

    #[test]
    fn a_pattern_with_a_query_matches_exactly_its_names() {
        let router = router(&["/posts?q={q}"]);
        assert_eq!(router.route("GET", "/posts?q=rust"), Routed { key: "GET /posts?q=".to_owned(), ids: vec!["rust"] });
        // Names left out of every key do not stop a match; any other name does.
        assert_eq!(router.route("GET", "/posts?utm_source=x&q=a&_=1").key, "GET /posts?q=");
        let other = router.route("GET", "/posts?q=rust&page=2");
        assert_eq!((other.key.as_str(), other.ids.len()), ("GET /posts?page=&q=", 0), "the built-in rules");
        assert_eq!(router.route("GET", "/posts").key, "GET /posts");
        let router = self::router(&["/users/{user}/posts?sort={by}&page={n}"]);
        let routed = router.route("GET", "/users/ada/posts?page=2&sort=new");
        assert_eq!(
            routed,
            Routed { key: "GET /users/{user}/posts?page=&sort=".to_owned(), ids: vec!["ada", "2", "new"] }
        );
    }

    #[test]
    fn a_fixed_value_splits_one_parameter_into_endpoints() {
        let router = router(&["/issues?state=open", "/issues?state=closed&label={l}"]);
        assert_eq!(router.route("GET", "/issues?state=open").key, "GET /issues?state=open");
        assert_eq!(router.route("GET", "/issues?state=%6Fpen").key, "GET /issues?state=open", "compared decoded");
        assert_eq!(router.route("GET", "/issues?label=bug&state=closed").key, "GET /issues?label=&state=closed");
        assert_eq!(router.route("GET", "/issues?state=all").key, "GET /issues?state=");
        assert_eq!(router.route("GET", "/issues?state=open&state=all").key, "GET /issues?state=");
        let spaced = self::router(&["/search?q=two+words"]);
        assert_eq!(spaced.route("GET", "/search?q=two%20words").key, "GET /search?q=two+words");
    }

    #[test]
    fn an_empty_or_starred_query_part_says_no_parameters_or_any() {
        let router = router(&["/posts?", "/search?*"]);
        assert_eq!(router.route("GET", "/posts?utm_source=x").key, "GET /posts");
        assert_eq!(router.route("GET", "/posts?q=1").key, "GET /posts?q=");
        for target in ["/search", "/search?q=a", "/search?q=a&page=2&sort=x"] {
            assert_eq!(router.route("GET", target).key, "GET /search", "{target}");
        }
    }

    #[test]
    fn a_query_part_that_cannot_match_is_refused_with_the_reason() {
        assert!(refused("/posts?{x}=1").contains("a parameter's name is fixed"));
        assert!(refused("/posts?q=a{x}").contains("a placeholder is a whole value"));
        assert!(refused("/posts?q={a}&q={b}").contains("`q` is named twice"));
        assert!(refused("/posts?utm_source={s}").contains("is never part of a route key"));
        assert!(refused("/posts?_={t}").contains("is never part of a route key"));
        assert!(refused("/posts?q={q}#x").contains("is not a path pattern"));
        assert!(refused("/posts?q=a b").contains("is not a path pattern"));
        assert!(refused("/posts?q=\u{7}").contains("is not a path pattern"));
        assert!(refused("/posts?q=\u{1b}[31m").contains("is not a path pattern"));
    }
}
