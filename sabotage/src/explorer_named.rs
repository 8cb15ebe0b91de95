//! The named sabotages the explorer (and fault suite) must catch (see [`crate::named`]).

use crate::Named;

/// This group's sabotages, in report order.
pub(crate) const NAMED: &[Named] = &[];
