//! The report of a failing run, opened in a real browser (Debian's chromium,
//! headless, driven over the DevTools protocol): no console error, no
//! request for anything outside the page, and the verdict, the first failure
//! and its timeline of the two overlapping grants inside the first 1280×800
//! screen. Screenshots land in `target/report-screenshots/`.
//!
//! The run is `storeproof certify --store sabotage:read-then-write-take
//! --suite conformance --seed 7`, saved as `fixtures/read-then-write-take.report.json`
//! (its report.json; the command made machine-independent). A saved run keeps
//! this crate free of the binary and the test free of a 10 s certify; the
//! fixture is regenerated with that command when the report model changes.
//!
//! A missing chromium fails the test, naming scripts/setup: never a silent skip.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Log, Page, Runtime};
use headless_chrome::{Browser, LaunchOptions};
use serde_json::Value;

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 800;

fn failing_run() -> model::Report {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/read-then-write-take.report.json"),
    )
    .expect("the saved report of the read-then-write sabotage");
    serde_json::from_str(&text).expect("the saved report reads as a Report")
}

/// Debian's chromium, or the one `STOREPROOF_CHROMIUM` names.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("STOREPROOF_CHROMIUM") {
        return PathBuf::from(p);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => p,
        None => panic!(
            "chromium is not installed: run scripts/setup (it installs Debian's chromium for this test), or set STOREPROOF_CHROMIUM to a Chromium binary"
        ),
    }
}

/// `target/report-screenshots`, under the workspace's target directory.
fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("report-screenshots");
    std::fs::create_dir_all(&dir).expect("create target/report-screenshots");
    dir
}

/// The box of the first element matching `selector`, in viewport pixels.
const RECTS: &str = r#"JSON.stringify((() => {
  const box = (sel) => {
    const e = document.querySelector(sel);
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height, text: e.textContent.slice(0, 200)};
  };
  return {
    inner: [window.innerWidth, window.innerHeight],
    scroll: document.documentElement.scrollHeight,
    verdict: box("header .verdict"),
    failure: box(".attention article.item h3"),
    failureId: (document.querySelector(".attention article.item") || {}).id,
    timeline: box(".attention article.item figure.timeline svg"),
    overlap: box(".attention article.item figure.timeline svg rect.overlap"),
    grants: document.querySelectorAll(".attention article.item figure.timeline svg rect.grant").length,
    replay: box(".attention article.item .replay"),
    resources: performance.getEntriesByType("resource").map(r => r.name),
    scripts: document.scripts.length,
  };
})())"#;

fn within_first_screen(what: &str, b: &Value) {
    assert!(b.is_object(), "{what}: not on the page");
    let (top, bottom) = (b["top"].as_f64().unwrap(), b["bottom"].as_f64().unwrap());
    let (left, right) = (b["left"].as_f64().unwrap(), b["right"].as_f64().unwrap());
    assert!(
        b["width"].as_f64().unwrap() > 0.0 && b["height"].as_f64().unwrap() > 0.0,
        "{what}: not drawn: {b}"
    );
    assert!(
        top >= 0.0 && bottom <= HEIGHT as f64 && left >= 0.0 && right <= WIDTH as f64,
        "{what} is not inside the first {WIDTH}×{HEIGHT} screen: {b}"
    );
}

