//! What the explorer searches and what it looks for, as data: the
//! operations an instance may start, how time moves, a schedule's steps, and
//! the properties (each named once, with the check it feeds). A
//! counterexample names its property and carries its schedule, so replaying
//! and rendering it need nothing of the explorer's own.

use crate::check::{CheckSpec, Level, Needs};
use crate::contract::Contract;
use serde::{Deserialize, Serialize};

/// The operations an idle instance may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `lease.take` of the explored tree.
    Take,
    /// `lease.renew` of the epoch the instance believes it holds.
    Renew,
    /// `lease.release` of the epoch the instance believes it holds.
    Release,
    /// `lease.read` of the explored tree.
    Read,
    /// `queue.save` of the explored child with this index.
    Save(u8),
    /// `queue.claim`, for the claim's length.
    Claim,
    /// `queue.complete` of the claim the instance believes it holds.
    Complete,
    /// `queue.read` of the first child.
    QueueRead,
    /// `rate.acquire_slot` of the explored provider's last slot.
    Acquire,
    /// `rate.release_slot` of the slot the instance believes it holds.
    ReleaseSlot,
    /// `rate.hit` of the explored provider's window.
    Hit,
    /// `rate.pause` of the explored provider, half a lease ahead of the
    /// instance's clock.
    Pause,
    /// `rate.read` of the explored provider.
    RateRead,
}

impl Op {
    /// Whether the operation may change the store (all but the reads).
    pub fn writes(self) -> bool {
        !matches!(self, Op::Read | Op::QueueRead | Op::RateRead)
    }

    /// The contract the operation belongs to.
    pub fn contract(self) -> crate::contract::Contract {
        use crate::contract::Contract;
        match self {
            Op::Take | Op::Renew | Op::Release | Op::Read => Contract::Lease,
            Op::Save(_) | Op::Claim | Op::Complete | Op::QueueRead => Contract::Queue,
            Op::Acquire | Op::ReleaseSlot | Op::Hit | Op::Pause | Op::RateRead => Contract::Rate,
        }
    }

    /// Its wire name.
    pub fn wire(self) -> &'static str {
        match self {
            Op::Take => "lease.take",
            Op::Renew => "lease.renew",
            Op::Release => "lease.release",
            Op::Read => "lease.read",
            Op::Save(_) => "queue.save",
            Op::Claim => "queue.claim",
            Op::Complete => "queue.complete",
            Op::QueueRead => "queue.read",
            Op::Acquire => "rate.acquire_slot",
            Op::ReleaseSlot => "rate.release_slot",
            Op::Hit => "rate.hit",
            Op::Pause => "rate.pause",
            Op::RateRead => "rate.read",
        }
    }
}

/// How server time moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tick {
    /// To the nearest future expiry instant, plus −1, 0 or +1 ms.
    NearestExpiry(i8),
    /// Forward by half a lease.
    HalfLease,
    /// Forward by a whole lease.
    Lease,
    /// 100 leases: a GC pause, a frozen VM, a tree left idle.
    LongPause,
}

/// One step of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// An idle instance starts an operation: its first Redis command is delivered.
    Start(usize, Op),
    /// A busy instance has its next Redis command delivered.
    Continue(usize),
    /// Server time moves (every instance clock moves with it).
    Tick(Tick),
    /// An instance stops for good, between any two of its commands.
    Crash(usize),
    /// Instance `i`'s next command of `op` (started now if it is idle) is
    /// delivered and applied, but its reply is lost: the gate closes the
    /// client's connection instead of answering. The operation then runs
    /// to its end on its own, nothing else happening (a client library
    /// that connects again and retries does so within it). At most one a
    /// schedule, with [`crate::ExplorerConfig::lost_replies`].
    Lose(usize, Op),
    /// The server fills up (`maxmemory` reached, `noeviction`): every
    /// later write is refused with `OOM` until room is given back.
    Fill,
    /// Room is given back: writes are accepted again.
    Free,
}

/// A replayable schedule: the instances' skews and the actions in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// One instance clock offset from server time per instance, in ms.
    pub skews: Vec<i64>,
    /// The steps in order, from the initial state.
    pub actions: Vec<Action>,
}

