//! The crash suite's figures.

/// Per kill and per setting: each kind of write acknowledged and lost, the
/// backend. (Being typed field by field.)
pub type CrashFigures = serde_json::Value;
