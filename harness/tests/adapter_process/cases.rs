//! An adapter that offers `cases` (docs/PROTOCOL.md §3.3) keeps its process
//! between the cases a check connects (`connect_case`): the next case of the
//! same instance name sends it a new `hello`; a prefix it served before, a
//! plain `connect` (the explorer, the crash suite) or an adapter without the
//! capability gets a new process. Idle processes die with their store.

use std::time::{Duration, Instant};

use harness::contract::Call;
use harness::store::external::{adapters_started, ExternalStoreFactory};
use harness::store::{Hello, StoreFactory};

use super::alive;

fn hello(instance: &str, prefix: &str) -> Hello {
    Hello {
        instance: instance.into(),
        // Never dialled: the adapters below answer by themselves.
        redis_url: "redis://127.0.0.1:1".into(),
        prefix: prefix.into(),
        opt_out: None,
    }
}

/// Answers every hello with its pid as the store's name (and the
/// capabilities `$CAPS`), every other request with a lease.read reply whose
/// holder is its pid; sleeps 3 s first on a request whose line says "slow".
fn adapter(caps: &str) -> String {
    format!(
        r#"while read line; do id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/'); case "$line" in *'"op":"hello"'*) echo "{{\"id\":$id,\"ok\":{{\"name\":\"$$\",\"version\":\"1\",\"contracts\":[\"lease\"],\"capabilities\":[{caps}]}}}}";; *slow*) sleep 3; echo "{{\"id\":$id,\"ok\":{{\"epoch\":0,\"holder\":null,\"expires_at_ms\":null,\"live\":false}}}}";; *) echo "{{\"id\":$id,\"ok\":{{\"epoch\":0,\"holder\":null,\"expires_at_ms\":null,\"live\":false}}}}";; esac; done"#
    )
}

async fn pid_of(
    factory: &ExternalStoreFactory,
    h: &Hello,
    case: bool,
) -> (String, Box<dyn harness::store::StoreClient>) {
    let (info, client) = if case {
        factory.connect_case(h, 0).await
    } else {
        factory.connect(h, 0).await
    }
    .expect("the adapter answers hello");
    (info.name, client)
}

