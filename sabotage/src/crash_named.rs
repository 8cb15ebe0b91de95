//! The named sabotages the crash suite must catch (see [`crate::named`]).

use crate::Named;

/// This group's sabotages, in report order.
pub(crate) const NAMED: &[Named] = &[];
