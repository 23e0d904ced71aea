//! What an account operation refuses (sign-in, registration, passwords, sessions, API tokens,
//! second factors), in terms a caller can act on. It holds no HTTP: each front door maps it once
//! (`impl From<auth::Error> for ApiError` in `error.rs`, which the web pages and DAV reuse).

/// Why an account operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Missing, invalid, expired or revoked credentials; the message is the spec's exact text.
    #[error("unauthorized: {0}")]
    Unauthorized(&'static str),
    /// A session or token that was valid and has run out (its lifetime, idle timeout or expiry):
    /// the spec's `TOKEN_EXPIRED`, with its exact text.
    #[error("expired: {0}")]
    TokenExpired(&'static str),
    /// Wrong identifier or password (one answer for both, so accounts cannot be enumerated).
    #[error("invalid credentials")]
    InvalidCredentials,
    /// Authenticated, but not allowed this (registration closed, an SSO account, not an admin).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The client's version is below `MIN_CLIENT_VERSION`.
    #[error("client not supported: {0}")]
    ClientNotSupported(String),
    /// Too many attempts for now; `retry_after` in seconds; `locked` when the account is locked.
    #[error("rate limited")]
    RateLimited { retry_after: u64, locked: bool },
    /// A value breaks a rule (a weak password, a malformed email), with the field named.
    #[error("invalid {field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A value cannot be read or is missing (an empty identifier, an unknown reset token).
    #[error("bad parameter {field}: {reason}")]
    BadParameter { field: String, reason: String },
    /// The username or email is taken.
    #[error("{field} already exists")]
    AlreadyExists { field: String },
    /// The account's state does not allow it (two-factor already on, the last admin).
    #[error("conflict: {0}")]
    Conflict(String),
    /// No such account or token of this user.
    #[error("not found")]
    NotFound,
    /// The storage engine refused or failed.
    #[error(transparent)]
    Engine(#[from] mycorrhizal_engine::Error),
    /// A domain operation it called refused.
    #[error(transparent)]
    Crm(#[from] crate::crm::Error),
    /// A failure that is not the caller's doing; its text is logged, never shown.
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    pub fn validation(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Invalid { field: field.into(), reason: reason.into() }
    }

    pub fn invalid_input(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::BadParameter { field: field.into(), reason: reason.into() }
    }

    pub fn internal(e: impl std::fmt::Display) -> Self {
        Error::Internal(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
