//! The one-backend rule (SPEC 2.5): a layout names a backend per store, and
//! a fenced-effect or outbound-call store must share the lease store's
//! backend. Being built.

#![warn(missing_docs)]
