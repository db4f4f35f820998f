//! Text that comes from outside degrade (a target's answers, a webhook receiver's reply, a build id, a
//! deploy's output) made safe to print and store: control characters, and so terminal escape sequences,
//! are shown as `\u{1b}`-style escapes, and a long value is cut at a character boundary; text bound for
//! markup is escaped; and every text the store writes goes through [`storable`], so no NUL reaches a
//! database, whatever a caller forgot.

use std::borrow::Cow;

/// `text` with every control character but newline and tab written out as `\u{…}`, so a terminal never
/// acts on it (a target could otherwise move the cursor, retitle the window, or hide lines of a report).
#[must_use]
pub fn printable(text: &str) -> String {
    if !text.chars().any(is_unsafe) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as a database can hold it: U+0000, which PostgreSQL's text type refuses outright (one NUL in an
/// endpoint name or an error message would fail the whole transaction, and the night with it), written out as
/// `\u{0}` as [`printable`] writes it; the rest kept as it is, without a copy when there is no NUL.
#[must_use]
pub fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') { Cow::Owned(text.replace('\0', "\\u{0}")) } else { Cow::Borrowed(text) }
}

/// [`printable`], cut to at most `max_chars` characters with `…` marking the cut.
#[must_use]
pub fn clipped(text: &str, max_chars: usize) -> String {
    let mut shown: String = text.chars().take(max_chars).collect();
    if text.chars().nth(max_chars).is_some() {
        shown.push('…');
    }
    printable(&shown)
}

/// Text safe inside XML and HTML markup (JUnit reports, the dashboard's SVG), in content and in attribute
/// values; drops the control characters XML 1.0 cannot hold.
#[must_use]
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_xml_escaped(&mut out, text);
    out
}

/// [`xml_escape`] written onto the end of `out`: a dashboard page escapes thousands of tooltips, so the text
/// between the characters that need escaping is copied as whole slices rather than a character at a time.
pub fn push_xml_escaped(out: &mut String, text: &str) {
    let mut copied = 0;
    for (at, c) in text.char_indices() {
        let replacement = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&apos;",
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => "",
            _ => continue,
        };
        out.push_str(&text[copied..at]);
        out.push_str(replacement);
        copied = at + c.len_utf8();
    }
    out.push_str(&text[copied..]);
}

fn is_unsafe(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escape_escapes_markup_and_drops_control_characters() {
        assert_eq!(
            xml_escape("GET /a?b=1&c=<x> \"q\" 'y'\u{1}"),
            "GET /a?b=1&amp;c=&lt;x&gt; &quot;q&quot; &apos;y&apos;"
        );
        assert_eq!(xml_escape("é\u{85}<ü>\tok"), "é&lt;ü&gt;\tok", "slices end on character boundaries");
    }

    #[test]
    fn escapes_are_written_out_and_plain_text_is_kept() {
        assert_eq!(printable("\u{1b}[2J\u{1b}]0;pwned\u{7}ok"), "\\u{1b}[2J\\u{1b}]0;pwned\\u{7}ok");
        assert_eq!(printable("line one\nline\ttwo é"), "line one\nline\ttwo é");
        assert_eq!(printable("\r\u{9b}31m"), "\\u{d}\\u{9b}31m");
    }

    #[test]
    fn a_nul_is_written_out_for_the_database_and_other_text_is_not_copied() {
        assert_eq!(storable("step\u{0}nul"), "step\\u{0}nul");
        assert!(matches!(storable("plain\ttext\n"), Cow::Borrowed("plain\ttext\n")));
    }

    #[test]
    fn clipping_counts_characters_and_marks_the_cut() {
        assert_eq!(clipped("ééééé", 3), "ééé…");
        assert_eq!(clipped("abc", 3), "abc");
        assert_eq!(clipped("\u{1b}[31mred", 4), "\\u{1b}[31…");
    }
}
