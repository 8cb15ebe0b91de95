//! A violation as every checker reports it: what broke, what it is about,
//! and the events of the check's history it blames and relates, by their
//! index. A checker's own findings keep their detail in its evidence; this
//! is the part the report draws, so the renderer reads fields and never
//! guesses which keys of a finding name events.

use serde::{Deserialize, Serialize};

use crate::contract::{Call, Reply, Request};

/// One violation a checker found in a history (Jepsen's anomaly, with the
/// operations involved).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The checker's name for what broke, e.g. `applied_twice`; none for a
    /// checker with one kind (no order explains the replies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What it is about: a tree, child, provider or call, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<Named>,
    /// Events (by [`crate::Event::index`]) of the operations that broke it:
    /// an operation is named by its invoke or its completion.
    pub blamed: Vec<usize>,
    /// Events of operations that give it context (the grant of a newer
    /// epoch, the slots live then, the operations concurrent with it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<usize>,
    /// The completion no order of what came before can explain, for a
    /// violation found at one reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_event: Option<usize>,
}

/// A thing a violation is about: what it is and its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Named {
    /// `tree`, `child`, `provider` or `call`.
    pub what: String,
    /// Its id in the history, e.g. `tree-3`.
    pub name: String,
}

impl Named {
    /// `what` named `name`.
    pub fn new(what: &str, name: &str) -> Named {
        Named {
            what: what.to_string(),
            name: name.to_string(),
        }
    }

    /// Whether an operation is about this thing: its request names it
    /// ([`Request::subjects`]), or its reply does (a claim's child). A
    /// call that does not parse names nothing.
    pub fn is_named_by(&self, call: &Call, reply: Option<&Reply>) -> bool {
        let by_request = Request::parse(call).is_ok_and(|r| {
            r.subjects()
                .iter()
                .any(|(what, name)| *what == self.what && *name == self.name)
        });
        let by_reply = matches!(reply, Some(Reply::Claimed { child, .. })
            if self.what == "child" && *child == self.name);
        by_request || by_reply
    }
}

impl Violation {
    /// A violation of `kind` about `about`, blaming `blamed`.
    pub fn new(kind: Option<&str>, about: Option<Named>, blamed: Vec<usize>) -> Violation {
        Violation {
            kind: kind.map(str::to_string),
            about,
            blamed,
            related: Vec::new(),
            at_event: None,
        }
    }

    /// The same, with `related` as context.
    pub fn relating(mut self, related: Vec<usize>) -> Violation {
        self.related = related;
        self
    }
}
