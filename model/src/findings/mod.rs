//! What the pure checkers of the faults suite found, as data: the detail a
//! fault check's evidence carries and its violations are made from. The
//! checkers themselves (`faults::{linearizable, children, fencing,
//! rate_bounds, full_server}`) compute these from a history.

pub mod children;
pub mod fencing;
pub mod full_server;
pub mod linearizable;
pub mod rate;
