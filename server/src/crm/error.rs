//! The domain layer's error: what an operation refuses, in terms a caller can act on. It holds
//! no HTTP: each front door maps it once (the JSON API in `error.rs`, later the web pages and DAV
//! with their own renderings).

/// Why a domain operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A value of the input breaks a rule of the record (named field, human reason).
    #[error("invalid {field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A parameter of the request cannot be read (a cursor, a flag, a sort order).
    #[error("bad parameter {field}: {reason}")]
    BadParameter { field: String, reason: String },
    /// The record does not exist for this user (a foreign id looks the same).
    #[error("not found")]
    NotFound,
    /// The operation conflicts with the current state (not a stale revision: that is the
    /// engine's `Conflict`).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The storage engine refused or failed (stale revision, duplicate, not writable, I/O).
    #[error(transparent)]
    Engine(#[from] mycorrhizal_engine::Error),
    /// A failure that is not the caller's doing; its text is logged, never shown.
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Invalid { field: field.into(), reason: reason.into() }
    }

    pub fn bad_parameter(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::BadParameter { field: field.into(), reason: reason.into() }
    }

    pub fn internal(e: impl std::fmt::Display) -> Self {
        Error::Internal(e.to_string())
    }
}

impl From<mycorrhizal_engine::Invalid> for Error {
    fn from(e: mycorrhizal_engine::Invalid) -> Self {
        Error::Invalid { field: e.field, reason: e.reason }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
