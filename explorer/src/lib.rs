//! The interleaving explorer (SPEC 3.2): will hold the stateright model of two
//! and three instances on the lease store, each with its own clock, stepped one
//! Redis command at a time through the gate against the real server, plus the
//! seeded walks of three instances and their shrinking. Not built yet.
