//! What a scenario's skewed data will do, said by `degrade validate` before the first night: for each skewed
//! feeder and each skewed draw in a step, the hottest key's share, the top 1 %'s, and what the hottest key
//! gets at the plan's peak load (sessions a second in the open model; users at once in the closed one, each
//! holding its row for its whole session).

use super::distribution::{Draw, Shape};
use super::feeder::Order;
use super::plan::{Body, Plan, StageShape};
use super::template::{Expr, Template};

/// One line per skewed feeder or draw, without indentation.
#[must_use]
pub fn describe(plan: &Plan) -> Vec<String> {
    let mut lines = Vec::new();
    for feeder in &plan.feeders {
        let Order::Skewed(draw) = &feeder.order else { continue };
        let Some(shape) = draw.shape() else { continue };
        lines.push(format!(
            "{}: {} over {}: {}{}",
            feeder.name,
            draw.name(),
            rows(shape.keys, "row"),
            shares(&shape, "row", "sessions"),
            at_peak(plan, &shape)
        ));
    }
    for flow in &plan.flows {
        for step in &flow.steps {
            let endpoint = plan.endpoints.get(step.endpoint).map_or("?", String::as_str);
            for (field, draw) in step_draws(step) {
                let Some(shape) = draw.shape() else { continue };
                lines.push(format!(
                    "{endpoint} {field}: {} over {}: {}",
                    draw.name(),
                    rows(shape.keys, "key"),
                    shares(&shape, "key", "draws")
                ));
            }
        }
    }
    lines
}

fn rows(count: u64, what: &str) -> String {
    format!("{} {what}{}", thousands(count), if count == 1 { "" } else { "s" })
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

/// What the hottest row gets at the plan's peak.
fn at_peak(plan: &Plan, shape: &Shape) -> String {
    let measured = plan.load.stages.iter().filter(|s| s.measure);
    let (mut rate, mut users) = (0.0_f64, 0_u32);
    for stage in measured {
        match stage.shape {
            StageShape::Rate { from, to } => rate = rate.max(from.max(to)),
            StageShape::Users(n) => users = users.max(n),
        }
    }
    if users > 0 {
        format!("; of {users} users, about {:.1} on the hottest row at once", f64::from(users) * shape.hottest)
    } else if rate > 0.0 {
        format!("; at the peak of {rate:.0} sessions/s, about {:.1}/s on the hottest row", rate * shape.hottest)
    } else {
        String::new()
    }
}

fn percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct >= 10.0 {
        format!("{pct:.0} %")
    } else if pct >= 0.1 {
        format!("{pct:.1} %")
    } else {
        format!("{pct:.3} %")
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The skewed draws of one template.
fn draws(template: &Template) -> Vec<&Draw> {
    template.expressions().filter_map(|e| if let Expr::Draw(d) = e { Some(d) } else { None }).collect()
}

/// Every skewed draw in a step's templates, with where it is: `path`, `query card`, `header x-board`, `body`.
fn step_draws(step: &super::plan::Step) -> Vec<(String, &Draw)> {
    let mut found: Vec<(String, &Draw)> = draws(&step.path).into_iter().map(|d| ("path".to_owned(), d)).collect();
    for (name, template) in &step.query {
        found.extend(draws(template).into_iter().map(|d| (format!("query {name}"), d)));
    }
    for (name, template) in &step.headers {
        found.extend(draws(template).into_iter().map(|d| (format!("header {name}"), d)));
    }
    let body: Vec<&Expr> = match &step.body {
        Some(Body::Json(json)) => json.expressions(),
        Some(Body::Text(text)) => text.expressions().collect(),
        None => Vec::new(),
    };
    found.extend(
        body.into_iter().filter_map(|e| if let Expr::Draw(d) = e { Some(("body".to_owned(), d)) } else { None }),
    );
    found
}
