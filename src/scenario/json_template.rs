//! JSON bodies with templates in their strings: `json = { title = "nightly {{ uuid() }}", rank = "{{ randint(1, 9) }}" }`.
//! Strings without `{{` stay literal; a string that is exactly one expression keeps its JSON type.

use serde_json::Value;

use super::template::{Expr, RenderContext, Resolver, Template};

/// A JSON body with templates in its strings.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonTemplate {
    /// A value without templates.
    Literal(Value),
    /// A string with templates.
    Template(Template),
    /// An array of templates.
    Array(Vec<JsonTemplate>),
    /// An object whose values are templates.
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    /// Compiles every string in `value` that contains `{{`.
    pub fn compile(
        value: &toml::Value,
        resolve: &Resolver<'_>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        Ok(match value {
            toml::Value::String(s) if s.contains("{{") => Self::Template(Template::compile(s, resolve, env)?),
            toml::Value::Array(items) => {
                Self::Array(items.iter().map(|v| Self::compile(v, resolve, env)).collect::<Result<_, _>>()?)
            }
            toml::Value::Table(table) => Self::Object(
                table
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Self::compile(v, resolve, env)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => Self::Literal(serde_json::to_value(other).map_err(|e| e.to_string())?),
        })
    }

    /// The expressions it uses.
    #[must_use]
    pub fn expressions(&self) -> Vec<&Expr> {
        match self {
            Self::Literal(_) => Vec::new(),
            Self::Template(t) => t.expressions().collect(),
            Self::Array(items) => items.iter().flat_map(Self::expressions).collect(),
            Self::Object(fields) => fields.iter().flat_map(|(_, v)| v.expressions()).collect(),
        }
    }

    /// Numbers its draws from `next` on ([`Template::number_draws`]).
    pub fn number_draws(&mut self, next: &mut usize) {
        match self {
            Self::Literal(_) => {}
            Self::Template(t) => t.number_draws(next),
            Self::Array(items) => items.iter_mut().for_each(|i| i.number_draws(next)),
            Self::Object(fields) => fields.iter_mut().for_each(|(_, v)| v.number_draws(next)),
        }
    }

    /// Renders the body.
    pub fn render(&self, cx: &mut RenderContext<'_>) -> Value {
        match self {
            Self::Literal(v) => v.clone(),
            Self::Template(t) => t.render_value(cx),
            Self::Array(items) => Value::Array(items.iter().map(|i| i.render(cx)).collect()),
            Self::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.render(cx))).collect()),
        }
    }
}
