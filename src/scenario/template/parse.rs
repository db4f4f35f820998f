//! Reading one `{{ … }}` expression: its tokens, then a name resolved by the scenario's resolver or a call of
//! one of the closed set of functions, each checked for its arguments here, when the scenario is loaded.

use serde_json::Value;

use super::{Expr, NowFormat, Resolver, Width};

/// One token of an expression.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Literal(Value),
    Punct(char),
}

fn tokenize(source: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = source.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if "().,".contains(c) {
            tokens.push(Token::Punct(c));
            chars.next();
        } else if c == '"' || c == '\'' {
            chars.next();
            let text: String = chars.by_ref().map(|(_, c)| c).take_while(|&ch| ch != c).collect();
            if !source[start + 1..].contains(c) {
                return Err(format!("unclosed string starting at `{}`", &source[start..]));
            }
            tokens.push(Token::Literal(Value::String(text)));
        } else if c.is_ascii_digit() || c == '-' {
            let mut end = start;
            while let Some(&(i, ch)) = chars.peek().filter(|(_, ch)| ch.is_ascii_digit() || "-.eE+".contains(*ch)) {
                end = i + ch.len_utf8();
                chars.next();
            }
            let text = &source[start..end];
            let number: Value = serde_json::from_str(text).map_err(|_| format!("`{text}` is not a number"))?;
            tokens.push(Token::Literal(number));
        } else if c.is_alphabetic() || c == '_' {
            let mut end = start;
            while let Some(&(i, ch)) = chars.peek().filter(|(_, ch)| ch.is_alphanumeric() || "_-".contains(*ch)) {
                end = i + ch.len_utf8();
                chars.next();
            }
            tokens.push(Token::Name(source[start..end].to_owned()));
        } else {
            return Err(format!("unexpected `{c}`"));
        }
    }
    Ok(tokens)
}

pub(super) fn parse_expr(
    source: &str,
    resolve: &Resolver<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Expr, String> {
    parse_tokens(&tokenize(source)?, resolve, env)
}

fn parse_tokens(
    tokens: &[Token],
    resolve: &Resolver<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Expr, String> {
    match tokens {
        [] => Err("empty expression".to_owned()),
        // An encoder takes one expression of any kind, `seq()` or a session variable, not only a literal.
        [Token::Name(function), Token::Punct('('), inner @ .., Token::Punct(')')] if Width::of(function).is_some() => {
            let width = Width::of(function).expect("matched above");
            let inner = match inner {
                [Token::Literal(value)] => Expr::Constant(value.clone()),
                inner => parse_tokens(inner, resolve, env)?,
            };
            match inner {
                Expr::BigEndian(..) => Err(format!("{function}() of an encoder: encode the value once")),
                inner => Ok(Expr::BigEndian(width, Box::new(inner))),
            }
        }
        [Token::Name(function), Token::Punct('('), args @ .., Token::Punct(')')] => {
            call(function, &arguments(args, resolve)?, env)
        }
        [Token::Name(first), rest @ ..] => {
            let mut names = vec![first.as_str()];
            for pair in rest.chunks(2) {
                match pair {
                    [Token::Punct('.'), Token::Name(name)] => names.push(name),
                    _ => return Err("expected a name like `board_id` or `users.email`, or a function call".into()),
                }
            }
            resolve(&names)
        }
        _ => Err("expected a name like `board_id` or `users.email`, or a function call".to_owned()),
    }
}

/// A call's arguments: literals, or `[vars]` constants by name (`randint(1, customers)`); a value that
/// changes per session cannot be an argument, since arguments are checked once, here.
fn arguments(tokens: &[Token], resolve: &Resolver<'_>) -> Result<Vec<Value>, String> {
    if tokens.is_empty() {
        return Ok(Vec::new());
    }
    tokens
        .split(|t| *t == Token::Punct(','))
        .map(|arg| match arg {
            [Token::Literal(value)] => Ok(value.clone()),
            [Token::Name(name)] => match resolve(&[name.as_str()])? {
                Expr::Constant(value) => Ok(value),
                _ => Err(format!("`{name}` changes from session to session; a function argument must be a literal or a [vars] constant")),
            },
            _ => Err("function arguments must be literal numbers, quoted strings or [vars] constants".to_owned()),
        })
        .collect()
}

/// The functions a template may call.
pub const FUNCTIONS: &str = "uuid(), randint(low, high), choice(a, b, …), seq(), now(), now(\"unix\"), \
now(\"unix_ms\"), env(\"NAME\"), zipf(low, high, s), zipf_scrambled(low, high, s), \
hotspot(low, high, hot_keys, hot_draws), latest(s), weighted(value, weight, …), lognormal(median, sigma), \
pareto(min, shape), u16be(x), u32be(x), u64be(x)";

fn call(function: &str, args: &[Value], env: &dyn Fn(&str) -> Option<String>) -> Result<Expr, String> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            let takes = crate::model::counted(n, "argument", "arguments");
            Err(format!("{function}() takes {takes}, not {}", args.len()))
        }
    };
    match function {
        "uuid" => arity(0).map(|()| Expr::Uuid),
        "seq" => arity(0).map(|()| Expr::Seq),
        "randint" => {
            arity(2)?;
            match (args[0].as_i64(), args[1].as_i64()) {
                (Some(low), Some(high)) if low <= high => Ok(Expr::RandInt(low, high)),
                _ => Err("randint(low, high) takes two integers with low <= high".to_owned()),
            }
        }
        "choice" if args.is_empty() => Err("choice() needs at least one value".to_owned()),
        "choice" => Ok(Expr::Choice(args.to_vec())),
        "now" => match args {
            [] => Ok(Expr::Now(NowFormat::Rfc3339)),
            [Value::String(f)] if f == "unix" => Ok(Expr::Now(NowFormat::Unix)),
            [Value::String(f)] if f == "unix_ms" => Ok(Expr::Now(NowFormat::UnixMs)),
            _ => Err("now() takes no argument, \"unix\" or \"unix_ms\"".to_owned()),
        },
        "env" => match args {
            [Value::String(name)] => env(name)
                .map(|value| Expr::Constant(Value::String(value)))
                .ok_or_else(|| format!("environment variable {name} is not set")),
            _ => Err("env(\"NAME\") takes one quoted variable name".to_owned()),
        },
        "zipf" | "zipf_scrambled" | "hotspot" | "latest" | "weighted" | "lognormal" | "pareto" => {
            super::super::distribution::compile(function, args).map(|draw| Expr::Draw { draw, site: 0 })
        }
        other => Err(format!("unknown function `{other}`; the functions are {FUNCTIONS}")),
    }
}
