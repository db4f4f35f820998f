//! Reading a draw's call from a template (`zipf(1, 500000, 0.99)`): its arguments are literals or `[vars]`
//! constants, checked once when the scenario is loaded, so a mistake is a `validate` error and not a night's
//! surprise.

use serde_json::Value;

use super::{Draw, Feistel, Weighted, splitmix};

/// The largest key range: keys are counted exactly as floats up to 2^53.
const MAX_KEYS: u64 = 1 << 53;

/// The draw `function(args…)`, or what is wrong with the call.
pub fn compile(function: &str, args: &[Value]) -> Result<Draw, String> {
    let usage = usage(function);
    let wrong = |what: &str| format!("{usage}: {what}");
    match (function, args) {
        ("zipf" | "zipf_scrambled", [low, high, s]) => {
            let (low, keys) = key_range(low, high).map_err(|e| wrong(&e))?;
            let s = at_least(s, 0.0, "s").map_err(|e| wrong(&e))?;
            let scramble = (function == "zipf_scrambled").then(|| Feistel::new(keys, seed_of(function, args)));
            Ok(Draw::Zipf { low, keys, s, scramble })
        }
        ("hotspot", [low, high, hot_keys, hot_draws]) => {
            let (low, keys) = key_range(low, high).map_err(|e| wrong(&e))?;
            let hot_share = share(hot_keys, "hot_keys").map_err(|e| wrong(&e))?;
            let hot_draws = share(hot_draws, "hot_draws").map_err(|e| wrong(&e))?;
            let hot_keys = ((keys as f64 * hot_share).ceil() as u64).clamp(1, keys);
            Ok(Draw::Hotspot { low, keys, hot_keys, hot_draws })
        }
        ("latest", []) => Ok(Draw::Latest { s: 0.99 }),
        ("latest", [s]) => Ok(Draw::Latest { s: at_least(s, 0.0, "s").map_err(|e| wrong(&e))? }),
        ("weighted", pairs) if !pairs.is_empty() && pairs.len() % 2 == 0 => {
            let pairs = pairs
                .chunks(2)
                .map(|pair| Ok((pair[0].clone(), number(&pair[1], "a weight")?)))
                .collect::<Result<Vec<_>, String>>()
                .map_err(|e| wrong(&e))?;
            Weighted::new(pairs).map(Draw::Weighted).map_err(|e| wrong(&e))
        }
        ("lognormal", [median, sigma]) => Ok(Draw::LogNormal {
            integer: is_integer(median),
            median: above(median, 0.0, "median").map_err(|e| wrong(&e))?,
            sigma: at_least(sigma, 0.0, "sigma").map_err(|e| wrong(&e))?,
        }),
        ("pareto", [min, shape]) => Ok(Draw::Pareto {
            integer: is_integer(min),
            min: above(min, 0.0, "min").map_err(|e| wrong(&e))?,
            shape: above(shape, 0.0, "shape").map_err(|e| wrong(&e))?,
        }),
        _ => Err(format!("{usage} takes {}, not {}", arity(function), args.len())),
    }
}

fn usage(function: &str) -> &'static str {
    match function {
        "zipf" => "zipf(low, high, s)",
        "zipf_scrambled" => "zipf_scrambled(low, high, s)",
        "hotspot" => "hotspot(low, high, hot_keys, hot_draws)",
        "latest" => "latest(s)",
        "weighted" => "weighted(value, weight, …)",
        "lognormal" => "lognormal(median, sigma)",
        _ => "pareto(min, shape)",
    }
}

fn arity(function: &str) -> &'static str {
    match function {
        "zipf" | "zipf_scrambled" => "3 arguments",
        "hotspot" => "4 arguments",
        "latest" => "one argument or none (s = 0.99)",
        "weighted" => "values each followed by its weight",
        _ => "2 arguments",
    }
}