#[tokio::test]
async fn a_process_that_offers_cases_is_sent_the_next_cases_hello_and_dies_with_its_store() {
    let dir = tempfile::tempdir().unwrap();
    let factory = ExternalStoreFactory::new(adapter(r#"\"cases\""#), dir.path().to_path_buf());
    let before = adapters_started();

    let (first, client) = pid_of(&factory, &hello("a", "sp:c1:"), true).await;
    drop(client);
    // The next case of `a` is the same process, sent a new hello.
    let (second, client) = pid_of(&factory, &hello("a", "sp:c2:"), true).await;
    assert_eq!(first, second, "the idle process is reused");
    // A prefix the process served before is not a new case: a new process.
    let (again, client_again) = pid_of(&factory, &hello("a", "sp:c1:"), true).await;
    assert_ne!(again, first, "a prefix is never handed to a process twice");
    drop((client, client_again));
    // Another instance name has processes of its own.
    let (b, client_b) = pid_of(&factory, &hello("b", "sp:c3:"), true).await;
    assert!(b != first && b != again);
    // A plain connect (the explorer, the crash suite) never takes an idle
    // process, and its process is not kept.
    let (plain, plain_client) = pid_of(&factory, &hello("a", "sp:c4:"), false).await;
    assert!(plain != first && plain != again);
    drop(plain_client);
    assert_eq!(
        adapters_started() - before,
        4,
        "{first} {again} {b} {plain}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(&plain) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(&plain),
        "a plain connect's process dies with its instance"
    );
    assert!(
        alive(&first) && alive(&again),
        "idle processes wait for the next case"
    );

    drop(client_b);
    drop(factory);
    let deadline = Instant::now() + Duration::from_secs(5);
    let all = [first, again, b];
    while all.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&String> = all.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "idle processes left alive: {left:?}");
}

#[tokio::test]
async fn a_process_without_cases_or_out_of_step_is_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    // Without the capability: every case a new process.
    let plain = ExternalStoreFactory::new(adapter(r#"\"stateless\""#), dir.path().to_path_buf());
    let (first, client) = pid_of(&plain, &hello("a", "sp:n1:"), true).await;
    drop(client);
    let (second, _client) = pid_of(&plain, &hello("a", "sp:n2:"), true).await;
    assert_ne!(
        first, second,
        "an adapter that does not offer cases is not reused"
    );

    // A call given up before its answer leaves the pipe out of step: the
    // process is not handed to the next case.
    let cases = ExternalStoreFactory::new(adapter(r#"\"cases\""#), dir.path().to_path_buf());
    let (first, mut client) = pid_of(&cases, &hello("a", "sp:s1:"), true).await;
    let call = Call {
        op: "lease.read".into(),
        args: serde_json::json!({"tree": "slow"}),
    };
    let given_up = tokio::time::timeout(Duration::from_millis(200), client.call(&call, 0)).await;
    assert!(given_up.is_err(), "the slow call is given up");
    drop(client);
    let (second, _client) = pid_of(&cases, &hello("a", "sp:s2:"), true).await;
    assert_ne!(
        first, second,
        "a process with an answer unread is not reused"
    );
}

/// Refuses a hello whose prefix says `refuse-KIND` with that error kind;
/// otherwise as [`adapter`] with `cases`.
fn refusing_adapter() -> String {
    r#"while read line; do id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/'); case "$line" in *refuse-*) kind=$(echo "$line" | sed 's/.*refuse-\([a-z_]*\).*/\1/'); echo "{\"id\":$id,\"error\":{\"kind\":\"$kind\",\"message\":\"refused\"}}";; *'"op":"hello"'*) echo "{\"id\":$id,\"ok\":{\"name\":\"$$\",\"version\":\"1\",\"contracts\":[\"lease\"],\"capabilities\":[\"cases\"]}}";; esac; done"#.to_string()
}

#[tokio::test]
async fn a_process_that_refused_a_servers_settings_goes_on_to_the_next_case_and_no_other_failure_does(
) {
    let dir = tempfile::tempdir().unwrap();
    let factory = ExternalStoreFactory::new(refusing_adapter(), dir.path().to_path_buf());
    let (first, client) = pid_of(&factory, &hello("a", "sp:r1:"), true).await;
    drop(client);
    for kind in ["config_refused", "durability", "deployment"] {
        let refused = factory
            .connect_case(&hello("a", &format!("sp:refuse-{kind}:")), 0)
            .await;
        assert_eq!(
            refused.err().map(|e| e.kind.name()),
            Some(kind),
            "the refusal is the answer"
        );
        let (next, client) =
            pid_of(&factory, &hello("a", &format!("sp:after-{kind}:")), true).await;
        assert_eq!(
            next, first,
            "a refusal of the server's settings keeps the process in step"
        );
        drop(client);
    }
    // Any other failed hello: the process is not handed out again.
    let refused = factory
        .connect_case(&hello("a", "sp:refuse-bad_request:"), 0)
        .await;
    assert!(refused.is_err());
    let (next, client) = pid_of(&factory, &hello("a", "sp:r2:"), true).await;
    assert_ne!(
        next, first,
        "a hello that failed otherwise ends its process"
    );
    drop(client);
    // A process that never served a case has not said it offers cases.
    let fresh = ExternalStoreFactory::new(refusing_adapter(), dir.path().to_path_buf());
    let refused = fresh
        .connect_case(&hello("a", "sp:refuse-durability:"), 0)
        .await;
    assert!(refused.is_err());
    let before = adapters_started();
    let (_, client) = pid_of(&fresh, &hello("a", "sp:r3:"), true).await;
    assert_eq!(adapters_started() - before, 1, "its first refusal ends it");
    drop(client);
}
