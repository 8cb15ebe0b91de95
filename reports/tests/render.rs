//! The renderings of a hand-made report, pinned: report.json keeps
//! docs/CONTRACTS.md §3's fields, junit.xml has a test case per check,
//! index.html is self-contained and shows each failure's steps; writing never
//! leaves a half report.

use std::collections::BTreeMap;
use std::path::Path;

use model::evidence::Evidence;
use model::figures::{
    ConformanceFigures, ExplorerFigures, FaultsFigures, SkewFigures, Stats, WorkloadFigures,
};
use model::{
    CheckResult, Level, Report, RunSection, RunVerdict, ServerSection, StoreSection, Verdict,
};
use serde_json::json;

fn check(id: &str, level: Level, verdict: Verdict, reason: &str) -> CheckResult {
    CheckResult {
        outside_claim: false,
        id: id.into(),
        suite: id.split('.').next().unwrap_or("").into(),
        level,
        verdict,
        reason: reason.into(),
        evidence: Evidence::None,
        counterexample: None,
        violations: Vec::new(),
        seconds: 0.25,
        about: String::new(),
    }
}

fn report() -> Report {
    let mut failing = check(
        "explorer.one-live-holder",
        Level::Must,
        Verdict::Fail,
        "two live holders at server time 2000000000500 <a & b>",
    );
    failing.counterexample = serde_json::from_value(json!({
        "kind": "explorer-schedule",
        "property": "one-live-holder",
        "schedule": {"skews": [0, 500], "actions": [{"start": [0, "take"]}]},
        "steps": [
            {"step": 0, "what": "start", "server_ms": 2000000000000i64},
            {"step": 1, "what": "a: take", "server_ms": 2000000000000i64,
             "commands": ["EVALSHA abc 1 sp:x:lease:t a 1000"],
             "answer": {"granted": {"epoch": 1, "expires_at_ms": 2000000001000i64}}},
        ],
    }))
    .unwrap();
    Report {
        storeproof: "0.1.0".into(),
        verdict: RunVerdict::Fail,
        store: StoreSection {
            spec: "builtin:redis".into(),
            name: "storeproof-redis".into(),
            version: "0.1.0".into(),
            contracts: vec!["lease".into(), "queue".into(), "rate".into()],
        },
        server: ServerSection {
            version: "7.0.15".into(),
            managed: true,
            settings: BTreeMap::from([("appendfsync".into(), "always".into())]),
            name: None,
            product: None,
        },
        checks: vec![
            check(
                "conformance.lease.take-busy",
                Level::Must,
                Verdict::Pass,
                "busy",
            ),
            check(
                "conformance.lease.expiry-at-instant",
                Level::Should,
                Verdict::Warn,
                "busy at the instant",
            ),
            check(
                "conformance.rate.window-slides",
                Level::Must,
                Verdict::Skipped,
                "needs a managed server",
            ),
            failing,
        ],
        stats: Stats {
            conformance: Some(ConformanceFigures {
                checks: 3,
                pass: 1,
                skipped: 1,
                fail: 1,
                seconds: 0.5,
                ..Default::default()
            }),
            layout: None,
            sabotage: None,
            faults: Some(FaultsFigures {
                seed: 7,
                workloads: vec![WorkloadFigures {
                    layout: "coordination".into(),
                    stores: [("lease", "the store under test")]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                    instances: 3,
                    operations: 120,
                    ok: 110,
                    refused: 4,
                    unknown: 6,
                    faults: [("lose_reply_after_apply".to_string(), 2)].into_iter().collect(),
                    children_saved: 30,
                    children_done: 29,
                    trees_judged: 2,
                    seconds: 1.5,
                    ..WorkloadFigures::default()
                }],
                seconds: 3.0,
            }),
            explorer: Some(ExplorerFigures {
                per_skew: vec![SkewFigures {
                    skew_ms: 0,
                    depth: 8,
                    states: 27016,
                    unique_states: 6677,
                    max_depth: 8,
                    transitions: 27015,
                    seconds: 4.0,
                    transitions_per_second: 6754.0,
                    round_trips_per_transition: 2.43,
                    zombie_renew_reached: true,
                    zombie_release_reached: false,
                    ..SkewFigures::default()
                }],
                depth: 8,
                walks: 200,
                walk_steps: 4000,
                walk_seconds: 2.0,
                walk_digest: "00c0ffee".into(),
                seed: 1,
                seconds: 38.0,
                transitions: 27015,
                round_trips: 65646,
                wall_seconds: Some(40.0),
                ..ExplorerFigures::default()
            }),
            crash: Some(serde_json::from_value(json!({
                "backend": "docker", "docker_unavailable": null, "kills": 1,
                "acknowledged": 60, "lost": 0, "trouble": null,
                "per_kill": [{"kill": 1, "epochs_acknowledged": 20, "epochs_lost": 0,
                              "renews_acknowledged": 5, "renews_not_judged": 0, "renews_lost": 0,
                              "children_acknowledged": 15, "children_lost": 0,
                              "claims_acknowledged": 6, "claims_lost": 0,
                              "completions_acknowledged": 4, "completions_lost": 0,
                              "pauses_acknowledged": 10, "pauses_lost": 0, "in_flight": 4}],
                "opt_out": {"kills": 1, "acknowledged": 50, "lost": 31, "kills_showing_loss": 1,
                            "trouble": null,
                            "per_kill": [{"kill": 1, "epochs_acknowledged": 18, "epochs_lost": 12,
                                          "renews_acknowledged": 3, "renews_not_judged": 0, "renews_lost": 3,
                                          "children_acknowledged": 12, "children_lost": 12,
                                          "claims_acknowledged": 4, "claims_lost": 4,
                                          "completions_acknowledged": 3, "completions_lost": 0,
                                          "pauses_acknowledged": 10, "pauses_lost": 0, "in_flight": 4}]},
                "power_loss": {"always": {"kills": 0, "per_kill": [],
                                          "trouble": "kill 1 of 1: could not restart the server: <gone>"}},
            })).unwrap()),
        },
        run: RunSection {
            seed: 1,
            prefix: "sp:0000002a:".into(),
            store: "builtin:redis".into(),
            keys: "managed server, removed with it".into(),
            opt_out: None,
            command: vec!["storeproof".into(), "certify".into(), "--seed".into(), "1".into()],
            ..Default::default()
        },
        per_server: Vec::new(),
    }
}

