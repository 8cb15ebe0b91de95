//! The sequential model of the execution lease contract
//! (docs/PROTOCOL.md §4.2), and of the fencing set beside it (§4.5).

use std::collections::{BTreeMap, BTreeSet};

use super::{Judgement, LeaseView, Reply, Request};

/// One tree's lease record as the contract sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    /// Who the latest grant went to.
    pub holder: String,
    /// The latest epoch granted; it only grows.
    pub epoch: i64,
    /// When the lease ends, in server time ms.
    pub expires_at_ms: i64,
    /// Released by its holder; the tree is free and the epoch kept.
    pub released: bool,
}

impl LeaseRecord {
    /// Unreleased and unexpired at `now_ms` (a lease ends *at* `expires_at_ms`).
    pub fn live(&self, now_ms: i64) -> bool {
        !self.released && now_ms < self.expires_at_ms
    }
}

/// The lease contract run sequentially on server time. `apply` gives the
/// canonical reply (epochs count 1, 2, 3, …); `judge` accepts every reply the
/// contract allows and follows the store along it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseModel {
    /// Tree → its lease record; a record is never removed.
    pub trees: BTreeMap<String, LeaseRecord>,
    /// Tree → its kept execution ids, in the order first kept.
    pub kept: BTreeMap<String, Vec<String>>,
    /// The fencing set (docs/PROTOCOL.md §4.5): (tree, effect id) of every
    /// effect applied.
    pub effects: BTreeSet<(String, String)>,
    /// The fencing set: call id → the call as begun.
    pub calls: BTreeMap<String, CallRecordModel>,
}

/// An outbound call as the fencing set's model records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecordModel {
    /// The tree whose lease fenced its begin.
    pub tree: String,
    /// Who began it.
    pub holder: String,
    /// The epoch it was begun under.
    pub epoch: i64,
    /// The first response recorded, once finished.
    pub response: Option<String>,
}

impl LeaseModel {
    /// The canonical reply to `req` at server time `now_ms`, and its effect.
    /// Requests of other contracts answer `None` and change nothing.
    pub fn apply(&mut self, req: &Request, now_ms: i64) -> Option<Reply> {
        Some(match req {
            Request::LeaseTake {
                tree,
                holder,
                ttl_ms,
            } => {
                let prev = self.trees.get(tree);
                if let Some(r) = prev.filter(|r| r.live(now_ms)) {
                    return Some(Reply::Busy {
                        holder: r.holder.clone(),
                        epoch: r.epoch,
                        expires_at_ms: r.expires_at_ms,
                    });
                }
                let epoch = prev.map_or(0, |r| r.epoch) + 1;
                let expires_at_ms = now_ms + ttl_ms;
                self.trees.insert(
                    tree.clone(),
                    LeaseRecord {
                        holder: holder.clone(),
                        epoch,
                        expires_at_ms,
                        released: false,
                    },
                );
                Reply::Granted {
                    epoch,
                    expires_at_ms,
                }
            }
            Request::LeaseRenew {
                tree,
                holder,
                epoch,
                ttl_ms,
            } => match self.trees.get_mut(tree) {
                Some(r) if r.live(now_ms) && &r.holder == holder && r.epoch == *epoch => {
                    r.expires_at_ms = now_ms + ttl_ms;
                    Reply::Renewed {
                        expires_at_ms: r.expires_at_ms,
                    }
                }
                Some(r) if r.live(now_ms) => Reply::Lost {
                    holder: Some(r.holder.clone()),
                    epoch: Some(r.epoch),
                },
                _ => Reply::Lost {
                    holder: None,
                    epoch: None,
                },
            },
            Request::LeaseRelease {
                tree,
                holder,
                epoch,
            } => match self.trees.get_mut(tree) {
                Some(r) if !r.released && &r.holder == holder && r.epoch == *epoch => {
                    r.released = true;
                    Reply::Released {}
                }
                _ => Reply::NotHeld {},
            },
            Request::LeaseRead { tree } => Reply::Lease(self.trees.get(tree).map(|r| LeaseView {
                holder: Some(r.holder.clone()),
                epoch: r.epoch,
                expires_at_ms: Some(r.expires_at_ms),
                live: r.live(now_ms),
            })),
            Request::LeaseKeepExecution { tree, execution } => {
                let kept = self.kept.entry(tree.clone()).or_default();
                if !kept.contains(execution) {
                    kept.push(execution.clone());
                }
                Reply::Kept {}
            }
            Request::LeaseKeptExecutions { tree } => {
                Reply::Executions(self.kept.get(tree).cloned().unwrap_or_default())
            }
            // The fencing set: the duplicate check comes before the fence, so
            // a retry after a lost reply learns its effect or call landed.
            Request::EffectApply {
                tree,
                holder,
                epoch,
                effect,
                ..
            } => {
                let key = (tree.clone(), effect.clone());
                if self.effects.contains(&key) {
                    Reply::Duplicate {}
                } else if self.holds(tree, holder, *epoch, now_ms) {
                    self.effects.insert(key);
                    Reply::Applied {}
                } else {
                    self.fenced(tree)
                }
            }
            Request::CallBegin {
                tree,
                holder,
                epoch,
                call,
            } => {
                if self.calls.contains_key(call) {
                    Reply::Duplicate {}
                } else if self.holds(tree, holder, *epoch, now_ms) {
                    self.calls.insert(
                        call.clone(),
                        CallRecordModel {
                            tree: tree.clone(),
                            holder: holder.clone(),
                            epoch: *epoch,
                            response: None,
                        },
                    );
                    Reply::Begun {}
                } else {
                    self.fenced(tree)
                }
            }
            Request::CallFinish { call, response } => {
                let Some(record) = self.calls.get(call).cloned() else {
                    return Some(Reply::NotBegun {});
                };
                if let Some(first) = record.response {
                    Reply::AlreadyFinished { response: first }
                } else if self.holds(&record.tree, &record.holder, record.epoch, now_ms) {
                    if let Some(r) = self.calls.get_mut(call) {
                        r.response = Some(response.clone());
                    }
                    Reply::Finished {}
                } else {
                    self.fenced(&record.tree)
                }
            }
            _ => return None,
        })
    }

