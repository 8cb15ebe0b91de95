//! The race checks, forced through the gate for any store:
//! `conformance.lease.take-races` (two takes of a free tree, two takes of an
//! expired lease, a take against a renew across the expiry instant),
//! `conformance.queue.claim-races` (two claims of the last ready child, a
//! claim against a completion at the claim's expiry instant) and
//! `conformance.rate.races` (two acquires of the last slot, two hits of the
//! last place in a window).
//!
//! Each instance talks to the server through a gate of its own that holds
//! every scheduled command. The race driver releases one held command at a
//! time and explores every interleaving of the two operations' commands
//! (depth-first over the choice of which instance goes next). In a race
//! across an expiry instant the server clock also moves, from one
//! millisecond before the expiry to the expiry instant, at a point the
//! schedule chooses like any command: a renew (or a completion) that reads
//! the record while it is live and writes after a take (a claim) saw it
//! expired is caught only that way (with the clock sitting at one instant
//! every such operation would be refused).
//!
//! After each schedule, the two replies must be explained by one of the two
//! sequential orders of the operations, each taking effect at a server
//! instant its commands allow (the model judges both); when neither explains
//! them, the released commands in order are the counterexample. Every race is
//! judged on its own: one failing race does not hide the others.
//!
//! A store that keeps its state outside Redis (`builtin:sqlite`, a durable
//! adapter) gives the gate nothing to hold: its races are run as concurrent
//! calls instead, round after round, each round judged the same way; the store's own locking
//! picks the order, so those rounds sample interleavings rather than force
//! every one, and the check's reason says so.

use harness::evidence::{Evidence, RaceEvidence, RaceRecord, RacesEvidence};

use super::commute;
use super::runner::{ping_server, Outcome};
use harness::contract::{ContractModel, ErrorKind, Judgement, Reply, Request, StoreError};
use harness::counterexample::{
    Answer, Counterexample, RaceCall, RaceCommand, RaceCounterexample, RaceKind,
};
use harness::gate::drive::{
    instance_name, next_step, start_operation, DriveError, Operation, Step,
};
use harness::gate::{Gate, Held, Mode};
use harness::store::StoreClient;
use harness::Subject;
use harness::Verdict;
/// The most schedules run per race. Far above what a store of a few
/// commands per operation needs (two operations of four commands each and a
/// clock move have 630 interleavings); a race with more is left undecided
/// (`unknown`), its reason saying how many of how many ran: a pass claims
/// every interleaving.
const MAX_SCHEDULES: usize = 1000;
/// The schedule's pseudo-instance that moves the server clock.
const TICK: usize = 2;

/// Who went at a step of a schedule: instance `a` or `b`, or the clock move.
fn actor(i: usize) -> &'static str {
    if i == TICK {
        "clock"
    } else {
        instance_name(i)
    }
}
/// The lease length the races use.
const TTL: i64 = 1000;

/// One race: what happens before it, then the two racing operations.
struct Race {
    name: &'static str,
    /// Set-up calls from instance `a`, judged, before the race; the clock
    /// moves `advance_after_setup` afterwards.
    setup: Vec<Request>,
    advance_after_setup: i64,
    /// A clock move of this many ms during the race, scheduled like a command.
    tick_ms: Option<i64>,
    /// The racing requests of `a` and `b`, made from the set-up's replies.
    a: fn(&[Reply]) -> Request,
    b: fn(&[Reply]) -> Request,
}

/// Which race check: the races of one contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Races {
    /// `conformance.lease.take-races`.
    Take,
    /// `conformance.queue.claim-races`.
    Claim,
    /// `conformance.rate.races`.
    Rate,
}

impl Races {
    /// The counterexample's `kind`.
    fn kind(self) -> RaceKind {
        match self {
            Races::Take => RaceKind::TakeRace,
            Races::Claim => RaceKind::ClaimRace,
            Races::Rate => RaceKind::RateRace,
        }
    }

    fn races(self) -> Vec<Race> {
        match self {
            Races::Take => take_races_of(),
            Races::Claim => claim_races(),
            Races::Rate => rate_races(),
        }
    }
}

fn take_races_of() -> Vec<Race> {
    vec![
        Race {
            name: "two takes of a free tree",
            setup: vec![],
            advance_after_setup: 0,
            tick_ms: None,
            a: |_| take_by("a"),
            b: |_| take_by("b"),
        },
        Race {
            name: "two takes of an expired lease",
            setup: vec![take_by("c")],
            advance_after_setup: TTL + 1,
            tick_ms: None,
            a: |_| take_by("a"),
            b: |_| take_by("b"),
        },
        Race {
            name: "a take against a renew across the expiry instant",
            setup: vec![take_by("a")],
            advance_after_setup: TTL - 1,
            tick_ms: Some(1),
            a: |replies| Request::LeaseRenew {
                tree: "t".into(),
                holder: "a".into(),
                epoch: replies
                    .iter()
                    .find_map(|r| match r {
                        Reply::Granted { epoch, .. } => Some(*epoch),
                        _ => None,
                    })
                    .unwrap_or(1),
                ttl_ms: TTL,
            },
            b: |_| take_by("b"),
        },
    ]
}

fn take_by(holder: &str) -> Request {
    Request::LeaseTake {
        tree: "t".into(),
        holder: holder.into(),
        ttl_ms: TTL,
    }
}

/// The child every queue race is about.
const CHILD: &str = "c1";

fn save_child() -> Request {
    Request::QueueSave {
        child: CHILD.into(),
        depth: 1,
        payload: "p".into(),
    }
}

fn claim_by(instance: &str) -> Request {
    Request::QueueClaim {
        instance: instance.into(),
        claim_ttl_ms: TTL,
    }
}

fn claim_races() -> Vec<Race> {
    vec![
        Race {
            name: "two claims of the last ready child",
            setup: vec![save_child()],
            advance_after_setup: 0,
            tick_ms: None,
            a: |_| claim_by("a"),
            b: |_| claim_by("b"),
        },
        Race {
            name: "a claim against a completion at the claim's expiry instant",
            setup: vec![save_child(), claim_by("a")],
            advance_after_setup: TTL - 1,
            tick_ms: Some(1),
            a: |replies| Request::QueueComplete {
                child: CHILD.into(),
                instance: "a".into(),
                attempt: replies
                    .iter()
                    .find_map(|r| match r {
                        Reply::Claimed { attempt, .. } => Some(*attempt),
                        _ => None,
                    })
                    .unwrap_or(1),
            },
            b: |_| claim_by("b"),
        },
    ]
}

