//! The run model and its renderings (being written).
