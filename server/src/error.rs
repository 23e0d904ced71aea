//! The server's one error type and its envelope: `{code, message, details, request_id}`.
//! Handlers return `Result<_, ApiError>` and use `?`; the status and code for each case are
//! decided here once. Internal failures answer with a generic message and are logged with the
//! request id; their text never reaches the client.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::ops::correlation;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Missing, invalid, expired or revoked credentials; the message is the spec's exact text.
    #[error("unauthorized: {0}")]
    Unauthorized(&'static str),
    /// A session or token that ran out: `TOKEN_EXPIRED` (401) with the spec's text.
    #[error("expired: {0}")]
    TokenExpired(&'static str),
    /// Wrong identifier or password (the same for both, so accounts cannot be enumerated).
    #[error("invalid credentials")]
    InvalidCredentials,
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("client not supported: {0}")]
    ClientNotSupported(String),
    /// Too many requests or attempts; `retry_after` in seconds goes out as `Retry-After`.
    #[error("rate limited")]
    RateLimited { retry_after: u64, locked: bool },
    /// A per-user allowance is used up for now (429 with its own message); `retry_after` in
    /// seconds goes out as `Retry-After`.
    #[error("saturated: {message}")]
    Saturated { message: String, retry_after: u64 },
    /// An outside service the request depends on failed (e.g. the mail provider).
    #[error("external service: {0}")]
    External(String),
    #[error("not found")]
    NotFound,
    /// Not found, saying what (an integration's answer).
    #[error("not found: {0}")]
    Missing(String),
    /// A user's integration failed or is not set up (503 with `details.service`, never 401:
    /// the existing web client signs out on any 401).
    #[error("integration {service}: {message}")]
    Integration { service: &'static str, message: String },
    /// The route exists but its feature is not configured on this instance (404).
    #[error("feature disabled: {0}")]
    FeatureDisabled(&'static str),
    #[error("method not allowed")]
    MethodNotAllowed,
    /// A request field failed validation.
    #[error("invalid {field}: {reason}")]
    Validation { field: String, reason: String },
    /// The request could not be read (malformed JSON, wrong content type, bad parameter).
    #[error("invalid input {field}: {reason}")]
    InvalidInput { field: String, reason: String },
    #[error("payload too large")]
    PayloadTooLarge { limit: usize },
    #[error("already exists")]
    AlreadyExists { field: String },
    #[error("precondition failed")]
    PreconditionFailed { expected_revision: u64 },
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("service unavailable: {0}")]
    Unavailable(String),
    #[error("internal: {0}")]
    Internal(String),
}

/// The error body every route uses.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Machine-readable code, e.g. `VALIDATION_ERROR`.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Structured detail: for field errors `{field, reason}`.
    #[schema(value_type = Object)]
    pub details: Value,
    /// The request id, as in the `X-Request-ID` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ApiError {
    pub fn validation(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::Validation { field: field.into(), reason: reason.into() }
    }

    pub fn invalid_input(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::InvalidInput { field: field.into(), reason: reason.into() }
    }

    pub fn internal(e: impl std::fmt::Display) -> Self {
        ApiError::Internal(e.to_string())
    }

    /// The status and the human-readable message, for a front door that answers in its own
    /// format (an HTML page, a DAV error body). Logs an internal error as the JSON answer does.
    pub fn status_and_message(&self) -> (StatusCode, String) {
        if let ApiError::Internal(detail) = self {
            let request_id = correlation::current();
            tracing::error!(event = "internal_error", error = %detail, request_id = request_id.as_deref().unwrap_or(""));
        }
        let (status, _, message, _) = self.parts();
        (status, message)
    }

    fn parts(&self) -> (StatusCode, &'static str, String, Value) {
        match self {
            ApiError::Unauthorized(message) => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED", (*message).into(), json!({})),
            ApiError::TokenExpired(message) => {
                (StatusCode::UNAUTHORIZED, "TOKEN_EXPIRED", (*message).into(), json!({}))
            }
            ApiError::InvalidCredentials => {
                (StatusCode::UNAUTHORIZED, "INVALID_CREDENTIALS", "Invalid credentials".into(), json!({}))
            }
            ApiError::Forbidden(message) => (StatusCode::FORBIDDEN, "FORBIDDEN", message.clone(), json!({})),
            ApiError::ClientNotSupported(message) => {
                (StatusCode::FORBIDDEN, "CLIENT_NOT_SUPPORTED", message.clone(), json!({}))
            }
            ApiError::RateLimited { retry_after, locked } => (
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMIT_EXCEEDED",
                if *locked {
                    "Account temporarily locked".into()
                } else {
                    "Too many requests. Please try again later.".into()
                },
                json!({ "retry_after": retry_after }),
            ),
            ApiError::Saturated { message, retry_after } => (
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMIT_EXCEEDED",
                message.clone(),
                json!({ "retry_after": retry_after }),
            ),
            ApiError::FeatureDisabled(message) => {
                (StatusCode::NOT_FOUND, "NOT_FOUND", (*message).into(), json!({ "reason": "feature_disabled" }))
            }
            ApiError::External(message) => {
                (StatusCode::SERVICE_UNAVAILABLE, "EXTERNAL_SERVICE_ERROR", message.clone(), json!({}))
            }
            ApiError::NotFound => (StatusCode::NOT_FOUND, "NOT_FOUND", "Not found".into(), json!({})),
            ApiError::Missing(message) => (StatusCode::NOT_FOUND, "NOT_FOUND", message.clone(), json!({})),
            ApiError::Integration { service, message } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "EXTERNAL_SERVICE_ERROR",
                message.clone(),
                json!({ "service": service }),
            ),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                "Method not allowed on this path".into(),
                json!({}),
            ),
            ApiError::Validation { field, reason } => (
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                format!("{field}: {reason}"),
                // `{field, reason}` plus the wire-compatible `{<field>: <message>}` entry.
                {
                    let mut details = serde_json::Map::new();
                    details.insert(field.clone(), Value::from(reason.as_str()));
                    details.insert("field".into(), Value::from(field.as_str()));
                    details.insert("reason".into(), Value::from(reason.as_str()));
                    Value::Object(details)
                },
            ),
            ApiError::InvalidInput { field, reason } => (
                StatusCode::BAD_REQUEST,
                "INVALID_INPUT",
                format!("{field}: {reason}"),
                json!({ "field": field, "reason": reason }),
            ),
            ApiError::PayloadTooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("Request body larger than {limit} bytes"),
                json!({ "limit_bytes": limit }),
            ),
            ApiError::AlreadyExists { field } => {
                (StatusCode::CONFLICT, "ALREADY_EXISTS", format!("{field} already exists"), json!({ "field": field }))
            }
            ApiError::PreconditionFailed { expected_revision } => (
                StatusCode::PRECONDITION_FAILED,
                "PRECONDITION_FAILED",
                "The resource changed since it was read; fetch it again".into(),
                json!({ "expected_revision": expected_revision }),
            ),
            ApiError::Conflict(message) => (StatusCode::CONFLICT, "CONFLICT", message.clone(), json!({})),
            ApiError::Unavailable(message) => {
                (StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE", message.clone(), json!({}))
            }
            ApiError::Internal(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", "Internal server error".into(), json!({}))
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message, details) = self.parts();
        let request_id = correlation::current();
        if let ApiError::Internal(detail) = &self {
            tracing::error!(event = "internal_error", error = %detail, request_id = request_id.as_deref().unwrap_or(""));
        }
        let mut response = (status, Json(ErrorBody { code, message, details, request_id })).into_response();
        if let ApiError::RateLimited { retry_after, .. } | ApiError::Saturated { retry_after, .. } = self
            && let Ok(value) = axum::http::HeaderValue::from_str(&retry_after.to_string())
        {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
        }
        response
    }
}

