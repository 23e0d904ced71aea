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

/// The query string as `T`. A number written with a zero fraction (`3.0`) is an integer to JSON
/// Schema, so where the first reading fails it is read again with such values as integers.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let rejection = match axum::extract::Query::<T>::try_from_uri(&parts.uri) {
            Ok(axum::extract::Query(value)) => return Ok(Query(value)),
            Err(rejection) => rejection,
        };
        let retried = integral_floats_as_integers(parts.uri.query().unwrap_or(""))
            .and_then(|query| format!("/?{query}").parse::<axum::http::Uri>().ok())
            .and_then(|uri| axum::extract::Query::<T>::try_from_uri(&uri).ok());
        match retried {
            Some(axum::extract::Query(value)) => Ok(Query(value)),
            None => Err(ApiError::invalid_input("query", rejection.body_text())),
        }
    }
}

/// The query with each value like `25.0` or `1e3` that is a whole number written as one; `None`
/// when there is none to rewrite.
fn integral_floats_as_integers(query: &str) -> Option<String> {
    let mut changed = false;
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| {
            if let Some((key, value)) = pair.split_once('=')
                && value.contains(['.', 'e', 'E'])
                && let Ok(number) = value.parse::<f64>()
                && number.fract() == 0.0
                && number.abs() < 9.0e15
            {
                changed = true;
                return format!("{key}={}", number as i64);
            }
            pair.to_string()
        })
        .collect();
    changed.then(|| pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::integral_floats_as_integers;

    #[test]
    fn whole_numbers_written_as_floats_become_integers_and_nothing_else_changes() {
        assert_eq!(integral_floats_as_integers("contact_id=25.0&q=x").as_deref(), Some("contact_id=25&q=x"));
        assert_eq!(integral_floats_as_integers("days=1e2").as_deref(), Some("days=100"));
        assert_eq!(integral_floats_as_integers("days=1.5&q=1.0.0"), None);
        assert_eq!(integral_floats_as_integers("q=abc"), None);
    }
}
