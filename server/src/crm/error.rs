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
    /// The record's UID is already another record's, the one served under `holder` (a sync
    /// client's `no-uid-conflict`).
    #[error("the UID is in use by {holder}")]
    UidConflict { holder: String },
    /// A condition the caller set on the stored state did not hold: it named a version of a
    /// record that does not exist, or asked to create one that exists.
    #[error("precondition failed")]
    PreconditionFailed,
    /// The body cannot be read as what the operation takes (not exactly one vCard); why.
    #[error("unreadable: {0}")]
    Unreadable(String),
    /// The storage engine refused or failed (stale revision, duplicate, not writable, I/O).
    #[error(transparent)]
    Engine(#[from] mycorrhizal_engine::Error),
    /// A failure that is not the caller's doing; its text is logged, never shown.
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    /// The error's code, as the spec's error envelope names it: each door maps the variants
    /// once, with this code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid { .. } | Error::Unreadable(_) => "VALIDATION_ERROR",
            Error::BadParameter { .. } => "INVALID_INPUT",
            Error::NotFound => "NOT_FOUND",
            Error::Conflict(_) | Error::UidConflict { .. } => "CONFLICT",
            Error::PreconditionFailed => "PRECONDITION_FAILED",
            Error::Engine(mycorrhizal_engine::Error::NotFound) => "NOT_FOUND",
            Error::Engine(mycorrhizal_engine::Error::Conflict { .. }) => "PRECONDITION_FAILED",
            Error::Engine(mycorrhizal_engine::Error::Duplicate { .. }) => "ALREADY_EXISTS",
            Error::Engine(mycorrhizal_engine::Error::Invalid(_)) => "VALIDATION_ERROR",
            Error::Engine(mycorrhizal_engine::Error::Poisoned | mycorrhizal_engine::Error::ShutDown) => {
                "SERVICE_UNAVAILABLE"
            }
            Error::Engine(mycorrhizal_engine::Error::RebuildRunning) => "CONFLICT",
            Error::Engine(_) | Error::Internal(_) => "INTERNAL_ERROR",
        }
    }

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
