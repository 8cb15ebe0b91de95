//! A store's Lua scripts on one Redis connection, as docs/PROTOCOL.md §5
//! runs them: the server checked and every script loaded on connect, then
//! one `EVALSHA` per operation (a server that forgot a script, `NOSCRIPT`,
//! is sent it again: the script did not run); nothing else is retried,
//! and a connection that broke is dropped so that the next operation opens
//! a new one (a connection out of step never answers again).

use redis::aio::MultiplexedConnection;

use super::{check_server, is_server_reply, operation_failure, redis_command_failure};
use crate::Reply;
use crate::{ErrorKind, Hello, StoreError};
use harness::contract::{ChildState, ChildView, LeaseView};

/// The connection of one instance and its loaded scripts.
pub struct ScriptedConnection {
    client: redis::Client,
    conn: Option<MultiplexedConnection>,
    scripts: Vec<(String, redis::Script)>,
}

impl ScriptedConnection {
    /// Connects to hello's server, checks it (§7, with hello's opt-out) and
    /// loads each script of `scripts` (name, source): what the connect of a
    /// store made of Lua scripts answers, `Err` being that answer
    /// (`bad_request` for a URL that is not Redis's, `unavailable`,
    /// `config_refused`, `durability`, `deployment`).
    pub async fn connect(
        hello: &Hello,
        scripts: impl IntoIterator<Item = (String, String)>,
    ) -> Result<ScriptedConnection, StoreError> {
        let client = redis::Client::open(hello.redis_url.as_str())
            .map_err(|e| StoreError::new(ErrorKind::BadRequest, format!("redis_url: {e}")))?;
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| redis_command_failure("connect", &e))?;
        check_server(&mut conn, hello.opt_out.as_deref()).await?;
        let mut loaded = Vec::new();
        for (name, source) in scripts {
            let script = redis::Script::new(&source);
            let load = script.prepare_invoke().load_async(&mut conn).await;
            load.map_err(|e| redis_command_failure("SCRIPT LOAD", &e))?;
            loaded.push((name, script));
        }
        Ok(ScriptedConnection {
            client,
            conn: Some(conn),
            scripts: loaded,
        })
    }

    /// One `EVALSHA` of script `name` for operation `op`: the reply's items
    /// as text (an integer as its decimal, nil or Lua false as `None`), or
    /// the error to answer ([`operation_failure`]: `store_full` when the
    /// server is full, else `unavailable`).
    pub async fn run(
        &mut self,
        op: &str,
        name: &str,
        keys: &[String],
        args: &[String],
    ) -> Result<Vec<Option<String>>, StoreError> {
        let script = self.scripts.iter().find(|(n, _)| n == name).map(|(_, s)| s);
        let script = script.ok_or_else(|| {
            StoreError::new(
                ErrorKind::Unavailable,
                format!("{op}: no script named {name}"),
            )
        })?;
        let mut conn = match &self.conn {
            Some(conn) => conn.clone(),
            None => self
                .client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| operation_failure(op, &e))?,
        };
        self.conn = Some(conn.clone());
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(k);
        }
        for a in args {
            invocation.arg(a);
        }
        invocation.invoke_async(&mut conn).await.map_err(|e| {
            if !is_server_reply(&e) {
                self.conn = None;
            }
            operation_failure(op, &e)
        })
    }
}

