//! Rate bounds with ambiguous outcomes counted both ways. (Being built.)
