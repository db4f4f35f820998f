//! The manual read as its tests need it: the pages of `docs/src/`, their sections and their tables, as a
//! reader sees them (fenced blocks are not tables, a `|` inside a code span does not split a cell).

use std::path::Path;

/// The text of the manual's page `docs/src/{page}`.
pub fn page(page: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src").join(page);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A table: its header cells and its rows' cells, trimmed.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The tables of `markdown` whose first header cell is `first`.
pub fn tables_headed(markdown: &str, first: &str) -> Vec<Table> {
    tables(markdown).into_iter().filter(|t| t.header.first().is_some_and(|h| h == first)).collect()
}

/// Every table of `markdown`, outside fenced blocks.
pub fn tables(markdown: &str) -> Vec<Table> {
    let mut found: Vec<Table> = Vec::new();
    let mut current: Option<Table> = None;
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let row = line.trim();
        if fenced || !row.starts_with('|') {
            found.extend(current.take());
            continue;
        }
        let cells = cells(row);
        match &mut current {
            None => current = Some(Table { header: cells, rows: Vec::new() }),
            Some(_) if cells.iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':'))) => {}
            Some(table) => table.rows.push(cells),
        }
    }
    found.extend(current);
    found
}

/// The cells of one table row: split at `|` outside code spans.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut in_code = false;
    for c in inner.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                cells.last_mut().unwrap().push(c);
            }
            '|' if !in_code => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The contents of the code spans of `text`, in order.
pub fn code_spans(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// A heading and the text under it, up to the next heading of the same level or above.
pub struct Section {
    pub title: String,
    pub text: String,
}

/// The sections of `markdown` headed at `level` (2 for `##`), each with its subsections.
pub fn sections(markdown: &str, level: usize) -> Vec<Section> {
    let marker = "#".repeat(level) + " ";
    let mut found: Vec<Section> = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let depth = line.chars().take_while(|&c| c == '#').count();
        let heading = !fenced && depth > 0 && line[depth..].starts_with(' ');
        if heading && depth <= level {
            if let Some(title) = line.strip_prefix(&marker) {
                found.push(Section { title: title.trim().to_owned(), text: String::new() });
                continue;
            }
            found.push(Section { title: String::new(), text: String::new() });
            continue;
        }
        if let Some(section) = found.last_mut() {
            section.text += line;
            section.text.push('\n');
        }
    }
    found.retain(|s| !s.title.is_empty());
    found
}

#[test]
fn tables_and_sections_are_read_as_a_reader_sees_them() {
    let text = "# Page\n\n## `a`\n\n| key | x |\n|---|---|\n| `b|c` | d |\n\n```text\n| not | a table |\n```\n\
                ### sub\ntext\n## `e`\nmore\n";
    let found = tables(text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].header, ["key", "x"]);
    assert_eq!(found[0].rows, [["`b|c`", "d"]]);
    assert_eq!(code_spans("`a` and `b c`"), ["a", "b c"]);
    let found = sections(text, 2);
    assert_eq!(found.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(), ["`a`", "`e`"]);
    assert!(found[0].text.contains("### sub") && found[0].text.contains("| key |"));
}
