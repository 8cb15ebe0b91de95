//! Linearizability of lease histories (docs/PROTOCOL.md §4.2): does some order
//! of the operations, each taking effect at one server instant inside its
//! window, explain every reply the store gave, by the lease contract?
//!
//! **Why our own checker.** Before writing this we read the two Rust
//! candidates the issue names. `todc-utils`'s `WGLChecker` (0.1.1) pairs
//! every call with a response (`History::from_actions` unwraps the response
//! of each call, so an operation that never completed cannot be expressed),
//! its `Specification::apply` returns one successor state (no "took effect
//! or not" branching for a lost reply), it has no notion of time, answers a
//! bare `bool` with no linearization or failing point, and keeps the history
//! in a `Vec` whose lift/unlift are O(n) per step. Stateright's
//! `LinearizabilityTester` searches without memoization (exponential on long
//! concurrent histories), its `SequentialSpec` steps deterministically, and it
//! has no time either. The lease contract needs three things neither gives:
//! an operation with an unknown outcome that may take effect at any instant
//! after its invoke or never, replies that depend on the server instant of
//! the step (expiry), and replies the contract leaves free (any growing
//! epoch). So this module is a Wing & Gong search with Lowe's memoization of
//! (linearized set, model state), as porcupine does, run per tree
//! (P-compositionality: leases of different trees share nothing). We judged
//! by reading their source and documentation, not by running them.
//!
//! **Lost replies.** An operation whose outcome is unknown returns at
//! +infinity and may be left out (never happened): the search is done once
//! every operation with a reply is placed. Trying operations with a reply
//! first, dropping lost renews and releases of an epoch the record has left
//! behind, pruning a lost take or renew that a grant replaces before any
//! reply depends on it, and a memo that also prunes configurations with
//! fewer lost operations still available than one already run, make a
//! history that is not linearizable cheap to refute: the search no longer
//! tries every subset of the lost replies (`Prepared::search`).
//!
//! **Time.** An operation with a reply takes effect at one server instant in
//! `[invoke server_ms, completion server_ms]`; one whose outcome is unknown
//! (an `info` completion, a malformed reply, or no completion) may take effect at any instant
//! after its invoke, or never. Instants never go back along the order. The
//! model step is the lease contract at that instant. The search does not
//! guess instants: the state carries a zone (a difference-bound matrix over
//! the instant of the last step and, while the live lease came from an
//! ambiguous grant or renew, the instant of that grant), and each reply adds
//! the constraints it implies (a grant takes effect no earlier than
//! `expires_at_ms - ttl_ms`, the time it read, which lies in its window;
//! `busy` needs the lease live, `lost` with no holder needs it not
//! live, …). This is exact for the lease: without an unknown expiry the
//! earliest instant is always the best choice, and an unknown expiry is one
//! variable. An event without `server_ms` leaves that side of the window open.
//!
//! **Freedoms the contract allows** (those `LeaseModel::judge` allows): a
//! grant's epoch may be any number above the previous one (an ambiguous
//! grant's epoch is known only as "above the previous" until a reply names
//! it); an expired lease's matching release may answer `not_held`; a lease
//! that is not live reads with any holder and expiry; `busy` or a live read at
//! the exact expiry instant (a SHOULD deviation, not a violation).

use std::collections::{BTreeMap, HashMap};

use model::contract::{Reply, Request};
use model::History;

use crate::ops::{answer_of, Answer};

mod explain;
pub use model::findings::linearizable::{Linearizability, Step, TreeVerdict};
use serde::{Deserialize, Serialize};

/// How many search steps one tree may take before the checker gives up and
/// answers [`TreeVerdict::Undecided`] (the harness's limit, never a failure).
pub const DEFAULT_STEP_BUDGET: u64 = 20_000_000;

/// One lease operation of a history, as the checker reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseOp {
    /// The index of its invoke event in the history.
    pub invoke_event: usize,
    /// The index of its completion event, if it completed.
    pub complete_event: Option<usize>,
    /// The instance that sent it.
    pub instance: String,
    /// The wire name, e.g. `lease.take`.
    pub op: String,
    /// The tree it is about.
    pub tree: String,
    /// The reply, or `None` when the outcome is unknown (info or no completion).
    pub reply: Option<Reply>,
    /// Server time of the invoke, when known.
    pub invoked_ms: Option<i64>,
    /// Server time of the completion, when known.
    pub completed_ms: Option<i64>,
    #[serde(skip)]
    request: Option<Request>,
}

/// The lease operations of `history`, paired invoke with completion (an
/// instance has one operation in flight), and the invoke events left out.
pub fn lease_ops(history: &History) -> (Vec<LeaseOp>, Vec<usize>) {
    let mut ops: Vec<LeaseOp> = Vec::new();
    // (the event that settled it, its invoke): an operation is left out at
    // its invoke (not a lease operation) or at its refusal.
    let mut ignored: Vec<(usize, usize)> = Vec::new();
    for o in history.operations() {
        let (invoke, call) = (o.invoke, o.call);
        let request = Request::parse(call).ok().filter(|r| {
            matches!(
                r,
                Request::LeaseTake { .. }
                    | Request::LeaseRenew { .. }
                    | Request::LeaseRelease { .. }
                    | Request::LeaseRead { .. }
            )
        });
        let Some(request) = request else {
            if call.op.starts_with("lease.") {
                ignored.push((invoke.index, invoke.index));
            }
            continue;
        };
        let tree = match &request {
            Request::LeaseTake { tree, .. }
            | Request::LeaseRenew { tree, .. }
            | Request::LeaseRelease { tree, .. }
            | Request::LeaseRead { tree } => tree.clone(),
            _ => String::new(),
        };
        let mut op = LeaseOp {
            invoke_event: invoke.index,
            complete_event: None,
            instance: invoke.instance.clone(),
            op: call.op.clone(),
            tree,
            reply: None,
            invoked_ms: invoke.server_ms,
            completed_ms: None,
            request: Some(request),
        };
        if let Some(c) = o.completion {
            match answer_of(&c.what) {
                Some(Answer::Reply(reply)) => op.reply = Some(reply.clone()),
                // `unavailable` or a malformed reply: it may have taken
                // effect.
                Some(Answer::Unknown) | None => {}
                // Refused or declined: it did not happen.
                Some(Answer::Refused | Answer::Declined) => {
                    ignored.push((c.index, invoke.index));
                    continue;
                }
            }
            op.complete_event = Some(c.index);
            op.completed_ms = c.server_ms;
        }
        ops.push(op);
    }
    ignored.sort_unstable();
    (ops, ignored.into_iter().map(|(_, invoke)| invoke).collect())
}

/// Checks every tree of `history` with the default step budget.
pub fn check(history: &History) -> Linearizability {
    check_with_budget(history, DEFAULT_STEP_BUDGET)
}

/// Checks every tree of `history`, each with at most `budget` search steps.
pub fn check_with_budget(history: &History, budget: u64) -> Linearizability {
    let (ops, ignored) = lease_ops(history);
    let mut by_tree: BTreeMap<String, Vec<LeaseOp>> = BTreeMap::new();
    for op in ops {
        by_tree.entry(op.tree.clone()).or_default().push(op);
    }
    let trees = by_tree
        .into_iter()
        .map(|(tree, ops)| {
            let verdict = check_tree(&ops, budget);
            (tree, verdict)
        })
        .collect();
    Linearizability { trees, ignored }
}

/// Checks one tree's operations (all of `ops` must name the same tree).
pub fn check_tree(ops: &[LeaseOp], budget: u64) -> TreeVerdict {
    let prepared = Prepared::new(ops);
    match prepared.search(None, budget) {
        Search::Found(order) => TreeVerdict::Linearizable {
            order: prepared.steps(&order, true),
        },
        Search::OutOfBudget(steps) => TreeVerdict::Undecided { steps },
        Search::None(longest) => prepared.shortest_failing_prefix(budget, longest),
    }
}

