//! Random walks of the built-in Redis stores against their sequential
//! models, on a real `redis-server`. Each test starts its own server.

use harness::contract::Reply;

use crate::common::*;

/// A tiny deterministic generator, so a failing walk replays exactly.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[tokio::test]
async fn a_random_rate_walk_agrees_with_the_sequential_model() {
    use harness::contract::{Judgement, RateModel, Request};

    let server = TestServer::start().await;
    let mut s = connect(&server).await;
    let mut model = RateModel::default();
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    let mut clock = CLOCK;
    let mut slots: Vec<(String, String)> = Vec::new();
    let providers = ["p", "q:{x}"];
    let mut seen = std::collections::BTreeSet::new();
    for step in 0..1500 {
        // Mostly forward, sometimes back: instance clocks are skewed.
        clock += rng.below(12) as i64 - 2;
        let provider = providers[rng.below(2) as usize].to_string();
        let req = match rng.below(6) {
            0 | 1 => Request::RateAcquireSlot {
                provider,
                holder: "h".into(),
                limit: 1 + rng.below(3) as i64,
                ttl_ms: 1 + rng.below(40) as i64,
            },
            2 => {
                let slot = if slots.is_empty() || rng.below(5) == 0 {
                    (provider, "nope".to_string())
                } else {
                    slots[rng.below(slots.len() as u64) as usize].clone()
                };
                Request::RateReleaseSlot {
                    provider: slot.0,
                    slot: slot.1,
                }
            }
            3 => Request::RateHit {
                provider,
                limit: 1 + rng.below(3) as i64,
                window_ms: 1 + rng.below(40) as i64,
            },
            4 if rng.below(4) == 0 => Request::RatePause {
                provider,
                until_ms: clock + rng.below(30) as i64,
            },
            _ => Request::RateRead { provider },
        };
        let reply = s
            .call(&req.to_call(), clock)
            .await
            .unwrap_or_else(|e| panic!("step {step} {req:?}: {e}"));
        if let (Request::RateAcquireSlot { provider, .. }, Reply::Acquired { slot }) =
            (&req, &reply)
        {
            slots.push((provider.clone(), slot.clone()));
        }
        match model.judge(&req, clock, &reply) {
            Judgement::Agrees => {}
            other => panic!("step {step} at {clock}: {req:?} answered {reply:?}: {other:?}"),
        }
        seen.insert(reply.outcome());
    }
    // The walk must have reached every outcome, or it proves little.
    let every = [
        "acquired",
        "full",
        "paused",
        "released",
        "unknown",
        "allowed",
        "limited",
        "rate_state",
    ];
    for outcome in every {
        assert!(seen.contains(outcome), "{outcome} never seen: {seen:?}");
    }
}

#[tokio::test]
async fn a_random_queue_walk_without_expiry_agrees_with_the_sequential_model() {
    use harness::contract::{Judgement, QueueModel, Request, MAX_DURATION_MS};

    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let mut model = QueueModel::default();
    let mut rng = XorShift(0x0000_ddc0_ffee_0002);
    let mut seen = std::collections::BTreeSet::new();
    let instances = ["a", "b"];
    for step in 0..800 {
        let child = format!("c{}", rng.below(25));
        let instance = instances[rng.below(2) as usize].to_string();
        let req = match rng.below(5) {
            0 | 1 => Request::QueueSave {
                child,
                depth: rng.below(4) as i64,
                payload: format!("payload {step}"),
            },
            2 => Request::QueueClaim {
                instance,
                // Claims never run out here: the walk reads server time only
                // approximately, and the order of saves does not depend on it.
                claim_ttl_ms: MAX_DURATION_MS,
            },
            3 => Request::QueueComplete {
                child,
                instance,
                attempt: rng.below(3) as i64,
            },
            _ => Request::QueueRead { child },
        };
        let now = server_ms(&mut admin).await;
        let reply = s
            .call(&req.to_call(), CLOCK)
            .await
            .unwrap_or_else(|e| panic!("step {step} {req:?}: {e}"));
        match model.judge(&req, now, &reply) {
            Judgement::Agrees => {}
            other => panic!("step {step}: {req:?} answered {reply:?}: {other:?}"),
        }
        seen.insert(reply.outcome());
    }
    for outcome in [
        "saved",
        "exists",
        "claimed",
        "empty",
        "completed",
        "not_claimer",
        "child",
    ] {
        assert!(seen.contains(outcome), "{outcome} never seen: {seen:?}");
    }
}

#[tokio::test]
async fn a_random_lease_walk_without_expiry_agrees_with_the_sequential_model() {
    use harness::contract::{Judgement, LeaseModel, Request};

    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let mut model = LeaseModel::default();
    let mut rng = XorShift(0x0001_ea5e_0003);
    let mut seen = std::collections::BTreeSet::new();
    // Leases outlive the walk, so liveness never depends on the instant.
    let ttl = 3_600_000;
    for step in 0..800 {
        let tree = format!("t{}", rng.below(4));
        let holder = ["a", "b", "c"][rng.below(3) as usize].to_string();
        let epoch = rng.below(6) as i64;
        let req = match rng.below(7) {
            0 | 1 => Request::LeaseTake {
                tree,
                holder,
                ttl_ms: ttl,
            },
            2 => Request::LeaseRenew {
                tree,
                holder,
                epoch,
                ttl_ms: ttl,
            },
            3 => Request::LeaseRelease {
                tree,
                holder,
                epoch,
            },
            4 => Request::LeaseKeepExecution {
                tree,
                execution: format!("e{}", rng.below(5)),
            },
            5 => Request::LeaseKeptExecutions { tree },
            _ => Request::LeaseRead { tree },
        };
        let before = server_ms(&mut admin).await;
        let reply = s
            .call(&req.to_call(), CLOCK)
            .await
            .unwrap_or_else(|e| panic!("step {step} {req:?}: {e}"));
        // The script's own `now` is exact where a reply reveals it.
        let now = match reply {
            Reply::Granted { expires_at_ms, .. } | Reply::Renewed { expires_at_ms } => {
                assert!(
                    expires_at_ms - ttl >= before,
                    "step {step}: server time went back"
                );
                expires_at_ms - ttl
            }
            _ => before,
        };
        match model.judge(&req, now, &reply) {
            Judgement::Agrees => {}
            other => panic!("step {step}: {req:?} answered {reply:?}: {other:?}"),
        }
        seen.insert(reply.outcome());
    }
    for outcome in [
        "granted",
        "busy",
        "renewed",
        "lost",
        "released",
        "not_held",
        "lease",
        "kept",
        "executions",
    ] {
        assert!(seen.contains(outcome), "{outcome} never seen: {seen:?}");
    }
}