/// The provider every rate race is about, and its limit: the set-up leaves
/// one place.
const PROVIDER: &str = "p";
const LIMIT: i64 = 2;

fn acquire_by(holder: &str) -> Request {
    Request::RateAcquireSlot {
        provider: PROVIDER.into(),
        holder: holder.into(),
        limit: LIMIT,
        ttl_ms: TTL,
    }
}

fn hit() -> Request {
    Request::RateHit {
        provider: PROVIDER.into(),
        limit: LIMIT,
        window_ms: TTL,
    }
}

fn rate_races() -> Vec<Race> {
    vec![
        Race {
            name: "two acquires of the last slot",
            setup: vec![acquire_by("c")],
            advance_after_setup: 0,
            tick_ms: None,
            a: |_| acquire_by("a"),
            b: |_| acquire_by("b"),
        },
        Race {
            name: "two hits of the last place in a window",
            setup: vec![hit()],
            advance_after_setup: 0,
            tick_ms: None,
            a: |_| hit(),
            b: |_| hit(),
        },
    ]
}

/// Why a schedule could not be judged: the store's doing, or the harness's.
enum ScheduleError {
    /// The store broke the contract outside the race (its set-up), hung, or
    /// could not be connected: the check fails.
    Store(String),
    /// The harness could not run the schedule (a gate, a re-run that went
    /// another way, an adapter that failed, storeproof's own server not
    /// answering): the race is undecided.
    Harness(String),
    /// The store answered `unsupported` (its message): the race is skipped.
    Unsupported(String),
}

impl ScheduleError {
    /// The race's verdict and the reason.
    fn settle(self) -> (Verdict, String) {
        match self {
            ScheduleError::Store(e) => (Verdict::Fail, e),
            ScheduleError::Harness(e) => (Verdict::Unknown, e),
            ScheduleError::Unsupported(e) => (Verdict::Skipped, e),
        }
    }
}

