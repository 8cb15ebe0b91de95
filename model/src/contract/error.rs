//! The error kinds a store may answer (docs/PROTOCOL.md §6).

use serde::{Deserialize, Serialize};

/// What kind of refusal a store answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server may lose acknowledged writes (docs/PROTOCOL.md §7); opt-out
    /// possible.
    Durability,
    /// The server is a replica or a cluster (docs/PROTOCOL.md §7); no opt-out.
    Deployment,
    /// `CONFIG GET` or `INFO` was refused, so the settings cannot be verified.
    ConfigRefused,
    /// The server is full (maxmemory reached): nothing was written.
    StoreFull,
    /// The server could not be reached: the outcome is unknown.
    Unavailable,
    /// The store does not offer this operation (or its whole contract):
    /// the checks about it are skipped, never failed.
    Unsupported,
    /// The request broke the value or type rules: nothing was changed.
    BadRequest,
    /// Not a store's answer but the harness's finding: the adapter process
    /// exited, hung past its timeout, or wrote something that is not a JSON
    /// answer. Never sent by a store.
    AdapterFailed,
    /// Not a store's answer but the harness's finding: the store answered
    /// `ok` with a reply the contract does not allow for this operation (the
    /// message names the field). Unlike [`ErrorKind::AdapterFailed`] it is
    /// the store's doing: the checks judge it as a violation. Never sent by
    /// a store.
    MalformedReply,
}

impl ErrorKind {
    /// The wire name, e.g. `bad_request`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Durability => "durability",
            ErrorKind::Deployment => "deployment",
            ErrorKind::ConfigRefused => "config_refused",
            ErrorKind::StoreFull => "store_full",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::AdapterFailed => "adapter_failed",
            ErrorKind::MalformedReply => "malformed_reply",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A store's refusal: its kind, a message for people, and for `durability`
/// every setting found short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct StoreError {
    /// What kind of refusal it is.
    pub kind: ErrorKind,
    /// What went wrong, for people.
    pub message: String,
    /// The settings found short (durability and deployment errors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
}

impl StoreError {
    /// An error of `kind` with `message` and no settings.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
            settings: Vec::new(),
        }
    }

    /// The same error naming `settings`.
    pub fn with_settings(mut self, settings: Vec<String>) -> Self {
        self.settings = settings;
        self
    }
}
