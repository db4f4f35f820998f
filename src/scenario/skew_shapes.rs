//! What a scenario's skewed data will do, said by `degrade validate` before the first night: for each skewed
//! feeder and each skewed draw in a step, the hottest key's share, the top 1 %'s, and what the hottest key
//! gets at the plan's peak load (sessions a second in the open model; users at once in the closed one, each
//! holding its row for its whole session).

use super::distribution::{Draw, Shape};
use super::feeder::Order;
use super::plan::{Body, Plan, StageShape};
use super::template::Expr;
use super::ws_plan::WsAction;

/// A skewed feeder or a skewed draw in a step's templates, with what it is called in reports.
pub struct SkewSite<'p> {
    /// The feeder's name, or the step's endpoint and field: `GET /boards/{id} path`.
    pub label: String,
    /// What it draws.
    pub draw: &'p Draw,
    /// Which feeder, or which draw site of the plan.
    pub at: SiteOf,
    /// The share of sessions that draw here: those of the flows that read the feeder, or of the draw's flow, by
    /// weight (a flow of weight 1 in 10 sees a tenth of them).
    pub sessions_share: f64,
}

/// Where a skewed draw is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteOf {
    /// A `[[data]]` feeder's order, drawn once a session: the feeder's index.
    Feeder(usize),
    /// A template's draw, drawn at each request or message: its site number ([`Expr::Draw`]).
    Template(usize),
    /// A flow's `session_vars` draw, drawn once a session: its site number.
    Session(usize),
}

impl SiteOf {
    /// The draw site number of a template's draw; `None` for a feeder.
    #[must_use]
    pub fn template_site(self) -> Option<usize> {
        match self {
            Self::Feeder(_) => None,
            Self::Template(site) | Self::Session(site) => Some(site),
        }
    }
}

/// Every skewed feeder, then every skewed draw in the flows' steps, in the order `validate` lists them.
#[must_use]
pub fn sites(plan: &Plan) -> Vec<SkewSite<'_>> {
    let mut found = Vec::new();
    let weights: f64 = plan.flows.iter().map(|f| f64::from(f.weight)).sum();
    let share_of = |weight: f64| if weights > 0.0 { weight / weights } else { 1.0 };
    let readers = super::feeder_use::flow_feeders(plan);
    for (index, feeder) in plan.feeders.iter().enumerate() {
        if let Order::Skewed(draw) = &feeder.order {
            let reading = plan.flows.iter().zip(&readers).filter(|(_, feeders)| feeders.contains(&index));
            let sessions_share = share_of(reading.map(|(f, _)| f64::from(f.weight)).sum());
            found.push(SkewSite { label: feeder.name.clone(), draw, at: SiteOf::Feeder(index), sessions_share });
        }
    }
    for flow in &plan.flows {
        let sessions_share = share_of(f64::from(flow.weight));
        for (variable, template) in &flow.session_vars {
            let name = plan.variables.get(*variable).map_or("?", String::as_str);
            for (draw, site) in draws(template.expressions()) {
                let label = format!("{} session_vars.{name}", flow.name);
                found.push(SkewSite { label, draw, at: SiteOf::Session(site), sessions_share });
            }
        }
        for step in &flow.steps {
            let endpoint = plan.endpoints.get(step.endpoint).map_or("?", String::as_str);
            for (field, draw, site) in step_draws(step) {
                let label = format!("{endpoint} {field}");
                found.push(SkewSite { label, draw, at: SiteOf::Template(site), sessions_share });
            }
        }
    }
    found
}

/// One line per skewed feeder or draw, without indentation.
#[must_use]
pub fn describe(plan: &Plan) -> Vec<String> {
    let mut lines = Vec::new();
    for site in sites(plan) {
        let Some(shape) = site.draw.shape() else { continue };
        // A feeder draws rows once a session, a session variable keys once a session, a step keys per request.
        let (what, of, extra) = match site.at {
            SiteOf::Feeder(index) => {
                let share = site.sessions_share;
                let cap = over_cap(plan, &shape, plan.feeders[index].max_sessions_per_row, share);
                ("row", "sessions", at_peak(plan, &shape, share) + &cap)
            }
            SiteOf::Session(_) => ("key", "sessions", at_peak(plan, &shape, site.sessions_share)),
            SiteOf::Template(_) => ("key", "draws", String::new()),
        };
        let (name, keys, share) = (site.draw.name(), rows(shape.keys, what), shares(&shape, what, of));
        let line = format!("{}: {name} over {keys}: {share}{extra}", site.label);
        lines.push(line);
    }
    lines
}

