//! The names a scenario's templates may use ([`Scope`]: `[vars]` constants, feeder columns, the variables earlier
//! steps extract, and the metric keys made so far), and the template fields every kind of step shares: one
//! template value, header templates, and how an expression reads in a default step name.

use std::cell::Cell;
use std::collections::BTreeMap;

use http::HeaderName;
use serde_json::Value;
use toml::Spanned;

use super::feeder::Feeder;
use super::json_template::JsonTemplate;
use super::step_key::StepKeys;
use super::template::{Expr, Template};
use crate::config::{Checker, header_text};
use crate::outside_text::printable;

/// What every step's templates may refer to, and the names collected so far.
pub(super) struct Scope<'a> {
    pub constants: &'a BTreeMap<String, Value>,
    pub feeders: &'a [Feeder],
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Session variables of the whole scenario; a step refers to one by index.
    pub variables: Vec<String>,
    /// Metric keys; a step refers to one by index.
    pub endpoints: Vec<String>,
    /// The default metric keys made so far (steps without a `name`), with the queries that made them.
    pub keys: StepKeys,
    /// The site number the next skewed draw gets ([`Template::number_draws`]).
    pub next_draw: Cell<usize>,
    /// The `[proto]` files compiled, when the scenario names some.
    pub protos: Option<prost_reflect::DescriptorPool>,
    /// `[proto]` is there but has an error (reported): steps needing it say nothing more.
    pub protos_failed: bool,
}

impl Scope<'_> {
    /// Gives each skewed draw of `template` a site number of its own.
    pub(super) fn number_draws(&self, template: &mut Template) {
        let mut next = self.next_draw.get();
        template.number_draws(&mut next);
        self.next_draw.set(next);
    }

    /// Gives each skewed draw of a JSON body a site number of its own.
    pub(super) fn number_json_draws(&self, json: &mut JsonTemplate) {
        let mut next = self.next_draw.get();
        json.number_draws(&mut next);
        self.next_draw.set(next);
    }

    pub(super) fn resolve(&self, names: &[&str], known: &[usize], later: &[String]) -> Result<Expr, String> {
        if let [name] = names {
            if let Some(index) = known.iter().copied().find(|&i| self.variables[i] == *name) {
                return Ok(Expr::Variable(index));
            }
            if let Some(value) = self.constants.get(*name) {
                return Ok(Expr::Constant(value.clone()));
            }
            if later.iter().any(|l| l == name) {
                return Err(format!(
                    "`{name}` is extracted by a later step; a step can only use earlier steps' values"
                ));
            }
        }
        if let [feeder, column] = names
            && let Some(f) = self.feeders.iter().position(|f| f.name == *feeder)
        {
            let columns = &self.feeders[f].columns;
            return match columns.iter().position(|c| c == column) {
                Some(c) => Ok(Expr::Feeder { feeder: f, column: c }),
                None => Err(format!("feeder `{feeder}` has no column `{column}`; its columns: {}", columns.join(", "))),
            };
        }
        let mut in_scope: Vec<String> = known.iter().map(|&i| self.variables[i].clone()).collect();
        in_scope.extend(self.constants.keys().cloned());
        in_scope.extend(self.feeders.iter().map(|f| format!("{}.<column>", f.name)));
        let in_scope = if in_scope.is_empty() { "none".to_owned() } else { in_scope.join(", ") };
        Err(format!("unknown variable `{}`; in scope here: {in_scope}", names.join(".")))
    }

    pub(super) fn variable(&mut self, name: &str) -> usize {
        self.variables.iter().position(|v| v == name).unwrap_or_else(|| {
            self.variables.push(name.to_owned());
            self.variables.len() - 1
        })
    }

    pub(super) fn endpoint(&mut self, name: &str) -> usize {
        self.endpoints.iter().position(|v| v == name).unwrap_or_else(|| {
            self.endpoints.push(name.to_owned());
            self.endpoints.len() - 1
        })
    }
}

/// Compiles one template value, recording an error at its position.
pub(super) fn template(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    value: &Spanned<String>,
    field: &str,
    known: &[usize],
    later: &[String],
) -> Option<Template> {
    let resolve = |names: &[&str]| scope.resolve(names, known, later);
    let mut compiled = checker.check(value, field, |text| Template::compile(text, &resolve, scope.env))?;
    scope.number_draws(&mut compiled);
    Some(compiled)
}

/// Headers that say where a request ends and what becomes of its connection: the engine writes them from the
/// body, and a scenario's value could only contradict it (a wrong length leaves the connection out of step).
const FRAMING_HEADERS: [HeaderName; 5] = [
    http::header::CONTENT_LENGTH,
    http::header::TRANSFER_ENCODING,
    http::header::CONNECTION,
    http::header::UPGRADE,
    http::header::TE,
];

pub(super) fn header_templates(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    headers: &BTreeMap<String, Spanned<String>>,
    field: &str,
    known: &[usize],
    later: &[String],
) -> Vec<(HeaderName, Template)> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let field = format!("{field}.{}", printable(name));
        let Some(header) = checker.check(value, &field, |text| {
            header_text(text)?;
            let header =
                HeaderName::try_from(name.as_str()).map_err(|_| format!("`{name}` is not a valid header name"))?;
            if FRAMING_HEADERS.contains(&header) {
                return Err(format!(
                    "`{name}` is degrade's to set: it frames the request and keeps its connection, from the body"
                ));
            }
            // TOML keys differ by case where header names do not: both would go out, and a server may refuse
            // a request with two Host or Authorization lines.
            if out.iter().any(|(seen, _)| *seen == header) {
                return Err(format!("`{name}` is set twice here (header names ignore case)"));
            }
            Ok(header)
        }) else {
            continue;
        };
        out.extend(template(checker, scope, value, &field, known, later).map(|t| (header, t)));
    }
    out
}

/// How an expression reads in a default step name: `{board_id}`, `{users.email}`, `{uuid}`.
pub(super) fn expr_name(scope: &Scope<'_>, expr: &Expr) -> String {
    match expr {
        Expr::Variable(i) => scope.variables[*i].clone(),
        Expr::Feeder { feeder, column } => {
            let feeder = &scope.feeders[*feeder];
            format!("{}.{}", feeder.name, feeder.columns[*column])
        }
        Expr::Constant(_) => "const".to_owned(),
        Expr::Uuid => "uuid".to_owned(),
        Expr::RandInt(..) => "randint".to_owned(),
        Expr::Choice(_) => "choice".to_owned(),
        Expr::Seq => "seq".to_owned(),
        Expr::Now(_) => "now".to_owned(),
        Expr::Draw { draw, .. } => draw.name().to_owned(),
        Expr::BigEndian(_, inner) => expr_name(scope, inner),
    }
}
