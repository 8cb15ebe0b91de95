//! The one-backend rule: layouts read, assembled or refused.

use std::collections::BTreeSet;

use layout::{assemble, check_file, Backend, Layout, LayoutError, LayoutFile, Store, MISMATCH_ID};

fn read(text: &str) -> Result<Layout, LayoutError> {
    Layout::from_toml_str(text, "test.toml")
}

fn refusal(text: &str) -> LayoutError {
    let layout = read(text).expect("the layout reads");
    assemble(&layout).expect_err("the layout must be refused")
}

#[test]
fn both_supported_layouts_assemble() {
    for (name, layout) in Layout::supported() {
        let assembled = assemble(&layout).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(assembled.supported_name(), Some(name));
    }
    let beside = Layout::redis_queue_and_rate_beside_durable();
    assert_eq!(beside.backend(Store::Queue), Some(&Backend::Redis));
    assert_eq!(beside.backend(Store::Rate), Some(&Backend::Redis));
    assert_eq!(beside.backend(Store::Lease), Some(&Backend::Sqlite));
    assert_eq!(beside.backend(Store::FencedEffect), Some(&Backend::Sqlite));
    let set = Layout::coordination_set();
    for store in [Store::LeaseLog, Store::FencedEffect, Store::OutboundCall] {
        assert_eq!(set.backend(store), None, "{store}");
    }
    assert_eq!(set.backend(Store::Lease), Some(&Backend::Redis));
}

#[test]
fn the_supported_layouts_read_back_from_their_toml() {
    for (name, layout) in Layout::supported() {
        assert_eq!(read(&layout.to_toml()).as_ref(), Ok(&layout), "{name}");
    }
}

#[test]
fn the_same_layouts_on_postgres_assemble_too() {
    let text = "[stores]\nlease = \"postgres\"\nqueue = \"redis\"\nrate = \"redis\"\nlease_log = \"postgres\"\nfenced_effect = \"postgres\"\noutbound_call = \"Postgres\"\n";
    let assembled = assemble(&read(text).unwrap()).unwrap();
    assert_eq!(assembled.supported_name(), None);
    assert_eq!(
        assembled.to_string(),
        "lease=postgres queue=redis rate=redis lease_log=postgres fenced_effect=postgres outbound_call=postgres"
    );
}

/// Every bad layout: its text, the stores it must name, and each
/// `store on backend` the line must say.
const BAD: &[(&str, &[Store], &[&str])] = &[
    (
        "[stores]\nlease = \"postgres\"\nfenced_effect = \"sqlite\"\noutbound_call = \"postgres\"\n",
        &[Store::FencedEffect],
        &["fenced_effect on sqlite", "lease on postgres"],
    ),
    (
        "[stores]\nlease = \"sqlite\"\nfenced_effect = \"sqlite\"\noutbound_call = \"postgres\"\n",
        &[Store::OutboundCall],
        &["outbound_call on postgres", "lease on sqlite"],
    ),
    (
        "[stores]\nlease = \"redis\"\nfenced_effect = \"postgres\"\noutbound_call = \"mongodb\"\n",
        &[Store::FencedEffect, Store::OutboundCall],
        &["fenced_effect on postgres", "outbound_call on mongodb", "lease on redis"],
    ),
    // Both are storeproof's own backends: the rule is not relaxed for Redis.
    (
        "[stores]\nlease = \"redis\"\nqueue = \"redis\"\nrate = \"redis\"\nfenced_effect = \"sqlite\"\n",
        &[Store::FencedEffect],
        &["fenced_effect on sqlite", "lease on redis"],
    ),
    (
        "[stores]\nlease = \"redis\"\noutbound_call = \"sqlite\"\n",
        &[Store::OutboundCall],
        &["outbound_call on sqlite", "lease on redis"],
    ),
    (
        "[stores]\nqueue = \"redis\"\nfenced_effect = \"sqlite\"\noutbound_call = \"sqlite\"\n",
        &[Store::FencedEffect, Store::OutboundCall],
        &["fenced_effect on sqlite", "outbound_call on sqlite", "no lease store"],
    ),
];

#[test]
fn every_bad_layout_is_refused_naming_each_store_and_backend() {
    for (text, stores, says) in BAD {
        let e = refusal(text);
        let line = e.to_string();
        assert!(line.starts_with(MISMATCH_ID), "{line}");
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(e.offending_stores(), stores.to_vec(), "{line}");
        for phrase in *says {
            assert!(line.contains(phrase), "`{phrase}` missing from: {line}");
        }
    }
}

#[test]
fn a_refusal_says_how_to_fix_it() {
    let line = refusal(BAD[3].0).to_string();
    assert!(line.ends_with("(put it on redis)"), "{line}");
    let line = refusal(BAD[5].0).to_string();
    assert!(
        line.ends_with("(add lease = \"sqlite\" under [stores])"),
        "{line}"
    );
    let line = refusal(BAD[2].0).to_string();
    assert!(line.ends_with("(put them on redis)"), "{line}");
}

