//! The explorer's figures.

/// Per skew: states, unique states, depth, seconds, rates and the races
/// reached; then the walks and the seed. (Being typed field by field.)
pub type ExplorerFigures = serde_json::Value;
