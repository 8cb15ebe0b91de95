//! What the explorer looks for, named once: each property's name (as the
//! state's violations and a counterexample write it) and the check it feeds
//! (its id, level, contracts and what passing proves).

use harness::contract::Contract;
use harness::Level;
use harness::{CheckSpec, Needs};
use serde::{Deserialize, Serialize};

use crate::state::Op;

/// A property the explorer looks for: one that must always hold, the
/// harness's own trouble, or a race that must sometimes be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// At no server instant do two grants both hold a live lease.
    OneLiveHolder,
    /// Every grant's epoch is greater than every earlier grant's.
    EpochMonotonic,
    /// A renew or release naming a superseded epoch never succeeds.
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
}

/// Every explorer check is about the lease contract and needs worlds it
/// restores to any state and moves the clock of: servers whose store's
/// Redis commands it interleaves, or a copy of a store with no Redis wire
/// whose operations it interleaves (a store offering neither cannot be
/// explored).
const fn spec(id: &'static str, about: &'static str) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts: &[Contract::Lease],
        needs: Needs::Interleavings,
        about,
    }
}

impl Property {
    /// Every property, in the order their checks are reported.
    pub const ALL: [Property; 8] = [
        Property::OneLiveHolder,
        Property::EpochMonotonic,
        Property::ZombieRefused,
        Property::NoTreeStuck,
        Property::Answered,
        Property::ZombieRenewRace,
        Property::ZombieReleaseRace,
        Property::HarnessOk,
    ];

    /// The properties that must hold in every state.
    pub(crate) const ALWAYS: [Property; 5] = [
        Property::OneLiveHolder,
        Property::EpochMonotonic,
        Property::ZombieRefused,
        Property::NoTreeStuck,
        Property::Answered,
    ];

    /// The races every search must reach.
    pub(crate) const RACES: [Property; 2] =
        [Property::ZombieRenewRace, Property::ZombieReleaseRace];

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
                "a renew or release naming a superseded epoch never succeeds",
            ),
            Property::NoTreeStuck => spec(
                "explorer.no-tree-stuck",
                "once every lease has run out (say its holder crashed), the tree can be taken again",
            ),
            Property::Answered => spec(
                "explorer.answered",
                "every operation gets an answer from the store, not an error",
            ),
            Property::ZombieRenewRace => spec(
                "explorer.zombie-renew-race-reached",
                "a zombie renew after another instance took over",
            ),
            Property::ZombieReleaseRace => spec(
                "explorer.zombie-release-race-reached",
                "a zombie release after another instance took over",
            ),
            Property::HarnessOk => spec(
                "explorer.exploration-complete",
                "every transition's outcome came from the real server, directly or from the transition cache of its earlier outcomes for the same state, time and input (a seeded sample of which was sent to the server again and agreed), and every re-run of an operation sent the same commands",
            ),
        }
    }

    /// The operations the property is about: an `unsupported` answer to
    /// one of them skips its check (PROTOCOL: "which skips that check").
    pub(crate) const fn ops(self) -> &'static [Op] {
        match self {
            Property::OneLiveHolder => &[Op::Take, Op::Renew],
            Property::EpochMonotonic => &[Op::Take],
            Property::ZombieRefused => &[Op::Renew, Op::Release],
            Property::NoTreeStuck => &[Op::Take, Op::Release],
            Property::Answered => &[Op::Take, Op::Renew, Op::Release, Op::Read],
            Property::ZombieRenewRace => &[Op::Take, Op::Renew],
            Property::ZombieReleaseRace => &[Op::Take, Op::Release],
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
}
