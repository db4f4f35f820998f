//! Route names where room is short. Two routes often differ only at their end (`GET /boards/{board_id}` and
//! `GET /boards/{board_id}/cards`), so a name is never cut at its end: in the page's text it wraps between
//! path segments (a phone shows it on two lines), and where it cannot wrap (an SVG chart's title) it is
//! shortened from the middle, its full text in a tooltip.

use crate::outside_text::xml_escape;

/// `name` as escaped HTML with a break opportunity (`<wbr>`) before each `/`, `?` and `&` that does not start
/// it or follow a space: `GET /boards<wbr>/{board_id}<wbr>/cards`. Browsers find no break inside a path on
/// their own, so without these a long route either overflows or is broken inside a segment.
#[must_use]
pub fn breakable(name: &str) -> String {
    let mut html = String::with_capacity(name.len() + 16);
    let mut start = 0;
    let mut previous = ' ';
    for (at, c) in name.char_indices() {
        if matches!(c, '/' | '?' | '&') && previous != ' ' && at > 0 {
            html.push_str(&xml_escape(&name[start..at]));
            html.push_str("<wbr>");
            start = at;
        }
        previous = c;
    }
    html.push_str(&xml_escape(&name[start..]));
    html
}

/// A chart's title holds at most this many characters: an SVG cannot wrap, and a phone draws chart text at
/// about 12 of the chart's 720 units a character. charts-rs centres a title by its own font's widths, and a
/// browser's face may be wider (DejaVu Sans, 1.18 times): 58 characters started off-centre and ran `second` off
/// the right edge; 52 leave room for that.
const CHART_TITLE_CHARACTERS: usize = 52;

/// `{endpoint}: {what}` for a chart's title, the endpoint shortened from the middle when the whole would not
/// fit (the page's heading above the chart names it whole).
#[must_use]
pub fn chart_title(endpoint: &str, what: &str) -> String {
    let room = CHART_TITLE_CHARACTERS.saturating_sub(what.chars().count() + 2);
    format!("{}: {what}", shortened(endpoint, room))
}

/// `name` in at most `max` characters: whole when it fits, else its start and its end around a `…`, the end
/// given twice the room of the start because that is where routes differ:
/// `GET /organizations/{org}/projects/{project}/members` → `GET /organi…{project}/members`.
#[must_use]
pub fn shortened(name: &str, max: usize) -> String {
    let count = name.chars().count();
    if count <= max || max < 4 {
        return name.to_owned();
    }
    let head = (max - 1) / 3;
    let tail = max - 1 - head;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_breaks_between_its_segments_and_stays_escaped() {
        assert_eq!(breakable("GET /boards/{board_id}/cards"), "GET /boards<wbr>/{board_id}<wbr>/cards");
        assert_eq!(breakable("GET /posts?userId=&_sort="), "GET /posts<wbr>?userId=<wbr>&amp;_sort=");
        assert_eq!(breakable("(all)"), "(all)");
        assert_eq!(breakable("/x"), "/x", "nothing to break before the start");
        assert_eq!(breakable("<script>a/b</script>"), "&lt;script&gt;a<wbr>/b&lt;<wbr>/script&gt;");
    }

    #[test]
    fn a_long_name_is_shortened_in_the_middle_keeping_its_end() {
        let long = "GET /organizations/{org}/projects/{project}/members";
        let short = shortened(long, 30);
        assert_eq!(short.chars().count(), 30);
        assert!(short.starts_with("GET /org") && short.ends_with("{project}/members"), "{short}");
        assert_eq!(shortened("GET /boards", 30), "GET /boards", "a name that fits is whole");
        assert_eq!(shortened("ééééééééé", 5), "é…ééé", "counted in characters, never cut inside one");
        let title = chart_title(long, "errors per second by class");
        assert_eq!(title.chars().count(), 52, "{title}");
        assert!(title.ends_with("/members: errors per second by class"), "{title}");
        assert_eq!(chart_title("GET /boards", "response time"), "GET /boards: response time");
    }
}
