//! The fault suite (SPEC 3.3): will hold fault scenarios (lost replies, latency,
//! dropped connections, partitions, server restart, a full server) for the Redis
//! queue and rate limits beside the SQLite fencing set, and the checkers of their
//! histories (linearizability of the lease, children-once of the queue). Not built yet.

#![warn(missing_docs)]
