//! Turning a script's array reply into a [`Reply`].
//!
//! Every script answers `{outcome, field, ...}`. Numbers may come back as
//! integers or as decimal strings (the scripts keep numbers that may exceed a
//! Lua double as strings), and a missing value as nil (RESP2) or false (RESP3),
//! so the readers here accept each form.

use redis::Value;

use harness::contract::{ChildState, ChildView, ErrorKind, LeaseView, Reply, StoreError};

/// Reads the reply of the script of `op`.
pub fn parse_reply(op: &str, value: &Value) -> Result<Reply, StoreError> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        other => return Err(malformed(op, &format!("not an array: {other:?}"))),
    };
    let r = Fields { op, items };
    let tag = r.text(0)?;
    let reply = match tag.as_str() {
        "granted" => Reply::Granted {
            epoch: r.int(1)?,
            expires_at_ms: r.int(2)?,
        },
        "busy" => Reply::Busy {
            holder: r.text(1)?,
            epoch: r.int(2)?,
            expires_at_ms: r.int(3)?,
        },
        "renewed" => Reply::Renewed {
            expires_at_ms: r.int(1)?,
        },
        "lost" => Reply::Lost {
            holder: r.opt_text(1)?,
            epoch: r.opt_int(2)?,
        },
        "released" => Reply::Released {},
        "not_held" => Reply::NotHeld {},
        "lease" if items.len() == 1 => Reply::Lease(None),
        "lease" => Reply::Lease(Some(LeaseView {
            holder: r.opt_text(1)?,
            epoch: r.int(2)?,
            expires_at_ms: r.opt_int(3)?,
            live: r.int(4)? != 0,
        })),
        "saved" => Reply::Saved {},
        "exists" => Reply::Exists { state: r.state(1)? },
        "claimed" => Reply::Claimed {
            child: r.text(1)?,
            depth: r.int(2)?,
            payload: r.text(3)?,
            attempt: r.int(4)?,
        },
        "empty" => Reply::Empty {},
        "completed" => Reply::Completed {},
        "not_claimer" => Reply::NotClaimer {
            claimer: r.opt_text(1)?,
            attempt: r.opt_int(2)?,
        },
        "child" if items.len() == 1 => Reply::Child(None),
        "child" => Reply::Child(Some(ChildView {
            state: r.state(1)?,
            claimer: r.opt_text(2)?,
            attempt: r.int(3)?,
            depth: r.int(4)?,
        })),
        "acquired" => Reply::Acquired { slot: r.text(1)? },
        "full" => Reply::Full {
            retry_at_ms: r.int(1)?,
        },
        "paused" => Reply::Paused {
            until_ms: r.int(1)?,
        },
        "unknown" => Reply::Unknown {},
        "allowed" => Reply::Allowed {
            remaining: r.int(1)?,
        },
        "limited" => Reply::Limited {
            retry_at_ms: r.int(1)?,
        },
        "rate" => Reply::RateState {
            slots_in_use: r.int(1)?,
            paused_until_ms: r.opt_int(2)?,
        },
        other => return Err(malformed(op, &format!("unknown outcome {other:?}"))),
    };
    Ok(reply)
}

/// A script answered something this client does not understand: a bug in the
/// script or a foreign server. The outcome of the call is unknown.
fn malformed(op: &str, what: &str) -> StoreError {
    StoreError::new(
        ErrorKind::Unavailable,
        format!("{op}: unexpected reply from the script ({what}); the outcome is unknown"),
    )
}

/// The fields of one script reply.
struct Fields<'a> {
    op: &'a str,
    items: &'a [Value],
}

impl Fields<'_> {
    fn get(&self, i: usize) -> Result<&Value, StoreError> {
        self.items
            .get(i)
            .ok_or_else(|| malformed(self.op, &format!("field {i} missing")))
    }

    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        let v = self.get(i)?;
        if is_null(v) {
            return Ok(None);
        }
        let text = match v {
            Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
            Value::SimpleString(s) => Some(s.clone()),
            Value::VerbatimString { text, .. } => Some(text.clone()),
            Value::Int(n) => Some(n.to_string()),
            _ => None,
        };
        text.map(Some)
            .ok_or_else(|| malformed(self.op, &format!("field {i} is not text: {v:?}")))
    }

    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?
            .ok_or_else(|| malformed(self.op, &format!("field {i} is null")))
    }

    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        let v = self.get(i)?;
        match v {
            v if is_null(v) => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            _ => {
                let text = self.text(i)?;
                text.parse::<i64>().map(Some).map_err(|_| {
                    malformed(self.op, &format!("field {i} is not an integer: {text:?}"))
                })
            }
        }
    }

    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_int(i)?
            .ok_or_else(|| malformed(self.op, &format!("field {i} is null")))
    }

    fn state(&self, i: usize) -> Result<ChildState, StoreError> {
        match self.text(i)?.as_str() {
            "queued" => Ok(ChildState::Queued),
            "claimed" => Ok(ChildState::Claimed),
            "done" => Ok(ChildState::Done),
            other => Err(malformed(self.op, &format!("unknown state {other:?}"))),
        }
    }
}

/// Lua `false` arrives as nil in RESP2 and as a boolean in RESP3.
fn is_null(v: &Value) -> bool {
    matches!(v, Value::Nil | Value::Boolean(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_numbers_as_integers_or_strings() {
        let v = Value::Array(vec![bulk("granted"), Value::Int(3), bulk("1700000000123")]);
        assert_eq!(
            parse_reply("lease.take", &v).unwrap(),
            Reply::Granted {
                epoch: 3,
                expires_at_ms: 1_700_000_000_123
            }
        );
        let v = Value::Array(vec![bulk("paused"), bulk("9223372036854775807")]);
        assert_eq!(
            parse_reply("rate.pause", &v).unwrap(),
            Reply::Paused { until_ms: i64::MAX }
        );
    }

    #[test]
    fn nil_and_false_are_null() {
        for null in [Value::Nil, Value::Boolean(false)] {
            let v = Value::Array(vec![bulk("lost"), null.clone(), null]);
            assert_eq!(
                parse_reply("lease.renew", &v).unwrap(),
                Reply::Lost {
                    holder: None,
                    epoch: None
                }
            );
        }
        let v = Value::Array(vec![bulk("child")]);
        assert_eq!(parse_reply("queue.read", &v).unwrap(), Reply::Child(None));
    }

    #[test]
    fn garbage_is_unavailable_not_a_panic() {
        for v in [
            Value::Nil,
            Value::Array(vec![]),
            Value::Array(vec![bulk("granted"), bulk("x"), Value::Int(1)]),
            Value::Array(vec![bulk("weird")]),
            Value::Array(vec![bulk("exists"), bulk("lost")]),
        ] {
            let err = parse_reply("lease.take", &v).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Unavailable, "{v:?}");
        }
    }
}
