//! The manual builds with mdBook without a warning, and every link between its pages resolves: each relative
//! `href` and `src` of the rendered HTML names a file of the book, and each `#fragment` an `id` on that page.
//! mdBook itself refuses a chapter whose file is missing (`create-missing = false`); nothing else in it
//! checks links, and mdbook-linkcheck does not run on mdBook 0.5.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The mdBook `.ci/run` installs: the book.toml keys and the rendered HTML this test reads are its.
const MDBOOK: &str = "mdbook v0.5.4";

#[test]
#[ignore = "needs mdbook 0.5.4 (`.ci/run` installs it); run with --include-ignored"]
fn the_manual_builds_without_warnings_and_every_link_resolves() {
    let version = Command::new("mdbook").arg("--version").output().expect("mdbook on the PATH");
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), MDBOOK);
    let out = tempfile::tempdir().unwrap();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let built = Command::new("mdbook").arg("build").arg(&docs).arg("--dest-dir").arg(out.path()).output().unwrap();
    let log = String::from_utf8_lossy(&built.stderr).into_owned() + &String::from_utf8_lossy(&built.stdout);
    assert!(built.status.success(), "mdbook build failed:\n{log}");
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN") || l.contains("ERROR")).collect();
    assert!(warnings.is_empty(), "mdbook warned:\n{}", warnings.join("\n"));

    let pages = html_files(out.path());
    assert!(pages.len() > 20, "only {} pages rendered", pages.len());
    let ids: BTreeMap<&PathBuf, BTreeSet<String>> =
        pages.iter().map(|(path, html)| (path, attribute_values(html, "id").into_iter().collect())).collect();
    let mut broken = Vec::new();
    // The 404 page links to the site's root: where the book is served decides that, not the book.
    for (path, html) in pages.iter().filter(|(path, _)| !path.ends_with("404.html")) {
        for link in attribute_values(html, "href").into_iter().chain(attribute_values(html, "src")) {
            if let Some(problem) = unresolved(out.path(), path, &link, &ids) {
                broken.push(format!("{}: {link}: {problem}", path.strip_prefix(out.path()).unwrap().display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links in the manual:\n{}", broken.join("\n"));
}

/// Every HTML file under `dir`, with its text.
fn html_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(html_files(&path));
        } else if path.extension().is_some_and(|e| e == "html") {
            let html = std::fs::read_to_string(&path).unwrap();
            found.push((path, html));
        }
    }
    found
}

/// The values of `name="…"` attributes in `html`, entities as mdBook writes them decoded.
fn attribute_values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    html.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            Some(rest[..rest.find('"')?].replace("&amp;", "&"))
        })
        .collect()
}

/// Why `link` on `page` leads nowhere, if it does: a missing file, or a fragment with no such id there.
fn unresolved(root: &Path, page: &Path, link: &str, ids: &BTreeMap<&PathBuf, BTreeSet<String>>) -> Option<String> {
    let outside = ["http:", "https:", "mailto:", "//", "javascript:", "data:"];
    if outside.iter().any(|scheme| link.starts_with(scheme)) || link.is_empty() {
        return None;
    }
    let (file, fragment) = link.split_once('#').map_or((link, None), |(f, frag)| (f, Some(frag)));
    let file = file.split('?').next().unwrap_or_default();
    let target = if file.is_empty() { page.to_owned() } else { normalised(&page.parent().unwrap().join(file)) };
    let target = if target.is_dir() { target.join("index.html") } else { target };
    if !target.starts_with(root) || !target.exists() {
        return Some("no such file in the book".to_owned());
    }
    let fragment = fragment.filter(|f| !f.is_empty())?;
    let known = ids.get(&target).is_some_and(|ids| ids.contains(fragment));
    (!known).then(|| format!("no id `{fragment}` on that page"))
}

/// `path` with its `.` and `..` parts resolved, without asking the file system.
fn normalised(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
