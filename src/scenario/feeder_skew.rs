//! Skewed feeders: `order = "zipf"`, `"hotspot"` or `"weighted"` in a `[[data]]` table, the popularity of
//! real data (a few huge boards, many small ones, some hot) drawn over a file's rows. Row 1 is the hottest
//! under `zipf` (`skew`, 0.99 by default, YCSB's) and the first `hot_rows` share under `hotspot`, so a file
//! sorted by popularity reads as it is; `weighted` draws each row in proportion to its `weight_column`.

use serde_json::Value;
use toml::Spanned;

use super::distribution::{Draw, Weighted};
use super::feeder::{Feeder, Order};
use crate::config::Checker;

/// The keys of a `[[data]]` table that shape a skewed order.
#[derive(Debug, Default)]
pub(super) struct SkewKeys {
    pub skew: Option<Spanned<f64>>,
    pub hot_rows: Option<Spanned<f64>>,
    pub hot_draws: Option<Spanned<f64>>,
    pub weight_column: Option<Spanned<String>>,
}

/// The order names a feeder may have.
pub(super) const ORDERS: &str = "sequential, random, shuffle, zipf, hotspot or weighted";

/// Whether `order` is one of the skewed ones, drawn once the rows are loaded.
pub(super) fn is_skewed(order: &str) -> bool {
    matches!(order, "zipf" | "hotspot" | "weighted")
}

/// The skewed order `order` over `feeder`'s rows, or `None` after reporting what is wrong at `data[i]`.
pub(super) fn skewed_order(
    checker: &mut Checker<'_>,
    at: usize,
    order: &Spanned<String>,
    keys: &SkewKeys,
    feeder: &Feeder,
) -> Option<Order> {
    let field = |f: &str| format!("data[{at}].{f}");
    let rows = feeder.rows.len() as u64;
    let last = i64::try_from(rows).unwrap_or(i64::MAX) - 1;
    let draw = match order.get_ref().as_str() {
        "zipf" => {
            let s = keys.skew.as_ref().map_or(Some(0.99), |s| {
                checker.check(s, &field("skew"), |s| if *s >= 0.0 { Ok(*s) } else { Err("must be at least 0".into()) })
            })?;
            super::distribution::compile("zipf", &[0.into(), last.into(), s.into()]).ok()?
        }
        "hotspot" => {
            let share = |value: &Option<Spanned<f64>>, name: &str, checker: &mut Checker<'_>| {
                let Some(value) = value else {
                    checker.error(order, &field(name), format!("order = \"hotspot\" needs `{name}`, a share"));
                    return None;
                };
                checker.check(value, &field(name), |v| {
                    if *v > 0.0 && *v <= 1.0 { Ok(*v) } else { Err("a share above 0 and at most 1".to_owned()) }
                })
            };
            let (hot_rows, hot_draws) =
                (share(&keys.hot_rows, "hot_rows", checker), share(&keys.hot_draws, "hot_draws", checker));
            let args = [0.into(), last.into(), hot_rows?.into(), hot_draws?.into()];
            super::distribution::compile("hotspot", &args).ok()?
        }
        _ => weighted_rows(checker, &field("weight_column"), order, keys, feeder)?,
    };
    Some(Order::Skewed(draw))
}

/// Each row's index, weighted by its `weight_column`.
fn weighted_rows(
    checker: &mut Checker<'_>,
    field: &str,
    order: &Spanned<String>,
    keys: &SkewKeys,
    feeder: &Feeder,
) -> Option<Draw> {
    let Some(column) = &keys.weight_column else {
        checker.error(order, field, "order = \"weighted\" needs `weight_column`, the column of each row's weight");
        return None;
    };
    checker.check(column, field, |name| {
        let index = feeder.columns.iter().position(|c| c == name).ok_or_else(|| {
            format!("`{name}` is not a column of {}; its columns are {}", feeder.name, feeder.columns.join(", "))
        })?;
        let pairs = feeder
            .rows
            .iter()
            .enumerate()
            .map(|(row, values)| {
                let weight = weight(&values[index])
                    .ok_or_else(|| format!("row {} has `{}` as its weight, not a number", row + 1, values[index]))?;
                Ok((Value::from(row), weight))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Weighted::new(pairs).map(Draw::Weighted)
    })
}

/// A weight from a JSON number or a CSV cell holding one.
fn weight(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// Reports the skew keys given to an order that does not read them.
pub(super) fn unused_keys(checker: &mut Checker<'_>, at: usize, order: &str, keys: &SkewKeys) {
    let field = |f: &str| format!("data[{at}].{f}");
    let wanted = |key: &str| match order {
        "zipf" => key == "skew",
        "hotspot" => key == "hot_rows" || key == "hot_draws",
        "weighted" => key == "weight_column",
        _ => false,
    };
    let message = |key: &str| format!("`{key}` shapes a skewed order, not order = \"{order}\"");
    for (key, given) in [("skew", &keys.skew), ("hot_rows", &keys.hot_rows), ("hot_draws", &keys.hot_draws)] {
        if let (Some(value), false) = (given, wanted(key)) {
            checker.error(value, &field(key), message(key));
        }
    }
    if let (Some(value), false) = (&keys.weight_column, wanted("weight_column")) {
        checker.error(value, &field("weight_column"), message("weight_column"));
    }
}