/// A property the explorer looks for: one that must always hold, the
/// harness's own trouble, or a race that must sometimes be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// At no server instant do two grants both hold a live lease.
    OneLiveHolder,
    /// Every grant's epoch is greater than every earlier grant's.
    EpochMonotonic,
    /// A renew or release naming a superseded epoch, or sent by an
    /// instance that does not hold the lease, never succeeds.
    ZombieRefused,
    /// Once every lease has run out, the tree can be taken again.
    NoTreeStuck,
    /// Every operation gets an answer, not an error.
    Answered,
    /// The harness could go on (its own trouble breaks this, never the store).
    HarnessOk,
    /// A zombie renew after another instance took over was reached.
    #[serde(rename = "zombie-renew-after-takeover")]
    ZombieRenewRace,
    /// A zombie release after another instance took over was reached.
    #[serde(rename = "zombie-release-after-takeover")]
    ZombieReleaseRace,
    /// At no server instant do two live claims hold one child.
    QueueOneClaimHolder,
    /// A completion is accepted only from the current, live claim.
    QueueCompleteOnlyLive,
    /// A completed child is never handed out again.
    QueueDoneNeverClaimed,
    /// Every acknowledged save not completed is offered again once its
    /// claims ran out.
    QueueNoSaveLost,
    /// A claim takes the first ready child in claim order.
    QueueClaimOrder,
    /// Every queue operation gets an answer, not an error.
    QueueAnswered,
    /// Two claims raced with one child ready.
    QueueClaimRace,
    /// A claim raced a completion at the claim's expiry instant.
    QueueCompleteRace,
    /// No grant counts more live slots than the limit on its own clock.
    RateSlotLimit,
    /// No allowed hit finds the limit's worth of hits in its window.
    RateHitLimit,
    /// A pause only lengthens: no answer shows a pause shorter than one
    /// acknowledged before.
    RatePauseOnlyLengthens,
    /// Nothing is granted while an acknowledged pause is in force.
    RateNothingWhilePaused,
    /// A refusal (full, limited, paused) only when something could cause it.
    RateRefusedOnlyWhenDue,
    /// Every rate operation gets an answer, not an error.
    RateAnswered,
    /// Two acquires raced for the last slot.
    RateSlotRace,
    /// Two hits raced for the last place in a window.
    RateHitRace,
}

/// A lease check of the explorer: like every explorer check, it needs worlds it
/// restores to any state and moves the clock of: servers whose store's
/// Redis commands it interleaves, or a copy of a store with no Redis wire
/// whose operations it interleaves (a store offering neither cannot be
/// explored).
const fn spec(id: &'static str, about: &'static str) -> CheckSpec {
    of(&[Contract::Lease], id, about)
}

/// A check of the child queue's exploration.
const fn queue_spec(id: &'static str, about: &'static str) -> CheckSpec {
    of(&[Contract::Queue], id, about)
}

/// A check of the rate limits' exploration.
const fn rate_spec(id: &'static str, about: &'static str) -> CheckSpec {
    of(&[Contract::Rate], id, about)
}

const fn of(contracts: &'static [Contract], id: &'static str, about: &'static str) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts,
        needs: Needs::Interleavings,
        about,
    }
}

/// The contracts the explorer explores, in the order it explores them.
pub const EXPLORED: [Contract; 3] = [Contract::Lease, Contract::Queue, Contract::Rate];

impl Property {
    /// Every property, in the order their checks are reported.
    pub const ALL: [Property; 24] = [
        Property::OneLiveHolder,
        Property::EpochMonotonic,
        Property::ZombieRefused,
        Property::NoTreeStuck,
        Property::Answered,
        Property::ZombieRenewRace,
        Property::ZombieReleaseRace,
        Property::QueueOneClaimHolder,
        Property::QueueCompleteOnlyLive,
        Property::QueueDoneNeverClaimed,
        Property::QueueNoSaveLost,
        Property::QueueClaimOrder,
        Property::QueueAnswered,
        Property::QueueClaimRace,
        Property::QueueCompleteRace,
        Property::RateSlotLimit,
        Property::RateHitLimit,
        Property::RatePauseOnlyLengthens,
        Property::RateNothingWhilePaused,
        Property::RateRefusedOnlyWhenDue,
        Property::RateAnswered,
        Property::RateSlotRace,
        Property::RateHitRace,
        Property::HarnessOk,
    ];

