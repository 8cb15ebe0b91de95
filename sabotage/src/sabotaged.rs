//! One factory for every sabotage that only changes what each instance's
//! client does: the store it wraps connects, validates its server and keeps
//! its state as always; [`ClientSabotage::wrap`] changes the client.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};

/// How a sabotage changes each instance's client, and its name.
#[async_trait]
pub trait ClientSabotage: Send + Sync {
    /// The `--store` spec it runs as, e.g. `sabotage:blind-retry`.
    fn spec(&self) -> String;

    /// The sabotaged client around `inner`, a connected client of the
    /// wrapped store, for the instance that said `hello` (a sabotage may
    /// open a connection of its own to `hello.redis_url`).
    async fn wrap(
        &self,
        hello: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError>;
}

/// `inner` with every instance's client changed by `how`; where it keeps
/// its state and its durable end state are `inner`'s.
pub struct Sabotaged<F, S> {
    pub(crate) inner: F,
    pub(crate) how: S,
}

impl<F: StoreFactory, S: ClientSabotage> Sabotaged<F, S> {
    /// `inner`, its clients changed by `how`.
    pub fn wrapping(inner: F, how: S) -> Self {
        Sabotaged { inner, how }
    }
}

#[async_trait]
impl<F: StoreFactory, S: ClientSabotage> StoreFactory for Sabotaged<F, S> {
    fn spec(&self) -> String {
        self.how.spec()
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
        Ok((info, self.how.wrap(hello, inner).await?))
    }
}

/// Makes up the success a request would most plausibly have had, given the
/// request, the caller's clock and how many were made up before (to number
/// what must be unique); `None` when it has none to make up.
pub type Invent = fn(&Request, i64, u64) -> Option<Reply>;

/// A sabotage that answers a made-up success ([`Invent`]) wherever the
/// wrapped store answered the error `kind`: the shape of every bug that
/// treats an error as a success (a swallowed `OOM`, a fail-open limiter).
pub struct SucceedOnError {
    spec: &'static str,
    kind: ErrorKind,
    invent: Invent,
    /// Errors met so far by every instance, each numbering its success.
    made_up: Arc<AtomicU64>,
}

impl SucceedOnError {
    /// `sabotage:<name>`, turning answers of error `kind` into `invent`'s.
    pub fn new(spec: &'static str, kind: ErrorKind, invent: Invent) -> Self {
        SucceedOnError {
            spec,
            kind,
            invent,
            made_up: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many answers of its error kind it met (and made a success of,
    /// when the request had one).
    pub fn made_up(&self) -> u64 {
        self.made_up.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ClientSabotage for SucceedOnError {
    fn spec(&self) -> String {
        self.spec.to_string()
    }

    async fn wrap(
        &self,
        _: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        Ok(Box::new(SucceedingClient {
            inner,
            kind: self.kind,
            invent: self.invent,
            made_up: self.made_up.clone(),
        }))
    }
}

struct SucceedingClient {
    inner: Box<dyn StoreClient>,
    kind: ErrorKind,
    invent: Invent,
    made_up: Arc<AtomicU64>,
}

#[async_trait]
impl StoreClient for SucceedingClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match self.inner.call(call, clock_ms).await {
            Err(e) if e.kind == self.kind => {
                let n = self.made_up.fetch_add(1, Ordering::SeqCst);
                Request::parse(call)
                    .ok()
                    .and_then(|req| (self.invent)(&req, clock_ms, n))
                    .ok_or(e)
            }
            other => other,
        }
    }
}
