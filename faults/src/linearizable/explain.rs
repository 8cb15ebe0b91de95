//! Why a reply is one no order explains, in words: the lease as the longest
//! order the search found left it, and the answer the failing operation
//! would have had to give on it within its window (docs/PROTOCOL.md §4.2);
//! then the same for every other order the search found after which the
//! failing operation was next (each leaves the lease otherwise: the
//! candidates), so the user sees that no order fits, not only one.

use super::*;

/// The most candidate orders an explanation describes.
const CANDIDATES: usize = 4;

/// The orders after which one operation was next and no answer of it fit
/// the lease as the order left it, one per such lease ([`Prepared::search_noting`]).
pub(super) struct DeadEnds {
    op: usize,
    seen: Vec<State>,
    orders: Vec<Order>,
    /// Such orders not kept (past [`CANDIDATES`]).
    more: usize,
}

impl DeadEnds {
    /// None yet, for operation `op`.
    pub(super) fn new(op: usize) -> DeadEnds {
        DeadEnds {
            op,
            seen: Vec::new(),
            orders: Vec::new(),
            more: 0,
        }
    }

    /// Notes that operation `op` fit nothing after the order `order` gives,
    /// which left `state`.
    pub(super) fn note(&mut self, op: usize, state: State, order: impl FnOnce() -> Order) {
        if op != self.op || self.seen.contains(&state) {
            return;
        }
        self.seen.push(state);
        if self.orders.len() < CANDIDATES {
            self.orders.push(order());
        } else {
            self.more += 1;
        }
    }
}

/// The failing operation's situation after an order: the operations before
/// it, the lease they left, the instants it may take effect at, and what
/// it would have had to answer.
struct Situation {
    before: Vec<String>,
    record: String,
    window: Window,
    expected: String,
}

