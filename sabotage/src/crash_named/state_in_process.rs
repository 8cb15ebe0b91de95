//! `sabotage:state-in-process`: a store whose answers come from a table in
//! its own process (the contract's sequential model), every write mirrored
//! to Redis but never read back. Each connect's table is its own when built
//! through the named sabotage (one process per instance, as adapters are):
//! the crash suite's verifier, a new instance, knows none of the epochs
//! acknowledged before the kill, though the server kept them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use harness::contract::{Call, Contract, ContractModel, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient};
use redis::aio::MultiplexedConnection;
use stores::redis::RedisStoreFactory;

use crate::conn::{self, refused};
use crate::{ClientSabotage, Sabotaged};

/// The tables of one process: one [`ContractModel`] per key prefix (a
/// prefix is one deployment's keyspace).
type Tables = Arc<Mutex<HashMap<String, ContractModel>>>;

/// The built-in Redis store, mirrored into, with every answer taken from a
/// table in this process. Its instances share the table for as long as the
/// factory lives.
pub type StateInProcess = Sabotaged<RedisStoreFactory, AnswerFromTable>;

/// How [`StateInProcess`] changes each instance: its answers from `tables`.
pub struct AnswerFromTable {
    tables: Tables,
}

/// `inner` as the mirror, the answers from a table of this process.
pub fn state_in_process(inner: RedisStoreFactory) -> StateInProcess {
    Sabotaged::wrapping(
        inner,
        AnswerFromTable {
            tables: Arc::default(),
        },
    )
}

struct StateInProcessClient {
    mirror: Box<dyn StoreClient>,
    /// Server time (lease and queue decide on it) read from the server the
    /// store was given, so the table follows its clock, virtual or not.
    time: MultiplexedConnection,
    prefix: String,
    tables: Tables,
}

impl StateInProcessClient {
    /// The server's time in ms (`TIME`).
    async fn server_ms(&mut self) -> Result<i64, StoreError> {
        let (secs, micros): (i64, i64) = redis::cmd("TIME")
            .query_async(&mut self.time)
            .await
            .map_err(refused)?;
        Ok(secs * 1000 + micros / 1000)
    }
}

#[async_trait]
impl StoreClient for StateInProcessClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        // Written through first: the mirror's refusal (bad request, server
        // gone, server full) is the answer, as a write-through cache gives it.
        let mirrored = self.mirror.call(call, clock_ms).await?;
        let Ok(req) = Request::parse(call) else {
            return Ok(mirrored);
        };
        let server_ms = self.server_ms().await?;
        let now = ContractModel::now_for(&req, server_ms, clock_ms);
        // Only a panic elsewhere poisons it, and the table stays whole.
        let mut tables = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        let model = tables.entry(self.prefix.clone()).or_default();
        // The answer is the table's; the mirror's is dropped.
        let answered = match req.contract() {
            Contract::Lease | Contract::Fenced => model.lease.apply(&req, now),
            Contract::Queue => model.queue.apply(&req, now),
            Contract::Rate => model.rate.apply(&req, now),
        };
        Ok(answered.unwrap_or(mirrored))
    }
}

#[async_trait]
impl ClientSabotage for AnswerFromTable {
    fn spec(&self) -> String {
        "sabotage:state-in-process".into()
    }

    /// `mirror` is the built-in's client, which checked the server it is
    /// given as a mirror would.
    async fn wrap(
        &self,
        hello: &Hello,
        mirror: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        let time = conn::open(&hello.redis_url, &[]).await?;
        Ok(Box::new(StateInProcessClient {
            mirror,
            time,
            prefix: hello.prefix.clone(),
            tables: self.tables.clone(),
        }))
    }
}
