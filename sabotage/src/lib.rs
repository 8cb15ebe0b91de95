//! The sabotage set (SPEC 3.5): will hold deliberately broken stores, each paired
//! with the named check that must catch it, and the matrix the report shows.
//! Not built yet.
