//! The workload the server is killed in: instances taking, renewing and
//! releasing leases on many trees, saving, claiming and completing children,
//! and pausing providers — and the record of every write the store
//! acknowledged, and of the writes in flight when the server died.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use harness::contract::{Contract, ErrorKind, Reply, Request};
use harness::store::{StoreClient, StoreFactory};
use harness::{Happened, History};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// Lease length of a take: short, so verification can wait it out.
pub const LEASE_MS: i64 = 100;
/// Lease length of a renew: long enough that an acknowledged renew still
/// runs when the restarted server is read (its clock is the real clock, it
/// kept running through the restart), so that its loss can be seen.
pub const RENEW_MS: i64 = 30_000;
/// Claims outlive every round: a claimed child stays with its claimer.
pub const CLAIM_MS: i64 = 600_000;
/// Trees and providers the instances fight over.
pub const TREES: usize = 16;
/// Providers the instances pause.
pub const PROVIDERS: usize = 4;

/// One acknowledged grant: its epoch and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The epoch granted.
    pub epoch: i64,
    /// The instance it was granted to.
    pub holder: String,
}

/// One acknowledged claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The instance that claimed.
    pub instance: String,
    /// The attempt the claim answered.
    pub attempt: i64,
}

/// One request of a history and how it ended, paired by the one pairing
/// ([`History::operations`]): its invoke, the call as it went on the wire,
/// and its completion (`None` when the history ends before it: the kill
/// landed while it was out).
pub use model::history::Operation as Exchange;

/// Every request of `history` with its completion: the answered ones in the
/// order they were answered, then those never answered, in the order they
/// were sent. A completion with no invocation before it on its instance
/// pairs with nothing and is left out.
pub fn exchanges(history: &History) -> Vec<Exchange<'_>> {
    let mut out = history.operations();
    out.sort_by_key(|x| (x.completion.map_or(usize::MAX, |c| c.index), x.invoke.index));
    out
}

/// One kill round's acknowledged writes, and the writes whose outcome is
/// not known, as its history shows them ([`Acked::from_history`]): what
/// verification reads back after the restart and judges.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Acked {
    /// Tree → every grant acknowledged, in order.
    pub grants: BTreeMap<String, Vec<Grant>>,
    /// (tree, epoch) → the expiry of every renew acknowledged for it.
    pub renews: BTreeMap<(String, i64), Vec<i64>>,
    /// (tree, epoch) of every release acknowledged.
    pub released: BTreeSet<(String, i64)>,
    /// Children whose save was acknowledged.
    pub saved: BTreeSet<String>,
    /// Child → every claim acknowledged for it, in order.
    pub claims: BTreeMap<String, Vec<Claim>>,
    /// Child → how many completes were acknowledged (more than one is a bug).
    pub completed: BTreeMap<String, u32>,
    /// Provider → the end of every pause acknowledged.
    pub pauses: BTreeMap<String, Vec<i64>>,
    /// Requests not acknowledged with a reply: unanswered when the server
    /// died (no completion, or info), or answered an error (fail: an adapter
    /// that failed mid-write leaves its outcome open too). They may or may
    /// not have happened, so nothing is judged on them.
    pub in_flight: Vec<Request>,
    /// Acknowledged writes of every kind.
    pub writes: u64,
    /// Children completed again before the kill (a bug of the store): the
    /// child and how many completes had been acknowledged, once per extra one.
    pub completed_again: Vec<(String, u32)>,
    /// Operation → the store's message, for each operation it answered
    /// `unsupported` (PROTOCOL: nothing changed, and that check is skipped):
    /// never in flight, never a loss.
    pub unsupported: BTreeMap<String, String>,
}

impl Acked {
    /// What `history` acknowledged: every write completed ok, in the order
    /// the replies came; a request with no reply (info, fail, or no
    /// completion at all) is never acknowledged, only in flight. Requests
    /// that are not the workload's (they do not parse) count for nothing.
    pub fn from_history(history: &History) -> Acked {
        let mut acked = Acked::default();
        for x in exchanges(history) {
            let Ok(req) = Request::parse(x.call) else {
                continue;
            };
            match (x.reply(), x.completion.map(|c| &c.what)) {
                (Some(reply), _) => acked.record(&req, reply),
                (None, Some(Happened::Fail { op, error }))
                    if error.kind == ErrorKind::Unsupported =>
                {
                    acked
                        .unsupported
                        .entry(op.clone())
                        .or_insert_with(|| error.message.clone());
                }
                (None, _) => acked.in_flight.push(req),
            }
        }
        acked
    }

