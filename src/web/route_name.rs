//! Names where room is short (a grid column's build, for now): never cut at the end, where two of them
//! usually differ (`1.4.2-rc.1` and `1.4.2-rc.2`), but shortened from the middle, their full text in a tooltip.

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
    fn a_long_name_is_shortened_in_the_middle_keeping_its_end() {
        let long = "GET /organizations/{org}/projects/{project}/members";
        let short = shortened(long, 30);
        assert_eq!(short.chars().count(), 30);
        assert!(short.starts_with("GET /org") && short.ends_with("{project}/members"), "{short}");
        assert_eq!(shortened("GET /boards", 30), "GET /boards", "a name that fits is whole");
        assert_eq!(shortened("ééééééééé", 5), "é…ééé", "counted in characters, never cut inside one");
    }
}
