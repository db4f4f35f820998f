//! Route keys counted as a source or a tape is read, their number bounded whatever it holds.
//!
//! Two caps keep memory and the number of series in hand. One path keeps at most [`MAX_QUERY_SHAPES`] query
//! shapes of its own, the first ones seen; its further shapes (optional parameters in endless
//! combinations) share one key, `GET /search?(other queries)`. And at most [`MAX_SURVEYED_ROUTES`] keys are
//! told apart at all; the requests of any further one are counted under [`OTHER_ROUTES`].

use std::collections::HashMap;

/// Routes told apart; requests of any further route are counted under [`OTHER_ROUTES`].
pub const MAX_SURVEYED_ROUTES: usize = 10_000;

/// The key shared by routes beyond [`MAX_SURVEYED_ROUTES`].
pub const OTHER_ROUTES: &str = "(other routes)";

/// Query shapes one method and path keep as routes of their own; further ones share [`OTHER_QUERIES`].
pub const MAX_QUERY_SHAPES: usize = 16;

/// What follows a method and path in the key their further query shapes share.
pub const OTHER_QUERIES: &str = "?(other queries)";

/// The key that a route's further query shapes share: `GET /search?(other queries)` for `GET /search?q=`, or
/// `None` for a route without a query part.
#[must_use]
pub fn other_queries(key: &str) -> Option<String> {
    key.split_once('?').map(|(path, _)| format!("{path}{OTHER_QUERIES}"))
}

/// Routes and a value for each (a count, say), in the order they were first seen.
#[derive(Debug, Clone, Default)]
pub struct RouteTally<V> {
    index: HashMap<String, usize>,
    routes: Vec<(String, V)>,
    /// Per method and path (the key before its `?`), the query shapes with a route of their own.
    shapes: HashMap<String, usize>,
}

impl<V: Default> RouteTally<V> {
    /// The route `key` is counted under (itself, or the key it shares past a cap) and its value.
    pub fn entry(&mut self, key: &str) -> (&str, &mut V) {
        let at = match self.index.get(key) {
            Some(&at) => at,
            None => self.insert(key),
        };
        let (key, value) = &mut self.routes[at];
        (key.as_str(), value)
    }

    fn insert(&mut self, key: &str) -> usize {
        let path = key.split_once('?').map(|(path, _)| path).filter(|_| !key.ends_with(OTHER_QUERIES));
        let mut shared = path
            .filter(|path| self.shapes.get(*path).is_some_and(|&n| n >= MAX_QUERY_SHAPES))
            .map(|path| format!("{path}{OTHER_QUERIES}"));
        if let Some(&at) = shared.as_ref().and_then(|k| self.index.get(k)) {
            // Keys are not remembered past their cap: memory stays bounded by the routes told apart.
            return at;
        }
        if self.routes.len() >= MAX_SURVEYED_ROUTES {
            shared = Some(OTHER_ROUTES.to_owned());
            if let Some(&at) = self.index.get(OTHER_ROUTES) {
                return at;
            }
        } else if shared.is_none()
            && let Some(path) = path
        {
            *self.shapes.entry(path.to_owned()).or_default() += 1;
        }
        let key = shared.unwrap_or_else(|| key.to_owned());
        self.index.insert(key.clone(), self.routes.len());
        self.routes.push((key, V::default()));
        self.routes.len() - 1
    }

    /// The routes and their values, in the order first seen.
    #[must_use]
    pub fn into_routes(self) -> Vec<(String, V)> {
        self.routes
    }

    /// How many routes are told apart.
    #[must_use]
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether no route was counted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(tally: &mut RouteTally<u64>, key: &str) -> String {
        let (shared, n) = tally.entry(key);
        *n += 1;
        shared.to_owned()
    }

    #[test]
    fn one_path_keeps_its_first_query_shapes_and_shares_one_key_beyond() {
        let mut tally = RouteTally::<u64>::default();
        for i in 0..40 {
            let key = format!("GET /search?f{i}=");
            let shared = count(&mut tally, &key);
            assert_eq!(shared, if i < MAX_QUERY_SHAPES { key } else { "GET /search?(other queries)".to_owned() });
        }
        // The path without a query, another method and another path are routes of their own.
        assert_eq!(count(&mut tally, "GET /search"), "GET /search");
        assert_eq!(count(&mut tally, "POST /search?f39="), "POST /search?f39=");
        assert_eq!(count(&mut tally, "GET /search?f3="), "GET /search?f3=", "a shape seen before keeps its key");
        let routes = tally.into_routes();
        assert_eq!(routes.len(), MAX_QUERY_SHAPES + 3);
        let other = routes.iter().find(|(k, _)| k.ends_with(OTHER_QUERIES)).unwrap();
        assert_eq!(other.1, 40 - MAX_QUERY_SHAPES as u64);
    }

    #[test]
    fn the_number_of_routes_is_bounded_whatever_the_keys() {
        let mut tally = RouteTally::<u64>::default();
        for i in 0..(MAX_SURVEYED_ROUTES + 500) {
            count(&mut tally, &format!("GET /p{i}?q="));
            count(&mut tally, &format!("GET /p{i}?r="));
        }
        assert_eq!(tally.len(), MAX_SURVEYED_ROUTES + 1);
        let routes = tally.into_routes();
        assert_eq!(routes.last().unwrap().0, OTHER_ROUTES);
        assert_eq!(routes.iter().map(|(_, n)| n).sum::<u64>(), 2 * (MAX_SURVEYED_ROUTES as u64 + 500));
        assert_eq!(other_queries("GET /a?b="), Some("GET /a?(other queries)".to_owned()));
        assert_eq!(other_queries("GET /a"), None);
    }
}