    /// The kinds of write (their ops) acknowledged at least once; a renew
    /// only while its lease is not released, so that it can be judged.
    pub fn kinds(&self) -> BTreeSet<&'static str> {
        let mut kinds = BTreeSet::new();
        let mut add = |yes: bool, op: Op| {
            if yes {
                kinds.insert(op.name());
            }
        };
        add(!self.grants.is_empty(), Op::Take);
        add(
            self.renews.keys().any(|k| !self.released.contains(k)),
            Op::Renew,
        );
        add(!self.released.is_empty(), Op::Release);
        add(!self.saved.is_empty(), Op::Save);
        add(!self.claims.is_empty(), Op::Claim);
        add(!self.completed.is_empty(), Op::Complete);
        add(!self.pauses.is_empty(), Op::Pause);
        kinds
    }

    /// The kinds of write a store claiming `contracts` is sent that this
    /// history has not acknowledged yet (nor been told are unsupported).
    pub fn kinds_missing(&self, contracts: &[Contract]) -> Vec<&'static str> {
        let have = self.kinds();
        let mut missing: Vec<&'static str> = OPS
            .iter()
            .filter(|(c, _)| contracts.contains(c))
            .map(|(_, op)| op.name())
            .filter(|op| !have.contains(op) && !self.unsupported.contains_key(*op))
            .collect();
        missing.dedup();
        missing
    }

    /// Records the answer to a write; reads and refusals change nothing.
    fn record(&mut self, req: &Request, reply: &Reply) {
        match (req, reply) {
            (Request::LeaseTake { tree, holder, .. }, Reply::Granted { epoch, .. }) => {
                self.grants.entry(tree.clone()).or_default().push(Grant {
                    epoch: *epoch,
                    holder: holder.clone(),
                });
            }
            (Request::LeaseRenew { tree, epoch, .. }, Reply::Renewed { expires_at_ms }) => {
                self.renews
                    .entry((tree.clone(), *epoch))
                    .or_default()
                    .push(*expires_at_ms);
            }
            (Request::LeaseRelease { tree, epoch, .. }, Reply::Released {}) => {
                self.released.insert((tree.clone(), *epoch));
            }
            (Request::QueueSave { child, .. }, Reply::Saved {}) => {
                self.saved.insert(child.clone());
            }
            (Request::QueueClaim { instance, .. }, Reply::Claimed { child, attempt, .. }) => {
                self.claims.entry(child.clone()).or_default().push(Claim {
                    instance: instance.clone(),
                    attempt: *attempt,
                });
            }
            (Request::QueueComplete { child, .. }, Reply::Completed {}) => {
                let n = self.completed.entry(child.clone()).or_insert(0);
                *n += 1;
                if *n > 1 {
                    self.completed_again.push((child.clone(), *n));
                }
            }
            (Request::RatePause { provider, .. }, Reply::Paused { until_ms }) => {
                self.pauses
                    .entry(provider.clone())
                    .or_default()
                    .push(*until_ms);
            }
            _ => return,
        }
        self.writes += 1;
    }

    /// Whether a request whose outcome is unknown could have released `tree` at `epoch`.
    pub fn release_in_flight(&self, tree: &str, epoch: i64) -> bool {
        self.in_flight.iter().any(|r| {
            matches!(r, Request::LeaseRelease { tree: t, epoch: e, .. } if t == tree && *e == epoch)
        })
    }
}

/// Why instances stopped: each error a request was answered with, in words
/// (`w0: lease.take answered unavailable: …`), in the order they came.
pub fn stopped(history: &History) -> Vec<String> {
    history
        .events
        .iter()
        .filter_map(|e| match &e.what {
            Happened::Fail { op, error } | Happened::Info { op, error } => {
                Some(format!("{}: {op} answered {error}", e.instance))
            }
            _ => None,
        })
        .collect()
}

/// The wall clock in ms (the crash suite runs on real time).
pub fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A kind of write the workload issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Take,
    Renew,
    Release,
    Save,
    Claim,
    Complete,
    Pause,
}