    /// Whether `holder` holds `tree`'s live lease at `epoch` at `now_ms`.
    fn holds(&self, tree: &str, holder: &str, epoch: i64, now_ms: i64) -> bool {
        self.trees
            .get(tree)
            .is_some_and(|r| r.live(now_ms) && r.holder == holder && r.epoch == epoch)
    }

    /// The fencing set's refusal: the tree's latest epoch, 0 if never leased.
    fn fenced(&self, tree: &str) -> Reply {
        Reply::Fenced {
            epoch: self.trees.get(tree).map_or(0, |r| r.epoch),
        }
    }

    /// Judges a store's reply to `req` at `now_ms` and moves the model along
    /// it when the contract allows it. The freedoms: a grant's epoch may be
    /// any number above the previous one; a release of an expired lease whose
    /// holder and epoch match may answer `not_held`; a released or expired
    /// record may read with any holder and expiry. Answering `busy` (or
    /// reading `live`) at exactly the expiry instant is a SHOULD deviation.
    pub fn judge(&mut self, req: &Request, now_ms: i64, observed: &Reply) -> Judgement {
        let before = self.trees.get(tree_of(req)).cloned();
        let mut canonical_model = self.clone();
        let Some(canonical) = canonical_model.apply(req, now_ms) else {
            return Judgement::Violates(format!("{} is not a lease operation", req.op()));
        };
        if !observed.answers(req) {
            return Judgement::Violates(format!(
                "{} answered `{}`, which that operation never answers",
                req.op(),
                observed.outcome()
            ));
        }
        if observed == &canonical {
            *self = canonical_model;
            return Judgement::Agrees;
        }
        let at_expiry_instant = before
            .as_ref()
            .is_some_and(|r| !r.released && now_ms == r.expires_at_ms);
        match (req, &canonical, observed) {
            (
                Request::LeaseTake { .. },
                Reply::Granted {
                    expires_at_ms: want_exp,
                    ..
                },
                Reply::Granted {
                    epoch,
                    expires_at_ms,
                },
            ) if expires_at_ms == want_exp => {
                let floor = before.as_ref().map_or(0, |r| r.epoch);
                if *epoch > floor {
                    *self = canonical_model;
                    if let Some(r) = self.trees.get_mut(tree_of(req)) {
                        r.epoch = *epoch;
                    }
                    Judgement::Agrees
                } else {
                    Judgement::Violates(format!(
                        "granted epoch {epoch}, but the tree's epoch was already {floor}: an epoch must only grow"
                    ))
                }
            }
            (Request::LeaseTake { .. }, Reply::Granted { .. }, Reply::Busy { .. })
                if at_expiry_instant && busy_matches(observed, before.as_ref()) =>
            {
                Judgement::Conservative(
                    "answered busy at the exact expiry instant; the lease ends at expires_at_ms"
                        .into(),
                )
            }
            (Request::LeaseRelease { .. }, Reply::Released {}, Reply::NotHeld {})
                if before.as_ref().is_some_and(|r| !r.live(now_ms)) =>
            {
                Judgement::Agrees
            }
            (Request::LeaseRead { .. }, Reply::Lease(Some(want)), Reply::Lease(Some(got)))
                if !want.live && !got.live && got.epoch == want.epoch =>
            {
                Judgement::Agrees
            }
            (Request::LeaseRead { .. }, Reply::Lease(Some(want)), Reply::Lease(Some(got)))
                if at_expiry_instant
                    && got.live
                    && got.epoch == want.epoch
                    && got.holder == want.holder
                    && got.expires_at_ms == want.expires_at_ms =>
            {
                Judgement::Conservative(
                    "read as live at the exact expiry instant; the lease ends at expires_at_ms"
                        .into(),
                )
            }
            _ => Judgement::Violates(mismatch(&canonical, observed)),
        }
    }
}

