//! Assembly under the one-backend rule (docs/CONTRACTS.md §1.5).

use std::fmt;

use serde::Serialize;

use crate::error::LayoutError;
use crate::file::{Backend, Layout, LayoutFile, Store};

/// A layout that holds: only [`assemble`] makes one, so holding one proves
/// the one-backend rule was checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Assembled {
    layout: Layout,
}

impl Assembled {
    /// The layout assembled.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The name of the supported Redis layout this is (docs/CONTRACTS.md §1.5),
    /// if it is exactly one of them.
    pub fn supported_name(&self) -> Option<&'static str> {
        Layout::supported()
            .into_iter()
            .find(|(_, l)| *l == self.layout)
            .map(|(name, _)| name)
    }
}

impl fmt::Display for Assembled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.layout.fmt(f)
    }
}

/// Assembles `layout`, or refuses it:
///
/// - every fenced-effect or outbound-call store not on the lease store's
///   backend is named with its backend and the lease store's, in one
///   [`LayoutError::Mismatch`] starting `[application.store-backend-mismatch]`
///   (also when there is no lease store to share with). Not relaxed for
///   Redis: Redis leases beside SQLite fenced effects are refused too;
/// - a layout with no lease store is refused ([`LayoutError::MissingLease`]);
/// - the queue, rate limits and lease log may be on any backend.
pub fn assemble(layout: &Layout) -> Result<Assembled, LayoutError> {
    let lease = layout.backend(Store::Lease);
    let offenders: Vec<(Store, Backend)> = layout
        .stores()
        .filter(|(store, backend)| store.shares_lease_backend() && Some(*backend) != lease)
        .map(|(store, backend)| (store, backend.clone()))
        .collect();
    if !offenders.is_empty() {
        return Err(LayoutError::Mismatch {
            lease: lease.cloned(),
            offenders,
        });
    }
    if lease.is_none() {
        return Err(LayoutError::MissingLease {
            layout: layout.to_string(),
        });
    }
    Ok(Assembled {
        layout: layout.clone(),
    })
}

/// The one-line verdict `storeproof layout check FILE` prints: `FILE
/// assembles: lease=... (...)` when the layout holds; otherwise the error
/// (its form, or the one-backend rule's refusal).
pub fn check_file(path: &std::path::Path) -> Result<String, LayoutError> {
    let layout = Layout::from_file(path)?;
    let assembled = assemble(&layout)?;
    let which = match assembled.supported_name() {
        Some(name) => format!(" (the supported Redis layout {name})"),
        None => String::new(),
    };
    Ok(format!("{} assembles: {assembled}{which}", path.display()))
}