impl Op {
    /// Its operation's wire name.
    fn name(self) -> &'static str {
        match self {
            Op::Take => "lease.take",
            Op::Renew => "lease.renew",
            Op::Release => "lease.release",
            Op::Save => "queue.save",
            Op::Claim => "queue.claim",
            Op::Complete => "queue.complete",
            Op::Pause => "rate.pause",
        }
    }
}

/// The writes of each contract, each as often as it appears (a roll picks
/// one entry): with every contract claimed, 3 in 10 are takes and 1 in 10
/// a pause, as before contracts were narrowed.
const OPS: [(Contract, Op); 10] = [
    (Contract::Lease, Op::Take),
    (Contract::Lease, Op::Take),
    (Contract::Lease, Op::Take),
    (Contract::Lease, Op::Renew),
    (Contract::Lease, Op::Release),
    (Contract::Queue, Op::Save),
    (Contract::Queue, Op::Save),
    (Contract::Queue, Op::Claim),
    (Contract::Queue, Op::Complete),
    (Contract::Rate, Op::Pause),
];

/// The writes a store claiming `contracts` is sent, each as often as it
/// appears (`None` when no contract is claimed: nothing to write).
fn ops_of(contracts: &[Contract]) -> Option<Vec<Op>> {
    let ops: Vec<Op> = OPS
        .iter()
        .filter(|(c, _)| contracts.contains(c))
        .map(|(_, op)| *op)
        .collect();
    (!ops.is_empty()).then_some(ops)
}

/// A lease an instance holds: its tree, epoch and expiry (server time,
/// which is the host's real clock here).
type Held = (String, i64, i64);

/// What one instance holds and what its store does not offer: its own
/// run-time state, to choose the next write; never judged.
#[derive(Default)]
struct Mine {
    held: Vec<Held>,
    claimed: Vec<(String, i64)>,
    /// Ops the store answered `unsupported`: never sent again.
    unsupported: BTreeSet<&'static str>,
}

impl Mine {
    /// Whether `op` can be sent now: offered, and what it needs is held (a
    /// renew needs a lease still running: one that ran out answers `lost`,
    /// and a renew is what the crash check of renews judges).
    fn can(&self, op: Op, now_ms: i64) -> bool {
        !self.unsupported.contains(op.name())
            && match op {
                Op::Renew => self.live(now_ms).is_some(),
                Op::Release => !self.held.is_empty(),
                Op::Complete => !self.claimed.is_empty(),
                _ => true,
            }
    }

    /// The newest held lease still running a little past `now_ms`.
    fn live(&self, now_ms: i64) -> Option<usize> {
        self.held
            .iter()
            .rposition(|(_, _, until)| *until > now_ms + 20)
    }
}

