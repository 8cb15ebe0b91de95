//! A queue whose `queue.complete` goes by child id only: it reads the
//! child's current claim and completes that, whatever attempt the caller
//! named, and answers `completed` for a child already done. The bug it
//! stands for: a worker whose claim expired (the child re-claimed by
//! another, attempt 2) still completes with attempt 1 and is told
//! `completed`, so both workers apply the child's effect;
//! `faults.children-once` must catch the two completions.

use async_trait::async_trait;
use harness::contract::{Call, ChildState, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory};

use crate::sabotaged::{ClientSabotage, Sabotaged};

/// `inner`, its `queue.complete` ignoring the caller's instance and attempt.
pub type CompleteAnyAttempt<F> = Sabotaged<F, CompleteById>;

/// The sabotage of [`CompleteAnyAttempt`]: complete by child id only.
pub struct CompleteById;

impl<F: StoreFactory> CompleteAnyAttempt<F> {
    /// Wraps `inner`; only `queue.complete` changes.
    pub fn new(inner: F) -> Self {
        Sabotaged::wrapping(inner, CompleteById)
    }
}

#[async_trait]
impl ClientSabotage for CompleteById {
    fn spec(&self) -> String {
        "sabotage:complete-any-attempt".to_string()
    }

    async fn wrap(
        &self,
        _: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        Ok(Box::new(Client { inner }))
    }
}

struct Client {
    inner: Box<dyn StoreClient>,
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let Ok(Request::QueueComplete { child, .. }) = Request::parse(call) else {
            return self.inner.call(call, clock_ms).await;
        };
        let read = Request::QueueRead {
            child: child.clone(),
        };
        let current = match self.inner.call(&read.to_call(), clock_ms).await? {
            Reply::Child(Some(view)) => view,
            // Never saved: nothing to complete, the real answer stands.
            _ => return self.inner.call(call, clock_ms).await,
        };
        match (current.state, current.claimer) {
            // Keyed by child id: "already done" reads as success.
            (ChildState::Done, _) => Ok(Reply::Completed {}),
            (ChildState::Claimed, Some(claimer)) => {
                let whoever = Request::QueueComplete {
                    child,
                    instance: claimer,
                    attempt: current.attempt,
                };
                self.inner.call(&whoever.to_call(), clock_ms).await
            }
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}
