//! What the tests of the built-in Redis stores (`redis_store/*.rs`) share:
//! a server of their own ([`TestServer`]), a connected store, and calls
//! that panic with what was asked.

#![allow(dead_code)] // each test crate uses its own part of it

use std::net::TcpListener;
use std::path::Path;

use harness::contract::{Call, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory};
use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};
use stores::redis::RedisStoreFactory;
pub use testkit::TestServer;

/// A port nothing listens on once this returns (the system's pick, let go).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

pub const PREFIX: &str = "sp:test:";
pub const CLOCK: i64 = 1_700_000_000_000;

pub fn hello(url: &str, prefix: &str, opt_out: Option<&str>) -> Hello {
    Hello {
        instance: "a".into(),
        redis_url: url.into(),
        prefix: prefix.into(),
        opt_out: opt_out.map(str::to_string),
    }
}

pub async fn connect_with(
    server: &TestServer,
    url: &str,
    opt_out: Option<&str>,
) -> Result<Box<dyn StoreClient>, StoreError> {
    let factory = RedisStoreFactory::new(server.kept_db());
    let (info, client) = factory.connect(&hello(url, PREFIX, opt_out), CLOCK).await?;
    assert_eq!(info.name, "storeproof-redis");
    assert_eq!(factory.spec(), "builtin:redis");
    Ok(client)
}

pub async fn connect(server: &TestServer) -> Box<dyn StoreClient> {
    connect_with(server, &server.url(), None)
        .await
        .expect("connect to a durable server")
}

pub async fn call(
    client: &mut Box<dyn StoreClient>,
    op: &str,
    args: Value,
    clock_ms: i64,
) -> Reply {
    client
        .call(
            &Call {
                op: op.into(),
                args: args.clone(),
            },
            clock_ms,
        )
        .await
        .unwrap_or_else(|e| panic!("{op} {args}: {e}"))
}

pub async fn call_err(
    client: &mut Box<dyn StoreClient>,
    op: &str,
    args: Value,
    clock_ms: i64,
) -> StoreError {
    match client
        .call(
            &Call {
                op: op.into(),
                args: args.clone(),
            },
            clock_ms,
        )
        .await
    {
        Ok(reply) => panic!("{op} {args} answered {reply:?}, wanted an error"),
        Err(e) => e,
    }
}

pub async fn server_ms(admin: &mut MultiplexedConnection) -> i64 {
    let (sec, usec): (i64, i64) = redis::cmd("TIME").query_async(admin).await.expect("TIME");
    sec * 1000 + usec / 1000
}

pub async fn all_keys(admin: &mut MultiplexedConnection) -> Vec<Vec<u8>> {
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(admin)
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

pub async fn dbsize(admin: &mut MultiplexedConnection) -> i64 {
    redis::cmd("DBSIZE")
        .query_async(admin)
        .await
        .expect("DBSIZE")
}

pub fn sqlite_rows(path: &Path) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(path).expect("open kept db");
    let mut stmt = conn
        .prepare("SELECT namespace, tree, execution FROM kept_execution ORDER BY seq")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

pub fn granted(reply: &Reply) -> (i64, i64) {
    match reply {
        Reply::Granted {
            epoch,
            expires_at_ms,
        } => (*epoch, *expires_at_ms),
        other => panic!("wanted granted, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Queue.

pub async fn save(s: &mut Box<dyn StoreClient>, child: &str, depth: i64) -> Reply {
    call(
        s,
        "queue.save",
        json!({"child": child, "depth": depth, "payload": format!("p-{child}")}),
        CLOCK,
    )
    .await
}

pub async fn claim(s: &mut Box<dyn StoreClient>, instance: &str, ttl: i64) -> Reply {
    call(
        s,
        "queue.claim",
        json!({"instance": instance, "claim_ttl_ms": ttl}),
        CLOCK,
    )
    .await
}

pub fn claimed(child: &str, depth: i64, attempt: i64) -> Reply {
    Reply::Claimed {
        child: child.into(),
        depth,
        payload: format!("p-{child}"),
        attempt,
    }
}