fn rows(count: u64, what: &str) -> String {
    format!("{} {what}{}", crate::model::thousands(count as f64), if count == 1 { "" } else { "s" })
}

fn shares(shape: &Shape, what: &str, of: &str) -> String {
    let top = shape.keys.div_ceil(100).max(1);
    format!(
        "the hottest {what} {} of {of}, the top 1 % ({}) {}",
        percent(shape.hottest),
        rows(top, what),
        percent(shape.top_percent)
    )
}

/// What the hottest row gets at the plan's peak, when `share` of the sessions draw from it.
fn at_peak(plan: &Plan, shape: &Shape, share: f64) -> String {
    let measured = plan.load.stages.iter().filter(|s| s.measure);
    let (mut rate, mut users) = (0.0_f64, 0_u32);
    for stage in measured {
        match stage.shape {
            StageShape::Rate { from, to } => rate = rate.max(from.max(to)),
            StageShape::Users(n) => users = users.max(n),
        }
    }
    let hottest = shape.hottest * share;
    if users > 0 {
        format!("; of {users} users, about {:.1} on the hottest row at once", f64::from(users) * hottest)
    } else if rate > 0.0 {
        format!("; at the peak of {rate:.0} sessions/s, about {:.1}/s on the hottest row", rate * hottest)
    } else {
        String::new()
    }
}

/// What a feeder's `max_sessions_per_row` does to its skew: in the closed model, the hottest row wanted by
/// more users at once than the cap sends the rest to other rows, so the run draws less skew than predicted.
fn over_cap(plan: &Plan, shape: &Shape, cap: Option<u32>, share: f64) -> String {
    let Some(cap) = cap else { return String::new() };
    let users = plan.load.stages.iter().filter(|s| s.measure).filter_map(|s| match s.shape {
        StageShape::Users(n) => Some(n),
        StageShape::Rate { .. } => None,
    });
    let hottest = f64::from(users.max().unwrap_or(0)) * shape.hottest * share;
    if hottest > f64::from(cap) {
        format!(
            "; capped at {cap} a row, so the hot rows' other sessions go to colder rows and the run will draw less \
             skew than this"
        )
    } else {
        String::new()
    }
}

/// A share as a percentage with the digits it needs: `13 %`, `2.4 %`, `0.010 %`.
#[must_use]
pub fn percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct == 0.0 {
        "0 %".to_owned()
    } else if pct >= 10.0 {
        format!("{pct:.0} %")
    } else if pct >= 0.1 {
        format!("{pct:.1} %")
    } else {
        format!("{pct:.3} %")
    }
}

/// The skewed draws among some expressions, with their site numbers.
fn draws<'p>(expressions: impl IntoIterator<Item = &'p Expr>) -> Vec<(&'p Draw, usize)> {
    expressions
        .into_iter()
        .filter_map(|e| if let Expr::Draw { draw, site } = e.source() { Some((draw, *site)) } else { None })
        .collect()
}

/// Every skewed draw in a step's templates, with where it is: `path`, `query card`, `header x-board`, `body`,
/// `message` (a WebSocket send's).
fn step_draws<'p>(step: &'p super::plan::Step) -> Vec<(String, &'p Draw, usize)> {
    let mut found = Vec::new();
    let mut add = |field: String, expressions: Vec<&'p Expr>| {
        found.extend(draws(expressions).into_iter().map(|(draw, site)| (field.clone(), draw, site)));
    };
    add("path".to_owned(), step.path.expressions().collect());
    for (name, template) in &step.query {
        add(format!("query {name}"), template.expressions().collect());
    }
    for (name, template) in &step.headers {
        add(format!("header {name}"), template.expressions().collect());
    }
    match &step.body {
        Some(Body::Json(json)) => add("body".to_owned(), json.expressions()),
        Some(Body::Text(text)) => add("body".to_owned(), text.expressions().collect()),
        Some(Body::Proto(proto)) => add("body".to_owned(), proto.json.expressions()),
        Some(Body::Bytes(_)) | None => {}
    }
    if let Some(WsAction::Send { payload, .. }) = &step.ws {
        add("message".to_owned(), payload.expressions());
    }
    found
}
