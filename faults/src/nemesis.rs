//! The nemesis: faults between instances and the server, each named for its
//! effect, seeded and recorded in the history. (Being built.)
