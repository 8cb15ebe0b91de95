//! A fail-open rate limiter: when its Redis call fails or times out
//! (`unavailable`: the outcome is unknown, the limiter may well have
//! refused), it grants the slot or the hit anyway, so that an outage of the
//! limiter never blocks the caller. The bug it stands for: whenever the
//! limiter's answer is lost, limits stop holding (a refused `full` or
//! `limited` turned into a grant); `faults.rate-bounds` must catch it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory};

use crate::sabotaged::{ClientSabotage, Sabotaged};

/// `inner`, granting every rate acquire or hit it could not decide.
pub(crate) type FailOpen<F> = Sabotaged<F, GrantOnError>;

/// The sabotage of [`FailOpen`]: a grant for `unavailable`, counting the
/// grants it made up across instances (its made-up slots are numbered).
pub(crate) struct GrantOnError {
    made_up: Arc<AtomicU64>,
}

/// `inner` failing open.
pub(crate) fn fail_open<F: StoreFactory>(inner: F) -> FailOpen<F> {
    Sabotaged::wrapping(
        inner,
        GrantOnError {
            made_up: Arc::new(AtomicU64::new(0)),
        },
    )
}

#[async_trait]
impl ClientSabotage for GrantOnError {
    fn spec(&self) -> String {
        "sabotage:rate-fails-open".to_string()
    }

    async fn wrap(
        &self,
        _: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        Ok(Box::new(Client {
            inner,
            made_up: self.made_up.clone(),
        }))
    }
}

struct Client {
    inner: Box<dyn StoreClient>,
    made_up: Arc<AtomicU64>,
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match self.inner.call(call, clock_ms).await {
            Err(e) if e.kind == ErrorKind::Unavailable => match Request::parse(call) {
                // The limiter could not be asked: let the caller through.
                Ok(Request::RateAcquireSlot { .. }) => {
                    let n = self.made_up.fetch_add(1, Ordering::SeqCst);
                    Ok(Reply::Acquired {
                        slot: format!("fail-open-{n}"),
                    })
                }
                Ok(Request::RateHit { .. }) => {
                    self.made_up.fetch_add(1, Ordering::SeqCst);
                    Ok(Reply::Allowed { remaining: 0 })
                }
                _ => Err(e),
            },
            other => other,
        }
    }
}
