//! Why a layout was not read or does not hold: each error is one line naming
//! the cause and the fix.

use thiserror::Error;

use crate::file::{Backend, Store};

/// The id every refusal under the one-backend rule starts with
/// (docs/CONTRACTS.md §1.5).
pub const MISMATCH_ID: &str = "[application.store-backend-mismatch]";

/// Why a layout could not be read, or why it does not assemble.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    /// The file could not be read.
    #[error("cannot read the layout file {origin}: {message} (check the path)")]
    Read {
        /// The path.
        origin: String,
        /// The I/O error.
        message: String,
    },
    /// The text is not TOML.
    #[error("{origin}{}: not TOML: {message} (fix the syntax: a layout is a [stores] table of store = \"backend\" lines)", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Syntax {
        /// The file (or `<layout>`).
        origin: String,
        /// The line the parser stopped at, when it said.
        line: Option<usize>,
        /// The parser's message, on one line.
        message: String,
    },
    /// A top-level key other than `stores`.
    #[error("{origin}: unknown key `{key}` (a layout has one table, [stores]: move the line under it or remove it)")]
    UnknownKey {
        /// The file.
        origin: String,
        /// The key.
        key: String,
    },
    /// `stores` is not a table.
    #[error("{origin}: `stores` is not a table but a TOML {found} (write [stores] on its own line, then a line per store)")]
    StoresNotATable {
        /// The file.
        origin: String,
        /// The TOML type found.
        found: String,
    },
    /// No `[stores]` table, or an empty one.
    #[error("{origin}: no store is placed (add a [stores] table with a line per store used, e.g. lease = \"sqlite\")")]
    NoStores {
        /// The file.
        origin: String,
    },
    /// A store name the layout does not know.
    #[error(
        "{origin}: unknown store `{name}` under [stores] (the stores are {})",
        Store::all_names()
    )]
    UnknownStore {
        /// The file.
        origin: String,
        /// The name written.
        name: String,
    },
    /// A backend that is not a name in quotes.
    #[error("{origin}: store `{store}` has backend {found} (a backend is a name in quotes, e.g. {store} = \"redis\" or \"sqlite\")")]
    BadBackend {
        /// The file.
        origin: String,
        /// The store.
        store: Store,
        /// The value written, as TOML.
        found: String,
    },
    /// The layout places no lease store and nothing that needs one.
    #[error("the layout places no lease store: {layout} (add lease = \"<backend>\" under [stores]: every application has an execution lease store)")]
    MissingLease {
        /// The layout, as `store=backend` pairs.
        layout: String,
    },
    /// The one-backend rule is broken: fenced-effect or outbound-call stores
    /// not on the lease store's backend (or with no lease store at all).
    #[error("{}", mismatch_line(lease.as_ref(), offenders))]
    Mismatch {
        /// The lease store's backend; `None` when the layout has no lease store.
        lease: Option<Backend>,
        /// Every store that must share the lease store's backend and does
        /// not, with its backend, in [`Store`] order.
        offenders: Vec<(Store, Backend)>,
    },
}

impl LayoutError {
    /// The stores this error says break the one-backend rule (empty for
    /// errors of form).
    pub fn offending_stores(&self) -> Vec<Store> {
        match self {
            LayoutError::Mismatch { offenders, .. } => offenders.iter().map(|(s, _)| *s).collect(),
            _ => Vec::new(),
        }
    }
}

/// `[application.store-backend-mismatch] fenced_effect on sqlite beside lease
/// on redis: ...`: each store named with its backend, and the fix.
fn mismatch_line(lease: Option<&Backend>, offenders: &[(Store, Backend)]) -> String {
    let named: Vec<String> = offenders
        .iter()
        .map(|(s, b)| format!("{s} on {b}"))
        .collect();
    let named = match named.as_slice() {
        [] => "no store".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    let them = if offenders.len() == 1 { "it" } else { "them" };
    let mut theirs: Vec<&Backend> = offenders.iter().map(|(_, b)| b).collect();
    theirs.sort();
    theirs.dedup();
    let rule = "a fenced-effect or outbound-call store must share the lease store's backend";
    match lease {
        // Moving the lease store instead is not offered: another bound store
        // may already be on the lease store's backend.
        Some(lease) => {
            format!("{MISMATCH_ID} {named} beside lease on {lease}: {rule} (put {them} on {lease})")
        }
        None => {
            let fix = match theirs.as_slice() {
                [one] => format!("add lease = \"{one}\" under [stores]"),
                _ => format!("add a lease store and put {them} on its backend"),
            };
            format!("{MISMATCH_ID} {named} with no lease store: {rule} ({fix})")
        }
    }
}
