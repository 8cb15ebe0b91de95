//! What the explorer looks for, named once: the properties live in the model
//! ([`model::explore::Property`]), where a counterexample names them.

pub use model::explore::{Property, EXPLORED};