    /// The properties that must hold in every state of `contract`'s
    /// exploration.
    pub fn always(contract: Contract) -> &'static [Property] {
        match contract {
            Contract::Queue => &[
                Property::QueueOneClaimHolder,
                Property::QueueCompleteOnlyLive,
                Property::QueueDoneNeverClaimed,
                Property::QueueNoSaveLost,
                Property::QueueClaimOrder,
                Property::QueueAnswered,
            ],
            Contract::Rate => &[
                Property::RateSlotLimit,
                Property::RateHitLimit,
                Property::RatePauseOnlyLengthens,
                Property::RateNothingWhilePaused,
                Property::RateRefusedOnlyWhenDue,
                Property::RateAnswered,
            ],
            _ => &[
                Property::OneLiveHolder,
                Property::EpochMonotonic,
                Property::ZombieRefused,
                Property::NoTreeStuck,
                Property::Answered,
            ],
        }
    }

    /// The races every search of `contract` must reach.
    pub fn races(contract: Contract) -> &'static [Property] {
        match contract {
            Contract::Queue => &[Property::QueueClaimRace, Property::QueueCompleteRace],
            Contract::Rate => &[Property::RateSlotRace, Property::RateHitRace],
            _ => &[Property::ZombieRenewRace, Property::ZombieReleaseRace],
        }
    }

    /// Whether the property is a contract's `answered` check (every
    /// operation answered; a write refused on the full server changed
    /// nothing).
    pub fn is_answered(self) -> bool {
        matches!(
            self,
            Property::Answered | Property::QueueAnswered | Property::RateAnswered
        )
    }

    /// Whether the property is a race that must be reached.
    pub fn is_race(self) -> bool {
        EXPLORED.iter().any(|c| Property::races(*c).contains(&self))
    }

    /// The contract whose exploration judges the property (`None`: every
    /// exploration's, the harness's own trouble).
    pub fn contract(self) -> Option<Contract> {
        match self {
            Property::HarnessOk => None,
            p => EXPLORED
                .into_iter()
                .find(|c| Property::always(*c).contains(&p) || Property::races(*c).contains(&p)),
        }
    }

    /// The property's name, as violations and counterexamples write it.
    pub const fn name(self) -> &'static str {
        match self {
            Property::OneLiveHolder => "one-live-holder",
            Property::EpochMonotonic => "epoch-monotonic",
            Property::ZombieRefused => "zombie-refused",
            Property::NoTreeStuck => "no-tree-stuck",
            Property::Answered => "answered",
            Property::HarnessOk => "harness-ok",
            Property::ZombieRenewRace => "zombie-renew-after-takeover",
            Property::ZombieReleaseRace => "zombie-release-after-takeover",
            Property::QueueOneClaimHolder => "queue-one-claim-holder",
            Property::QueueCompleteOnlyLive => "queue-complete-only-live",
            Property::QueueDoneNeverClaimed => "queue-done-never-claimed",
            Property::QueueNoSaveLost => "queue-no-save-lost",
            Property::QueueClaimOrder => "queue-claim-order",
            Property::QueueAnswered => "queue-answered",
            Property::QueueClaimRace => "queue-claim-race",
            Property::QueueCompleteRace => "queue-complete-race",
            Property::RateSlotLimit => "rate-slot-limit",
            Property::RateHitLimit => "rate-hit-limit",
            Property::RatePauseOnlyLengthens => "rate-pause-only-lengthens",
            Property::RateNothingWhilePaused => "rate-nothing-while-paused",
            Property::RateRefusedOnlyWhenDue => "rate-refused-only-when-due",
            Property::RateAnswered => "rate-answered",
            Property::RateSlotRace => "rate-slot-race",
            Property::RateHitRace => "rate-hit-race",
        }
    }

    /// The property named `name`, if any.
    pub fn from_name(name: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The check this property feeds, declared once.
    pub const fn check(self) -> CheckSpec {
        match self {
            Property::OneLiveHolder => spec(
                "explorer.one-live-holder",
                "at no server instant do two grants both hold an unexpired, unreleased lease",
            ),
            Property::EpochMonotonic => spec(
                "explorer.epoch-monotonic",
                "every grant's epoch is greater than every earlier grant's",
            ),
            Property::ZombieRefused => spec(
                "explorer.zombie-refused",
                "a renew or release naming a superseded epoch, or a lease its sender does not hold, never succeeds",
            ),
            Property::NoTreeStuck => spec(
                "explorer.no-tree-stuck",
                "once every lease has run out (say its holder crashed), the tree can be taken again",
            ),
            Property::Answered => spec(
                "explorer.answered",
                "every operation gets an answer from the store, not an error (store_full while the server is full), a write refused as store_full changes nothing, a busy take, a lost renew and a live read name the holder their epoch was granted to and an expiry its take or renew could have set, a grant or renewal expires a ttl after an instant it ran at, and a read shows no epoch older than one granted before it",
            ),
            Property::ZombieRenewRace => spec(
                "explorer.zombie-renew-race-reached",
                "a zombie renew after another instance took over",
            ),
            Property::ZombieReleaseRace => spec(
                "explorer.zombie-release-race-reached",
                "a zombie release after another instance took over",
            ),
            Property::QueueOneClaimHolder => queue_spec(
                "explorer.queue.one-claim-holder",
                "at no server instant do two live claims hold one child",
            ),
            Property::QueueCompleteOnlyLive => queue_spec(
                "explorer.queue.complete-only-live",
                "a completion is accepted only from the current, live claim: a stale or expired claimer's complete is refused",
            ),
            Property::QueueDoneNeverClaimed => queue_spec(
                "explorer.queue.done-never-claimed",
                "a completed child is never handed out again",
            ),
            Property::QueueNoSaveLost => queue_spec(
                "explorer.queue.no-save-lost",
                "every child a save was acknowledged for, and not completed, is offered again once its claims have run out",
            ),
            Property::QueueClaimOrder => queue_spec(
                "explorer.queue.claim-order",
                "a claim takes the first child ready at its instant in claim order (deepest first, then longest waiting)",
            ),
            Property::QueueAnswered => queue_spec(
                "explorer.queue.answered",
                "every queue operation gets an answer from the store, not an error (store_full while the server is full), and a write refused as store_full changes nothing; a claim answers the depth and payload the child was saved with, and a read shows the child as some order of the operations left it",
            ),
            Property::QueueClaimRace => queue_spec(
                "explorer.queue.two-claims-race-reached",
                "two claims racing for the last ready child",
            ),
            Property::QueueCompleteRace => queue_spec(
                "explorer.queue.claim-complete-race-reached",
                "a claim racing a completion at the claim's expiry instant",
            ),
            Property::RateSlotLimit => rate_spec(
                "explorer.rate.slot-limit",
                "no acquire is granted while the limit's worth of slots granted before it are live on its own clock",
            ),
            Property::RateHitLimit => rate_spec(
                "explorer.rate.hit-limit",
                "no hit is allowed while the limit's worth of hits allowed before it fall in its window on its own clock",
            ),
            Property::RatePauseOnlyLengthens => rate_spec(
                "explorer.rate.pause-only-lengthens",
                "a pause only lengthens: no answer shows a pause shorter than one acknowledged before it, or one no pause asked for",
            ),
            Property::RateNothingWhilePaused => rate_spec(
                "explorer.rate.nothing-while-paused",
                "no slot or hit is granted while a pause acknowledged before it is in force on its clock",
            ),
            Property::RateRefusedOnlyWhenDue => rate_spec(
                "explorer.rate.refused-only-when-due",
                "an acquire is refused only while a slot may be live, a hit only while a hit may fall in its window, and either as paused only while a pause is in force: a crashed holder's slot and an emptied window come back",
            ),
            Property::RateAnswered => rate_spec(
                "explorer.rate.answered",
                "every rate operation gets an answer from the store, not an error (store_full while the server is full), and a write refused as store_full changes nothing; a read counts every slot surely live on its clock",
            ),
            Property::RateSlotRace => rate_spec(
                "explorer.rate.two-acquires-race-reached",
                "two acquires racing for the last slot",
            ),
            Property::RateHitRace => rate_spec(
                "explorer.rate.two-hits-race-reached",
                "two hits racing for the last place in a window",
            ),
            Property::HarnessOk => of(
                &[Contract::Lease, Contract::Queue, Contract::Rate],
                "explorer.exploration-complete",
                "every transition's outcome came from the real server, directly or from the transition cache of its earlier outcomes for the same state, time and input (a seeded sample of which was sent to the server again and agreed), and every re-run of an operation that ran the store sent the commands recorded for it (steps taken from the store's recorded behaviour instead are checked on a seeded sample that runs the store again and must agree)",
            ),
        }
    }

    /// The operations the property is about: an `unsupported` answer to
    /// one of them skips its check (PROTOCOL: "which skips that check").
    pub const fn ops(self) -> &'static [Op] {
        match self {
            Property::OneLiveHolder => &[Op::Take, Op::Renew],
            Property::EpochMonotonic => &[Op::Take],
            Property::ZombieRefused => &[Op::Renew, Op::Release],
            Property::NoTreeStuck => &[Op::Take, Op::Release],
            Property::Answered => &[Op::Take, Op::Renew, Op::Release, Op::Read],
            Property::ZombieRenewRace => &[Op::Take, Op::Renew],
            Property::ZombieReleaseRace => &[Op::Take, Op::Release],
            Property::QueueOneClaimHolder | Property::QueueClaimOrder => &[Op::Claim],
            Property::QueueCompleteOnlyLive => &[Op::Claim, Op::Complete],
            Property::QueueDoneNeverClaimed => &[Op::Claim, Op::Complete],
            Property::QueueNoSaveLost => &[Op::Save(0), Op::Save(1), Op::Claim],
            Property::QueueAnswered => &[
                Op::Save(0),
                Op::Save(1),
                Op::Claim,
                Op::Complete,
                Op::QueueRead,
            ],
            Property::QueueClaimRace => &[Op::Claim],
            Property::QueueCompleteRace => &[Op::Claim, Op::Complete],
            Property::RateSlotLimit | Property::RateSlotRace => &[Op::Acquire],
            Property::RateHitLimit | Property::RateHitRace => &[Op::Hit],
            Property::RatePauseOnlyLengthens | Property::RateNothingWhilePaused => &[Op::Pause],
            Property::RateRefusedOnlyWhenDue => &[Op::Acquire, Op::Hit],
            Property::RateAnswered => &[
                Op::Acquire,
                Op::ReleaseSlot,
                Op::Hit,
                Op::Pause,
                Op::RateRead,
            ],
            Property::HarnessOk => &[],
        }
    }

    /// The id of the check this property feeds.
    pub const fn id(self) -> &'static str {
        self.check().id
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ids_and_serde_agree() {
        let mut ids = std::collections::HashSet::new();
        for p in Property::ALL {
            assert_eq!(Property::from_name(p.name()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
            assert!(p.id().starts_with("explorer."), "{}", p.id());
            assert!(ids.insert(p.id()), "{} twice", p.id());
        }
        assert_eq!(Property::from_name("nonsense"), None);
    }

    /// `ALL` is a const list the report's order needs; it is every
    /// contract's properties and races, in the order explored, and the
    /// harness's own last: the lists it repeats cannot drift from it.
    #[test]
    fn all_is_each_contract_s_properties_and_races_then_the_harness() {
        let mut expected: Vec<Property> = EXPLORED
            .iter()
            .flat_map(|c| [Property::always(*c), Property::races(*c)].concat())
            .collect();
        expected.push(Property::HarnessOk);
        assert_eq!(Property::ALL.to_vec(), expected);
    }
}
