//! Queue and rate operations made of several round trips instead of one
//! atomic script. One at a time each keeps the contract; interleaved with a
//! second instance's same operation between its round trips, it breaks it:
//!
//! - a claim that finds the first claimable child in a read-only script and
//!   marks it claimed with a plain `HSET`: two claims of the last ready child
//!   both get it (`conformance.queue.claim-races`);
//! - an acquire that reads the pause and the live slots, then adds its slot
//!   in a second script: two acquires of the last slot both get one
//!   (`conformance.rate.races`);
//! - a save that writes the child's record in one script and adds it to
//!   the claim index with a plain `ZADD` in a second: if the server fills up
//!   between the two, the save answers `store_full` but the record stays,
//!   and every retry answers `exists` for a child no claim ever finds
//!   (`explorer.queue.answered`: a refused write changed the keys);
//! - a hit that is counted first (`INCR`, `ZADD`) and checked afterwards
//!   (`ZCOUNT`, then `ZREM` of its own id when over the limit): two hits of
//!   the last place both see one hit too many and are both refused, though
//!   one place was free (`conformance.rate.races`).
//!
//! Key layout and record fields are the built-in scripts' (`stores/lua`),
//! so every other operation is the built-in store's and reads what these
//! write. Rate operations decide on `clock_ms`, queue operations on server
//! time (`TIME` inside the read), as the built-in store does.

use async_trait::async_trait;
use harness::contract::{Call, Reply, Request, StoreError, MAX_DURATION_MS};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use redis::aio::MultiplexedConnection;
use redis::{Script, Value};
use stores::redis::{depth_rank, parse_reply, Keys, RedisStoreFactory};

use crate::conn::{self, refused};

/// `queue.claim`, command 1: server time and the first claimable child,
/// walking the index from the head as `queue_claim.lua` does, writing
/// nothing.
/// KEYS[1] = the queue index; ARGV[1] = the child key prefix.
const CLAIM_READ: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local batch = 64
local start = 0
while true do
  local members = redis.call('ZRANGE', KEYS[1], start, start + batch - 1)
  if #members == 0 then
    return {now, false, false, false, false}
  end
  for _, member in ipairs(members) do
    local _, header_end = string.find(member, '^%d+:%d+:%d+:')
    local child = string.sub(member, header_end + 1)
    local rec = redis.call('HMGET', ARGV[1] .. child, 'state', 'claim_expires_at',
      'attempt', 'depth', 'payload')
    if rec[1] == 'queued' or (rec[1] == 'claimed' and now >= tonumber(rec[2])) then
      return {now, child, rec[3], rec[4], rec[5]}
    end
  end
  start = start + batch
end
";

/// The shared helpers of the built-in rate scripts (`cmp` of two decimal
/// strings, for pause times).
const DECIMAL: &str = include_str!("../../stores/lua/decimal.lua");

/// `rate.acquire_slot`, command 1: the pause and the live slots on the
/// instance clock, writing nothing. Answers the final `paused` or `full`, or
/// `free` when a slot may be added.
/// KEYS[1] = slots, KEYS[2] = pause; ARGV[1] = clock_ms, ARGV[2] = limit.
const ACQUIRE_READ: &str = r"
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then
  return {'paused', paused}
end
local live = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')
if live < tonumber(ARGV[2]) then
  return {'free'}
end
local first = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf',
  'WITHSCORES', 'LIMIT', 0, 1)
return {'full', string.format('%d', tonumber(first[2]))}
";

/// `rate.acquire_slot`, command 2: a new slot, whatever command 1 saw.
/// KEYS[1] = slots, KEYS[2] = seq; ARGV[1] = clock_ms, ARGV[2] = ttl_ms.
const ACQUIRE_WRITE: &str = r"
local slot = string.format('%d', redis.call('INCR', KEYS[2]))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], string.format('%d', tonumber(ARGV[1]) + tonumber(ARGV[2])), slot)
return {'acquired', slot}
";

/// `rate.hit`, command 1: the final `paused`, or the hit counted before
/// anything is checked (`counted` and its id). Hits outside every window are
/// pruned as `rate_hit.lua` prunes them.
/// KEYS[1] = hits, KEYS[2] = pause, KEYS[3] = seq; ARGV[1] = clock_ms,
/// ARGV[2] = retention_ms.
const HIT_COUNT: &str = r"
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then
  return {'paused', paused}
end
local id = string.format('%d', redis.call('INCR', KEYS[3]))
redis.call('ZADD', KEYS[1], ARGV[1], id)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf',
  string.format('%d', tonumber(ARGV[1]) - tonumber(ARGV[2])))
return {'counted', id}
";

/// `rate.hit`, command 2: the hits in the window `(now - window, now]`, its
/// own included, and the oldest one's time.
/// KEYS[1] = hits; ARGV[1] = clock_ms, ARGV[2] = window_ms.
const HIT_CHECK: &str = r"
local low = '(' .. string.format('%d', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local count = redis.call('ZCOUNT', KEYS[1], low, ARGV[1])
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], low, ARGV[1], 'WITHSCORES',
  'LIMIT', 0, 1)
