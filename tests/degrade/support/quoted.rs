//! What the README (and the manual in `docs/`, once it exists) quotes of degrade's output is what degrade
//! prints. Each quoted block is marked `<!-- output: NAME -->` on the line before its fence, and a test that
//! makes degrade print that output calls [`assert_quoted`] with it: the quote cannot drift from the program.
//!
//! A quote is compared with the printed text as a reader compares them: numbers aside (every run measures
//! its own), whitespace aside (tables align to their widths, and the README wraps long lines), with `…` in
//! the quote standing for text it leaves out. The words must be the same, in the same order.

use std::path::{Path, PathBuf};

/// One marked block of a document.
pub struct Quote {
    /// The `NAME` of its `<!-- output: NAME -->` marker.
    pub name: String,
    /// `README.md:92`, for messages.
    pub place: String,
    pub text: String,
}

/// The marker that names the block after it.
const MARKER: &str = "<!-- output: ";

/// The README and every Markdown file under `docs/`, with their paths relative to the crate.
pub fn documents() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("README.md")];
    collect_markdown(&root.join("docs"), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.strip_prefix(root).unwrap().display().to_string(), text)
        })
        .collect()
}

fn collect_markdown(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_markdown(&path, into);
        } else if path.extension().is_some_and(|e| e == "md") {
            into.push(path);
        }
    }
}

/// A fenced block: where its fence opens, its info string (`sh`, `text`, or empty) and its lines.
pub struct Block {
    pub line: usize,
    pub info: String,
    pub text: String,
    /// The marker's name on the line before the fence, if any.
    pub marker: Option<String>,
}

/// The fenced blocks of a Markdown text.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let Some(info) = lines[at].trim_start().strip_prefix("```") else {
            at += 1;
            continue;
        };
        let marker = at.checked_sub(1).and_then(|before| marker_name(lines[before]));
        let end = (at + 1..lines.len()).find(|&i| lines[i].trim_start().starts_with("```")).unwrap_or(lines.len());
        let text = lines[at + 1..end].join("\n");
        found.push(Block { line: at + 1, info: info.trim().to_owned(), text, marker });
        at = end + 1;
    }
    found
}

fn marker_name(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix(MARKER)?.strip_suffix("-->")?;
    Some(rest.trim().to_owned())
}

/// Every marked block of every document.
pub fn quotes() -> Vec<Quote> {
    let mut quotes = Vec::new();
    for (path, text) in documents() {
        for block in blocks(&text) {
            if let Some(name) = block.marker {
                quotes.push(Quote { name, place: format!("{path}:{}", block.line), text: block.text });
            }
        }
    }
    quotes
}

/// Asserts that every block marked `<!-- output: NAME -->` (there must be one at least) is what `printed`
/// says, numbers, spacing and the quote's `…` aside.
pub fn assert_quoted(name: &str, printed: &str) {
    let quotes: Vec<Quote> = quotes().into_iter().filter(|q| q.name == name).collect();
    assert!(!quotes.is_empty(), "no document marks a block `<!-- output: {name} -->`");
    let normal = normalized(printed);
    for quote in quotes {
        let wanted = normalized(&quote.text);
        if let Err(missing) = appears_in_order(&wanted, &normal) {
            panic!(
                "{} quotes output `{name}` that degrade does not print: `{missing}` (numbers shown as N, spaces \
                 collapsed, … leaving text out) is not in what it printed:\n\n{printed}\n",
                quote.place
            );
        }
    }
}

/// The words of `text` with every number (`12`, `44.9`, `2026-11-28`'s parts, `1,024`) as `N`, every change
/// (`+31.9 %`, `×316`) as `Δ`, and every run of whitespace as one space.
pub fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            // `44.9` and `1,024` are one number; `1.` at the end of a sentence is not.
            while matches!(chars.peek(), Some('.' | ',')) {
                let mut ahead = chars.clone();
                ahead.next();
                if !ahead.peek().is_some_and(char::is_ascii_digit) {
                    break;
                }
                chars.next();
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
            }
            out.push('N');
        } else if c.is_whitespace() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    // A change is a number too, written `+31.9 %` below ten times and `×316` or `÷20` past it: a quote's
    // `×70.0` is what a slower machine prints as `+740.0 %`.
    let out = ["+N %", "-N %", "−N %", "×N", "÷N"].iter().fold(out, |text, change| text.replace(change, "Δ"));
    out.trim_end().to_owned()
}

/// Whether the pieces of `quote` between its `…` appear in `printed` in order; else the first that does not.
fn appears_in_order<'q>(quote: &'q str, printed: &str) -> Result<(), &'q str> {
    let mut from = 0;
    for piece in quote.split('…').map(str::trim).filter(|p| !p.is_empty()) {
        match printed[from..].find(piece) {
            Some(at) => from += at + piece.len(),
            None => return Err(piece),
        }
    }
    Ok(())
}

#[test]
fn numbers_and_spacing_aside_the_words_must_match_in_order() {
    assert_eq!(
        normalized("p95  2.0 ms -> 44.9 ms\n  (+2153.6 %, 1,024 of 2026-11-28)."),
        "pN N ms -> N ms (Δ, N of N-N-N)."
    );
    assert_eq!(normalized("(×22.5, ±3.9 %)"), normalized("(+740.0 %, ±1.2 %)"));
    assert!(
        appears_in_order(
            &normalized("run #41 was judged … rerun #42"),
            &normalized("run #7 was judged regressed, and rerun #8")
        )
        .is_ok()
    );
    assert_eq!(appears_in_order("a … c", "c a"), Err("c"));
    let block = "text\n<!-- output: demo -->\n```text\nRun 1\n```\n```sh\nls\n```\n";
    let found = blocks(block);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].marker.as_deref(), found[0].text.as_str(), found[0].line), (Some("demo"), "Run 1", 3));
    assert_eq!((found[1].marker.as_deref(), found[1].info.as_str()), (None, "sh"));
}