/// What the store's answers of a schedule mean before they are judged:
/// `unsupported` skips the race with the store's message; an `unavailable`
/// while storeproof's own server does not answer a PING sent straight to it
/// is the harness's trouble; an adapter that failed is bad input.
async fn settle_errors(
    target: &Subject<'_>,
    outcomes: &[(&str, &Result<Reply, StoreError>)],
) -> Result<(), ScheduleError> {
    for (op, out) in outcomes {
        let Err(e) = out else { continue };
        match e.kind {
            ErrorKind::AdapterFailed => return Err(ScheduleError::Harness(e.message.clone())),
            ErrorKind::Unsupported => {
                return Err(ScheduleError::Unsupported(format!(
                    "the store answered unsupported to {op}: {}",
                    e.message
                )))
            }
            ErrorKind::Unavailable => {
                if let Err(why) = ping_server(target).await {
                    return Err(ScheduleError::Harness(format!(
                        "{op} answered unavailable ({}), and storeproof's own server did not answer a PING sent straight to it either ({why})",
                        e.message
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What one schedule did.
struct Schedule {
    /// Which actor (0 = a, 1 = b, 2 = the clock move) went at each step.
    choices: Vec<usize>,
    /// At each step, the actors that could have gone.
    ready: Vec<Vec<usize>>,
    /// At each step, the class of the command each ready instance held
    /// (what it commutes with; `None` for the clock move and the idle).
    classes: Vec<Classes>,
    /// The released commands in order, with the clock's moves.
    commands: Vec<RaceCommand>,
    outcomes: [Result<Reply, StoreError>; 2],
    requests: [Request; 2],
    /// The server instants each operation may have taken effect at: the race
    /// instant, and the instant after the clock move when the operation was
    /// still running then.
    instants: [Vec<i64>; 2],
    /// The model after the set-up.
    model: ContractModel,
}

/// Whether some sequential order of the two operations, each at an instant
/// it may have taken effect, explains both replies.
fn linearizable(s: &Schedule) -> Result<String, String> {
    let mut why = Vec::new();
    for (order, name) in [([0usize, 1], "a then b"), ([1, 0], "b then a")] {
        let [first, second] = order;
        for &t1 in &s.instants[first] {
            for &t2 in s.instants[second].iter().filter(|t| **t >= t1) {
                let mut model = s.model.clone();
                let mut failed = None;
                for (i, now) in [(first, t1), (second, t2)] {
                    if let Judgement::Violates(w) =
                        model.judge(&s.requests[i], now, now, &s.outcomes[i])
                    {
                        failed = Some(format!("{name} (at {t1}, {t2}): {} {w}", actor(i)));
                        break;
                    }
                }
                match failed {
                    None => return Ok(name.to_string()),
                    Some(w) => why.push(w),
                }
            }
        }
    }
    Err(why.join("; "))
}

fn command_text(args: &[Vec<u8>]) -> String {
    let text: Vec<String> = args
        .iter()
        .map(|a| {
            let s = String::from_utf8_lossy(a);
            if s.len() > 60 {
                format!(
                    "{}…",
                    &s[..s.char_indices().nth(57).map_or(s.len(), |(i, _)| i)]
                )
            } else {
                s.into_owned()
            }
        })
        .collect();
    text.join(" ")
}

/// The two raced calls with their answers, as a counterexample shows them.
fn raced_calls(
    requests: &[Request],
    outcomes: &[Result<Reply, StoreError>],
) -> (RaceCall, RaceCall) {
    let side = |k: usize| RaceCall {
        call: requests[k].to_call(),
        answer: Answer::of(&outcomes[k]),
    };
    (side(0), side(1))
}

/// One race's finding.
struct RaceResult {
    verdict: Verdict,
    evidence: RaceEvidence,
    /// For a failure: the reason and the counterexample; for an undecided
    /// race: the reason.
    reason: Option<String>,
    counterexample: Option<Counterexample>,
    summary: String,
}

/// `conformance.lease.take-races`.
pub(crate) async fn take_races(target: &Subject<'_>, prefix: &str) -> Outcome {
    run_races(target, prefix, Races::Take).await
}

/// Runs every race of `set` and judges the check on them all.
pub(crate) async fn run_races(target: &Subject<'_>, prefix: &str, set: Races) -> Outcome {
    // `plan` made sure of a managed server; storeproof starts those with a
    // virtual clock, so one without is the harness's own trouble.
    let Some(clock) = target.server.managed().and_then(|s| s.clock()) else {
        return Outcome::unknown(
            "the managed server has no virtual clock: the races are judged at exact server \
             instants (the expiry instant) on a clock storeproof controls",
            Evidence::None,
        );
    };
    let mut results = Vec::new();
    let mut run = 0usize;
    // A store that keeps its state outside Redis (builtin:sqlite, a durable
    // adapter) has nothing the gate can hold: its own locking orders the operations, so the races are
    // run as truly concurrent calls, many times, and each round is judged.
    let in_redis = target.factory.keeps_state_in_redis();
    for race in set.races() {
        results.push(if in_redis {
            explore(target, &race, set, prefix, clock, &mut run, MAX_SCHEDULES).await
        } else {
            concurrent(target, &race, set, prefix, clock, &mut run).await
        });
    }
    let evidence = Evidence::Races(RacesEvidence {
        races: results.iter().map(|r| r.evidence.clone()).collect(),
    });
    let summary = results
        .iter()
        .map(|r| r.summary.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let worst = |v: Verdict| results.iter().filter(move |r| r.verdict == v);
    if let Some(first) = worst(Verdict::Fail).next() {
        let reasons: Vec<&str> = worst(Verdict::Fail)
            .chain(worst(Verdict::Unknown))
            .chain(worst(Verdict::Skipped))
            .filter_map(|r| r.reason.as_deref())
            .collect();
        return Outcome::fail(
            format!("{} (every race: {summary})", reasons.join("; ")),
            evidence,
            first.counterexample.clone(),
        );
    }
    if worst(Verdict::Unknown).next().is_some() || worst(Verdict::Skipped).next().is_some() {
        // An undecided race leaves the check undecided; a race the store
        // does not support (and no race undecided) skips it.
        let verdict = if worst(Verdict::Unknown).next().is_some() {
            Verdict::Unknown
        } else {
            Verdict::Skipped
        };
        let reasons: Vec<&str> = worst(Verdict::Unknown)
            .chain(worst(Verdict::Skipped))
            .filter_map(|r| r.reason.as_deref())
            .collect();
        return Outcome {
            verdict,
            reason: format!("{} (every race: {summary})", reasons.join("; ")),
            evidence,
            counterexample: None,
        };
    }
    let how = if in_redis {
        "every interleaving of every race ran, each linearizable"
    } else {
        "every round of concurrent calls was linearizable (the store keeps its state outside \
         Redis, so no interleaving of its writes could be forced through the gate; its own \
         locking ordered them)"
    };
    Outcome::pass(format!("{how}: {summary}"), evidence)
}

/// Rounds of concurrent calls per race for a store without Redis commands.
const CONCURRENT_ROUNDS: usize = 40;

/// Runs one race [`CONCURRENT_ROUNDS`] times with both operations in flight
/// at once (and, in the third race, the clock move racing them, placed a
/// little later each round) and judges each round; stops at the first round
/// no sequential order explains. The order the store chose is its own
/// (unforced), so a pass is evidence, not the proof the gate gives.
async fn concurrent(
    target: &Subject<'_>,
    race: &Race,
    set: Races,
    prefix: &str,
    clock: &harness::server::VirtualClock,
    run: &mut usize,
) -> RaceResult {
    let mut rounds = Vec::new();
    for round in 0..CONCURRENT_ROUNDS {
        *run += 1;
        let start = clock.now_ms() + 86_400_000;
        clock.set_ms(start);
        let s = match concurrent_round(
            target,
            race,
            &format!("{prefix}r{run}:"),
            clock,
            start,
            round,
        )
        .await
        {
            Ok(s) => s,
            Err(e) => {
                let (verdict, e) = e.settle();
                return RaceResult {
                    verdict,
                    evidence: RaceEvidence {
                        rounds: Some(round + 1),
                        error: Some(e.clone()),
                        ..RaceEvidence::of(race.name, verdict)
                    },
                    reason: Some(format!("{}: round {}: {e}", race.name, round + 1)),
                    counterexample: None,
                    summary: format!(
                        "{} {} after {} rounds",
                        race.name,
                        verdict.word(),
                        round + 1
                    ),
                };
            }
        };
        let (a, b) = raced_calls(&s.requests, &s.outcomes);
        let record = RaceRecord {
            commands: None,
            a: a.clone(),
            b: b.clone(),
        };
        if let Err(why) = linearizable(&s) {
            return RaceResult {
                verdict: Verdict::Fail,
                evidence: RaceEvidence {
                    rounds: Some(round + 1),
                    failing: Some(record),
                    ..RaceEvidence::of(race.name, Verdict::Fail)
                },
                reason: Some(format!(
                    "{}: no sequential order explains the replies of round {} of concurrent calls: {why}",
                    race.name,
                    round + 1
                )),
                counterexample: Some(Counterexample::Race(Box::new(RaceCounterexample {
                    kind: set.kind(),
                    race: race.name.to_string(),
                    commands: Vec::new(),
                    a,
                    b,
                }))),
                summary: format!("{} failed at round {}", race.name, round + 1),
            };
        }
        rounds.push(record);
    }
    RaceResult {
        verdict: Verdict::Pass,
        evidence: RaceEvidence {
            rounds: Some(rounds.len()),
            concurrent: Some(rounds),
            ..RaceEvidence::of(race.name, Verdict::Pass)
        },
        reason: None,
        counterexample: None,
        summary: format!("{} ({CONCURRENT_ROUNDS} concurrent rounds)", race.name),
    }
}

/// The race's two instances, `a` on `urls[0]` and `b` on `urls[1]`. A
/// broken adapter is the harness's trouble; any other refusal the store's.
async fn connect_pair(
    target: &Subject<'_>,
    prefix: &str,
    urls: [&str; 2],
    start: i64,
) -> Result<Vec<Box<dyn StoreClient>>, ScheduleError> {
    let mut clients = Vec::new();
    for (name, url) in [0, 1].map(instance_name).into_iter().zip(urls) {
        match target.connect_store(name, prefix, url, start).await {
            Ok(c) => clients.push(c),
            Err(e) if e.kind == ErrorKind::AdapterFailed => {
                return Err(ScheduleError::Harness(e.message))
            }
            Err(e) => {
                return Err(ScheduleError::Store(format!(
                    "instance {name} could not connect: {e}"
                )))
            }
        }
    }
    Ok(clients)
}

/// The race's set-up on `client` at `start`, each reply judged by the
/// model; the model after it, and the set-up's replies, in order.
async fn set_up(
    target: &Subject<'_>,
    race: &Race,
    client: &mut dyn StoreClient,
    start: i64,
) -> Result<(ContractModel, Vec<Reply>), ScheduleError> {
    let mut model = ContractModel::default();
    let mut replies = Vec::new();
    for req in &race.setup {
        let out = client.call(&req.to_call(), start).await;
        settle_errors(target, &[(req.op(), &out)]).await?;
        if let Judgement::Violates(w) = model.judge(req, start, start, &out) {
            return Err(ScheduleError::Store(format!(
                "the set-up {} failed: {w}",
                req.op()
            )));
        }
        if let Ok(reply) = out {
            replies.push(reply);
        }
    }
    Ok((model, replies))
}

/// One round of a race as concurrent calls: the set-up judged, then both
/// operations (and the clock move, after `round % 4` yields) at once.
async fn concurrent_round(
    target: &Subject<'_>,
    race: &Race,
    prefix: &str,
    clock: &harness::server::VirtualClock,
    start: i64,
    round: usize,
) -> Result<Schedule, ScheduleError> {
    use ScheduleError::Harness;
    let url = target.server.url();
    let mut clients = connect_pair(target, prefix, [&url, &url], start).await?;
    let (model, replies) = set_up(target, race, clients[0].as_mut(), start).await?;
    let now = start + race.advance_after_setup;
    clock.set_ms(now);
    let requests = [(race.a)(&replies), (race.b)(&replies)];
    let [a_call, b_call] = [requests[0].to_call(), requests[1].to_call()];
    let [mut a, mut b] = <[Box<dyn StoreClient>; 2]>::try_from(clients)
        .map_err(|_| Harness("two instances were not connected".into()))?;
    let tick = async {
        if let Some(d) = race.tick_ms {
            for _ in 0..round % 4 {
                tokio::task::yield_now().await;
            }
            clock.set_ms(now + d);
        }
    };
    let (out_a, out_b, ()) = tokio::join!(a.call(&a_call, now), b.call(&b_call, now), tick);
    settle_errors(
        target,
        &[(requests[0].op(), &out_a), (requests[1].op(), &out_b)],
    )
    .await?;
    // Nothing says when each call took effect relative to the clock move:
    // either side of it.
    let instants = [0, 1].map(|_| match race.tick_ms {
        Some(d) => vec![now, now + d],
        None => vec![now],
    });
    Ok(Schedule {
        choices: Vec::new(),
        ready: Vec::new(),
        classes: Vec::new(),
        commands: Vec::new(),
        outcomes: [out_a, out_b],
        requests,
        instants,
        model,
    })
}

/// The interleavings of a race still to run, depth first: a schedule is run
/// with a forced prefix of choices and then the first ready actor at every
/// step; every other ready actor at a step after the prefix is a new prefix
/// to run. Every interleaving is run exactly once (the store sending the
/// same commands on a re-run). The shallowest divergence is run first, so a
/// cap leaves out deep variations of one interleaving, not the schedules
/// that diverge at the first step.
#[derive(Debug)]
struct Interleavings {
    pending: Vec<Vec<usize>>,
    ran: usize,
    /// Alternatives not run: they swap two adjacent commands that commute,
    /// so an equivalent interleaving runs instead ([`commute`]).
    pruned: usize,
}

/// The class of the command each actor (a, b, the clock) held at a step.
type Classes = [Option<commute::Class>; 3];

/// Whether `y` going right after `x` (which held a command of class
/// `x_class`) swaps two commuting commands out of their normal order: a
/// command of `a` right after one of `b` it commutes with (the interleaving
/// with the two the other way round is the one run).
fn inversion(
    x: usize,
    x_class: Option<&commute::Class>,
    y: usize,
    y_class: Option<&commute::Class>,
) -> bool {
    x > y && commute::independent(x_class, y_class)
}

/// The actor to go when no choice is forced: the first ready one that
/// keeps the interleaving in normal form after the previous step's
/// (`prev`: who went and the classes then); the first ready one if none
/// does.
fn normal_pick(ready: &[usize], now: &Classes, prev: Option<(&usize, &Classes)>) -> usize {
    let keeps = |y: &usize| match prev {
        Some((&x, then)) => !inversion(x, then[x].as_ref(), *y, now[*y].as_ref()),
        None => true,
    };
    ready.iter().copied().find(keeps).unwrap_or(ready[0])
}

impl Interleavings {
    fn new() -> Self {
        Interleavings {
            pending: vec![vec![]],
            ran: 0,
            pruned: 0,
        }
    }

    /// The forced prefix of the next schedule to run.
    fn next(&mut self) -> Option<Vec<usize>> {
        let next = self.pending.pop();
        self.ran += usize::from(next.is_some());
        next
    }

    /// A schedule run from `forced` went `choices`, with `ready` the actors
    /// that could have gone at each step and `classes` what their commands
    /// commute with: its alternatives are pending, but for those whose
    /// step would swap two commuting commands out of normal order (every
    /// interleaving through it is equivalent to one that is run).
    fn ran(&mut self, forced: usize, choices: &[usize], ready: &[Vec<usize>], classes: &[Classes]) {
        let class = |step: usize, actor: usize| classes.get(step).and_then(|c| c[actor].as_ref());
        // Pushed deepest first, so the shallowest divergence pops first.
        for i in (forced..choices.len()).rev() {
            for alt in ready[i].iter().rev().filter(|a| **a != choices[i]) {
                if i > 0
                    && inversion(
                        choices[i - 1],
                        class(i - 1, choices[i - 1]),
                        *alt,
                        class(i, *alt),
                    )
                {
                    self.pruned += 1;
                    continue;
                }
                let mut p = choices[..i].to_vec();
                p.push(*alt);
                self.pending.push(p);
            }
        }
    }

    /// Whether every interleaving has run.
    fn complete(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Explores every interleaving of one race (at most `cap`: a race with more
/// is undecided) and judges each; stops at the first one no sequential
/// order explains.
async fn explore(
    target: &Subject<'_>,
    race: &Race,
    set: Races,
    prefix: &str,
    clock: &harness::server::VirtualClock,
    run: &mut usize,
    cap: usize,
) -> RaceResult {
    let mut todo = Interleavings::new();
    let mut explored = Vec::new();
    while explored.len() < cap {
        let Some(forced) = todo.next() else { break };
        *run += 1;
        let schedule_prefix = format!("{prefix}r{run}:");
        let start = clock.now_ms() + 86_400_000;
        clock.set_ms(start);
        let s = match run_schedule(target, race, &schedule_prefix, &forced, clock, start).await {
            Ok(s) => s,
            Err(e) => {
                let (verdict, e) = e.settle();
                let n = explored.len() + 1;
                return RaceResult {
                    verdict,
                    evidence: RaceEvidence {
                        schedules: Some(n),
                        error: Some(e.clone()),
                        interleavings: Some(explored),
                        ..RaceEvidence::of(race.name, verdict)
                    },
                    reason: Some(format!("{}: schedule {n}: {e}", race.name)),
                    counterexample: None,
                    summary: format!("{} {} after {n} schedules", race.name, verdict.word()),
                };
            }
        };
        todo.ran(forced.len(), &s.choices, &s.ready, &s.classes);
        let commands = s.commands.clone();
        let (a, b) = raced_calls(&s.requests, &s.outcomes);
        let record = RaceRecord {
            commands: Some(commands.clone()),
            a: a.clone(),
            b: b.clone(),
        };
        match linearizable(&s) {
            Ok(_) => explored.push(record),
            Err(why) => {
                let n = explored.len() + 1;
                let reason = format!(
                    "{}: no sequential order explains the replies after the interleaving {}: {why}",
                    race.name,
                    s.commands
                        .iter()
                        .map(|c| format!(
                            "{}:{}",
                            c.instance,
                            c.command.split(' ').next().unwrap_or("")
                        ))
                        .collect::<Vec<_>>()
                        .join(" → ")
                );
                return RaceResult {
                    verdict: Verdict::Fail,
                    evidence: RaceEvidence {
                        schedules: Some(n),
                        failing: Some(record),
                        ..RaceEvidence::of(race.name, Verdict::Fail)
                    },
                    reason: Some(reason),
                    counterexample: Some(Counterexample::Race(Box::new(RaceCounterexample {
                        kind: set.kind(),
                        race: race.name.to_string(),
                        commands,
                        a,
                        b,
                    }))),
                    summary: format!("{} failed at schedule {n}", race.name),
                };
            }
        }
    }
    let n = explored.len();
    if !todo.complete() {
        // Each pending prefix is at least one more interleaving.
        let at_least = n + todo.pending.len();
        let summary = format!(
            "{}: {n} of at least {at_least} interleavings ran (stopped at {cap}), each linearizable",
            race.name
        );
        return RaceResult {
            verdict: Verdict::Unknown,
            evidence: RaceEvidence {
                schedules: Some(n),
                at_least: Some(at_least),
                complete: Some(false),
                interleavings: Some(explored),
                ..RaceEvidence::of(race.name, Verdict::Unknown)
            },
            reason: Some(format!(
                "{summary}: the rest were not run, so the race is not decided"
            )),
            counterexample: None,
            summary,
        };
    }
    RaceResult {
        verdict: Verdict::Pass,
        evidence: RaceEvidence {
            schedules: Some(n),
            complete: Some(true),
            interleavings: Some(explored),
            ..RaceEvidence::of(race.name, Verdict::Pass)
        },
        reason: None,
        counterexample: None,
        summary: if todo.pruned == 0 {
            format!("{} (all {n} interleavings ran)", race.name)
        } else {
            format!(
                "{} (all {n} interleavings that order differently the commands that do not commute ran: the others only swap commands that commute, reads of one another, the clock's read, commands queued in a transaction, so each is one of these)",
                race.name
            )
        },
    }
}

async fn run_schedule(
    target: &Subject<'_>,
    race: &Race,
    prefix: &str,
    forced: &[usize],
    clock: &harness::server::VirtualClock,
    start: i64,
) -> Result<Schedule, ScheduleError> {
    use ScheduleError::{Harness, Store};
    let url = target.server.url();
    let mut gates = Vec::new();
    for _ in 0..2 {
        gates.push(
            Gate::start(&url)
                .await
                .map_err(|e| Harness(format!("could not start a gate: {e}")))?,
        );
    }
    let urls = [gates[0].url(), gates[1].url()];
    let mut clients = connect_pair(target, prefix, [&urls[0], &urls[1]], start).await?;
    // Set-up, judged, through a's gate in pass-through.
    let (model, replies) = set_up(target, race, clients[0].as_mut(), start).await?;
    let now = start + race.advance_after_setup;
    clock.set_ms(now);
    let requests = [(race.a)(&replies), (race.b)(&replies)];
    for g in &gates {
        g.set_mode(Mode::Hold);
    }
    let mut tasks: Vec<Operation> = clients
        .into_iter()
        .zip(&requests)
        .map(|(client, req)| start_operation(client, req.to_call(), now))
        .collect();
    let mut choices = Vec::new();
    let mut ready_sets = Vec::new();
    let mut class_sets: Vec<Classes> = Vec::new();
    // Whether each instance's connection is inside MULTI (its commands are
    // queued, to run at EXEC).
    let mut in_multi = [false; 2];
    let mut commands = Vec::new();
    let mut finished: [Option<Result<Reply, StoreError>>; 2] = [None, None];
    // The step at which each operation was seen finished, and the step of the
    // clock move (if it happened).
    let mut finished_at = [usize::MAX; 2];
    let mut ticked_at: Option<usize> = None;
    loop {
        // Wait until every running operation is either held at its gate or
        // done: the command each one holds, in instance order.
        let mut held: [Option<Held>; 2] = [None, None];
        for i in 0..2 {
            if finished[i].is_some() {
                continue;
            }
            match next_step(&gates[i], &mut tasks[i]).await {
                Ok(Step::Held(h)) => held[i] = Some(h),
                Ok(Step::Answered(_client, out)) => {
                    finished[i] = Some(out);
                    finished_at[i] = choices.len();
                }
                Err(e @ DriveError::Stuck) => {
                    for g in &gates {
                        g.release_all();
                    }
                    return Err(Store(format!("instance {} {e}", actor(i))));
                }
                Err(e) => return Err(Harness(format!("instance {} {e}", actor(i)))),
            }
        }
        let mut ready: Vec<usize> = (0..2).filter(|i| held[*i].is_some()).collect();
        if ready.is_empty() {
            break;
        }
        // The clock move may go at any point while an operation still runs.
        if race.tick_ms.is_some() && ticked_at.is_none() {
            ready.push(TICK);
        }
        let step = choices.len();
        let classes: Classes = [0, 1, TICK].map(|i| {
            let h = held.get(i)?.as_ref()?;
            let name = String::from_utf8_lossy(h.command.args.first()?).into_owned();
            Some(commute::class(&name, in_multi[i]))
        });
        let pick = match forced.get(step) {
            Some(f) if ready.contains(f) => *f,
            Some(f) => {
                return Err(Harness(format!(
                    "the store sent different commands on a re-run: instance {} has no command at step {step}, so the interleavings cannot be explored",
                    actor(*f)
                )))
            }
            None => normal_pick(&ready, &classes, choices.last().zip(class_sets.last())),
        };
        if pick == TICK {
            let to = now + race.tick_ms.unwrap_or(0);
            clock.set_ms(to);
            commands.push(RaceCommand {
                instance: actor(TICK).to_string(),
                command: format!("the server clock moves to {to}"),
                clock_ms: Some(to),
            });
            ticked_at = Some(step);
            choices.push(pick);
            ready_sets.push(ready);
            class_sets.push(classes);
            continue;
        }
        let Some(first) = held[pick].take() else {
            continue;
        };
        if let Some(name) = first.command.args.first() {
            in_multi[pick] =
                commute::in_multi_after(&String::from_utf8_lossy(name), in_multi[pick]);
        }
        commands.push(RaceCommand {
            instance: actor(pick).to_string(),
            command: command_text(&first.command.args),
            clock_ms: None,
        });
        choices.push(pick);
        ready_sets.push(ready);
        class_sets.push(classes);
        gates[pick]
            .release(first.id)
            .map_err(|e| Harness(format!("the gate could not release a command: {e}")))?;
    }
    for g in gates {
        g.shutdown().await;
    }
    let [Some(a), Some(b)] = finished else {
        return Err(Harness("an operation did not finish".into()));
    };
    settle_errors(target, &[(requests[0].op(), &a), (requests[1].op(), &b)]).await?;
    // An operation still running when the clock moved may have taken effect
    // on either side of the move; one that finished before, only before.
    let instants = [0, 1].map(|i| match (ticked_at, race.tick_ms) {
        (Some(k), Some(d)) if finished_at[i] > k => vec![now, now + d],
        _ => vec![now],
    });
    Ok(Schedule {
        choices,
        ready: ready_sets,
        classes: class_sets,
        commands,
        outcomes: [a, b],
        requests,
        instants,
        model,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use harness::contract::{Call, Contract};
    use harness::server::{ManagedServer, ServerOptions, VirtualClock};
    use harness::store::{Hello, StoreFactory, StoreInfo};
    use harness::ServerRef;
    use stores::sqlite::{SqliteClock, SqliteStoreFactory};

    use super::*;

    /// A store outside Redis that grants every take at epoch 1: two racing
    /// takes are both granted, which no order explains.
    struct GrantsEveryTake(Arc<VirtualClock>);

    struct Client(Arc<VirtualClock>);

    #[async_trait]
    impl StoreClient for Client {
        async fn call(&mut self, call: &Call, _: i64) -> Result<Reply, StoreError> {
            match Request::parse(call)? {
                Request::LeaseTake { ttl_ms, .. } => Ok(Reply::Granted {
                    epoch: 1,
                    expires_at_ms: self.0.now_ms() + ttl_ms,
                }),
                other => Err(StoreError::new(ErrorKind::Unsupported, other.op())),
            }
        }
    }

    #[async_trait]
    impl StoreFactory for GrantsEveryTake {
        fn spec(&self) -> String {
            "grants-every-take".into()
        }

        fn keeps_state_in_redis(&self) -> bool {
            false
        }

        async fn connect(
            &self,
            _: &Hello,
            _: i64,
        ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
            let info = StoreInfo {
                name: self.spec(),
                version: "0".into(),
                contracts: vec![Contract::Lease],
            };
            Ok((info, Box::new(Client(self.0.clone()))))
        }
    }

    fn subject(server: &ManagedServer, factory: Arc<dyn StoreFactory>) -> Subject<'_> {
        Subject {
            spec: factory.spec(),
            factory,
            opt_out: None,
            run_prefix: "sp:races:".into(),
            contracts: vec![Contract::Lease],
            server: ServerRef::Managed(server),
            seed: 0,
            may_start_servers: true,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_outside_redis_is_raced_with_concurrent_calls_that_can_fail() {
        let server = ManagedServer::start(ServerOptions::default())
            .await
            .unwrap();
        let clock = server.clock().unwrap().clone();
        // The server's own directory goes with it.
        let sqlite = SqliteStoreFactory::new(
            server.dir().join("store.db"),
            SqliteClock::following(Some(clock.clone())),
        );
        let passed = take_races(&subject(&server, Arc::new(sqlite)), "sp:races:ok:").await;
        assert_eq!(passed.verdict, Verdict::Pass, "{}", passed.reason);
        assert!(passed.reason.contains("concurrent"), "{}", passed.reason);

        let broken = Arc::new(GrantsEveryTake(clock));
        let failed = take_races(&subject(&server, broken), "sp:races:bad:").await;
        assert_eq!(failed.verdict, Verdict::Fail, "{}", failed.reason);
        assert!(
            failed
                .reason
                .contains("two takes of a free tree: no sequential order"),
            "{}",
            failed.reason
        );
        let _ = server.stop().await;
    }

    /// Which actor goes at each step when a race of `commands[a]` and
    /// `commands[b]` held commands (and a clock move, with `tick`) is run
    /// from `forced`, as `run_schedule` drives it; and who was ready.
    fn simulate(
        forced: &[usize],
        commands: [usize; 2],
        tick: bool,
    ) -> (Vec<usize>, Vec<Vec<usize>>) {
        let mut left = commands;
        let (mut choices, mut ready_sets, mut ticked) = (Vec::new(), Vec::new(), false);
        loop {
            let mut ready: Vec<usize> = (0..2).filter(|i| left[*i] > 0).collect();
            if ready.is_empty() {
                break;
            }
            if tick && !ticked {
                ready.push(TICK);
            }
            let pick = forced.get(choices.len()).copied().unwrap_or(ready[0]);
            assert!(ready.contains(&pick), "{forced:?}");
            if pick == TICK {
                ticked = true;
            } else {
                left[pick] -= 1;
            }
            choices.push(pick);
            ready_sets.push(ready);
        }
        (choices, ready_sets)
    }

    /// Every schedule, by brute force.
    fn every_schedule(
        sofar: Vec<usize>,
        commands: [usize; 2],
        tick: bool,
        out: &mut Vec<Vec<usize>>,
    ) {
        let (_, ready) = simulate(&sofar, commands, tick);
        match ready.get(sofar.len()) {
            None => out.push(sofar),
            Some(r) => {
                for a in r {
                    let mut next = sofar.clone();
                    next.push(*a);
                    every_schedule(next, commands, tick, out);
                }
            }
        }
    }

    fn run_all(commands: [usize; 2], tick: bool, cap: usize) -> (Vec<Vec<usize>>, bool) {
        let mut todo = Interleavings::new();
        let mut ran = Vec::new();
        while ran.len() < cap {
            let Some(forced) = todo.next() else { break };
            let (choices, ready) = simulate(&forced, commands, tick);
            todo.ran(forced.len(), &choices, &ready, &[]);
            ran.push(choices);
        }
        (ran, todo.complete())
    }

    /// A race of two instances whose commands are of `cmds` classes, run
    /// from `forced` as `run_schedule` runs one: its choices, ready sets
    /// and classes.
    fn simulate_classes(
        forced: &[usize],
        cmds: [&[commute::Class]; 2],
    ) -> (Vec<usize>, Vec<Vec<usize>>, Vec<Classes>) {
        let mut done = [0, 0];
        let (mut choices, mut ready_sets, mut class_sets) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            let ready: Vec<usize> = (0..2).filter(|i| done[*i] < cmds[*i].len()).collect();
            if ready.is_empty() {
                break;
            }
            let classes: Classes =
                [0, 1, TICK].map(|i| (i < 2).then(|| cmds[i].get(done[i]).cloned()).flatten());
            let pick = forced.get(choices.len()).copied().unwrap_or_else(|| {
                normal_pick(&ready, &classes, choices.last().zip(class_sets.last()))
            });
            done[pick] += 1;
            choices.push(pick);
            ready_sets.push(ready);
            class_sets.push(classes);
        }
        (choices, ready_sets, class_sets)
    }

    /// How many interleavings two instances of `cmds` commands have.
    fn every_len(cmds: [&[commute::Class]; 2]) -> usize {
        let mut every = Vec::new();
        every_schedule(vec![], [cmds[0].len(), cmds[1].len()], false, &mut every);
        every.len()
    }

    /// The normal form of the interleaving `s` of `cmds`: adjacent
    /// commuting commands of b then a swapped until none are left.
    fn normal_form(mut s: Vec<usize>, cmds: [&[commute::Class]; 2]) -> Vec<usize> {
        loop {
            let mut done = [0, 0];
            let mut at = Vec::new();
            for &x in &s {
                at.push(cmds[x][done[x]].clone());
                done[x] += 1;
            }
            let swap =
                (1..s.len()).find(|&k| inversion(s[k - 1], Some(&at[k - 1]), s[k], Some(&at[k])));
            match swap {
                Some(k) => s.swap(k - 1, k),
                None => return s,
            }
        }
    }

    #[test]
    fn commuting_commands_run_one_interleaving_per_order_of_the_others() {
        use commute::Class::{Local, Read, Write};
        let patterns: [[&[commute::Class]; 2]; 5] = [
            [&[Read, Write], &[Read, Write]],
            // A WATCH take: WATCH, TIME, HMGET, MULTI, queued HSET, EXEC.
            [
                &[Read, Local, Read, Local, Local, Write],
                &[Read, Local, Read, Local, Local, Write],
            ],
            [&[Write], &[Write]],
            [&[Local, Read, Write, Read], &[Read, Write]],
            [&[Read, Read], &[Write, Read, Local]],
        ];
        for cmds in patterns {
            let mut todo = Interleavings::new();
            let mut ran = Vec::new();
            while let Some(forced) = todo.next() {
                let (choices, ready, classes) = simulate_classes(&forced, cmds);
                todo.ran(forced.len(), &choices, &ready, &classes);
                ran.push(choices);
            }
            let distinct: std::collections::BTreeSet<Vec<usize>> = ran.iter().cloned().collect();
            assert_eq!(distinct.len(), ran.len(), "a schedule ran twice: {cmds:?}");
            // Every interleaving's class has its normal form run (what
            // makes the reduction sound); a run that is not a normal form
            // is one the default order could not keep in it (the other
            // instance had finished), equivalent to one run.
            let mut every = Vec::new();
            every_schedule(vec![], [cmds[0].len(), cmds[1].len()], false, &mut every);
            let normal: std::collections::BTreeSet<Vec<usize>> =
                every.into_iter().map(|s| normal_form(s, cmds)).collect();
            assert!(
                normal.is_subset(&distinct),
                "{cmds:?}: {normal:?} not all in {distinct:?}"
            );
            let all = every_len(cmds);
            assert!(
                distinct.len() <= all,
                "{cmds:?}: more runs than interleavings"
            );
        }
        // Two read-then-write takes: 4 classes of the 6 interleavings; two
        // WATCH takes: far fewer than C(12, 6) = 924.
        let count = |cmds: [&[commute::Class]; 2]| {
            let mut todo = Interleavings::new();
            let mut n = 0;
            while let Some(forced) = todo.next() {
                let (choices, ready, classes) = simulate_classes(&forced, cmds);
                todo.ran(forced.len(), &choices, &ready, &classes);
                n += 1;
            }
            n
        };
        assert_eq!(count([&[Read, Write], &[Read, Write]]), 4);
        let watch: &[commute::Class] = &[Read, Local, Read, Local, Local, Write];
        assert!(count([watch, watch]) < 20, "{}", count([watch, watch]));
    }

    #[test]
    fn the_search_runs_every_interleaving_once_and_the_first_divergences_first() {
        for (commands, tick) in [
            ([1, 1], false),
            ([1, 1], true),
            ([2, 3], false),
            ([3, 3], true),
        ] {
            let (mut ran, complete) = run_all(commands, tick, usize::MAX);
            assert!(complete);
            let mut every = Vec::new();
            every_schedule(vec![], commands, tick, &mut every);
            ran.sort();
            every.sort();
            assert_eq!(ran, every, "{commands:?} {tick}");
            let distinct: std::collections::BTreeSet<_> = ran.iter().collect();
            assert_eq!(distinct.len(), ran.len(), "a schedule ran twice");
        }
        // Two takes of four commands each: C(8, 4) = 70 interleavings.
        assert_eq!(run_all([4, 4], false, usize::MAX).0.len(), 70);
        // Under a cap, the schedule diverging at the very first step runs
        // second (it used to be the last: the stack popped the deepest
        // divergence first), and the search says it is not complete.
        let (ran, complete) = run_all([3, 3], false, 2);
        assert!(!complete);
        assert_eq!(ran[0], [0, 0, 0, 1, 1, 1]);
        assert_eq!(ran[1][0], 1, "{ran:?}");
    }

    /// A correct take of five commands: three reads (`EXISTS`), or three
    /// writes of a key of its own (`SET`, `writes`), then one script that
    /// takes the lock or reports its holder.
    struct ChattyTake {
        writes: bool,
    }

    struct ChattyClient(redis::aio::MultiplexedConnection, String, bool);

    #[async_trait]
    impl StoreClient for ChattyClient {
        async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
            let unavailable =
                |e: redis::RedisError| StoreError::new(ErrorKind::Unavailable, e.to_string());
            let Request::LeaseTake {
                tree,
                holder,
                ttl_ms,
            } = Request::parse(call)?
            else {
                return Err(StoreError::new(ErrorKind::Unsupported, "only takes"));
            };
            let tree = format!("{}{tree}", self.1);
            for _ in 0..3 {
                let mut cmd = if self.2 {
                    redis::cmd("SET")
                } else {
                    redis::cmd("EXISTS")
                };
                if self.2 {
                    cmd.arg(format!("{tree}:seen")).arg(1);
                } else {
                    cmd.arg(&tree);
                }
                let _: redis::Value = cmd.query_async(&mut self.0).await.map_err(unavailable)?;
            }
            let expires_at_ms = clock_ms + ttl_ms;
            let held: Option<String> = redis::cmd("EVAL")
                .arg("local c = redis.call('GET', KEYS[1]) if c then return c end redis.call('SET', KEYS[1], ARGV[1]) return false")
                .arg(1)
                .arg(&tree)
                .arg(format!("{expires_at_ms}|{holder}"))
                .query_async(&mut self.0)
                .await
                .map_err(unavailable)?;
            Ok(match held.as_deref().and_then(|h| h.split_once('|')) {
                None => Reply::Granted {
                    epoch: 1,
                    expires_at_ms,
                },
                Some((exp, h)) => Reply::Busy {
                    holder: h.into(),
                    epoch: 1,
                    expires_at_ms: exp.parse().unwrap_or(0),
                },
            })
        }
    }

    #[async_trait]
    impl StoreFactory for ChattyTake {
        fn spec(&self) -> String {
            "chatty-take".into()
        }

        async fn connect(
            &self,
            hello: &Hello,
            _: i64,
        ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
            let conn = redis::Client::open(hello.redis_url.as_str())
                .map_err(|e| StoreError::new(ErrorKind::Unavailable, e.to_string()))?
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| StoreError::new(ErrorKind::Unavailable, e.to_string()))?;
            let info = StoreInfo {
                name: self.spec(),
                version: "0".into(),
                contracts: vec![Contract::Lease],
            };
            Ok((
                info,
                Box::new(ChattyClient(conn, hello.prefix.clone(), self.writes)),
            ))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_race_with_more_interleavings_than_the_cap_is_unknown_naming_how_many_ran() {
        let server = ManagedServer::start(ServerOptions::default())
            .await
            .unwrap();
        let clock = server.clock().unwrap().clone();
        let target = subject(&server, Arc::new(ChattyTake { writes: true }));
        let race = &Races::Take.races()[0];
        let mut run = 0;
        let capped = explore(
            &target,
            race,
            Races::Take,
            "sp:races:cap:",
            &clock,
            &mut run,
            5,
        )
        .await;
        assert_eq!(capped.verdict, Verdict::Unknown, "{:?}", capped.reason);
        assert!(
            capped.summary.contains("5 of at least") && capped.summary.contains("stopped at 5"),
            "{}",
            capped.summary
        );
        // Uncapped, every one of the C(8, 4) interleavings runs, and the
        // pass says so.
        let all = explore(
            &target,
            race,
            Races::Take,
            "sp:races:all:",
            &clock,
            &mut run,
            MAX_SCHEDULES,
        )
        .await;
        assert_eq!(all.verdict, Verdict::Pass, "{:?}", all.reason);
        assert!(
            all.summary.ends_with("(all 70 interleavings ran)"),
            "{}",
            all.summary
        );
        // With reads instead of writes, the reads commute with one another
        // and only their order against the scripts is run: fewer, and the
        // pass says why.
        let reads = subject(&server, Arc::new(ChattyTake { writes: false }));
        let reduced = explore(
            &reads,
            race,
            Races::Take,
            "sp:races:reads:",
            &clock,
            &mut run,
            MAX_SCHEDULES,
        )
        .await;
        assert_eq!(reduced.verdict, Verdict::Pass, "{:?}", reduced.reason);
        assert!(
            reduced.summary.contains("commands that do not commute ran"),
            "{}",
            reduced.summary
        );
        assert!(
            reduced.evidence.schedules.is_some_and(|n| n < 70),
            "{:?}",
            reduced.evidence.schedules
        );
        let _ = server.stop().await;
    }

    /// The built-in store, but `lease.renew` answers `unsupported`.
    struct NoRenew(stores::redis::RedisStoreFactory);

    struct NoRenewClient(Box<dyn StoreClient>);

    #[async_trait]
    impl StoreClient for NoRenewClient {
        async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
            if call.op == "lease.renew" {
                return Err(StoreError::new(
                    ErrorKind::Unsupported,
                    "this store never renews",
                ));
            }
            self.0.call(call, clock_ms).await
        }
    }

    #[async_trait]
    impl StoreFactory for NoRenew {
        fn spec(&self) -> String {
            "no-renew".into()
        }

        async fn connect(
            &self,
            hello: &Hello,
            clock_ms: i64,
        ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
            let (info, inner) = self.0.connect(hello, clock_ms).await?;
            Ok((info, Box::new(NoRenewClient(inner))))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_race_the_store_answers_unsupported_is_skipped_with_its_message() {
        let server = ManagedServer::start(ServerOptions::default())
            .await
            .unwrap();
        let store = NoRenew(stores::redis::RedisStoreFactory::new(
            server.dir().join("kept.sqlite"),
        ));
        let result = take_races(&subject(&server, Arc::new(store)), "sp:races:norenew:").await;
        assert_eq!(result.verdict, Verdict::Skipped, "{}", result.reason);
        assert!(
            result
                .reason
                .contains("unsupported to lease.renew: this store never renews"),
            "{}",
            result.reason
        );
        // The two races it can run are still run, and said to have passed.
        assert!(
            result
                .reason
                .contains("two takes of a free tree (all 2 interleavings ran)"),
            "{}",
            result.reason
        );
        let _ = server.stop().await;
    }
}
