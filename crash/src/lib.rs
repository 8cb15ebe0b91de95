//! The crash suite (SPEC 3.4): will hold the locally built Redis image, the
//! Docker and process backends that SIGKILL the server mid-workload, and the
//! proof that every acknowledged epoch and child survives a restart. Not built yet.