#[test]
fn report_json_keeps_the_spec_fields() {
    let text = reports::render_json(&report()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in [
        "storeproof",
        "verdict",
        "store",
        "server",
        "checks",
        "stats",
    ] {
        assert!(v.get(field).is_some(), "no {field}");
    }
    insta::assert_snapshot!("report_json", text);
}

#[test]
fn junit_has_a_case_per_check() {
    let xml = reports::render_junit(&report());
    assert_eq!(xml.matches("<testcase").count(), 4);
    insta::assert_snapshot!("junit_xml", xml);
}

#[test]
fn html_is_self_contained_and_shows_the_failing_steps() {
    let html = reports::render_html(&report());
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    assert!(html.contains("FAIL"));
    assert!(html.contains("EVALSHA abc 1 sp:x:lease:t a 1000"));
    assert!(html.contains("&lt;a &amp; b&gt;"), "text is escaped");
    assert!(html.contains("Crash log") && html.contains("docker"));
    // The style sheet is pinned by the browser test's look, not here.
    let (head, rest) = html.split_once("<style>").unwrap();
    let (_, body) = rest.split_once("</style>").unwrap();
    let page = format!("{head}<style>…</style>{body}");
    insta::assert_snapshot!("index_html", page.replace("><", ">\n<"));
}

/// The report of a real failing run: `storeproof certify --store
/// sabotage:read-then-write-take --suite conformance --seed 7` (its
/// report.json; regenerate it with that command when the model changes).
fn read_then_write_run() -> Report {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/read-then-write-take.report.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The part of `html` from `start` to the next `end` (inclusive), one tag a
/// line, with the run's unstable values (seed, key prefix) named instead.
fn part(html: &str, start: &str, end: &str, run: &RunSection) -> String {
    let from = html.find(start).unwrap_or_else(|| panic!("no {start}"));
    let len = html[from..].find(end).unwrap_or_else(|| panic!("no {end}")) + end.len();
    html[from..from + len]
        .replace(&run.prefix, "sp:RUN:")
        .replace(&format!("--seed {}", run.seed), "--seed SEED")
        .replace(&format!("<code>{}</code>", run.seed), "<code>SEED</code>")
        .replace("><", ">\n<")
}

#[test]
fn the_first_failure_comes_first_with_its_timeline_and_replay() {
    let r = read_then_write_run();
    let html = reports::render_html(&r);
    // Verdict, then what needs attention, before anything else.
    let order: Vec<usize> = [
        "class=\"verdict fail\"",
        "id=\"attention\"",
        "id=\"conformance.lease.take-races\"",
        "id=\"timeline-conformance.lease.take-races\"",
        "storeproof replay",
        "id=\"certificate\"",
        "id=\"checks\"",
    ]
    .iter()
    .map(|m| html.find(m).unwrap_or_else(|| panic!("no {m}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    // The failure's timeline: both grants, their overlap in server time.
    let attention = part(&html, "<section class=\"attention\"", "</section>", &r.run);
    assert_eq!(attention.matches("class=\"grant\"").count(), 2);
    assert_eq!(attention.matches("class=\"overlap\"").count(), 1);
    assert!(attention.contains("a and b both held the lease from server ms"));
    // The fenced checks are outside the claim: not asking for attention.
    assert!(!attention.contains("conformance.fenced"));
    assert!(html.contains("What needs attention (1)"));
    insta::assert_snapshot!("attention_read_then_write", attention);
}

#[test]
fn the_certificate_names_what_was_certified_and_how_to_repeat_it() {
    let r = read_then_write_run();
    let html = reports::render_html(&r);
    let cert = part(
        &html,
        "<section class=\"certificate\"",
        "</section>",
        &r.run,
    );
    assert!(cert.contains("nothing: a MUST check failed"), "{cert}");
    assert!(
        cert.contains(
            "<code>storeproof certify --store sabotage:read-then-write-take --suite conformance --seed SEED</code>"
        ),
        "{cert}"
    );
    insta::assert_snapshot!("certificate_read_then_write", cert);
    // A whole passing run certifies its claimed contracts; a partial one
    // says what it left out; the badge follows.
    let mut pass = report();
    pass.verdict = RunVerdict::Pass;
    let badge = reports::render_badge(&pass);
    assert!(badge.contains(">pass: lease queue rate</text>"), "{badge}");
    assert!(reports::render_html(&pass).contains("<b>lease, queue, rate</b>"));
    pass.run.suites_left_out = vec!["crash".into()];
    assert!(reports::render_badge(&pass).contains(">pass, partial</text>"));
    assert!(reports::render_html(&pass).contains("left out crash; a certificate needs every suite"));
    insta::assert_snapshot!("badge_fail", reports::render_badge(&r));
}

#[test]
fn checks_are_grouped_by_suite_and_contract_and_filterable() {
    let r = read_then_write_run();
    let html = reports::render_html(&r);
    let checks = part(&html, "<section class=\"checks\"", "</section>", &r.run);
    for contract in [
        "§4.2 Lease",
        "§4.3 Queue",
        "§4.4 Rate limits",
        "§4.5 Fenced effects",
    ] {
        assert!(checks.contains(contract), "no {contract}");
    }
    // Every check once, the failing one linking to its explanation.
    assert_eq!(checks.matches("<tr class=").count(), r.checks.len());
    assert_eq!(checks.matches("<tr class=\"needs\">").count(), 1);
    assert!(checks.contains("<a href=\"#conformance.lease.take-races\">"));
    // The filter is two radio buttons and CSS; the calm groups hide.
    assert!(checks.contains("id=\"show-attention\""));
    assert!(html.contains("input[id$=show-attention]:checked~.groups tr.ok"));
    insta::assert_snapshot!("checks_read_then_write", checks);
}

#[test]
fn replay_files_come_with_every_counterexample() {
    let files = reports::replay_files(&report());
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "replays/explorer.one-live-holder.json");
    let v: serde_json::Value = serde_json::from_str(&files[0].1).unwrap();
    assert_eq!(v["check"], "explorer.one-live-holder");
    assert_eq!(v["store"], "builtin:redis");
    assert_eq!(v["counterexample"]["schedule"]["skews"], json!([0, 500]));
}

#[test]
fn writing_replaces_the_old_report_whole_and_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    reports::write_all(&report(), &out).unwrap();
    assert!(out.join(reports::MARKER).exists());
    // A replay of the previous run that this run does not have.
    std::fs::write(out.join("replays/crash.old.json"), "{}").unwrap();
    reports::write_all(&report(), &out).unwrap();
    assert!(out.join("index.html").exists() && out.join("junit.xml").exists());
    assert!(out.join("replays/explorer.one-live-holder.json").exists());
    assert!(
        !out.join("replays/crash.old.json").exists(),
        "the old report was not replaced whole"
    );
    // A parent that is a file: an error, and nothing half-written beside it.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    assert!(reports::write_all(&report(), &blocker.join("r")).is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// The one-line refusal of `--out`, as text.
fn refusal(dir: &Path) -> String {
    let err = reports::check_out_dir(dir).expect_err("refused");
    let text = err.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(
        reports::write_all(&report(), dir).is_err(),
        "write_all wrote where check_out_dir refused"
    );
    text
}

#[test]
fn a_directory_of_someone_elses_files_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // A folder of the user's files.
    let mine = dir.path().join("thesis");
    std::fs::create_dir_all(mine.join("chapters")).unwrap();
    std::fs::write(mine.join("draft.txt"), "years of work").unwrap();
    assert!(refusal(&mine).contains("holds no storeproof report"));
    assert_eq!(
        std::fs::read_to_string(mine.join("draft.txt")).unwrap(),
        "years of work"
    );
    assert!(mine.join("chapters").is_dir());
    // A file.
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    assert!(refusal(&file).contains("is a file"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    // A previous report the user added a file to.
    let old = dir.path().join("report");
    reports::write_all(&report(), &old).unwrap();
    std::fs::write(old.join("my-notes.md"), "keep").unwrap();
    assert!(refusal(&old).contains("my-notes.md"));
    assert!(old.join("my-notes.md").exists() && old.join("report.json").exists());
    // A report written before the marker existed is still a report.
    let older = dir.path().join("older");
    reports::write_all(&report(), &older).unwrap();
    std::fs::remove_file(older.join(reports::MARKER)).unwrap();
    reports::check_out_dir(&older).unwrap();
    // But an index.html and a report.json that is not one are the user's.
    std::fs::write(older.join("report.json"), "{\"mine\": 1}").unwrap();
    assert!(refusal(&older).contains("holds no storeproof report"));
    // The current directory, and /.
    assert!(refusal(Path::new(".")).contains("current directory"));
    let cwd = std::env::current_dir().unwrap();
    assert!(refusal(&cwd).contains("current directory"));
    assert!(refusal(Path::new("/")).contains("root directory"));
    // A new directory and an empty one are fine.
    reports::check_out_dir(&dir.path().join("new/deeper")).unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    reports::write_all(&report(), &empty).unwrap();
    assert!(empty.join("report.json").exists());
}

#[test]
fn no_password_in_any_file_of_the_report() {
    let secret = "hunter2-s3cret";
    let mut r = report();
    r.run.command = vec![
        "storeproof".into(),
        "certify".into(),
        format!("--redis-url=redis://:{secret}@10.0.0.1:6379/0"),
        "--store".into(),
        format!("cmd:./adapter --url rediss://app:{secret}@cache:6380"),
    ];
    r.store.spec = format!("cmd:./adapter --url rediss://app:{secret}@cache:6380");
    r.checks[3].reason = format!("the adapter said: cannot reach redis://u:{secret}@h:1/");
    // A call's answer quoting the URL the adapter was given.
    r.checks[3].evidence = serde_json::from_value(json!({"calls": [{
        "call": {"op": "lease.read", "args": {"tree": "t"}},
        "answer": {"error": {"kind": "unavailable",
                             "message": format!("cannot reach redis://:{secret}@h:1/")}}
    }]}))
    .unwrap();
    assert!(matches!(r.checks[3].evidence, Evidence::Calls(_)));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    reports::write_all(&r, &out).unwrap();
    let mut files = vec![out.clone()];
    let mut seen = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains(secret),
            "{} holds the password",
            path.display()
        );
        seen += 1;
    }
    assert_eq!(
        seen, 6,
        "marker, report.json, junit.xml, index.html, badge.svg, a replay"
    );
    let json = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(json.contains("redis://:***@10.0.0.1:6379/0"), "{json}");
}

#[test]
fn control_characters_never_reach_the_xml_or_html() {
    let mut r = report();
    r.checks[2].verdict = Verdict::Unknown;
    r.checks[2].reason = "the adapter wrote \u{1b}[31mred\u{7}\u{0} and \u{8}".into();
    r.checks[3].reason = "bell \u{7} in a failure".into();
    for text in [reports::render_junit(&r), reports::render_html(&r)] {
        let bad: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
            .collect();
        assert!(bad.is_empty(), "raw control characters {bad:?}");
        assert!(
            text.contains("\\u{1b}[31mred\\u{7}\\u{0}"),
            "shown, not dropped"
        );
    }
}

/// A run on several servers: one section per server in the page (anchors
/// named for the server), a JUnit suite per server and suite, replay files
/// named for the server they failed on, and the verdict over them all.
#[test]
fn several_servers_get_a_section_each_and_the_verdict_over_all() {
    let mut on_valkey = report();
    on_valkey.server.name = Some("valkey-9".into());
    on_valkey.server.product = Some("Valkey 9.1.2".into());
    let mut on_redis = report();
    on_redis.server.name = Some("redis-6.2".into());
    on_redis.verdict = RunVerdict::Pass;
    on_redis.checks.retain(|c| c.verdict == Verdict::Pass);
    let both = Report::of_servers(vec![on_redis, on_valkey]).unwrap();
    assert_eq!(both.verdict, RunVerdict::Fail);
    assert!(both.checks.is_empty());
    let html = reports::render_html(&both);
    assert!(html.contains("id=\"server-redis-6.2\""), "no section");
    assert!(html.contains("id=\"server-valkey-9\""), "no section");
    assert!(html.contains("Valkey 9.1.2"));
    assert!(html.contains("id=\"valkey-9-conformance.lease.expiry-at-instant\""));
    // Each section's filter is its own: its own radio group, labels naming
    // its own buttons.
    assert!(html.contains("name=\"valkey-9-show-filter\" id=\"valkey-9-show-attention\""));
    assert!(html.contains("<label for=\"valkey-9-show-attention\""));
    assert!(html.contains("name=\"redis-6.2-show-filter\""));
    // The first item needing attention on each server, linked from the top.
    assert!(
        html.contains("<a href=\"#valkey-9-explorer.one-live-holder\">"),
        "{html}"
    );
    let junit = reports::render_junit(&both);
    assert!(
        junit.contains("<testsuite name=\"valkey-9/conformance\""),
        "{junit}"
    );
    assert!(
        junit.contains("<testsuite name=\"redis-6.2/conformance\""),
        "{junit}"
    );
    let replays: Vec<String> = reports::replay_files(&both)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert!(
        replays.iter().all(|n| n.ends_with("@valkey-9.json")) && !replays.is_empty(),
        "{replays:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&reports::render_json(&both).unwrap()).unwrap();
    assert_eq!(json["per_server"].as_array().map(Vec::len), Some(2));
    assert_eq!(json["per_server"][1]["server"]["name"], "valkey-9");
}