return {count, string.format('%d', tonumber(oldest[2] or ARGV[1]))}
";

/// `queue.save`, command 1: the record written as `queue_save.lua` writes
/// it, but not yet in the claim index; answers `{'written', member}`.
/// KEYS[1] = the child's hash, KEYS[2] = the save-order counter; ARGV as
/// `queue_save.lua`'s.
const SAVE_RECORD: &str = r"
local state = redis.call('HGET', KEYS[1], 'state')
if state then
  return {'exists', state}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seq = redis.call('INCR', KEYS[2])
local member = ARGV[4] .. ':' .. string.format('%016d', now) .. ':'
  .. string.format('%016d', seq) .. ':' .. ARGV[1]
redis.call('HSET', KEYS[1], 'state', 'queued', 'depth', ARGV[2], 'payload', ARGV[3],
  'attempt', '0', 'saved_at', string.format('%d', now),
  'seq', string.format('%d', seq), 'member', member)
return {'written', member}
";

/// Which operation is split into round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    Save,
    Claim,
    Acquire,
    Hit,
}

/// The built-in Redis store with one queue or rate operation split into
/// several round trips (see the module documentation).
pub struct SplitRoundTrips {
    inner: RedisStoreFactory,
    split: Split,
}

impl SplitRoundTrips {
    /// Wraps the built-in store; only `queue.save` changes: it writes the
    /// child's record, then adds it to the claim index in a second command.
    pub fn save(inner: RedisStoreFactory) -> Self {
        SplitRoundTrips {
            inner,
            split: Split::Save,
        }
    }

    /// Wraps the built-in store; only `queue.claim` changes: it reads the
    /// first claimable child, then claims it with a plain `HSET`.
    pub fn claim(inner: RedisStoreFactory) -> Self {
        SplitRoundTrips {
            inner,
            split: Split::Claim,
        }
    }

    /// Wraps the built-in store; only `rate.acquire_slot` changes: it reads
    /// the pause and the live slots, then adds its slot in a second script.
    pub fn acquire(inner: RedisStoreFactory) -> Self {
        SplitRoundTrips {
            inner,
            split: Split::Acquire,
        }
    }

    /// Wraps the built-in store; only `rate.hit` changes: the hit is counted
    /// first, then the window is checked, and a hit over the limit removed.
    pub fn hit(inner: RedisStoreFactory) -> Self {
        SplitRoundTrips {
            inner,
            split: Split::Hit,
        }
    }
}

/// The scripts of the split operations, loaded on the extra connection.
struct Scripts {
    save_record: Script,
    claim_read: Script,
    acquire_read: Script,
    acquire_write: Script,
    hit_count: Script,
    hit_check: Script,
}

impl Scripts {
    fn new() -> Self {
        Scripts {
            save_record: Script::new(SAVE_RECORD),
            claim_read: Script::new(CLAIM_READ),
            acquire_read: Script::new(&format!("{DECIMAL}{ACQUIRE_READ}")),
            acquire_write: Script::new(ACQUIRE_WRITE),
            hit_count: Script::new(&format!("{DECIMAL}{HIT_COUNT}")),
            hit_check: Script::new(HIT_CHECK),
        }
    }

    /// The scripts `split` runs.
    fn of(&self, split: Split) -> Vec<&Script> {
        match split {
            Split::Save => vec![&self.save_record],
            Split::Claim => vec![&self.claim_read],
            Split::Acquire => vec![&self.acquire_read, &self.acquire_write],
            Split::Hit => vec![&self.hit_count, &self.hit_check],
        }
    }
}

struct Client {
    split: Split,
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    keys: Keys,
    scripts: Scripts,
}