impl From<mycorrhizal_engine::Error> for ApiError {
    fn from(e: mycorrhizal_engine::Error) -> Self {
        use mycorrhizal_engine::Error as E;
        match e {
            E::NotFound => ApiError::NotFound,
            E::Conflict { actual, .. } => ApiError::PreconditionFailed { expected_revision: actual },
            E::Duplicate { index } => ApiError::AlreadyExists { field: index.to_string() },
            E::Invalid(invalid) => ApiError::Validation { field: invalid.field, reason: invalid.reason },
            E::Poisoned | E::ShutDown => ApiError::Unavailable("The database is not accepting writes".into()),
            E::RebuildRunning => ApiError::Conflict("A search index rebuild is already in progress".into()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<crate::crm::Error> for ApiError {
    fn from(e: crate::crm::Error) -> Self {
        use crate::crm::Error as E;
        match e {
            E::Invalid { field, reason } => ApiError::Validation { field, reason },
            E::BadParameter { field, reason } => ApiError::InvalidInput { field, reason },
            E::NotFound => ApiError::NotFound,
            E::Conflict(message) => ApiError::Conflict(message),
            E::UidConflict { holder } => ApiError::Conflict(format!("the UID is in use by {holder}")),
            E::PreconditionFailed => ApiError::PreconditionFailed { expected_revision: 0 },
            E::Unreadable(reason) => ApiError::Validation { field: "body".into(), reason },
            E::Engine(e) => e.into(),
            E::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

impl From<crate::integrations::Error> for ApiError {
    fn from(e: crate::integrations::Error) -> Self {
        use crate::integrations::Error as E;
        match e {
            E::Crm(e) => e.into(),
            E::Remote { system, message } => ApiError::Integration { service: system.name(), message },
            E::Missing(message) => ApiError::Missing(message),
            e @ E::NotConfigured(_) => ApiError::Conflict(e.to_string()),
        }
    }
}

impl From<crate::auth::Error> for ApiError {
    fn from(e: crate::auth::Error) -> Self {
        use crate::auth::Error as E;
        match e {
            E::Unauthorized(message) => ApiError::Unauthorized(message),
            E::TokenExpired(message) => ApiError::TokenExpired(message),
            E::InvalidCredentials => ApiError::InvalidCredentials,
            E::Forbidden(message) => ApiError::Forbidden(message),
            E::ClientNotSupported(message) => ApiError::ClientNotSupported(message),
            E::RateLimited { retry_after, locked } => ApiError::RateLimited { retry_after, locked },
            E::Invalid { field, reason } => ApiError::Validation { field, reason },
            E::BadParameter { field, reason } => ApiError::InvalidInput { field, reason },
            E::AlreadyExists { field } => ApiError::AlreadyExists { field },
            E::Conflict(message) => ApiError::Conflict(message),
            E::NotFound => ApiError::NotFound,
            E::Engine(e) => e.into(),
            E::Crm(e) => e.into(),
            E::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_rebuild_outcomes_map_to_the_spec_codes() {
        let running = ApiError::from(mycorrhizal_engine::Error::RebuildRunning).into_response();
        assert_eq!(running.status(), StatusCode::CONFLICT);
        let failed = ApiError::from(mycorrhizal_engine::Error::Search("disk full".into())).into_response();
        assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    /// The JSON door maps each domain error once, to the code the domain names for it.
    #[test]
    fn every_domain_error_keeps_its_code_through_the_json_door() {
        use crate::crm::Error as E;
        use mycorrhizal_engine::Error as Engine;
        let all = [
            E::invalid("name", "is required"),
            E::bad_parameter("cursor", "is not one of ours"),
            E::NotFound,
            E::Conflict("the last admin".into()),
            E::UidConflict { holder: "grace.vcf".into() },
            E::PreconditionFailed,
            E::Unreadable("the body must hold exactly one vCard".into()),
            E::Engine(Engine::NotFound),
            E::Engine(Engine::Conflict { expected: 1, actual: 2 }),
            E::Engine(Engine::Duplicate { index: "uid" }),
            E::Engine(Engine::ShutDown),
            E::Engine(Engine::RebuildRunning),
            E::Internal("disk full".into()),
        ];
        for e in all {
            let code = e.code();
            let (_, mapped, _, _) = ApiError::from(e).parts();
            assert_eq!(mapped, code);
        }
    }
}
