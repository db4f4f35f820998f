//! The dashboard in a real browser: Debian's headless Chromium (installed by `.ci/run`) renders the
//! overview, the trend page and a run page at 1400 px and 400 px. Screenshots prove something was drawn;
//! the rendered DOM proves what a reader sees: nothing wider than a phone's screen, the summary naming the
//! regressed endpoint, chart points linked to their runs.
//!
//! The page is read through a small proxy on 127.0.0.1 that appends one script to each HTML answer: it
//! writes the page's layout width into the DOM, which `--dump-dom` then prints. The dashboard itself ships
//! no JavaScript.

use std::path::{Path, PathBuf};

use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};

use crate::support::TestDb;
use crate::support::app::TestApp;

const CHROMIUM: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/// Writes whether anything overflows the viewport, and by how much, into `<body data-overflow=…>`.
const MEASURE: &str = "<script>document.body.setAttribute('data-overflow', \
    String(document.documentElement.scrollWidth - window.innerWidth));</script>";

/// Serves the app's answers with [`MEASURE`] appended to HTML; everything else unchanged.
async fn measuring_proxy(app: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let router = axum::Router::new().fallback(forward).with_state(app.to_owned());
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

async fn forward(State(app): State<String>, uri: Uri) -> Response {
    let answer = crate::support::http_client().get(format!("{app}{uri}")).send().await.unwrap();
    let status = answer.status();
    let kind = answer.headers().get("content-type").cloned();
    let body = answer.text().await.unwrap();
    let html = kind.as_ref().is_some_and(|k| k.to_str().unwrap_or("").starts_with("text/html"));
    let body = if html { body.replace("</body>", &format!("{MEASURE}</body>")) } else { body };
    let mut response = (status, body).into_response();
    if let Some(kind) = kind {
        response.headers_mut().insert("content-type", kind);
    }
    response
}

/// Runs Chromium headless at `width` px on `url` with `mode` (`--dump-dom`, or `--screenshot=FILE`);
/// returns what it printed.
async fn chromium(binary: &str, profile: &Path, width: u32, mode: &str, url: &str) -> String {
    let mut browser = tokio::process::Command::new(binary);
    browser
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},1600"))
        .args(["--hide-scrollbars", mode, url])
        .kill_on_drop(true);
    let output = tokio::time::timeout(std::time::Duration::from_mins(2), browser.output()).await.unwrap().unwrap();
    assert!(output.status.success(), "chromium failed on {url}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn installed() -> &'static str {
    CHROMIUM.into_iter().find(|p| Path::new(p).exists()).expect("chromium: .ci/run installs Debian's package")
}

#[tokio::test]
#[ignore = "needs Chromium: apt-get install chromium, and pass --include-ignored (.ci/run does both)"]
async fn pages_read_right_in_a_browser_at_1400_and_400_px() {
    let binary = installed();
    let db = TestDb::sqlite();
    let app = TestApp::spawn(&db).await;
    let last = app.store_nights(10).await;
    crate::support::exporters::store_telemetry(&app.store, last).await;
    let proxy = measuring_proxy(&app.address).await;
    let dir = tempfile::tempdir().unwrap();
    let pages = ["/".to_owned(), "/scenarios/checkout?range=30d".to_owned(), format!("/runs/{last}")];
    for page in &pages {
        let url = format!("{proxy}{page}");
        for width in [1400, 400] {
            let profile = dir.path().join(format!("profile-{width}"));
            let dom = chromium(binary, &profile, width, "--dump-dom", &url).await;
            let overflow: i64 = dom
                .split("data-overflow=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("{page} at {width} px: the measuring script did not run: {dom}"))
                .parse()
                .unwrap();
            assert!(overflow <= 0, "{page} at {width} px is {overflow} px wider than the screen");
            let shot: PathBuf = dir.path().join(format!("shot-{width}.png"));
            chromium(binary, &profile, width, &format!("--screenshot={}", shot.display()), &url).await;
            let png = std::fs::read(&shot).unwrap();
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG file");
            // A blank page compresses to a few KB; charts, tables and text make it far larger.
            assert!(png.len() > 20_000, "{page} at {width} px looks empty: {} bytes", png.len());
            if page.starts_with("/runs/") {
                assert!(dom.contains("class=\"server-side-chart\"") && dom.contains("db: telemetry missing"), "{dom}");
            }
            if page.starts_with("/scenarios/") {
                assert!(
                    dom.contains(r#"<tr class="worse"><td><span class="endpoint">GET /boards/{id}</span>"#),
                    "{dom}"
                );
                // The link holds the point's tooltip, then its dot.
                let point = format!(r#"<a href="/runs/{last}"><title>run #{last}, "#);
                let linked = dom.split(&point).nth(1).and_then(|rest| rest.split("</a>").next()).unwrap_or_default();
                assert!(linked.contains(r#"<circle class="point""#), "{dom}");
            }
        }
    }
}
