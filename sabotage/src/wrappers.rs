//! Wrappers that turn a correct store into a broken one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};
use redis::aio::MultiplexedConnection;

use crate::conn::{self, refused};
use crate::{ClientSabotage, Sabotaged};

use crate::corrupt;

/// Answers the `at`-th call of the run (counted from 0 across all instances)
/// wrongly, and every other call rightly.
pub struct Tampered<F> {
    inner: F,
    at: usize,
    calls: Arc<AtomicUsize>,
    corrupted: Arc<Mutex<Option<String>>>,
}

impl<F: StoreFactory> Tampered<F> {
    /// `inner`, with its `at`-th answer corrupted.
    pub fn new(inner: F, at: usize) -> Self {
        Tampered {
            inner,
            at,
            calls: Arc::new(AtomicUsize::new(0)),
            corrupted: Arc::new(Mutex::new(None)),
        }
    }

    /// The operation whose answer was corrupted, once it was.
    pub fn corrupted_op(&self) -> Option<String> {
        self.corrupted.lock().ok().and_then(|op| op.clone())
    }

    /// How many calls the run made so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

struct TamperedClient {
    inner: Box<dyn StoreClient>,
    at: usize,
    calls: Arc<AtomicUsize>,
    corrupted: Arc<Mutex<Option<String>>>,
}

#[async_trait]
impl StoreClient for TamperedClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let outcome = self.inner.call(call, clock_ms).await;
        if n == self.at {
            if let Ok(mut op) = self.corrupted.lock() {
                *op = Some(call.op.clone());
            }
            corrupt(&call.op, outcome)
        } else {
            outcome
        }
    }
}

#[async_trait]
impl<F: StoreFactory> StoreFactory for Tampered<F> {
    fn spec(&self) -> String {
        format!("sabotage:tampered@{}", self.at)
    }

    fn keeps_state_in_redis(&self) -> bool {
        self.inner.keeps_state_in_redis()
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        self.inner.durable_state(prefix).await
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        Ok((
            info,
            Box::new(TamperedClient {
                inner,
                at: self.at,
                calls: self.calls.clone(),
                corrupted: self.corrupted.clone(),
            }),
        ))
    }
}

/// What a [`SideEffect`] store writes besides its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Every kept execution id also goes into Redis (under the prefix).
    KeptInRedis,
    /// Every call also writes a key outside the prefix.
    KeyOutsidePrefix,
    /// Every take also writes 4 KiB of padding under the prefix.
    Padding,
    /// Every request the store refuses with `bad_request` still writes a
    /// key under the prefix: refused, but not "before changing anything".
    WriteOnBadRequest,
}

/// A store whose answers are right but which writes what it must not.
pub type SideEffect<F> = Sabotaged<F, Extra>;

impl<F: StoreFactory> SideEffect<F> {
    /// `inner`, also writing `extra`.
    pub fn new(inner: F, extra: Extra) -> Self {
        Sabotaged::wrapping(inner, extra)
    }
}

struct SideEffectClient {
    inner: Box<dyn StoreClient>,
    extra: Extra,
    prefix: String,
    conn: MultiplexedConnection,
}

#[async_trait]
impl StoreClient for SideEffectClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let outcome = self.inner.call(call, clock_ms).await;
        let req = Request::parse(call).ok();
        let write: Option<(String, String)> = match (self.extra, &req) {
            (Extra::KeptInRedis, Some(Request::LeaseKeepExecution { tree, execution })) => {
                Some((format!("{}kept:{tree}", self.prefix), execution.clone()))
            }
            (Extra::KeyOutsidePrefix, Some(_)) => {
                Some((format!("stray:{}", call.args), "x".into()))
            }
            (Extra::Padding, Some(Request::LeaseTake { tree, .. })) => {
                Some((format!("{}pad:{tree}", self.prefix), "p".repeat(4096)))
            }
            (Extra::WriteOnBadRequest, _) if matches!(&outcome, Err(e) if e.kind == ErrorKind::BadRequest) => {
                Some((format!("{}half-done:{}", self.prefix, call.op), "x".into()))
            }
            _ => None,
        };
        if let Some((key, value)) = write {
            redis::cmd("SET")
                .arg(key)
                .arg(value)
                .query_async::<()>(&mut self.conn)
                .await
                .map_err(refused)?;
        }
        outcome
    }
}

