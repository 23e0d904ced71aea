//! The DAV door's error: a status, and for a failed precondition the element a `D:error` body
//! names; how the domain's, the engine's and the accounts' errors read as one. Mapped once here
//! for what every DAV method shares; CardDAV and CalDAV each add their own preconditions.

use axum::body::Body;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::request::MAX_BODY;
use super::xml;

const REALM: &str = "Basic realm=\"Mycorrhizal\", charset=\"UTF-8\"";

/// A DAV failure: a status, and for a failed precondition of RFC 4918/6352/6578 the element a
/// `D:error` body names.
#[derive(Debug)]
pub struct DavError {
    status: StatusCode,
    precondition: Option<&'static str>,
    detail: Option<String>,
    retry_after: Option<u64>,
}

impl DavError {
    fn new(status: StatusCode) -> DavError {
        DavError { status, precondition: None, detail: None, retry_after: None }
    }

    pub fn unauthorized() -> DavError {
        DavError::new(StatusCode::UNAUTHORIZED)
    }

    pub fn not_found() -> DavError {
        DavError::new(StatusCode::NOT_FOUND)
    }

    pub fn bad_request(detail: impl Into<String>) -> DavError {
        DavError { detail: Some(detail.into()), ..DavError::new(StatusCode::BAD_REQUEST) }
    }

    /// A body past [`MAX_BODY`].
    pub fn too_large() -> DavError {
        DavError {
            detail: Some(format!("the body is larger than {MAX_BODY} bytes")),
            ..DavError::new(StatusCode::PAYLOAD_TOO_LARGE)
        }
    }

    /// A resource past [`MAX_BODY`] (the collection's `max-resource-size`): 413 naming the
    /// RFC's precondition `element` (`C:max-resource-size`, `CAL:max-resource-size`).
    pub fn resource_too_large(element: &'static str) -> DavError {
        DavError { precondition: Some(element), ..DavError::too_large() }
    }

    pub fn precondition_failed() -> DavError {
        DavError::new(StatusCode::PRECONDITION_FAILED)
    }

    pub fn method_not_allowed() -> DavError {
        DavError::new(StatusCode::METHOD_NOT_ALLOWED)
    }

    pub fn too_many(retry_after: u64) -> DavError {
        DavError { retry_after: Some(retry_after), ..DavError::new(StatusCode::TOO_MANY_REQUESTS) }
    }

    pub fn unavailable() -> DavError {
        DavError { retry_after: Some(5), ..DavError::new(StatusCode::SERVICE_UNAVAILABLE) }
    }

    /// A failed precondition (`C:valid-address-data`, `D:valid-sync-token`, ...).
    pub fn condition(status: StatusCode, element: &'static str, detail: Option<String>) -> DavError {
        DavError { precondition: Some(element), detail, ..DavError::new(status) }
    }

    pub fn internal(detail: impl std::fmt::Display) -> DavError {
        tracing::error!(event = "internal_error", component = "dav", error = %detail);
        DavError::new(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl From<crate::crm::Error> for DavError {
    fn from(e: crate::crm::Error) -> Self {
        use crate::crm::Error as E;
        use mycorrhizal_engine::Error as Engine;
        match e {
            E::NotFound | E::Engine(Engine::NotFound) => DavError::not_found(),
            E::Engine(Engine::Conflict { .. }) | E::PreconditionFailed => DavError::precondition_failed(),
            E::Engine(Engine::Poisoned | Engine::ShutDown) => DavError::unavailable(),
            E::Invalid { field, reason } => DavError::bad_request(format!("{field}: {reason}")),
            E::BadParameter { field, reason } => DavError::bad_request(format!("{field}: {reason}")),
            other => DavError::internal(other),
        }
    }
}

impl From<mycorrhizal_engine::Error> for DavError {
    fn from(e: mycorrhizal_engine::Error) -> Self {
        DavError::from(crate::crm::Error::from(e))
    }
}

impl From<crate::auth::Error> for DavError {
    fn from(e: crate::auth::Error) -> Self {
        crate::error::ApiError::from(e).into()
    }
}

impl From<crate::error::ApiError> for DavError {
    fn from(e: crate::error::ApiError) -> Self {
        DavError::internal(e)
    }
}

impl IntoResponse for DavError {
    fn into_response(self) -> Response {
        let body = match (self.precondition, &self.detail) {
            (Some(element), detail) => Body::from(xml::error_body(element, detail.as_deref())),
            (None, Some(detail)) => Body::from(detail.clone()),
            (None, None) => Body::empty(),
        };
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        if self.precondition.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/xml; charset=utf-8"));
        } else if self.detail.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static(REALM));
        }
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            headers.insert(RETRY_AFTER, value);
        }
        response
    }
}