/// The first key and how many there are, from two integers `low <= high`.
fn key_range(low: &Value, high: &Value) -> Result<(i64, u64), String> {
    match (low.as_i64(), high.as_i64()) {
        (Some(low), Some(high)) if low <= high => {
            let keys = high.abs_diff(low).saturating_add(1);
            if keys > MAX_KEYS {
                return Err(format!("at most {MAX_KEYS} keys"));
            }
            Ok((low, keys))
        }
        _ => Err("low and high are integers with low <= high".to_owned()),
    }
}

fn number(value: &Value, what: &str) -> Result<f64, String> {
    value.as_f64().filter(|v| v.is_finite()).ok_or_else(|| format!("{what} must be a number, not {value}"))
}

fn at_least(value: &Value, floor: f64, name: &str) -> Result<f64, String> {
    let v = number(value, name)?;
    if v >= floor { Ok(v) } else { Err(format!("{name} must be at least {floor}, not {v}")) }
}

fn above(value: &Value, floor: f64, name: &str) -> Result<f64, String> {
    let v = number(value, name)?;
    if v > floor { Ok(v) } else { Err(format!("{name} must be above {floor}, not {v}")) }
}

fn share(value: &Value, name: &str) -> Result<f64, String> {
    let v = number(value, name)?;
    if v > 0.0 && v <= 1.0 { Ok(v) } else { Err(format!("{name} is a share above 0 and at most 1, not {v}")) }
}

fn is_integer(value: &Value) -> bool {
    value.as_number().is_some_and(|n| n.is_i64() || n.is_u64())
}

/// The scramble's seed: the call itself, so the same call spreads its hot keys the same way every night.
fn seed_of(function: &str, args: &[Value]) -> u64 {
    let text = format!("{function}{args:?}");
    text.bytes().fold(0x5eed_u64, |hash, byte| splitmix(hash ^ u64::from(byte)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(function: &str, args: &[Value]) -> Result<Draw, String> {
        compile(function, args)
    }

    #[test]
    fn calls_compile_and_mistakes_are_named() {
        let zipf = call("zipf", &[1.into(), 500_000.into(), 0.99.into()]).unwrap();
        assert!(matches!(zipf, Draw::Zipf { low: 1, keys: 500_000, scramble: None, .. }));
        let scrambled = call("zipf_scrambled", &[1.into(), 100.into(), 0.99.into()]).unwrap();
        assert_eq!(scrambled, call("zipf_scrambled", &[1.into(), 100.into(), 0.99.into()]).unwrap(), "seeded alike");
        assert!(call("zipf", &[9.into(), 1.into(), 1.into()]).unwrap_err().contains("low <= high"));
        assert!(call("zipf", &[1.into(), 9.into()]).unwrap_err().contains("takes 3 arguments, not 2"));
        assert!(call("hotspot", &[1.into(), 9.into(), 0.2.into(), 1.5.into()]).unwrap_err().contains("hot_draws"));
        let hot = call("hotspot", &[1.into(), 1000.into(), 0.2.into(), 0.8.into()]).unwrap();
        assert!(matches!(hot, Draw::Hotspot { hot_keys: 200, keys: 1000, .. }));
        assert!(call("weighted", &["a".into(), 1.into(), "b".into()]).unwrap_err().contains("each followed"));
        assert!(call("weighted", &["a".into(), "x".into()]).unwrap_err().contains("a weight must be a number"));
        assert!(matches!(call("lognormal", &[2000.into(), 1.into()]).unwrap(), Draw::LogNormal { integer: true, .. }));
        assert!(matches!(call("pareto", &[1.5.into(), 2.into()]).unwrap(), Draw::Pareto { integer: false, .. }));
        assert!(call("pareto", &[0.into(), 2.into()]).unwrap_err().contains("min must be above 0"));
        assert_eq!(call("latest", &[]).unwrap(), Draw::Latest { s: 0.99 });
    }
}