impl Prepared<'_> {
    /// The failing operation `i`'s story after `longest`, the longest
    /// partial linearization of the failing prefix, then after each other
    /// order of `dead` that leaves the lease otherwise: `None` when that
    /// order cannot be replayed (it always can: it is one the search built).
    pub(super) fn explain(&self, longest: &Order, i: usize, dead: &DeadEnds) -> Option<String> {
        let s = self.situation(longest, i)?;
        let me = &self.ops[i];
        let answered = me.reply.as_ref().map_or("nothing".to_string(), reply_words);
        let order = if s.before.is_empty() {
            "with nothing before it that explains the replies so far".to_string()
        } else {
            format!(
                "after the longest order the search found that explains the replies before it ({})",
                words(&s.before, 0)
            )
        };
        let mut text = format!(
            "{}'s {} (event {}) answered {answered}{}; {order}, the lease was {}, so {}",
            me.instance,
            me.op,
            me.invoke_event,
            self.unpromised(i),
            s.record,
            s.needed(),
        );
        let others: Vec<String> = dead
            .orders
            .iter()
            .filter_map(|o| self.situation(o, i))
            .filter(|o| o.record != s.record || o.expected != s.expected)
            .map(|o| {
                // Where it leaves the longest order: the steps they share
                // are not said again.
                let shared = o
                    .before
                    .iter()
                    .zip(&s.before)
                    .take_while(|(a, b)| a == b)
                    .count();
                let first = |k: usize| {
                    if k == 1 {
                        "that order's first operation".to_string()
                    } else {
                        format!("that order's first {k} operations")
                    }
                };
                let after = match (o.before.len(), shared) {
                    (0, _) => "first".to_string(),
                    (_, 0) => format!("after {}", words(&o.before, 0)),
                    (n, k) if n == k => format!("after {} only", first(k)),
                    (_, k) => format!("after {}, then {}", first(k), words(&o.before[k..], k)),
                };
                format!("{after}, the lease was {}, so {}", o.record, o.needed())
            })
            .collect();
        if !others.is_empty() {
            let more = if dead.more > 0 {
                format!(" (and {} more)", dead.more)
            } else {
                String::new()
            };
            text.push_str(&format!(
                "; and under every other order that explains the replies before it{more}: {}",
                others.join("; ")
            ));
        }
        Some(text)
    }

    /// Operation `i`'s [`Situation`] after `order` (the steps of it before
    /// `i`).
    fn situation(&self, order: &Order, i: usize) -> Option<Situation> {
        let mut s = State {
            rec: None,
            zone: Zone::start(),
        };
        let mut before = Vec::new();
        for &(j, took, _, _) in order {
            if j == i {
                break;
            }
            let op = &self.ops[j];
            let next = match &self.seen[j] {
                Seen::Unknown if !took => continue,
                Seen::Unknown => step_unknown(&s, self.reqs[j], op.invoked_ms),
                seen => step_replied(&s, self.reqs[j], seen, op.invoked_ms, op.completed_ms)
                    .into_iter()
                    .next(),
            };
            s = next?;
            before.push(format!(
                "{}'s {}{}",
                op.instance,
                op.op,
                if matches!(self.seen[j], Seen::Unknown) {
                    " (its reply lost, taking effect)"
                } else {
                    ""
                }
            ));
        }
        let me = &self.ops[i];
        // Instants never go back along the order: not before the last step.
        let lo = match (me.invoked_ms, s.zone.earliest(NOW)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let window = Window {
            lo,
            hi: me.completed_ms,
        };
        Some(Situation {
            before,
            record: self.record_words(s.rec),
            window,
            expected: self.expected(s.rec, self.reqs[i], window),
        })
    }

    fn holder(&self, id: u32) -> &str {
        self.holders
            .get(id as usize)
            .map_or("an unknown holder", String::as_str)
    }

    /// The record in words.
    fn record_words(&self, rec: Option<Record>) -> String {
        let Some(r) = rec else {
            return "never taken".to_string();
        };
        let epoch = if r.exact {
            format!("epoch {}", r.epoch)
        } else {
            format!("an epoch of at least {}", r.epoch)
        };
        if r.released {
            return format!("released by {} ({epoch})", self.holder(r.holder));
        }
        match r.expiry {
            Expiry::At(x) => format!("held by {} ({epoch}) until {x}", self.holder(r.holder)),
            Expiry::AfterT(ttl) => format!(
                "held by {} ({epoch}) until {ttl} ms after an instant not known (a reply lost)",
                self.holder(r.holder)
            ),
        }
    }

    /// The answers the contract allows `req` on `rec` within `w`.
    fn expected(&self, rec: Option<Record>, req: Req, w: Window) -> String {
        let live = rec.filter(|r| !r.released);
        let until = live.map(|r| match r.expiry {
            Expiry::At(x) => Some(x),
            Expiry::AfterT(_) => None,
        });
        // Live over the whole window, over none of it, or it expires inside.
        let lives = match until {
            None => Life::Never,
            Some(None) => Life::Unknown,
            Some(Some(x)) if w.lo.is_some_and(|lo| x <= lo) => Life::Never,
            Some(Some(x)) if w.hi.is_none_or(|hi| x > hi) => Life::Always(x),
            Some(Some(x)) => Life::Until(x),
        };
        let floor = rec.map_or(0, |r| r.epoch);
        let holder = live.map_or("", |r| self.holder(r.holder));
        let epoch = live.map_or(0, |r| r.epoch);
        let granted = format!("granted with an epoch above {floor}");
        match req {
            Req::Take { .. } => match lives {
                Life::Never => granted,
                Life::Always(x) => format!("busy ({holder}, epoch {epoch}, until {x})"),
                Life::Until(x) => {
                    format!("busy ({holder}, epoch {epoch}, until {x}) before {x}, or {granted} from {x} on")
                }
                Life::Unknown => format!("busy ({holder}) or, once that lease expired, {granted}"),
            },
            Req::Renew {
                holder: h,
                epoch: e,
                ..
            } => {
                let mine = live.is_some_and(|r| r.holder == h && (!r.exact || r.epoch == e));
                match lives {
                    _ if !mine => format!("lost (the lease is not {}'s epoch {e})", self.holder(h)),
                    Life::Never => "lost (the lease had expired)".to_string(),
                    Life::Always(_) => "renewed".to_string(),
                    Life::Until(x) => format!("renewed before {x}, or lost from {x} on"),
                    Life::Unknown => "renewed, or lost once it expired".to_string(),
                }
            }
            Req::Release {
                holder: h,
                epoch: e,
            } => {
                let mine = live.is_some_and(|r| r.holder == h && (!r.exact || r.epoch == e));
                if mine {
                    "released (or not_held, had it expired)".to_string()
                } else {
                    "not_held".to_string()
                }
            }
            Req::Read => match (rec, lives) {
                (None, _) => "no lease".to_string(),
                (_, Life::Never) => "a lease that is not live".to_string(),
                (_, Life::Always(x)) => format!("{holder}'s live lease (epoch {epoch}, until {x})"),
                (_, Life::Until(x)) => {
                    format!("{holder}'s live lease (epoch {epoch}, until {x}) before {x}, or one not live from {x} on")
                }
                (_, Life::Unknown) => format!("{holder}'s lease, live or not"),
            },
        }
    }
}