/// The reply a script's words stand for, in the convention the kits'
/// example scripts follow: the outcome's name, then its fields in the
/// order docs/PROTOCOL.md §4 lists them (`lease`, `child` and `rate` name
/// `lease.read`'s, `queue.read`'s and `rate.read`'s answers; `lease` or
/// `child` alone is no record; a lease's `live` is `1` or `0`). `None` for
/// words that are not such a reply: answer `unavailable`, naming them.
#[rustfmt::skip]
pub fn reply_of_words(words: &[Option<String>]) -> Option<Reply> {
    let text = |i: usize| words.get(i).cloned().flatten();
    let int = |i: usize| text(i).and_then(|w| w.parse::<i64>().ok());
    let state = |i: usize| match text(i)?.as_str() {
        "queued" => Some(ChildState::Queued),
        "claimed" => Some(ChildState::Claimed),
        "done" => Some(ChildState::Done),
        _ => None,
    };
    Some(match text(0)?.as_str() {
        "granted" => Reply::Granted { epoch: int(1)?, expires_at_ms: int(2)? },
        "busy" => Reply::Busy { holder: text(1)?, epoch: int(2)?, expires_at_ms: int(3)? },
        "renewed" => Reply::Renewed { expires_at_ms: int(1)? },
        "lost" => Reply::Lost { holder: text(1), epoch: int(2) },
        "released" => Reply::Released {},
        "not_held" => Reply::NotHeld {},
        "lease" if words.len() == 1 => Reply::Lease(None),
        "lease" => Reply::Lease(Some(LeaseView { holder: text(1), epoch: int(2)?, expires_at_ms: int(3), live: text(4)? == "1" })),
        "saved" => Reply::Saved {},
        "exists" => Reply::Exists { state: state(1)? },
        "claimed" => Reply::Claimed { child: text(1)?, depth: int(2)?, payload: text(3)?, attempt: int(4)? },
        "empty" => Reply::Empty {},
        "completed" => Reply::Completed {},
        "not_claimer" => Reply::NotClaimer { claimer: text(1), attempt: int(2) },
        "child" if words.len() == 1 => Reply::Child(None),
        "child" => Reply::Child(Some(ChildView { state: state(1)?, claimer: text(2), attempt: int(3)?, depth: int(4)? })),
        "acquired" => Reply::Acquired { slot: text(1)? },
        "full" => Reply::Full { retry_at_ms: int(1)? },
        "paused" => Reply::Paused { until_ms: int(1)? },
        "unknown" => Reply::Unknown {},
        "allowed" => Reply::Allowed { remaining: int(1)? },
        "limited" => Reply::Limited { retry_at_ms: int(1)? },
        "rate" => Reply::RateState { slots_in_use: int(1)?, paused_until_ms: int(2) },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[Option<&str>]) -> Vec<Option<String>> {
        w.iter().map(|w| w.map(str::to_string)).collect()
    }

    #[test]
    fn words_in_the_examples_convention_are_replies() {
        let granted = reply_of_words(&words(&[Some("granted"), Some("3"), Some("1700")]));
        assert_eq!(
            granted,
            Some(Reply::Granted {
                epoch: 3,
                expires_at_ms: 1700
            })
        );
        let lost = reply_of_words(&words(&[Some("lost"), None, None]));
        assert_eq!(
            lost,
            Some(Reply::Lost {
                holder: None,
                epoch: None
            })
        );
        assert_eq!(
            reply_of_words(&words(&[Some("lease")])),
            Some(Reply::Lease(None))
        );
        let dead = reply_of_words(&words(&[
            Some("lease"),
            Some("a"),
            Some("2"),
            Some("9"),
            Some("0"),
        ]));
        assert_eq!(
            dead,
            Some(Reply::Lease(Some(LeaseView {
                holder: Some("a".into()),
                epoch: 2,
                expires_at_ms: Some(9),
                live: false
            })))
        );
    }

    /// Each outcome with fields of different values, so that a field read
    /// from the wrong place shows.
    #[test]
    #[rustfmt::skip]
    fn each_outcome_reads_its_fields_in_order() {
        let child = ChildView { state: ChildState::Claimed, claimer: Some("i".into()), attempt: 3, depth: 2 };
        let table: Vec<(Vec<Option<&str>>, Reply)> = vec![
            (vec![Some("busy"), Some("b"), Some("4"), Some("90")], Reply::Busy { holder: "b".into(), epoch: 4, expires_at_ms: 90 }),
            (vec![Some("lost"), Some("b"), Some("4")], Reply::Lost { holder: Some("b".into()), epoch: Some(4) }),
            (vec![Some("renewed"), Some("91")], Reply::Renewed { expires_at_ms: 91 }),
            (vec![Some("exists"), Some("done")], Reply::Exists { state: ChildState::Done }),
            (vec![Some("claimed"), Some("c"), Some("2"), Some("p"), Some("3")], Reply::Claimed { child: "c".into(), depth: 2, payload: "p".into(), attempt: 3 }),
            (vec![Some("not_claimer"), Some("i"), Some("5")], Reply::NotClaimer { claimer: Some("i".into()), attempt: Some(5) }),
            (vec![Some("child"), Some("claimed"), Some("i"), Some("3"), Some("2")], Reply::Child(Some(child))),
            (vec![Some("acquired"), Some("s1")], Reply::Acquired { slot: "s1".into() }),
            (vec![Some("full"), Some("70")], Reply::Full { retry_at_ms: 70 }),
            (vec![Some("paused"), Some("71")], Reply::Paused { until_ms: 71 }),
            (vec![Some("allowed"), Some("6")], Reply::Allowed { remaining: 6 }),
            (vec![Some("limited"), Some("72")], Reply::Limited { retry_at_ms: 72 }),
            (vec![Some("rate"), Some("1"), Some("77")], Reply::RateState { slots_in_use: 1, paused_until_ms: Some(77) }),
        ];
        for (w, reply) in table {
            assert_eq!(reply_of_words(&words(&w)), Some(reply), "{w:?}");
        }
    }

    #[test]
    fn other_words_are_no_reply() {
        for w in [
            vec![],
            vec![None],
            vec![Some("granted"), Some("three"), Some("1")],
            vec![Some("granted"), Some("3")],
            vec![Some("exists"), Some("running")],
            vec![Some("won")],
        ] {
            assert_eq!(reply_of_words(&words(&w)), None, "{w:?}");
        }
    }
}