#[async_trait]
impl ClientSabotage for Extra {
    fn spec(&self) -> String {
        format!("sabotage:side-effect:{self:?}")
    }

    async fn wrap(
        &self,
        hello: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        let conn = conn::open(&hello.redis_url, &[]).await?;
        Ok(Box::new(SideEffectClient {
            inner,
            extra: *self,
            prefix: hello.prefix.clone(),
            conn,
        }))
    }
}

/// A store that ignores the server it is given and always uses `url`: it
/// accepts every server, however short its settings.
pub struct ServerBlind<F> {
    inner: F,
    url: String,
}

impl<F: StoreFactory> ServerBlind<F> {
    /// `inner`, always connected to `url`.
    pub fn new(inner: F, url: String) -> Self {
        ServerBlind { inner, url }
    }
}

#[async_trait]
impl<F: StoreFactory> StoreFactory for ServerBlind<F> {
    fn spec(&self) -> String {
        "sabotage:server-blind".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let mut hello = hello.clone();
        hello.redis_url = self.url.clone();
        self.inner.connect(&hello, clock_ms).await
    }
}

/// A store that refuses every server with a durability error.
pub struct RefusesAll;

#[async_trait]
impl StoreFactory for RefusesAll {
    fn spec(&self) -> String {
        "sabotage:refuses-all".into()
    }

    async fn connect(
        &self,
        _hello: &Hello,
        _clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        Err(
            StoreError::new(ErrorKind::Durability, "refusing every server")
                .with_settings(vec!["appendfsync".into()]),
        )
    }
}

/// A lie a [`Lying`] store tells about one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    /// Every `lease.release` answers `released`, even a zombie's: nothing
    /// is released on the server. `explorer.zombie-refused` must catch it.
    ReleaseAlwaysSucceeds,
    /// Every `lease.read` answers `unavailable`. `explorer.answered` must
    /// catch it.
    ReadFails,
    /// Every `rate.read` answers `unavailable`. `explorer.rate.answered`
    /// must catch it.
    RateReadFails,
}

/// A store that tells one [`Lie`] and forwards everything else.
pub struct Lying<F> {
    inner: F,
    lie: Lie,
}

impl<F: StoreFactory> Lying<F> {
    /// `inner`, telling `lie`.
    pub fn new(inner: F, lie: Lie) -> Self {
        Lying { inner, lie }
    }
}

struct LyingClient {
    inner: Box<dyn StoreClient>,
    lie: Lie,
}

#[async_trait]
impl StoreClient for LyingClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match (self.lie, call.op.as_str()) {
            (Lie::ReleaseAlwaysSucceeds, "lease.release") => Ok(Reply::Released {}),
            (Lie::ReadFails, "lease.read") => Err(StoreError::new(
                ErrorKind::Unavailable,
                "this store never answers a read",
            )),
            (Lie::RateReadFails, "rate.read") => Err(StoreError::new(
                ErrorKind::Unavailable,
                "this store never answers a rate read",
            )),
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}

#[async_trait]
impl<F: StoreFactory> StoreFactory for Lying<F> {
    fn spec(&self) -> String {
        format!("sabotage:lying:{:?}", self.lie)
    }

    fn keeps_state_in_redis(&self) -> bool {
        self.inner.keeps_state_in_redis()
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        self.inner.durable_state(prefix).await
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        Ok((
            info,
            Box::new(LyingClient {
                inner,
                lie: self.lie,
            }),
        ))
    }
}
