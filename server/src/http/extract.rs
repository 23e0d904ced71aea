//! Path and query extractors that answer a value they cannot read with the spec's envelope
//! (`INVALID_INPUT` naming `path` or `query`), where axum's own answer a plain-text 400 that no
//! client can parse and the API document cannot describe.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The path's parameters as `T` (a `u64` id, a pair of ids, a name).
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(rejection) => Err(ApiError::invalid_input("path", rejection.body_text())),
        }
    }
}

/// The query string as `T`. A whole number written as a float (`25.0`) is not an integer here:
/// a query's text is read as it is sent, as OpenAPI tools read it.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Query(value)),
            Err(rejection) => Err(ApiError::invalid_input("query", rejection.body_text())),
        }
    }
}

/// An uploaded file: the multipart field `file`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct FileUpload {
    /// The file; its name, when sent, must have the extension the route names.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}