// ---------------------------------------------------------------------------
// Time: a zone over (zero, now, grant instant).

const INF: i64 = i64::MAX / 4;
const Z: usize = 0;
const NOW: usize = 1;
const T: usize = 2;

/// A closed difference-bound matrix: `m[i][j]` bounds `x_i - x_j`, over
/// zero, the instant of the last step, and the instant of the ambiguous grant
/// or renew that set the live expiry (unconstrained when there is none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Zone {
    m: [[i64; 3]; 3],
}

fn add(a: i64, b: i64) -> i64 {
    if a >= INF || b >= INF {
        INF
    } else {
        (a + b).clamp(-INF, INF)
    }
}

impl Zone {
    fn start() -> Zone {
        let mut m = [[INF; 3]; 3];
        for (i, row) in m.iter_mut().enumerate() {
            row[i] = 0;
        }
        Zone { m }
    }

    fn close<const N: usize>(m: &mut [[i64; N]; N]) -> bool {
        for k in 0..N {
            for i in 0..N {
                for j in 0..N {
                    let via = add(m[i][k], m[k][j]);
                    if via < m[i][j] {
                        m[i][j] = via;
                    }
                }
            }
        }
        (0..N).all(|i| m[i][i] >= 0)
    }

    /// Adds `x_i - x_j <= c`; false when no instant fits any more.
    fn constrain(&mut self, i: usize, j: usize, c: i64) -> bool {
        if c < self.m[i][j] {
            self.m[i][j] = c;
            return Zone::close(&mut self.m);
        }
        true
    }

    /// A new step at an instant in `[lo, hi]`, not before the last one.
    fn advance(&mut self, lo: Option<i64>, hi: Option<i64>) -> bool {
        let mut m = [[INF; 4]; 4];
        for (i, row) in self.m.iter().enumerate() {
            m[i][..3].copy_from_slice(row);
        }
        m[3][3] = 0;
        m[NOW][3] = 0;
        if let Some(lo) = lo {
            m[Z][3] = -lo;
        }
        if let Some(hi) = hi {
            m[3][Z] = hi;
        }
        if !Zone::close(&mut m) {
            return false;
        }
        let keep = [Z, 3, T];
        for (a, &i) in keep.iter().enumerate() {
            for (b, &j) in keep.iter().enumerate() {
                self.m[a][b] = m[i][j];
            }
        }
        true
    }

    fn forget_t(&mut self) {
        for i in 0..3 {
            if i != T {
                self.m[i][T] = INF;
                self.m[T][i] = INF;
            }
        }
    }

    /// Without an unknown expiry only the earliest instant of the last step
    /// matters (later steps only need to be no earlier), so the rest is
    /// dropped and equal states meet in the memo.
    fn normalize_without_t(&mut self) {
        self.forget_t();
        self.m[NOW][Z] = INF;
    }

    fn earliest(&self, x: usize) -> Option<i64> {
        (self.m[Z][x] > -INF && self.m[Z][x] < INF).then_some(-self.m[Z][x])
    }

    fn latest(&self, x: usize) -> Option<i64> {
        (self.m[x][Z] < INF).then_some(self.m[x][Z])
    }
}

