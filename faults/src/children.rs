//! Children-once: every saved child's effect applied exactly once, none
//! lost, none twice. (Being built.)