/// One instance writing until `stop` is set or the server goes away; it
/// writes only to the `contracts` the store claims (none: it writes nothing),
/// and stops sending an operation the store answers `unsupported`.
/// It records every request and its outcome in `history` and nothing else:
/// what was acknowledged is read from there ([`Acked::from_history`]).
pub async fn instance(
    mut client: Box<dyn StoreClient>,
    name: String,
    seed: u64,
    contracts: Vec<Contract>,
    history: Arc<Mutex<History>>,
    stop: Arc<AtomicBool>,
) {
    let Some(ops) = ops_of(&contracts) else {
        return;
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut mine = Mine::default();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let now = wall_ms();
        let rolled = ops[rng.random_range(0..ops.len())];
        // A write that needs a lease or claim not held (or is not offered)
        // gives way to one that needs nothing: a take, a save or a pause.
        let Some(op) = std::iter::once(rolled)
            .chain([Op::Take, Op::Save, Op::Pause])
            .filter(|op| ops.contains(op))
            .find(|op| mine.can(*op, now))
        else {
            // Nothing the store offers is left to send.
            break;
        };
        let req = match op {
            Op::Take => Request::LeaseTake {
                tree: format!("tree-{}", rng.random_range(0..TREES)),
                holder: name.clone(),
                ttl_ms: LEASE_MS,
            },
            Op::Renew => {
                let i = mine.live(now).unwrap_or(0);
                let (tree, epoch, _) = mine.held[i].clone();
                Request::LeaseRenew {
                    tree,
                    holder: name.clone(),
                    epoch,
                    ttl_ms: RENEW_MS,
                }
            }
            Op::Release => {
                let (tree, epoch, _) = mine.held.swap_remove(rng.random_range(0..mine.held.len()));
                Request::LeaseRelease {
                    tree,
                    holder: name.clone(),
                    epoch,
                }
            }
            Op::Save => Request::QueueSave {
                child: format!("child-{name}-{n}"),
                depth: rng.random_range(0..4),
                payload: format!("payload {n}"),
            },
            Op::Claim => Request::QueueClaim {
                instance: name.clone(),
                claim_ttl_ms: CLAIM_MS,
            },
            Op::Complete => {
                let (child, attempt) = mine.claimed.swap_remove(0);
                Request::QueueComplete {
                    child,
                    instance: name.clone(),
                    attempt,
                }
            }
            Op::Pause => Request::RatePause {
                provider: format!("provider-{}", rng.random_range(0..PROVIDERS)),
                until_ms: wall_ms() + 3_600_000 + n as i64,
            },
        };
        let call = req.to_call();
        let clock_ms = wall_ms();
        match history.lock() {
            Ok(mut h) => h.invoke(&name, &call, None, clock_ms),
            Err(_) => break,
        }
        let outcome = client.call(&call, clock_ms).await;
        match history.lock() {
            Ok(mut h) => h.complete(&name, &call.op, &outcome, None, clock_ms),
            Err(_) => break,
        }
        let reply = match outcome {
            Ok(reply) => reply,
            // Not offered: nothing changed (PROTOCOL), the rest goes on.
            Err(e) if e.kind == ErrorKind::Unsupported => {
                mine.unsupported.insert(op.name());
                continue;
            }
            // The server is gone (killed) or refused: this instance stops;
            // the history says why, and an unknown outcome is never
            // acknowledged.
            Err(_) => break,
        };
        match (&req, &reply) {
            (
                Request::LeaseTake { tree, .. },
                Reply::Granted {
                    epoch,
                    expires_at_ms,
                },
            ) => mine.held.push((tree.clone(), *epoch, *expires_at_ms)),
            (Request::LeaseRenew { tree, epoch, .. }, Reply::Renewed { expires_at_ms }) => {
                for h in mine
                    .held
                    .iter_mut()
                    .filter(|h| &h.0 == tree && h.1 == *epoch)
                {
                    h.2 = *expires_at_ms;
                }
            }
            (Request::LeaseRenew { tree, epoch, .. }, Reply::Lost { .. }) => {
                mine.held.retain(|h| !(&h.0 == tree && h.1 == *epoch))
            }
            (Request::QueueClaim { .. }, Reply::Claimed { child, attempt, .. }) => {
                mine.claimed.push((child.clone(), *attempt))
            }
            _ => {}
        }
    }
}