/// What the claim's read saw: server now, and the first claimable child's
/// id, attempt, depth and payload (none when nothing is claimable).
type Claimable = (
    i64,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

/// Field `i` of a script's `{tag, ...}` reply, as text.
fn field(value: &Value, i: usize) -> Option<String> {
    match value {
        Value::Array(items) => items
            .get(i)
            .and_then(|v| <String as redis::FromRedisValue>::from_redis_value_ref(v).ok()),
        _ => None,
    }
}

impl Client {
    async fn save(&mut self, child: &str, depth: i64, payload: &str) -> Result<Reply, StoreError> {
        // Command 1: the record.
        let written: Value = self
            .scripts
            .save_record
            .key(self.keys.child(child))
            .key(self.keys.queue_seq())
            .arg(child)
            .arg(depth)
            .arg(payload)
            .arg(depth_rank(depth))
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)?;
        let (Some("written"), Some(member)) = (field(&written, 0).as_deref(), field(&written, 1))
        else {
            return parse_reply("queue.save", &written);
        };
        // Command 2: the child becomes claimable (a full server refuses it,
        // and the record written by command 1 stays).
        redis::cmd("ZADD")
            .arg(self.keys.queue_index())
            .arg(0)
            .arg(&member)
            .query_async::<()>(&mut self.conn)
            .await
            .map_err(refused)?;
        Ok(Reply::Saved {})
    }

    async fn claim(&mut self, instance: &str, claim_ttl_ms: i64) -> Result<Reply, StoreError> {
        // Command 1: server time and the first claimable child.
        let (now, child, attempt, depth, payload): Claimable = self
            .scripts
            .claim_read
            .key(self.keys.queue_index())
            .arg(self.keys.child_prefix())
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)?;
        let Some(child) = child else {
            return Ok(Reply::Empty {});
        };
        let attempt = attempt.unwrap_or(0) + 1;
        // Command 2: the claim, decided on what command 1 saw (another claim
        // may have taken the child in between).
        redis::cmd("HSET")
            .arg(self.keys.child(&child))
            .arg("state")
            .arg("claimed")
            .arg("claimer")
            .arg(instance)
            .arg("attempt")
            .arg(attempt)
            .arg("claim_expires_at")
            .arg(now + claim_ttl_ms)
            .query_async::<()>(&mut self.conn)
            .await
            .map_err(refused)?;
        Ok(Reply::Claimed {
            child,
            depth: depth.unwrap_or(0),
            payload: payload.unwrap_or_default(),
            attempt,
        })
    }

    async fn acquire(
        &mut self,
        provider: &str,
        limit: i64,
        ttl_ms: i64,
        clock_ms: i64,
    ) -> Result<Reply, StoreError> {
        let op = "rate.acquire_slot";
        // Command 1: the pause and the live slots.
        let seen: Value = self
            .scripts
            .acquire_read
            .key(self.keys.rate_slots(provider))
            .key(self.keys.rate_pause(provider))
            .arg(clock_ms)
            .arg(limit)
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)?;
        if field(&seen, 0).as_deref() != Some("free") {
            return parse_reply(op, &seen);
        }
        // Command 2: the slot, decided on what command 1 saw (another
        // acquire may have taken the last slot in between).
        let acquired: Value = self
            .scripts
            .acquire_write
            .key(self.keys.rate_slots(provider))
            .key(self.keys.rate_seq(provider))
            .arg(clock_ms)
            .arg(ttl_ms)
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)?;
        parse_reply(op, &acquired)
    }

    async fn hit(
        &mut self,
        provider: &str,
        limit: i64,
        window_ms: i64,
        clock_ms: i64,
    ) -> Result<Reply, StoreError> {
        let hits = self.keys.rate_hits(provider);
        // Command 1: counted before anything is checked.
        let counted: Value = self
            .scripts
            .hit_count
            .key(&hits)
            .key(self.keys.rate_pause(provider))
            .key(self.keys.rate_seq(provider))
            .arg(clock_ms)
            .arg(MAX_DURATION_MS)
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)?;
        let (Some("counted"), Some(id)) = (field(&counted, 0).as_deref(), field(&counted, 1))
        else {
            return parse_reply("rate.hit", &counted);
        };
        // Command 2: the window, this hit (and any hit counted meanwhile)
        // included.
        let (count, oldest): (i64, i64) = self
            .scripts
            .hit_check
            .key(&hits)
            .arg(clock_ms)
            .arg(window_ms)
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)?;
        if count <= limit {
            return Ok(Reply::Allowed {
                remaining: limit - count,
            });
        }
        // Command 3: over the limit, so the hit is taken back.
        redis::cmd("ZREM")
            .arg(&hits)
            .arg(&id)
            .query_async::<()>(&mut self.conn)
            .await
            .map_err(refused)?;
        Ok(Reply::Limited {
            retry_at_ms: oldest + window_ms,
        })
    }
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match (self.split, Request::parse(call)) {
            (
                Split::Save,
                Ok(Request::QueueSave {
                    child,
                    depth,
                    payload,
                }),
            ) => self.save(&child, depth, &payload).await,
            (
                Split::Claim,
                Ok(Request::QueueClaim {
                    instance,
                    claim_ttl_ms,
                }),
            ) => self.claim(&instance, claim_ttl_ms).await,
            (
                Split::Acquire,
                Ok(Request::RateAcquireSlot {
                    provider,
                    limit,
                    ttl_ms,
                    ..
                }),
            ) => self.acquire(&provider, limit, ttl_ms, clock_ms).await,
            (
                Split::Hit,
                Ok(Request::RateHit {
                    provider,
                    limit,
                    window_ms,
                }),
            ) => self.hit(&provider, limit, window_ms, clock_ms).await,
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}

#[async_trait]
impl StoreFactory for SplitRoundTrips {
    fn spec(&self) -> String {
        match self.split {
            Split::Save => "sabotage:save-split-in-two".into(),
            Split::Claim => "sabotage:two-round-trip-claim".into(),
            Split::Acquire => "sabotage:read-then-write-acquire".into(),
            Split::Hit => "sabotage:hit-counted-before-check".into(),
        }
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let scripts = Scripts::new();
        // Loaded now, so each operation sends exactly its scheduled commands.
        let conn = conn::open(&hello.redis_url, &scripts.of(self.split)).await?;
        Ok((
            info,
            Box::new(Client {
                split: self.split,
                inner,
                conn,
                keys: Keys::new(&hello.prefix),
                scripts,
            }),
        ))
    }
}