fn busy_matches(observed: &Reply, record: Option<&LeaseRecord>) -> bool {
    match (observed, record) {
        (
            Reply::Busy {
                holder,
                epoch,
                expires_at_ms,
            },
            Some(r),
        ) => holder == &r.holder && *epoch == r.epoch && *expires_at_ms == r.expires_at_ms,
        _ => false,
    }
}

fn tree_of(req: &Request) -> &str {
    match req {
        Request::LeaseTake { tree, .. }
        | Request::LeaseRenew { tree, .. }
        | Request::LeaseRelease { tree, .. }
        | Request::LeaseRead { tree }
        | Request::LeaseKeepExecution { tree, .. }
        | Request::LeaseKeptExecutions { tree }
        | Request::EffectApply { tree, .. }
        | Request::CallBegin { tree, .. } => tree,
        _ => "",
    }
}

/// "expected X, got Y" in wire JSON, the form every judge uses.
pub(crate) fn mismatch(expected: &Reply, observed: &Reply) -> String {
    format!(
        "expected {}, got {}",
        serde_json::to_string(expected).unwrap_or_default(),
        serde_json::to_string(observed).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(tree: &str, holder: &str, ttl_ms: i64) -> Request {
        Request::LeaseTake {
            tree: tree.into(),
            holder: holder.into(),
            ttl_ms,
        }
    }
    fn renew(holder: &str, epoch: i64) -> Request {
        Request::LeaseRenew {
            tree: "t".into(),
            holder: holder.into(),
            epoch,
            ttl_ms: 100,
        }
    }
    fn release(holder: &str, epoch: i64) -> Request {
        Request::LeaseRelease {
            tree: "t".into(),
            holder: holder.into(),
            epoch,
        }
    }
    fn granted(epoch: i64, expires_at_ms: i64) -> Option<Reply> {
        Some(Reply::Granted {
            epoch,
            expires_at_ms,
        })
    }

    #[test]
    fn take_busy_expire_take_counts_epochs() {
        let mut m = LeaseModel::default();
        assert_eq!(m.apply(&take("t", "a", 100), 1000), granted(1, 1100));
        assert_eq!(
            m.apply(&take("t", "b", 100), 1099),
            Some(Reply::Busy {
                holder: "a".into(),
                epoch: 1,
                expires_at_ms: 1100
            })
        );
        // The lease ends at its expiry instant.
        assert_eq!(m.apply(&take("t", "b", 100), 1100), granted(2, 1200));
    }

    #[test]
    fn renew_only_by_the_live_holder_and_epoch() {
        let mut m = LeaseModel::default();
        m.apply(&take("t", "a", 100), 0);
        assert_eq!(
            m.apply(&renew("a", 1), 50),
            Some(Reply::Renewed { expires_at_ms: 150 })
        );
        assert_eq!(
            m.apply(&renew("b", 1), 60),
            Some(Reply::Lost {
                holder: Some("a".into()),
                epoch: Some(1)
            })
        );
        // Expired: never renewed, even though nobody took it.
        assert_eq!(
            m.apply(&renew("a", 1), 150),
            Some(Reply::Lost {
                holder: None,
                epoch: None
            })
        );
    }

    #[test]
    fn release_keeps_the_epoch_and_frees_the_tree() {
        let mut m = LeaseModel::default();
        m.apply(&take("t", "a", 100), 0);
        assert_eq!(m.apply(&release("b", 1), 10), Some(Reply::NotHeld {}));
        assert_eq!(m.apply(&release("a", 1), 10), Some(Reply::Released {}));
        assert_eq!(m.apply(&release("a", 1), 11), Some(Reply::NotHeld {}));
        assert_eq!(m.apply(&take("t", "b", 100), 12), granted(2, 112));
        // A zombie release of the old epoch never touches the new one.
        assert_eq!(m.apply(&release("a", 1), 13), Some(Reply::NotHeld {}));
        assert!(m.trees["t"].live(13));
    }

    #[test]
    fn judge_allows_any_growing_epoch_but_never_a_repeat() {
        let mut m = LeaseModel::default();
        let got = Reply::Granted {
            epoch: 7,
            expires_at_ms: 100,
        };
        assert_eq!(m.judge(&take("t", "a", 100), 0, &got), Judgement::Agrees);
        assert_eq!(m.trees["t"].epoch, 7);
        m.apply(&release("a", 7), 1);
        let repeat = Reply::Granted {
            epoch: 7,
            expires_at_ms: 102,
        };
        assert!(matches!(
            m.judge(&take("t", "b", 100), 2, &repeat),
            Judgement::Violates(_)
        ));
    }

    #[test]
    fn judge_calls_busy_at_the_instant_conservative_and_later_a_violation() {
        let mut m = LeaseModel::default();
        m.apply(&take("t", "a", 100), 0);
        let busy = Reply::Busy {
            holder: "a".into(),
            epoch: 1,
            expires_at_ms: 100,
        };
        assert!(matches!(
            m.judge(&take("t", "b", 100), 100, &busy),
            Judgement::Conservative(_)
        ));
        assert!(matches!(
            m.judge(&take("t", "b", 100), 101, &busy),
            Judgement::Violates(_)
        ));
    }

    #[test]
    fn judge_refuses_a_renew_after_expiry_and_wrong_outcomes() {
        let mut m = LeaseModel::default();
        m.apply(&take("t", "a", 100), 0);
        let renewed = Reply::Renewed { expires_at_ms: 200 };
        assert!(matches!(
            m.judge(&renew("a", 1), 100, &renewed),
            Judgement::Violates(_)
        ));
        assert!(matches!(
            m.judge(&renew("a", 1), 10, &Reply::Kept {}),
            Judgement::Violates(_)
        ));
    }

    #[test]
    fn judge_lets_an_expired_release_answer_either_way() {
        let mut m = LeaseModel::default();
        m.apply(&take("t", "a", 100), 0);
        assert_eq!(
            m.clone().judge(&release("a", 1), 150, &Reply::NotHeld {}),
            Judgement::Agrees
        );
        assert_eq!(
            m.judge(&release("a", 1), 150, &Reply::Released {}),
            Judgement::Agrees
        );
    }

    #[test]
    fn kept_executions_are_listed_once_in_order() {
        let mut m = LeaseModel::default();
        for e in ["e2", "e1", "e2"] {
            m.apply(
                &Request::LeaseKeepExecution {
                    tree: "t".into(),
                    execution: e.into(),
                },
                0,
            );
        }
        assert_eq!(
            m.apply(&Request::LeaseKeptExecutions { tree: "t".into() }, 0),
            Some(Reply::Executions(vec!["e2".into(), "e1".into()]))
        );
    }
}
