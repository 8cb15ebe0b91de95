//! Fencing: no effect of an older epoch applied after a newer one was
//! granted. (Being built.)