// ---------------------------------------------------------------------------
// The lease record, with what is not yet known of it.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Expiry {
    At(i64),
    /// The grant instant `T` of the zone plus this ttl.
    AfterT(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Record {
    holder: u32,
    /// The epoch, or its least possible value when not `exact`.
    epoch: i64,
    exact: bool,
    released: bool,
    expiry: Expiry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct State {
    rec: Option<Record>,
    zone: Zone,
}

impl State {
    /// The record is live at the step's instant (`at_instant`: also at the
    /// exact expiry instant, the SHOULD freedom of `busy` and reads).
    fn require_live(&mut self, at_instant: bool) -> bool {
        let slack = if at_instant { 0 } else { 1 };
        match self.rec {
            Some(r) if !r.released => match r.expiry {
                Expiry::At(e) => self.zone.constrain(NOW, Z, e - slack),
                Expiry::AfterT(ttl) => self.zone.constrain(NOW, T, ttl - slack),
            },
            _ => false,
        }
    }

    /// The record is expired at the step's instant (not released: that is
    /// the caller's other case).
    fn require_expired(&mut self) -> bool {
        match self.rec {
            Some(r) => match r.expiry {
                Expiry::At(e) => self.zone.constrain(Z, NOW, -e),
                Expiry::AfterT(ttl) => self.zone.constrain(T, NOW, -ttl),
            },
            None => true,
        }
    }

    /// The record is absent, released or expired at the step's instant.
    fn require_free(&mut self) -> bool {
        match self.rec {
            None => true,
            Some(r) if r.released => true,
            Some(_) => self.require_expired(),
        }
    }

    fn require_expiry(&mut self, at: i64) -> bool {
        match self.rec.map(|r| r.expiry) {
            Some(Expiry::At(e)) => e == at,
            Some(Expiry::AfterT(ttl)) => {
                self.zone.constrain(T, Z, at - ttl) && self.zone.constrain(Z, T, ttl - at)
            }
            None => false,
        }
    }

    /// The epoch may be `e`; if it was known only from below, now it is `e`.
    fn unify_epoch(&mut self, e: i64) -> bool {
        match self.rec.as_mut() {
            Some(r) if r.exact => r.epoch == e,
            Some(r) if e >= r.epoch => {
                r.epoch = e;
                r.exact = true;
                true
            }
            _ => false,
        }
    }

    /// Whether the epoch may differ from `e` (an inexact epoch always may).
    fn epoch_may_differ(&self, e: i64) -> bool {
        self.rec.is_some_and(|r| !r.exact || r.epoch != e)
    }

    /// Drops what no later step can tell apart: an unknown expiry that is
    /// fixed, or already past, or of a released record.
    fn settle(&mut self) {
        if let Some(r) = self.rec.as_mut() {
            if let Expiry::AfterT(ttl) = r.expiry {
                let z = &self.zone.m;
                let fixed = z[T][Z] == -z[Z][T];
                let past = z[T][NOW] <= -ttl;
                if fixed || past || r.released {
                    // Past: any expiry not after the earliest instant of this
                    // step reads the same from now on; the closure guarantees
                    // earliest(T) + ttl is one.
                    r.expiry = Expiry::At(add(-z[Z][T], ttl));
                }
            }
            if r.released {
                r.expiry = Expiry::At(0);
            }
        }
        match self.rec.map(|r| r.expiry) {
            Some(Expiry::AfterT(_)) => {}
            _ => self.zone.normalize_without_t(),
        }
    }
}

/// The request of an operation, with holders interned.
#[derive(Debug, Clone, Copy)]
enum Req {
    Take { holder: u32, ttl: i64 },
    Renew { holder: u32, epoch: i64, ttl: i64 },
    Release { holder: u32, epoch: i64 },
    Read,
}

#[derive(Debug, Clone)]
enum Seen {
    Granted {
        epoch: i64,
        expires: i64,
    },
    Busy {
        holder: u32,
        epoch: i64,
        expires: i64,
    },
    Renewed {
        expires: i64,
    },
    LostNone,
    Lost {
        holder: u32,
        epoch: i64,
    },
    Released,
    NotHeld,
    ReadNone,
    ReadLive {
        holder: u32,
        epoch: i64,
        expires: i64,
    },
    ReadNotLive {
        epoch: i64,
    },
    /// A reply the operation never gives (or a malformed one).
    Impossible,
    Unknown,
}

/// The successor states of `s` when an operation with a reply takes effect
/// at an instant in `[lo, hi]`.
fn step_replied(s: &State, req: Req, seen: &Seen, lo: Option<i64>, hi: Option<i64>) -> Vec<State> {
    let mut n = *s;
    if !n.zone.advance(lo, hi) {
        return Vec::new();
    }
    let mut out = replied(n, req, seen, lo);
    for c in &mut out {
        c.settle();
    }
    out
}

/// The state after an operation whose outcome is unknown takes effect at an
/// instant from `lo` on, when it can change the record. "Never happened" is
/// no step: such an operation is simply left out of the order.
fn step_unknown(s: &State, req: Req, lo: Option<i64>) -> Option<State> {
    if matches!(req, Req::Read) {
        return None;
    }
    let mut n = *s;
    if !n.zone.advance(lo, None) || !effect_unknown(&mut n, req) {
        return None;
    }
    n.settle();
    Some(n)
}

/// An operation whose outcome is unknown took effect at the zone's `NOW`:
/// only the cases that change the record (the others equal "never happened").
fn effect_unknown(n: &mut State, req: Req) -> bool {
    match req {
        Req::Take { holder, ttl } => {
            if !n.require_free() {
                return false;
            }
            let floor = n.rec.map_or(0, |r| r.epoch);
            n.zone.forget_t();
            // The grant's instant is this step's instant.
            if !(n.zone.constrain(T, NOW, 0) && n.zone.constrain(NOW, T, 0)) {
                return false;
            }
            n.rec = Some(Record {
                holder,
                epoch: floor + 1,
                exact: false,
                released: false,
                expiry: Expiry::AfterT(ttl),
            });
            true
        }
        Req::Renew { holder, epoch, ttl } => {
            if !(n.rec.is_some_and(|r| r.holder == holder)
                && n.require_live(false)
                && n.unify_epoch(epoch))
            {
                return false;
            }
            n.zone.forget_t();
            if !(n.zone.constrain(T, NOW, 0) && n.zone.constrain(NOW, T, 0)) {
                return false;
            }
            if let Some(r) = n.rec.as_mut() {
                r.expiry = Expiry::AfterT(ttl);
            }
            true
        }
        Req::Release { holder, epoch } => {
            let ok =
                n.rec.is_some_and(|r| !r.released && r.holder == holder) && n.unify_epoch(epoch);
            if let Some(r) = n.rec.as_mut().filter(|_| ok) {
                r.released = true;
            }
            ok
        }
        Req::Read => false,
    }
}

/// Whether a grant or renew answering `expires` for `ttl` read the server's
/// time inside its operation's window (from `lo` on) and took effect at
/// the zone's `NOW` no earlier: `NOW ≥ expires − ttl ≥ lo`. A store reads
/// `TIME` and then writes (a `WATCH` … `EXEC` take: the write lands at
/// `EXEC`, a few commands later), so the lease it grants may run for less
/// than `ttl` after it takes effect, never more; another operation between
/// the two saw the record as it was before. Fixing `NOW` at `expires − ttl`
/// failed such a correct take whenever a read or a refused renew fell
/// between its `TIME` and its `EXEC` (issue 40).
fn timed_within(s: &mut State, expires: i64, ttl: i64, lo: Option<i64>) -> bool {
    lo.is_none_or(|lo| expires - ttl >= lo) && s.zone.constrain(Z, NOW, ttl - expires)
}

/// The states in which `seen` is a reply the contract allows to `req` at the
/// zone's `NOW` (its operation invoked at `lo`), moved along it.
fn replied(n: State, req: Req, seen: &Seen, lo: Option<i64>) -> Vec<State> {
    let one =
        |mut s: State, f: &dyn Fn(&mut State) -> bool| if f(&mut s) { vec![s] } else { vec![] };
    match (req, seen) {
        (Req::Take { holder, ttl }, Seen::Granted { epoch, expires }) => one(n, &|s| {
            let floor = s.rec.map_or(0, |r| r.epoch);
            let ok = *epoch > floor && s.require_free() && timed_within(s, *expires, ttl, lo);
            s.rec = Some(Record {
                holder,
                epoch: *epoch,
                exact: true,
                released: false,
                expiry: Expiry::At(*expires),
            });
            ok
        }),
        (
            Req::Take { .. },
            Seen::Busy {
                holder,
                epoch,
                expires,
            },
        ) => one(n, &|s| {
            s.rec.is_some_and(|r| r.holder == *holder)
                && s.require_live(true)
                && s.unify_epoch(*epoch)
                && s.require_expiry(*expires)
        }),
        (Req::Renew { holder, epoch, ttl }, Seen::Renewed { expires }) => one(n, &|s| {
            let ok = s.rec.is_some_and(|r| r.holder == holder)
                && s.require_live(false)
                && s.unify_epoch(epoch)
                && timed_within(s, *expires, ttl, lo);
            if let Some(r) = s.rec.as_mut() {
                r.expiry = Expiry::At(*expires);
            }
            ok
        }),
        (Req::Renew { .. }, Seen::LostNone) => one(n, &|s| s.require_free()),
        (
            Req::Renew { holder, epoch, .. },
            Seen::Lost {
                holder: h,
                epoch: e,
            },
        ) => one(n, &|s| {
            s.rec.is_some_and(|r| r.holder == *h)
                && s.require_live(false)
                && s.unify_epoch(*e)
                && (holder != *h || epoch != *e)
        }),
        (Req::Release { holder, epoch }, Seen::Released) => one(n, &|s| {
            let ok =
                s.rec.is_some_and(|r| !r.released && r.holder == holder) && s.unify_epoch(epoch);
            if let Some(r) = s.rec.as_mut() {
                r.released = true;
            }
            ok
        }),
        (Req::Release { holder, epoch }, Seen::NotHeld) => {
            let Some(r) = n.rec else { return vec![n] };
            if r.released || r.holder != holder {
                return vec![n];
            }
            if n.epoch_may_differ(epoch) {
                // An epoch known only from below may differ; keeping it
                // unrefined also covers the equal-and-expired case.
                return vec![n];
            }
            // Holder and epoch match: only an expired lease may answer
            // not_held (and nothing changes).
            let mut m = n;
            if m.require_expired() {
                vec![m]
            } else {
                vec![]
            }
        }
        (Req::Read, Seen::ReadNone) => one(n, &|s| s.rec.is_none()),
        (
            Req::Read,
            Seen::ReadLive {
                holder,
                epoch,
                expires,
            },
        ) => one(n, &|s| {
            s.rec.is_some_and(|r| r.holder == *holder)
                && s.require_live(true)
                && s.unify_epoch(*epoch)
                && s.require_expiry(*expires)
        }),
        (Req::Read, Seen::ReadNotLive { epoch }) => one(n, &|s| {
            s.rec.is_some() && s.unify_epoch(*epoch) && s.require_free()
        }),
        _ => vec![],
    }
}

// ---------------------------------------------------------------------------
// The search (Wing & Gong, Lowe's memo), over call and return entries.

struct Prepared<'a> {
    ops: &'a [LeaseOp],
    reqs: Vec<Req>,
    seen: Vec<Seen>,
    /// Holder names by their interned id.
    holders: Vec<String>,
}

enum Search {
    /// The order of op indexes, each with whether it took effect.
    Found(Order),
    /// Not linearizable: the longest partial linearization found.
    None(Order),
    OutOfBudget(u64),
}

fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

fn clear(bits: &mut [u64], i: usize) {
    bits[i / 64] &= !(1 << (i % 64));
}

fn has(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

fn subset(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x & !y == 0)
}

type Order = Vec<(usize, bool, Option<i64>, Option<i64>)>;

/// One configuration on the search path: the state after the operation that
/// led here, and the operations still to try from it.
struct Node {
    /// The operation (index into `Prepared::ops`) whose step led here.
    op: Option<usize>,
    /// Whether that operation had an unknown outcome (took effect here).
    unknown: bool,
    /// The record was last changed by an unknown-outcome take or renew and
    /// no step since depended on that change (see `Prepared::search`).
    unseen: bool,
    state: State,
    /// The candidates (op indexes), tried in order.
    candidates: Vec<usize>,
    next: usize,
    /// States the current candidate may lead to, not yet tried.
    alternatives: Vec<State>,
    /// The candidate those alternatives belong to.
    trying: usize,
    /// The first position in `by_return` not yet linearized.
    first_unreturned: usize,
    /// The first position in `by_invoke` not yet linearized.
    first_uninvoked: usize,
}

/// Configurations known to lead nowhere: for the known operations
/// linearized and the state, every set of unknown-outcome operations no
/// longer available (taken effect, or dead in that state) from which the
/// search was run. One with fewer available operations than any of them
/// leads nowhere either: its futures are a subset.
#[derive(Default)]
struct Memo {
    seen: HashMap<(Vec<u64>, State), Vec<Vec<u64>>>,
}

impl Memo {
    /// Records the configuration; false when it is covered by one recorded.
    fn insert(&mut self, known: &[u64], state: State, unavailable: Vec<u64>) -> bool {
        let sets = self.seen.entry((known.to_vec(), state)).or_default();
        if sets.iter().any(|s| subset(s, &unavailable)) {
            return false;
        }
        // Drop the ones the new set covers: they prune nothing it does not.
        sets.retain(|s| !subset(&unavailable, s));
        sets.push(unavailable);
        true
    }
}

impl<'a> Prepared<'a> {
    fn new(ops: &'a [LeaseOp]) -> Self {
        let mut holders: HashMap<String, u32> = HashMap::new();
        let mut id = |h: &str| {
            let next = holders.len() as u32;
            *holders.entry(h.to_string()).or_insert(next)
        };
        let mut reqs = Vec::with_capacity(ops.len());
        let mut seen = Vec::with_capacity(ops.len());
        for op in ops {
            let req = match &op.request {
                Some(Request::LeaseTake { holder, ttl_ms, .. }) => Req::Take {
                    holder: id(holder),
                    ttl: *ttl_ms,
                },
                Some(Request::LeaseRenew {
                    holder,
                    epoch,
                    ttl_ms,
                    ..
                }) => Req::Renew {
                    holder: id(holder),
                    epoch: *epoch,
                    ttl: *ttl_ms,
                },
                Some(Request::LeaseRelease { holder, epoch, .. }) => Req::Release {
                    holder: id(holder),
                    epoch: *epoch,
                },
                _ => Req::Read,
            };
            let s = match (&op.reply, req) {
                (None, _) => Seen::Unknown,
                (
                    Some(Reply::Granted {
                        epoch,
                        expires_at_ms,
                    }),
                    Req::Take { .. },
                ) => Seen::Granted {
                    epoch: *epoch,
                    expires: *expires_at_ms,
                },
                (
                    Some(Reply::Busy {
                        holder,
                        epoch,
                        expires_at_ms,
                    }),
                    Req::Take { .. },
                ) => Seen::Busy {
                    holder: id(holder),
                    epoch: *epoch,
                    expires: *expires_at_ms,
                },
                (Some(Reply::Renewed { expires_at_ms }), Req::Renew { .. }) => Seen::Renewed {
                    expires: *expires_at_ms,
                },
                (
                    Some(Reply::Lost {
                        holder: None,
                        epoch: None,
                    }),
                    Req::Renew { .. },
                ) => Seen::LostNone,
                (
                    Some(Reply::Lost {
                        holder: Some(h),
                        epoch: Some(e),
                    }),
                    Req::Renew { .. },
                ) => Seen::Lost {
                    holder: id(h),
                    epoch: *e,
                },
                (Some(Reply::Released {}), Req::Release { .. }) => Seen::Released,
                (Some(Reply::NotHeld {}), Req::Release { .. }) => Seen::NotHeld,
                (Some(Reply::Lease(None)), Req::Read) => Seen::ReadNone,
                (Some(Reply::Lease(Some(v))), Req::Read) if v.live => {
                    match (&v.holder, v.expires_at_ms) {
                        (Some(h), Some(x)) => Seen::ReadLive {
                            holder: id(h),
                            epoch: v.epoch,
                            expires: x,
                        },
                        _ => Seen::Impossible,
                    }
                }
                (Some(Reply::Lease(Some(v))), Req::Read) => Seen::ReadNotLive { epoch: v.epoch },
                _ => Seen::Impossible,
            };
            reqs.push(req);
            seen.push(s);
        }
        let mut names = vec![String::new(); holders.len()];
        for (name, id) in holders {
            names[id as usize] = name;
        }
        Prepared {
            ops,
            reqs,
            seen,
            holders: names,
        }
    }

    /// Searches the operations whose invoke comes before event `cut` (all
    /// when `None`); those completing at or after it count as unknown.
    ///
    /// Wing & Gong's search with Lowe's memo, where an operation with an
    /// unknown outcome returns at +infinity and need not be linearized at
    /// all (left out = never happened), so the order is complete once every
    /// operation with a reply is in it. Candidates are those invoked before
    /// the earliest return still pending (the minimal operations), the ones
    /// with a reply first. The memo keys (known operations linearized,
    /// state) and prunes a configuration whose still-available
    /// unknown-outcome operations are a subset of those of one already run
    /// from: it can only do less. Without that, every subset of the lost
    /// replies that took effect is one more configuration.
    ///
    /// One more prune, the one that makes failing histories cheap: a lost
    /// take or renew is never followed by a grant (a granted take, or a
    /// lost take) with only replies between that do not depend on it
    /// (`lost` with no holder, `not_held`). Removing it from such an order
    /// leaves an order that explains the same replies: the record before
    /// it was free (take) or expires sooner (renew), those replies hold on
    /// it too, and the grant replaces the record; what remains has a lower
    /// epoch floor and looser instants, which no later step minds. So a
    /// lost take never fills an epoch gap nobody saw (any growing epoch is
    /// allowed anyway), and which lost takes did so is no longer a choice.
    fn search(&self, cut: Option<usize>, budget: u64) -> Search {
        self.search_noting(cut, budget, None)
    }

    /// [`Prepared::search`], noting in `dead` (when given) every order after
    /// which its operation was next and no answer of it fitted.
    fn search_noting(
        &self,
        cut: Option<usize>,
        budget: u64,
        mut dead_ends: Option<&mut explain::DeadEnds>,
    ) -> Search {
        let included = |i: usize| cut.is_none_or(|c| self.ops[i].invoke_event < c);
        let known = |i: usize| -> bool {
            let op = &self.ops[i];
            !matches!(self.seen[i], Seen::Unknown)
                && op
                    .complete_event
                    .is_some_and(|c| cut.is_none_or(|cut| c < cut))
        };
        let n = self.ops.len();
        // Operations with a reply, and those with an unknown outcome that
        // can change the record (an unknown read changes nothing).
        let mut by_invoke: Vec<usize> = Vec::new();
        let mut unknowns: Vec<usize> = Vec::new();
        for i in (0..n).filter(|&i| included(i)) {
            if known(i) {
                by_invoke.push(i);
            } else if !matches!(self.reqs[i], Req::Read) {
                unknowns.push(i);
            }
        }
        by_invoke.sort_by_key(|&i| (self.ops[i].invoke_event, i));
        unknowns.sort_by_key(|&i| (self.ops[i].invoke_event, i));
        let mut by_return = by_invoke.clone();
        by_return.sort_by_key(|&i| (self.ops[i].complete_event, i));
        // Bit positions: among known operations, among unknown ones.
        let mut bit = vec![0usize; n];
        for (k, &i) in by_invoke.iter().enumerate() {
            bit[i] = k;
        }
        for (k, &i) in unknowns.iter().enumerate() {
            bit[i] = k;
        }
        let mut linearized = vec![0u64; by_invoke.len().div_ceil(64).max(1)];
        let mut applied = vec![0u64; unknowns.len().div_ceil(64).max(1)];
        let returned_at = |i: usize| self.ops[i].complete_event.unwrap_or(usize::MAX);

        // A release or renew of an epoch the record has left behind (or
        // holds for another holder, or released) can never take effect:
        // epochs only grow.
        let dead = |i: usize, s: &State| -> bool {
            let (holder, epoch) = match self.reqs[i] {
                Req::Renew { holder, epoch, .. } | Req::Release { holder, epoch } => {
                    (holder, epoch)
                }
                _ => return false,
            };
            s.rec.is_some_and(|r| {
                r.epoch > epoch || (r.epoch >= epoch && (r.holder != holder || r.released))
            })
        };
        let unavailable = |applied: &[u64], s: &State| -> Vec<u64> {
            let mut out = applied.to_vec();
            for (k, &i) in unknowns.iter().enumerate() {
                if dead(i, s) {
                    set(&mut out, k);
                }
            }
            out
        };
        // The node for `state` after the known set `linearized`, or `None`
        // when every operation with a reply is linearized.
        let node = |op: Option<usize>,
                    unknown: bool,
                    unseen: bool,
                    state: State,
                    mut first_unreturned: usize,
                    mut first_uninvoked: usize,
                    linearized: &[u64],
                    applied: &[u64]|
         -> Option<Node> {
            while first_unreturned < by_return.len()
                && has(linearized, bit[by_return[first_unreturned]])
            {
                first_unreturned += 1;
            }
            while first_uninvoked < by_invoke.len()
                && has(linearized, bit[by_invoke[first_uninvoked]])
            {
                first_uninvoked += 1;
            }
            let &earliest_return = by_return.get(first_unreturned)?;
            let r = returned_at(earliest_return);
            let mut candidates: Vec<usize> = by_invoke[first_uninvoked..]
                .iter()
                .copied()
                .take_while(|&i| self.ops[i].invoke_event < r)
                .filter(|&i| !has(linearized, bit[i]))
                .filter(|&i| !(unseen && matches!(self.seen[i], Seen::Granted { .. })))
                .collect();
            candidates.extend(
                unknowns
                    .iter()
                    .copied()
                    .take_while(|&i| self.ops[i].invoke_event < r)
                    .filter(|&i| !has(applied, bit[i]) && !dead(i, &state))
                    .filter(|&i| !(unseen && matches!(self.reqs[i], Req::Take { .. }))),
            );
            Some(Node {
                op,
                unknown,
                unseen,
                state,
                candidates,
                next: 0,
                alternatives: Vec::new(),
                trying: 0,
                first_unreturned,
                first_uninvoked,
            })
        };

        let mut start = State {
            rec: None,
            zone: Zone::start(),
        };
        start.zone.normalize_without_t();
        let mut memo = Memo::default();
        let Some(root) = node(None, false, false, start, 0, 0, &linearized, &applied) else {
            return Search::Found(Vec::new());
        };
        memo.insert(&linearized, start, unavailable(&applied, &start));
        let mut stack: Vec<Node> = vec![root];
        let mut longest: Order = Vec::new();
        let mut steps: u64 = 0;
        while let Some(top) = stack.last_mut() {
            if let Some(after) = top.alternatives.pop() {
                steps += 1;
                if steps > budget {
                    return Search::OutOfBudget(steps);
                }
                let i = top.trying;
                let unknown = !known(i);
                let (fu, fi) = (top.first_unreturned, top.first_uninvoked);
                let unseen = if unknown {
                    matches!(self.reqs[i], Req::Take { .. } | Req::Renew { .. })
                } else {
                    top.unseen && matches!(self.seen[i], Seen::LostNone | Seen::NotHeld)
                };
                if unknown {
                    set(&mut applied, bit[i]);
                } else {
                    set(&mut linearized, bit[i]);
                }
                let fresh = memo.insert(&linearized, after, unavailable(&applied, &after));
                if fresh {
                    match node(
                        Some(i),
                        unknown,
                        unseen,
                        after,
                        fu,
                        fi,
                        &linearized,
                        &applied,
                    ) {
                        Some(child) => {
                            stack.push(child);
                            continue;
                        }
                        None => {
                            stack.push(Node {
                                op: Some(i),
                                unknown,
                                unseen: false,
                                state: after,
                                candidates: Vec::new(),
                                next: 0,
                                alternatives: Vec::new(),
                                trying: 0,
                                first_unreturned: fu,
                                first_uninvoked: fi,
                            });
                            return Search::Found(self.order_of(&stack));
                        }
                    }
                }
                if unknown {
                    clear(&mut applied, bit[i]);
                } else {
                    clear(&mut linearized, bit[i]);
                }
            } else if let Some(&i) = top.candidates.get(top.next) {
                top.next += 1;
                top.trying = i;
                let op = &self.ops[i];
                top.alternatives = if known(i) {
                    let hi = op.completed_ms;
                    step_replied(&top.state, self.reqs[i], &self.seen[i], op.invoked_ms, hi)
                } else {
                    step_unknown(&top.state, self.reqs[i], op.invoked_ms)
                        .into_iter()
                        .collect()
                };
                // Alternatives are popped from the end: try them in order.
                top.alternatives.reverse();
                if top.alternatives.is_empty() {
                    if let Some(noted) = dead_ends.as_deref_mut() {
                        let state = top.state;
                        noted.note(i, state, || self.order_of(&stack));
                    }
                }
            } else {
                if stack.len() - 1 > longest.len() {
                    longest = self.order_of(&stack);
                }
                let Some(done) = stack.pop() else { break };
                if let Some(i) = done.op {
                    if done.unknown {
                        clear(&mut applied, bit[i]);
                    } else {
                        clear(&mut linearized, bit[i]);
                    }
                }
            }
        }
        Search::None(longest)
    }

    /// The order of the path from the root (the root is no step).
    fn order_of(&self, stack: &[Node]) -> Order {
        stack
            .iter()
            .filter_map(|f| {
                let z = &f.state.zone;
                f.op.map(|op| (op, true, z.earliest(NOW), z.latest(NOW)))
            })
            .collect()
    }

    /// The steps of `order`; when it is `complete`, the operations with an
    /// unknown outcome left out of it are listed after it as never taking effect.
    fn steps(
        &self,
        order: &[(usize, bool, Option<i64>, Option<i64>)],
        complete: bool,
    ) -> Vec<Step> {
        let mut listed = vec![false; self.ops.len()];
        let mut out: Vec<Step> = order
            .iter()
            .map(|&(i, took, earliest, latest)| {
                listed[i] = true;
                let op = &self.ops[i];
                let unknown = matches!(self.seen[i], Seen::Unknown);
                Step {
                    invoke_event: op.invoke_event,
                    op: op.op.clone(),
                    instance: op.instance.clone(),
                    took_effect: unknown.then_some(took),
                    earliest_ms: if took { earliest } else { None },
                    latest_ms: if took { latest } else { None },
                }
            })
            .collect();
        for (i, op) in self.ops.iter().enumerate() {
            if !listed[i] && complete {
                out.push(Step {
                    invoke_event: op.invoke_event,
                    op: op.op.clone(),
                    instance: op.instance.clone(),
                    took_effect: Some(false),
                    earliest_ms: None,
                    latest_ms: None,
                });
            }
        }
        out
    }

    /// Binary search for the shortest prefix (cut at a completion with a
    /// reply) that is not linearizable: a prefix with unknown outcomes for
    /// what completed later allows everything the longer one allows.
    fn shortest_failing_prefix(&self, budget: u64, whole_longest: Order) -> TreeVerdict {
        let mut cuts: Vec<(usize, usize)> = self
            .ops
            .iter()
            .enumerate()
            .filter(|(i, _)| !matches!(self.seen[*i], Seen::Unknown))
            .filter_map(|(i, op)| op.complete_event.map(|c| (c, i)))
            .collect();
        cuts.sort_unstable();
        let fails = |k: usize| -> Option<Search> {
            match self.search(Some(cuts[k].0 + 1), budget) {
                Search::Found(_) => None,
                other => Some(other),
            }
        };
        // The whole history fails, so the last cut fails, with the longest
        // partial order the whole search found (no operation invoked after
        // the last reply is ever a candidate: the two searches are one).
        // Gallop back from the end, then bisect: a violation is often near
        // the end, and each failing probe is an exhaustive search.
        let mut hi = cuts.len().saturating_sub(1);
        let mut result = Search::None(whole_longest);
        let mut lo = 0usize;
        let mut stride = 1usize;
        while hi > 0 {
            let k = hi.saturating_sub(stride);
            match fails(k) {
                Some(r) => {
                    (hi, result) = (k, r);
                    stride = stride.saturating_mul(2);
                }
                None => {
                    lo = k + 1;
                    break;
                }
            }
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            match fails(mid) {
                Some(r) => (hi, result) = (mid, r),
                None => lo = mid + 1,
            }
        }
        let longest = match result {
            Search::OutOfBudget(steps) => return TreeVerdict::Undecided { steps },
            Search::None(l) | Search::Found(l) => l,
        };
        let Some(&(at_event, i)) = cuts.get(lo) else {
            return TreeVerdict::Undecided { steps: 0 };
        };
        let me = &self.ops[i];
        let concurrent = self
            .ops
            .iter()
            .enumerate()
            .filter(|&(j, o)| {
                j != i
                    && o.invoke_event < at_event
                    && o.complete_event.is_none_or(|c| c > me.invoke_event)
            })
            .map(|(_, o)| o.invoke_event)
            .collect();
        // Every other order after which the failing operation was next,
        // for the explanation: what it would have had to answer there.
        let mut dead = explain::DeadEnds::new(i);
        let _ = self.search_noting(Some(at_event + 1), budget, Some(&mut dead));
        TreeVerdict::NotLinearizable {
            at_event,
            op_event: me.invoke_event,
            concurrent,
            why: self.explain(&longest, i, &dead),
            longest_partial: self.steps(&longest, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::contract::{ErrorKind, LeaseView, StoreError};
    use serde_json::json;

    /// A history written by hand: `inv` then `ok`/`info` per instance.
    #[derive(Default)]
    struct H(History);

    impl H {
        fn inv(&mut self, who: &str, op: &str, args: serde_json::Value, at: i64) -> &mut Self {
            let call = model::contract::Call {
                op: op.into(),
                args,
            };
            self.0.invoke(who, &call, Some(at), 0);
            self
        }
        fn take(&mut self, who: &str, tree: &str, ttl: i64, at: i64) -> &mut Self {
            self.inv(
                who,
                "lease.take",
                json!({"tree": tree, "holder": who, "ttl_ms": ttl}),
                at,
            )
        }
        fn renew(&mut self, who: &str, epoch: i64, ttl: i64, at: i64) -> &mut Self {
            let args = json!({"tree": "t", "holder": who, "epoch": epoch, "ttl_ms": ttl});
            self.inv(who, "lease.renew", args, at)
        }
        fn release(&mut self, who: &str, epoch: i64, at: i64) -> &mut Self {
            let args = json!({"tree": "t", "holder": who, "epoch": epoch});
            self.inv(who, "lease.release", args, at)
        }
        fn read(&mut self, who: &str, at: i64) -> &mut Self {
            self.inv(who, "lease.read", json!({"tree": "t"}), at)
        }
        fn ok(&mut self, who: &str, op: &str, reply: Reply, at: i64) -> &mut Self {
            self.0.complete(who, op, &Ok(reply), Some(at), 0);
            self
        }
        fn granted(&mut self, who: &str, epoch: i64, expires: i64, at: i64) -> &mut Self {
            let r = Reply::Granted {
                epoch,
                expires_at_ms: expires,
            };
            self.ok(who, "lease.take", r, at)
        }
        fn busy(
            &mut self,
            who: &str,
            holder: &str,
            epoch: i64,
            expires: i64,
            at: i64,
        ) -> &mut Self {
            let r = Reply::Busy {
                holder: holder.into(),
                epoch,
                expires_at_ms: expires,
            };
            self.ok(who, "lease.take", r, at)
        }
        fn info(&mut self, who: &str, op: &str, at: i64) -> &mut Self {
            let e = StoreError::new(ErrorKind::Unavailable, "reply lost");
            self.0.complete(who, op, &Err(e), Some(at), 0);
            self
        }
        fn verdict(&self, tree: &str) -> TreeVerdict {
            check(&self.0).trees[tree].clone()
        }
    }

    fn assert_fails(v: &TreeVerdict, at: usize) {
        match v {
            TreeVerdict::NotLinearizable { at_event, .. } => assert_eq!(*at_event, at, "{v:?}"),
            other => panic!("expected not linearizable at event {at}, got {other:?}"),
        }
    }

    #[test]
    fn a_sequential_history_passes_with_its_order_and_instants() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.renew("a", 1, 100, 50).ok(
            "a",
            "lease.renew",
            Reply::Renewed { expires_at_ms: 150 },
            50,
        );
        h.release("a", 1, 60)
            .ok("a", "lease.release", Reply::Released {}, 60);
        h.take("b", "t", 100, 70).granted("b", 2, 170, 70);
        h.read("a", 80).ok(
            "a",
            "lease.read",
            Reply::Lease(Some(LeaseView {
                holder: Some("b".into()),
                epoch: 2,
                expires_at_ms: Some(170),
                live: true,
            })),
            80,
        );
        let TreeVerdict::Linearizable { order } = h.verdict("t") else {
            panic!("{:?}", h.verdict("t"))
        };
        let events: Vec<usize> = order.iter().map(|s| s.invoke_event).collect();
        assert_eq!(events, vec![0, 2, 4, 6, 8]);
        assert_eq!(order[1].earliest_ms, Some(50));
        assert!(order.iter().all(|s| s.took_effect.is_none()));
    }

    #[test]
    fn concurrent_takes_pass_when_one_got_busy() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).take("b", "t", 100, 0);
        h.busy("b", "a", 1, 102, 3).granted("a", 1, 102, 4);
        // The busy reply completed first, yet the grant is ordered before it.
        let TreeVerdict::Linearizable { order } = h.verdict("t") else {
            panic!("{:?}", h.verdict("t"))
        };
        assert_eq!(order[0].instance, "a");
        assert_eq!(order[0].earliest_ms, Some(2));
    }

    #[test]
    fn concurrent_takes_both_granted_overlapping_fail() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).take("b", "t", 100, 0);
        h.granted("a", 1, 100, 1).granted("b", 2, 101, 2);
        let v = h.verdict("t");
        assert_fails(&v, 3);
        // Why, in words: the grant no order explains, the lease as the
        // longest order left it, and what the take had to answer.
        assert_eq!(
            why(&v),
            "b's lease.take (event 1) answered granted (epoch 2, until 101); after the longest order the search found that explains the replies before it (a's lease.take), the lease was held by a (epoch 1) until 100, so between 0 and 2 it would have had to answer busy (a, epoch 1, until 100)"
        );
    }

    /// Every order that explains the replies before the failing one is
    /// described, not the longest alone: here the lost release taking
    /// effect or not, and what the take had to answer after each.
    #[test]
    fn a_failure_says_what_each_candidate_order_needed() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 1);
        h.release("a", 1, 10).info("a", "lease.release", 11);
        h.take("b", "t", 100, 20).granted("b", 1, 120, 21);
        let v = h.verdict("t");
        let why = why(&v);
        assert!(
            why.starts_with("b's lease.take (event 4) answered granted (epoch 1, until 120); after the longest order the search found that explains the replies before it (a's lease.take, a's lease.release (its reply lost, taking effect)), the lease was released by a (epoch 1), so between 20 and 21 it would have had to answer granted with an epoch above 1"),
            "{why}"
        );
        assert!(
            why.ends_with("; and under every other order that explains the replies before it: after that order's first operation only, the lease was held by a (epoch 1) until 100, so between 20 and 21 it would have had to answer busy (a, epoch 1, until 100)"),
            "{why}"
        );
    }

    /// Item 9: a busy answer whose expiry no grant or renewal of that
    /// epoch promised (a store that reports the key's own time to live,
    /// which counts from another instant) is said to be one.
    #[test]
    fn a_busy_expiry_nobody_promised_is_named() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.take("b", "t", 100, 10).busy("b", "a", 1, 98, 11);
        let v = h.verdict("t");
        let why = why(&v);
        assert!(
            why.starts_with("b's lease.take (event 2) answered busy (a, epoch 1, until 98), an expiry no grant or renewal promised: a's epoch 1 was promised until 100;"),
            "{why}"
        );
    }

    /// A long order is named by its last operations.
    #[test]
    fn a_long_order_is_named_by_its_last_operations() {
        let mut h = H::default();
        for k in 0..8 {
            let at = k * 10;
            h.take("a", "t", 5, at).granted("a", k + 1, at + 5, at);
        }
        h.take("b", "t", 100, 100).granted("b", 1, 200, 100);
        let why = why(&h.verdict("t")).to_string();
        assert!(
            why.contains("(2 operations, then a's lease.take, a's lease.take, a's lease.take, a's lease.take, a's lease.take, a's lease.take)"),
            "{why}"
        );
    }

    /// The explanation of a verdict no order explains.
    fn why(v: &TreeVerdict) -> &str {
        match v {
            TreeVerdict::NotLinearizable { why: Some(why), .. } => why,
            other => panic!("no explanation: {other:?}"),
        }
    }

    #[test]
    fn a_lost_take_must_have_happened_when_a_later_take_is_busy_on_it() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).info("a", "lease.take", 5);
        h.take("b", "t", 100, 10).busy("b", "a", 1, 103, 11);
        let TreeVerdict::Linearizable { order } = h.verdict("t") else {
            panic!("{:?}", h.verdict("t"))
        };
        assert_eq!(order[0].took_effect, Some(true));
        // Windows are given the steps before: the busy reply fixes the lost
        // grant at 3 only later, so here it is "from its invoke".
        assert_eq!(order[0].earliest_ms, Some(0));
        assert_eq!(order[1].earliest_ms, Some(10));

        // Busy on a holder that was never granted: no lost take explains it.
        let mut h = H::default();
        h.take("a", "t", 100, 0).info("a", "lease.take", 5);
        h.take("b", "t", 100, 10).busy("b", "c", 1, 103, 11);
        assert_fails(&h.verdict("t"), 3);
    }

    #[test]
    fn a_lost_take_must_not_have_happened_when_a_later_take_is_granted_epoch_one() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).info("a", "lease.take", 5);
        h.take("b", "t", 100, 10).granted("b", 1, 110, 11);
        let TreeVerdict::Linearizable { order } = h.verdict("t") else {
            panic!("{:?}", h.verdict("t"))
        };
        let lost = order.iter().find(|s| s.invoke_event == 0).unwrap();
        // Epoch 1 granted to b leaves no epoch below it for a's grant, and a
        // live grant of a would have made b busy: a's take either never
        // happened or happened after b's grant, where it was busy.
        assert_ne!(lost.took_effect, None);
        let granted_b = order.iter().position(|s| s.invoke_event == 2).unwrap();
        let lost_at = order.iter().position(|s| s.invoke_event == 0).unwrap();
        assert!(lost.took_effect == Some(false) || lost_at > granted_b);
    }

    #[test]
    fn a_take_that_never_completed_may_take_effect_any_time_after_its_invoke() {
        let mut h = H::default();
        h.take("a", "t", 100, 0);
        // Much later, b is refused by a's grant made at 500 at the earliest.
        h.take("b", "t", 100, 550).busy("b", "a", 4, 600, 551);
        assert!(h.verdict("t").is_linearizable(), "{:?}", h.verdict("t"));
        // But never before its invoke: a grant ending at 50 began at -50.
        let mut h = H::default();
        h.take("a", "t", 100, 0);
        h.take("b", "t", 100, 10).busy("b", "a", 4, 50, 11);
        assert!(!h.verdict("t").is_linearizable());
    }

    /// Issue 40: a `WATCH` … `EXEC` take reads `TIME`, then writes at
    /// `EXEC`; a renew that answered `lost` (no live lease) between the two
    /// saw the record before the write. Its grant took effect after its
    /// time was read: linearizable. Its time must still be read inside its
    /// own window.
    #[test]
    fn a_grant_may_take_effect_after_the_time_it_read() {
        let lost = Reply::Lost {
            holder: None,
            epoch: None,
        };
        let mut h = H::default();
        h.take("b", "t", 150, 0).granted("b", 1, 150, 0);
        h.release("b", 1, 10)
            .ok("b", "lease.release", Reply::Released {}, 12);
        // b's take reads TIME at 106 and commits at 109; c's renew at 108.
        h.take("b", "t", 150, 104);
        h.renew("c", 7, 150, 108)
            .ok("c", "lease.renew", lost.clone(), 108);
        h.granted("b", 2, 256, 110);
        assert!(h.verdict("t").is_linearizable(), "{:?}", h.verdict("t"));

        // A time read before the take was invoked: no order explains it.
        let mut h = H::default();
        h.take("b", "t", 150, 104).granted("b", 1, 253, 110);
        assert_fails(&h.verdict("t"), 1);
        // Nor one read after the grant answered.
        let mut h = H::default();
        h.take("b", "t", 150, 104).granted("b", 1, 258, 106);
        assert_fails(&h.verdict("t"), 1);
        // And a grant answered before a renew found no lease came first.
        let mut h = H::default();
        h.take("b", "t", 150, 104).granted("b", 1, 255, 106);
        h.renew("c", 7, 150, 107).ok("c", "lease.renew", lost, 107);
        assert_fails(&h.verdict("t"), 3);
    }

    #[test]
    fn a_renew_granted_after_expiry_fails() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.renew("a", 1, 100, 100).ok(
            "a",
            "lease.renew",
            Reply::Renewed { expires_at_ms: 200 },
            100,
        );
        let v = h.verdict("t");
        assert_fails(&v, 3);
        assert!(
            why(&v).ends_with(
                "so between 100 and 100 it would have had to answer lost (the lease had expired)"
            ),
            "{}",
            why(&v)
        );
        // Within its window the renew may have run just before expiry.
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.renew("a", 1, 100, 99).ok(
            "a",
            "lease.renew",
            Reply::Renewed { expires_at_ms: 199 },
            100,
        );
        assert!(h.verdict("t").is_linearizable());
    }

    #[test]
    fn epochs_that_do_not_grow_fail() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 5, 100, 0);
        h.take("b", "t", 100, 200).granted("b", 5, 300, 200);
        assert_fails(&h.verdict("t"), 3);
        // Any growing epoch is allowed.
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 5, 100, 0);
        h.take("b", "t", 100, 200).granted("b", 9, 300, 200);
        assert!(h.verdict("t").is_linearizable());
    }

    #[test]
    fn a_read_of_a_holder_nobody_was_granted_fails() {
        let view = |holder: &str| {
            Reply::Lease(Some(LeaseView {
                holder: Some(holder.into()),
                epoch: 1,
                expires_at_ms: Some(100),
                live: true,
            }))
        };
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.read("b", 10).ok("b", "lease.read", view("b"), 10);
        assert_fails(&h.verdict("t"), 3);
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.read("b", 10).ok("b", "lease.read", view("a"), 10);
        assert!(h.verdict("t").is_linearizable());
        // Live after expiry: no instant in the read's window explains it.
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.read("b", 101).ok("b", "lease.read", view("a"), 102);
        assert_fails(&h.verdict("t"), 3);
    }

    #[test]
    fn the_failing_point_is_the_first_reply_no_order_explains() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.take("b", "t", 100, 10).granted("b", 2, 110, 10); // the violation
        h.take("c", "t", 100, 500).granted("c", 3, 600, 500);
        let v = h.verdict("t");
        assert_fails(&v, 3);
        let TreeVerdict::NotLinearizable {
            op_event,
            longest_partial,
            ..
        } = v
        else {
            unreachable!()
        };
        assert_eq!(op_event, 2);
        assert_eq!(longest_partial.len(), 1);
    }

    #[test]
    fn trees_are_judged_apart() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.take("b", "u", 100, 0).granted("b", 1, 100, 0);
        h.take("c", "u", 100, 1).granted("c", 2, 101, 1);
        let all = check(&h.0);
        assert!(all.trees["t"].is_linearizable());
        assert!(!all.trees["u"].is_linearizable());
        assert!(!all.all_linearizable());
    }

    #[test]
    fn a_refused_call_and_other_contracts_are_left_out() {
        let mut h = H::default();
        h.take("a", "t", 100, 0);
        let e = StoreError::new(ErrorKind::BadRequest, "no");
        h.0.complete("a", "lease.take", &Err(e), Some(0), 0);
        h.inv(
            "a",
            "queue.claim",
            json!({"instance": "a", "claim_ttl_ms": 5}),
            1,
        );
        let all = check(&h.0);
        assert_eq!(all.ignored, vec![0]);
        assert!(all.trees.is_empty());
    }

    #[test]
    fn a_malformed_reply_is_an_unknown_outcome_not_a_refusal() {
        // a's take ran but its answer was malformed; b's take then sees a
        // live lease of a. Only a take of a that happened explains it.
        let mut h = H::default();
        h.take("a", "t", 100, 0);
        let e = StoreError::new(ErrorKind::MalformedReply, "`granted.epoch` missing");
        h.0.complete("a", "lease.take", &Err(e), Some(1), 1);
        h.take("b", "t", 100, 2);
        h.busy("b", "a", 1, 100, 3);
        let all = check(&h.0);
        assert!(all.ignored.is_empty(), "{:?}", all.ignored);
        assert!(all.all_linearizable(), "{:?}", all.trees);
        // Declined (`unsupported`): it did not happen, and is left out.
        let mut h = H::default();
        h.take("a", "t", 100, 0);
        let e = StoreError::new(ErrorKind::Unsupported, "no leases here");
        h.0.complete("a", "lease.take", &Err(e), Some(1), 1);
        assert_eq!(check(&h.0).ignored, vec![0]);
    }

    fn took(v: &TreeVerdict, event: usize) -> Option<bool> {
        let TreeVerdict::Linearizable { order } = v else {
            panic!("expected linearizable, got {v:?}")
        };
        order
            .iter()
            .find(|s| s.invoke_event == event)
            .and_then(|s| s.took_effect)
    }

    #[test]
    fn a_lost_release_explains_a_grant_before_expiry_only_for_its_own_epoch() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.release("a", 1, 10).info("a", "lease.release", 11);
        h.take("b", "t", 100, 20).granted("b", 2, 120, 20);
        assert_eq!(took(&h.verdict("t"), 2), Some(true));
        // Releasing an epoch a never held frees nothing: b's grant is wrong.
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.release("a", 7, 10).info("a", "lease.release", 11);
        h.take("b", "t", 100, 20).granted("b", 2, 120, 20);
        assert_fails(&h.verdict("t"), 5);
    }

    #[test]
    fn a_lost_take_seen_after_replies_that_do_not_depend_on_it_is_found() {
        // a's lost take is named only by c's busy; b's release in between
        // answers not_held whether or not a held the lease.
        let mut h = H::default();
        h.take("a", "t", 100, 0).info("a", "lease.take", 2);
        h.release("b", 3, 5)
            .ok("b", "lease.release", Reply::NotHeld {}, 6);
        h.take("c", "t", 100, 10).busy("c", "a", 1, 103, 11);
        assert_eq!(took(&h.verdict("t"), 0), Some(true));
        // A renew answered `lost` names the holder of a lost take too.
        let mut h = H::default();
        h.take("a", "t", 100, 0).info("a", "lease.take", 2);
        let lost = Reply::Lost {
            holder: Some("a".into()),
            epoch: Some(4),
        };
        h.renew("b", 3, 100, 10).ok("b", "lease.renew", lost, 11);
        assert_eq!(took(&h.verdict("t"), 0), Some(true));
    }

    #[test]
    fn lost_takes_nobody_saw_are_left_out_and_a_grant_after_them_still_fails_on_a_live_lease() {
        let mut h = H::default();
        h.take("a", "t", 10, 0).granted("a", 1, 10, 0);
        for (k, who) in ["c", "d", "e"].into_iter().enumerate() {
            let at = 20 + 10 * k as i64;
            h.take(who, "t", 5, at).info(who, "lease.take", at + 1);
        }
        // Epochs may grow by any step: no lost take is needed to explain 9.
        h.take("b", "t", 100, 100).granted("b", 9, 200, 100);
        let v = h.verdict("t");
        for event in [2, 4, 6] {
            assert_eq!(took(&v, event), Some(false), "{v:?}");
        }
        // A lost read changes nothing and is listed as not taking effect.
        h.read("c", 150).info("c", "lease.read", 151);
        assert_eq!(took(&h.verdict("t"), 10), Some(false));
        // Still live at 150: a grant to c then is explained by nothing,
        // whatever the lost takes did.
        h.take("c", "t", 100, 150).granted("c", 10, 250, 150);
        assert_fails(&h.verdict("t"), 13);
    }

    #[test]
    fn a_lost_renew_may_keep_a_lease_live_but_only_its_holder_s() {
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.renew("a", 1, 100, 50).info("a", "lease.renew", 51);
        // Busy at 120 on an expiry of 150: the lost renew took effect at 50.
        h.take("b", "t", 100, 120).busy("b", "a", 1, 150, 121);
        assert_eq!(took(&h.verdict("t"), 2), Some(true));
        // A renew by another holder cannot have extended a's lease.
        let mut h = H::default();
        h.take("a", "t", 100, 0).granted("a", 1, 100, 0);
        h.renew("b", 1, 100, 50).info("b", "lease.renew", 51);
        h.take("b", "t", 100, 120).busy("b", "a", 1, 150, 121);
        assert_fails(&h.verdict("t"), 5);
    }
}
