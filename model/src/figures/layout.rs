//! The layout suite's figures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the run measured: how many layouts its checks assembled and saw
/// refused, and the layout file it was given (the layout the run used).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutFigures {
    /// Layouts the checks run assembled.
    pub assembled: usize,
    /// Layouts the checks run saw refused.
    pub refused: usize,
    /// The layout file the run was given, when it was given one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<GivenLayout>,
    /// Wall time of the suite, in seconds.
    pub seconds: f64,
}

/// The layout a run was given and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GivenLayout {
    /// Where it was read from.
    pub origin: String,
    /// Its stores and their backends, e.g. `lease` → `sqlite`.
    pub stores: BTreeMap<String, String>,
    /// Whether it assembled.
    pub assembled: bool,
    /// Why it was refused, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}
