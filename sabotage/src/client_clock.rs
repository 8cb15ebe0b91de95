//! A lease store that decides expiry on the caller's clock (`clock_ms`)
//! instead of the server's `TIME`. With every clock in step it keeps the
//! contract; with a second clock a lease ahead it grants a lease that is
//! still live on server time. `explorer.one-live-holder` must catch it.
//!
//! It is the built-in store with one deliberate change: the lease scripts'
//! two lines that read `TIME` are replaced by reading `clock_ms` from the
//! last argument, so the rest of the logic stays the reference's.

use std::collections::HashMap;
use std::sync::LazyLock;

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use redis::aio::MultiplexedConnection;
use stores::redis::{parse_reply, script_sources, Keys, RedisStoreFactory};

use crate::conn::{self, refused};
use redis::Script;

const SERVER_TIME: &str = "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n";
const CALLER_TIME: &str = "local now = tonumber(ARGV[#ARGV])\n";

/// The lease scripts that read time, rewritten to read the caller's clock;
/// `None` if the built-in scripts no longer read time the expected way.
static SCRIPTS: LazyLock<Option<HashMap<&'static str, Script>>> = LazyLock::new(|| {
    let mut out = HashMap::new();
    for (op, source) in script_sources() {
        if matches!(op, "lease.take" | "lease.renew" | "lease.read") {
            if !source.contains(SERVER_TIME) {
                return None;
            }
            out.insert(op, Script::new(&source.replace(SERVER_TIME, CALLER_TIME)));
        }
    }
    Some(out)
});

/// The built-in Redis store with its lease decided on `clock_ms`.
pub struct ClientClockLease {
    inner: RedisStoreFactory,
}

impl ClientClockLease {
    /// Wraps the built-in store; lease take, renew and read change.
    pub fn new(inner: RedisStoreFactory) -> Self {
        ClientClockLease { inner }
    }
}

struct Client {
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    keys: Keys,
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let Some(scripts) = SCRIPTS.as_ref() else {
            return Err(StoreError::new(ErrorKind::Unavailable, "no scripts"));
        };
        let req = match Request::parse(call) {
            Ok(r) => r,
            Err(_) => return self.inner.call(call, clock_ms).await,
        };
        let mut inv = match (&req, scripts.get(req.op())) {
            (
                Request::LeaseTake {
                    tree,
                    holder,
                    ttl_ms,
                },
                Some(s),
            ) => {
                let mut inv = s.key(self.keys.lease(tree));
                inv.arg(holder).arg(ttl_ms);
                inv
            }
            (
                Request::LeaseRenew {
                    tree,
                    holder,
                    epoch,
                    ttl_ms,
                },
                Some(s),
            ) => {
                let mut inv = s.key(self.keys.lease(tree));
                inv.arg(holder).arg(epoch).arg(ttl_ms);
                inv
            }
            (Request::LeaseRead { tree }, Some(s)) => s.key(self.keys.lease(tree)),
            _ => return self.inner.call(call, clock_ms).await,
        };
        inv.arg(clock_ms);
        let value: redis::Value = inv.invoke_async(&mut self.conn).await.map_err(refused)?;
        parse_reply(req.op(), &value)
    }
}

#[async_trait]
impl StoreFactory for ClientClockLease {
    fn spec(&self) -> String {
        "sabotage:lease-on-caller-clock".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let Some(scripts) = SCRIPTS.as_ref() else {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                "the built-in lease scripts no longer read TIME as this sabotage expects; update it",
            ));
        };
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let scripts: Vec<&Script> = scripts.values().collect();
        let conn = conn::open(&hello.redis_url, &scripts).await?;
        Ok((
            info,
            Box::new(Client {
                inner,
                conn,
                keys: Keys::new(&hello.prefix),
            }),
        ))
    }
}