#[test]
fn the_queue_rate_limits_and_lease_log_may_be_on_any_backend() {
    let text = "[stores]\nlease = \"redis\"\nqueue = \"postgres\"\nrate = \"mongodb\"\nlease_log = \"sqlite\"\n";
    assert!(assemble(&read(text).unwrap()).is_ok());
}

#[test]
fn a_layout_with_no_lease_store_is_refused() {
    let e = assemble(&read("[stores]\nqueue = \"redis\"\n").unwrap()).unwrap_err();
    assert!(matches!(e, LayoutError::MissingLease { .. }), "{e}");
    assert!(e.to_string().contains("add lease = "), "{e}");
}

#[test]
fn a_layout_built_in_code_is_judged_the_same() {
    let e = assemble(
        &Layout::coordination_set().with(Store::FencedEffect, Backend::named("SQLite").unwrap()),
    )
    .unwrap_err();
    assert_eq!(e.offending_stores(), vec![Store::FencedEffect]);
}

/// Malformed files: each error is one line naming the cause.
#[test]
fn malformed_layouts_are_one_line_naming_the_cause() {
    let cases: &[(&str, &str)] = &[
        ("[stores\nlease = \"redis\"\n", "test.toml:1: not TOML"),
        (
            "[stores]\nlease = \"redis\"\nlease = \"sqlite\"\n",
            "test.toml:3: not TOML",
        ),
        ("[stores]\nleases = \"redis\"\n", "unknown store `leases`"),
        ("lease = \"redis\"\n", "unknown key `lease`"),
        ("stores = 3\n", "`stores` is not a table but a TOML integer"),
        ("", "no store is placed"),
        ("[stores]\n", "no store is placed"),
        ("[stores]\nlease = 1\n", "store `lease` has backend 1"),
        (
            "[stores]\nlease = \"red is\"\n",
            "store `lease` has backend \"red is\"",
        ),
        ("[stores]\nlease = { a = 1,\n b = 2 }\n", "test.toml"),
    ];
    for (text, says) in cases {
        let line = read(text).expect_err(text).to_string();
        assert!(line.contains(says), "`{says}` missing from: {line}");
        assert!(!line.contains('\n'), "not one line: {line}");
        assert!(line.contains('('), "no fix named: {line}");
    }
}

#[test]
fn the_unknown_store_error_lists_the_stores() {
    let line = read("[stores]\nfenced_effects = \"redis\"\n")
        .unwrap_err()
        .to_string();
    for store in Store::ALL {
        assert!(line.contains(store.name()), "{line}");
    }
}

#[test]
fn the_report_carries_a_layout_as_its_stores() {
    let json = serde_json::to_value(Layout::coordination_set()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"lease": "redis", "queue": "redis", "rate": "redis"})
    );
    let back: Layout = serde_json::from_value(json).unwrap();
    assert_eq!(back, Layout::coordination_set());
    assert!(serde_json::from_value::<Layout>(serde_json::json!({"leases": "redis"})).is_err());
}

#[test]
fn check_file_prints_one_line_either_way() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, Layout::coordination_set().to_toml()).unwrap();
    let line = check_file(&good).unwrap();
    assert!(line.ends_with("assembles: lease=redis queue=redis rate=redis (the supported Redis layout coordination-set)"), "{line}");

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, BAD[3].0).unwrap();
    let line = check_file(&bad).unwrap_err().to_string();
    assert!(line.starts_with(MISMATCH_ID), "{line}");

    let missing = dir.path().join("absent.toml");
    let line = check_file(&missing).unwrap_err().to_string();
    assert!(line.starts_with("cannot read the layout file"), "{line}");
    assert!(line.contains("absent.toml"), "{line}");
}

#[test]
fn store_names_are_distinct_and_read_back() {
    let names: BTreeSet<&str> = Store::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(names.len(), Store::ALL.len());
    for s in Store::ALL {
        assert_eq!(Store::from_name(s.name()), Some(s));
    }
    let binding: Vec<Store> = Store::ALL
        .into_iter()
        .filter(|s| s.shares_lease_backend())
        .collect();
    assert_eq!(binding, vec![Store::FencedEffect, Store::OutboundCall]);
}

/// The example files under layouts/ say what they claim.
#[test]
fn the_example_layout_files_assemble_or_are_refused_as_named() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("layouts");
    for (name, layout) in Layout::supported() {
        let path = dir.join(format!("{name}.toml"));
        assert_eq!(Layout::from_file(&path), Ok(layout), "{name}");
        let line = check_file(&path).unwrap();
        assert!(
            line.ends_with(&format!("(the supported Redis layout {name})")),
            "{line}"
        );
    }
    let refused = dir.join("refused-redis-lease-sqlite-fenced-effect.toml");
    let e = check_file(&refused).unwrap_err();
    assert_eq!(
        e.offending_stores(),
        vec![Store::FencedEffect, Store::OutboundCall]
    );
}