#[test]
fn the_failing_report_shows_its_failure_and_timeline_in_the_first_screen() {
    let started = Instant::now();
    let chromium = chromium();
    let shots = screenshot_dir();
    let out = tempfile::tempdir().expect("temp dir");
    let report_dir = out.path().join("report");
    reports::write_all(&failing_run(), &report_dir).expect("write the report");
    let page = report_dir.join("index.html");

    let browser = Browser::new(LaunchOptions {
        path: Some(chromium.clone()),
        headless: true,
        // Root in CI: chromium refuses its sandbox there.
        sandbox: false,
        window_size: Some((WIDTH, HEIGHT)),
        idle_browser_timeout: Duration::from_secs(60),
        ..LaunchOptions::default()
    })
    .unwrap_or_else(|e| panic!("cannot start {} headless: {e}", chromium.display()));
    let tab = browser.new_tab().expect("a tab");
    // Two cores shared with the whole suite: a slow load is not a failure.
    tab.set_default_timeout(Duration::from_secs(60));
    tab.enable_log().expect("Log domain");
    tab.enable_runtime().expect("Runtime domain");
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&errors);
    tab.add_event_listener(Arc::new(move |event: &Event| {
        let line = match event {
            Event::RuntimeConsoleAPICalled(e)
                if matches!(
                    e.params.Type,
                    Runtime::ConsoleAPICalledEventTypeOption::Error
                        | Runtime::ConsoleAPICalledEventTypeOption::Assert
                ) =>
            {
                Some(format!("console: {:?}", e.params.args))
            }
            Event::RuntimeExceptionThrown(e) => {
                Some(format!("exception: {}", e.params.exception_details.text))
            }
            Event::LogEntryAdded(e) if e.params.entry.level == Log::LogEntryLevel::Error => {
                Some(format!("log: {}", e.params.entry.text))
            }
            _ => None,
        };
        if let Some(line) = line {
            seen.lock().unwrap().push(line);
        }
    }))
    .expect("listen to the console");
    // The viewport exactly 1280×800, whatever the window's chrome takes.
    viewport(&tab, WIDTH, HEIGHT, false);
    tab.navigate_to(&format!("file://{}", page.display()))
        .and_then(|t| t.wait_until_navigated())
        .expect("open the report");

    let found = tab.evaluate(RECTS, false).expect("measure the page");
    let found: Value = serde_json::from_str(
        found
            .value
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or("null"),
    )
    .expect("the measures as JSON");

    let first_screen = tab
        .capture_screenshot(Page::CaptureScreenshotFormatOption::Png, None, None, true)
        .expect("screenshot");
    std::fs::write(
        shots.join("read-then-write-first-screen.png"),
        &first_screen,
    )
    .expect("save");
    // The whole page, then the first screen of a phone.
    let full_height = found["scroll"].as_f64().unwrap_or(HEIGHT as f64).ceil() as u32;
    viewport(&tab, WIDTH, full_height.max(HEIGHT), false);
    let full = tab
        .capture_screenshot(Page::CaptureScreenshotFormatOption::Png, None, None, true)
        .expect("full-page screenshot");
    std::fs::write(shots.join("read-then-write-full-page.png"), &full).expect("save");
    viewport(&tab, 390, 844, true);
    let phone = tab
        .capture_screenshot(Page::CaptureScreenshotFormatOption::Png, None, None, true)
        .expect("phone screenshot");
    std::fs::write(shots.join("read-then-write-phone.png"), &phone).expect("save");
    let phone_width = tab
        .evaluate("document.documentElement.scrollWidth", false)
        .expect("measure the phone page");
    assert_eq!(
        phone_width.value.and_then(|v| v.as_f64()),
        Some(390.0),
        "on a phone the page scrolls sideways: only tables and drawings may, inside their box"
    );

    // Events still in flight are delivered before the browser closes.
    std::thread::sleep(Duration::from_millis(200));
    let errors = errors.lock().unwrap().clone();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(
        found["inner"],
        serde_json::json!([WIDTH, HEIGHT]),
        "{found}"
    );
    assert_eq!(found["scripts"], 0, "the page runs no script: {found}");
    assert_eq!(
        found["resources"],
        serde_json::json!([]),
        "the page loads nothing beside itself"
    );
    assert!(
        found["verdict"]["text"].as_str() == Some("FAIL"),
        "verdict: {found}"
    );
    within_first_screen("the verdict", &found["verdict"]);
    assert_eq!(
        found["failureId"], "conformance.lease.take-races",
        "{found}"
    );
    within_first_screen("the first failure", &found["failure"]);
    within_first_screen("its timeline", &found["timeline"]);
    within_first_screen("the overlap of the two grants", &found["overlap"]);
    assert_eq!(found["grants"], 2, "two grants drawn: {found}");
    assert!(
        first_screen.len() > 10_000,
        "the screenshot is a picture of something"
    );
    eprintln!(
        "screenshots in {} (read-then-write-first-screen.png, -full-page.png, -phone.png); {:.1} s",
        shots.display(),
        started.elapsed().as_secs_f64()
    );
}

/// Sets the page's viewport to `width`×`height` CSS pixels at scale 1.
fn viewport(tab: &headless_chrome::Tab, width: u32, height: u32, mobile: bool) {
    tab.call_method(
        headless_chrome::protocol::cdp::Emulation::SetDeviceMetricsOverride {
            width,
            height,
            device_scale_factor: 1.0,
            mobile,
            scale: None,
            screen_width: None,
            screen_height: None,
            position_x: None,
            position_y: None,
            dont_set_visible_size: None,
            screen_orientation: None,
            viewport: None,
            display_feature: None,
            device_posture: None,
        },
    )
    .expect("set the viewport");
}