/// Starts `instances` writers on `factory`, writing to the `contracts` the
/// store claims and recording in `history`; they stop when `stop` is set.
pub async fn start(
    factory: &Arc<dyn StoreFactory>,
    hello: impl Fn(usize) -> harness::store::Hello,
    instances: usize,
    seed: u64,
    contracts: &[Contract],
    history: &Arc<Mutex<History>>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let mut tasks = Vec::new();
    for i in 0..instances {
        let h = hello(i);
        let (_, client) = match factory.connect(&h, wall_ms()).await {
            Ok(connected) => connected,
            Err(e) => {
                // The instances already writing stop with this round.
                stop.store(true, Ordering::Relaxed);
                return Err(format!("instance {} could not connect: {e}", h.instance));
            }
        };
        tasks.push(tokio::spawn(instance(
            client,
            h.instance.clone(),
            seed.wrapping_add(i as u64 * 7919),
            contracts.to_vec(),
            history.clone(),
            stop.clone(),
        )));
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::contract::{Call, ErrorKind, StoreError};

    /// Pauses whatever it is asked to, then the server dies after `left` calls.
    struct Dying {
        left: usize,
    }

    #[async_trait::async_trait]
    impl StoreClient for Dying {
        async fn call(&mut self, call: &Call, _: i64) -> Result<Reply, StoreError> {
            if self.left == 0 {
                return Err(StoreError::new(ErrorKind::Unavailable, "connection reset"));
            }
            self.left -= 1;
            match Request::parse(call)? {
                Request::RatePause { until_ms, .. } => Ok(Reply::Paused { until_ms }),
                other => panic!("a rate-only store was sent {}", other.op()),
            }
        }
    }

    #[tokio::test]
    async fn the_history_holds_every_request_and_only_answered_writes_are_acknowledged() {
        let history = Arc::new(Mutex::new(History::default()));
        let stop = Arc::new(AtomicBool::new(false));
        instance(
            Box::new(Dying { left: 5 }),
            "w0".into(),
            1,
            vec![Contract::Rate],
            history.clone(),
            stop,
        )
        .await;
        let h = history.lock().unwrap();
        // Six requests sent, each invoked and completed; the sixth's outcome
        // is unknown: in flight, never acknowledged.
        assert_eq!(h.events.len(), 12);
        let a = Acked::from_history(&h);
        assert_eq!(a.pauses.values().map(Vec::len).sum::<usize>(), 5);
        assert_eq!(a.writes, 5);
        assert_eq!(a.in_flight.len(), 1);
        let why = stopped(&h);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("w0: rate.pause answered"), "{why:?}");
        assert!(why[0].contains("connection reset"), "{why:?}");
    }

    /// Offers no renew and nothing of the queue; takes and pauses after
    /// the built-in model, until the server dies after `left` calls.
    struct NoRenews {
        left: usize,
        model: harness::contract::ContractModel,
    }

    #[async_trait::async_trait]
    impl StoreClient for NoRenews {
        async fn call(&mut self, call: &Call, _: i64) -> Result<Reply, StoreError> {
            if self.left == 0 {
                return Err(StoreError::new(ErrorKind::Unavailable, "connection reset"));
            }
            self.left -= 1;
            let req = Request::parse(call)?;
            match req.contract() {
                Contract::Lease if req.op() != "lease.renew" => {
                    self.model.lease.apply(&req, wall_ms())
                }
                Contract::Rate => self.model.rate.apply(&req, wall_ms()),
                _ => None,
            }
            .ok_or_else(|| {
                StoreError::new(
                    ErrorKind::Unsupported,
                    format!("{} is not offered", req.op()),
                )
            })
        }
    }

    #[tokio::test]
    async fn an_unsupported_write_stops_its_kind_not_the_instance() {
        let history = Arc::new(Mutex::new(History::default()));
        let stop = Arc::new(AtomicBool::new(false));
        instance(
            Box::new(NoRenews {
                left: 300,
                model: Default::default(),
            }),
            "w0".into(),
            3,
            Contract::COORDINATION.to_vec(),
            history.clone(),
            stop,
        )
        .await;
        let h = history.lock().unwrap();
        let a = Acked::from_history(&h);
        // It wrote on until the server died, each unsupported kind tried once.
        assert!(a.writes > 100, "{} writes", a.writes);
        assert_eq!(
            a.unsupported.keys().map(String::as_str).collect::<Vec<_>>(),
            vec!["lease.renew", "queue.claim", "queue.save"]
        );
        let sent = |op: &str| {
            h.events
                .iter()
                .filter(|e| e.op() == op && e.kind() == harness::EventKind::Invoke)
                .count()
        };
        assert_eq!(
            (sent("lease.renew"), sent("queue.save"), sent("queue.claim")),
            (1, 1, 1)
        );
        assert_eq!(a.in_flight.len(), 1, "only the write the server died on");
        assert!(a
            .kinds_missing(&[Contract::Lease, Contract::Rate])
            .is_empty());
    }

    fn call(req: &Request) -> Call {
        req.to_call()
    }

    #[test]
    fn exchanges_pair_each_instance_s_invoke_with_its_completion() {
        let take = |holder: &str| Request::LeaseTake {
            tree: "tree-1".into(),
            holder: holder.into(),
            ttl_ms: LEASE_MS,
        };
        let granted = Ok(Reply::Granted {
            epoch: 1,
            expires_at_ms: 5,
        });
        let mut h = History::default();
        h.invoke("w0", &call(&take("w0")), None, 0);
        h.invoke("w1", &call(&take("w1")), None, 0);
        h.complete("w1", "lease.take", &granted, None, 0);
        // A completion nobody invoked pairs with nothing.
        h.complete("w2", "lease.take", &granted, None, 0);
        let x = exchanges(&h);
        assert_eq!(x.len(), 2);
        assert_eq!(
            (x[0].invoke.index, x[0].completion.map(|c| c.index)),
            (1, Some(2))
        );
        assert_eq!((x[1].invoke.index, x[1].completion), (0, None));
        assert!(x[0].reply().is_some() && x[1].reply().is_none());
    }
}
