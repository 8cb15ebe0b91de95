//! Rules the sources keep, read as text: every document a comment cites
//! exists with the cited section (`docs_refs`), and every check id is
//! written once (`ids_written_once`).

mod docs_refs;
mod ids_written_once;
