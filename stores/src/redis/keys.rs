//! The key layout of the built-in Redis stores. Every key starts with the
//! instance's prefix; ids are only ever appended to a fixed namespace, never
//! parsed back out of a key, used in a pattern, or put into Lua source.
//!
//! ```text
//! {prefix}lease:{tree}            hash  holder, epoch, expires_at, released
//!                                       (never deleted, never given a TTL)
//! {prefix}q:child:{child}         hash  state, depth, payload, claimer, attempt,
//!                                       claim_expires_at, saved_at, seq, member
//! {prefix}q:index                 zset  not-done children in claim order
//! {prefix}q:seq                   string  save-order counter
//! {prefix}rate:{provider}:slots   zset  slot id -> expires_at (clock_ms)
//! {prefix}rate:{provider}:hits    zset  hit id -> clock_ms of the allowed hit
//! {prefix}rate:{provider}:pause   string  paused until (ms)
//! {prefix}rate:{provider}:seq     string  slot and hit id counter
//! ```
//!
//! Two different ids never share a key: the namespaces `lease:`, `q:` and
//! `rate:` differ in their first segment, and no rate suffix (`:slots`,
//! `:hits`, `:pause`, `:seq`) is a suffix of another.

/// Builds the keys of one instance from its prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix` (the `prefix` of the instance's hello).
    pub fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    /// The lease record of `tree`.
    pub fn lease(&self, tree: &str) -> String {
        format!("{}lease:{tree}", self.prefix)
    }

    /// What every child record key starts with (the claim script appends the
    /// child id it finds in the index).
    pub fn child_prefix(&self) -> String {
        format!("{}q:child:", self.prefix)
    }

    /// The record of `child`.
    pub fn child(&self, child: &str) -> String {
        format!("{}q:child:{child}", self.prefix)
    }

    /// The index of not-done children, in claim order.
    pub fn queue_index(&self) -> String {
        format!("{}q:index", self.prefix)
    }

    /// The save-order counter.
    pub fn queue_seq(&self) -> String {
        format!("{}q:seq", self.prefix)
    }

    /// The slots of `provider`.
    pub fn rate_slots(&self, provider: &str) -> String {
        format!("{}rate:{provider}:slots", self.prefix)
    }

    /// The allowed hits of `provider`.
    pub fn rate_hits(&self, provider: &str) -> String {
        format!("{}rate:{provider}:hits", self.prefix)
    }

    /// The pause of `provider`.
    pub fn rate_pause(&self, provider: &str) -> String {
        format!("{}rate:{provider}:pause", self.prefix)
    }

    /// The slot and hit id counter of `provider`.
    pub fn rate_seq(&self, provider: &str) -> String {
        format!("{}rate:{provider}:seq", self.prefix)
    }
}

/// The fixed-width rank of a depth in the queue index: deeper children sort
/// first. Computed here in 64-bit integers because Lua numbers are doubles and
/// would merge depths above 2^53.
pub fn depth_rank(depth: i64) -> String {
    // depth >= 0 (validated), so i64::MAX - depth is in 0..=i64::MAX: 19 digits.
    format!("{:019}", i64::MAX - depth.max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_starts_with_the_prefix() {
        let k = Keys::new("sp:x:");
        for key in [
            k.lease("a:{b}"),
            k.child_prefix(),
            k.child("*"),
            k.queue_index(),
            k.queue_seq(),
            k.rate_slots("p"),
            k.rate_hits("p"),
            k.rate_pause("p"),
            k.rate_seq("p"),
        ] {
            assert!(key.starts_with("sp:x:"), "{key}");
        }
        assert_eq!(k.lease("a:{b}"), "sp:x:lease:a:{b}");
        assert_eq!(k.child("c"), format!("{}c", k.child_prefix()));
    }

    #[test]
    fn deeper_sorts_first_lexicographically() {
        let ranks = [i64::MAX, i64::MAX - 1, 1 << 53, (1 << 53) - 1, 10, 9, 1, 0].map(depth_rank);
        let mut sorted = ranks.clone();
        sorted.sort();
        assert_eq!(sorted, ranks);
        assert!(ranks.iter().all(|r| r.len() == 19));
    }
}
