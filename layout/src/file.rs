//! Reading a layout from TOML (text or a file): the I/O half of the layout
//! model, whose data lives in `model::layout`.

use std::path::Path;

use crate::error::LayoutError;
pub use model::layout::{Backend, Layout, Store};

/// A layout read from TOML. Every error is one line naming the cause and fix.
pub trait LayoutFile: Sized {
    /// Reads a layout from TOML text; `origin` names it in errors (a path,
    /// or e.g. `<layout>`).
    fn from_toml_str(text: &str, origin: &str) -> Result<Self, LayoutError>;

    /// Reads the layout file at `path`.
    fn from_file(path: &Path) -> Result<Self, LayoutError>;
}

impl LayoutFile for Layout {
    /// Reads a layout from TOML text; `origin` names it in errors (a path,
    /// or e.g. `<layout>`). Every error is one line naming the cause and fix.
    fn from_toml_str(text: &str, origin: &str) -> Result<Layout, LayoutError> {
        let origin = origin.to_string();
        let table: toml::Table = toml::from_str(text).map_err(|e| LayoutError::Syntax {
            origin: origin.clone(),
            line: e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1),
            message: one_line(e.message()),
        })?;
        let mut stores = None;
        for (key, value) in table {
            if key != "stores" {
                return Err(LayoutError::UnknownKey { origin, key });
            }
            match value {
                toml::Value::Table(t) => stores = Some(t),
                other => {
                    return Err(LayoutError::StoresNotATable {
                        origin,
                        found: other.type_str().to_string(),
                    })
                }
            }
        }
        let stores = stores.ok_or_else(|| LayoutError::NoStores {
            origin: origin.clone(),
        })?;
        let mut layout = Layout::empty();
        for (name, value) in stores {
            let store = Store::from_name(&name).ok_or_else(|| LayoutError::UnknownStore {
                origin: origin.clone(),
                name: name.clone(),
            })?;
            let backend =
                value
                    .as_str()
                    .and_then(Backend::named)
                    .ok_or_else(|| LayoutError::BadBackend {
                        origin: origin.clone(),
                        store,
                        found: one_line(&value.to_string()),
                    })?;
            layout = layout.with(store, backend);
        }
        if layout.stores().next().is_none() {
            return Err(LayoutError::NoStores { origin });
        }
        Ok(layout)
    }

    fn from_file(path: &Path) -> Result<Layout, LayoutError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| LayoutError::Read {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        Self::from_toml_str(&text, &origin)
    }
}

/// `text` with its lines joined, so that every error stays one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