impl Situation {
    /// What the operation would have had to do, in words: answer as
    /// expected within its window, or (a window the order closed) take
    /// effect before the order's last step, which it cannot.
    fn needed(&self) -> String {
        match (self.window.lo, self.window.hi) {
            (Some(lo), Some(hi)) if lo > hi => format!(
                "it would have had to take effect at {lo} or later (the order's last step), after its own reply at {hi}"
            ),
            (lo, hi) => format!(
                "between {} and {} it would have had to answer {}",
                instant(lo),
                instant(hi),
                self.expected
            ),
        }
    }
}

/// The operations of an order, the last few named (an order of a whole
/// workload is hundreds long): `skipped` are said to come before them.
fn words(ops: &[String], skipped: usize) -> String {
    const NAMED: usize = 6;
    if ops.len() <= NAMED {
        return ops.join(", ");
    }
    let cut = ops.len() - NAMED;
    let earlier = if skipped > 0 { " more" } else { "" };
    format!(
        "{}{earlier} operations, then {}",
        cut,
        ops[cut..].join(", ")
    )
}

impl Prepared<'_> {
    /// For a busy answer naming a holder's epoch whose grant or renewals
    /// promised other expiries: those promises, in words (a store that
    /// reports an expiry it never promised, such as one read back from
    /// the key's own time to live, which counts from another instant).
    fn unpromised(&self, i: usize) -> String {
        let Seen::Busy {
            holder,
            epoch,
            expires,
        } = self.seen[i]
        else {
            return String::new();
        };
        let mut promised: Vec<i64> = self
            .reqs
            .iter()
            .zip(&self.seen)
            .filter_map(|(&req, seen)| match (req, seen) {
                (
                    Req::Take { holder: h, .. },
                    &Seen::Granted {
                        epoch: e,
                        expires: x,
                    },
                ) if h == holder && e == epoch => Some(x),
                (
                    Req::Renew {
                        holder: h,
                        epoch: e,
                        ..
                    },
                    &Seen::Renewed { expires: x },
                ) if h == holder && e == epoch => Some(x),
                _ => None,
            })
            .collect();
        promised.sort_unstable();
        promised.dedup();
        if promised.is_empty() || promised.contains(&expires) {
            return String::new();
        }
        let list: Vec<String> = promised.iter().map(i64::to_string).collect();
        format!(
            ", an expiry no grant or renewal promised: {}'s epoch {epoch} was promised until {}",
            self.holder(holder),
            list.join(", then ")
        )
    }
}

/// The instants an operation may take effect at.
#[derive(Debug, Clone, Copy)]
struct Window {
    lo: Option<i64>,
    hi: Option<i64>,
}

/// How the live lease's expiry falls against a window.
enum Life {
    /// Not live at any instant of it (none, released, or expired before).
    Never,
    /// Live over all of it, until this instant.
    Always(i64),
    /// Live until this instant inside it.
    Until(i64),
    /// Its expiry is not known (a lost reply's grant or renew).
    Unknown,
}

fn instant(t: Option<i64>) -> String {
    t.map_or("an instant not known".to_string(), |t| t.to_string())
}

/// A reply in the words the expected answers use.
fn reply_words(r: &Reply) -> String {
    match r {
        Reply::Granted {
            epoch,
            expires_at_ms,
        } => format!("granted (epoch {epoch}, until {expires_at_ms})"),
        Reply::Busy {
            holder,
            epoch,
            expires_at_ms,
        } => format!("busy ({holder}, epoch {epoch}, until {expires_at_ms})"),
        Reply::Renewed { expires_at_ms } => format!("renewed (until {expires_at_ms})"),
        Reply::Lost { holder, epoch } => match (holder, epoch) {
            (Some(h), Some(e)) => format!("lost ({h} holds epoch {e})"),
            _ => "lost".to_string(),
        },
        Reply::Released {} => "released".to_string(),
        Reply::NotHeld {} => "not_held".to_string(),
        Reply::Lease(None) => "no lease".to_string(),
        Reply::Lease(Some(v)) => format!(
            "{}'s lease (epoch {}, until {}, {})",
            v.holder.as_deref().unwrap_or("nobody"),
            v.epoch,
            v.expires_at_ms
                .map_or("no expiry".to_string(), |x| x.to_string()),
            if v.live { "live" } else { "not live" }
        ),
        other => format!("{other:?}"),
    }
}
