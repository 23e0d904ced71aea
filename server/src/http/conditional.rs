//! Conditional requests, written once for every front door that speaks HTTP: `If-Match` -> the
//! engine's precondition (a stale one is a 412), `If-None-Match` -> 304, and the `ETag` of every
//! single-record response.

use axum::http::header::{ETAG, IF_MATCH, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::{Precondition, Row};
use serde::Serialize;

use crate::error::ApiError;

/// The revision an `If-Match` value names: `"3"`, `W/"3"`, `"e-12-3"`, `*` (any), or the first
/// of a list.
pub fn if_match(headers: &HeaderMap) -> Result<Precondition, ApiError> {
    let Some(raw) = headers.get(IF_MATCH) else { return Ok(Precondition::Any) };
    let text = raw.to_str().map_err(|_| ApiError::invalid_input("If-Match", "is not text"))?.trim();
    let first = text.split(',').next().unwrap_or("").trim();
    if first == "*" {
        return Ok(Precondition::Any);
    }
    let tag = first.trim_start_matches("W/").trim_matches('"');
    let revision = tag.rsplit('-').next().unwrap_or(tag);
    revision
        .parse::<u64>()
        .map(Precondition::Revision)
        .map_err(|_| ApiError::invalid_input("If-Match", "must be an entity tag or revision from this server"))
}

/// Whether the client's `If-None-Match` already holds `etag`.
pub fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').map(|t| t.trim().trim_start_matches("W/")).any(|t| t == etag || t == "*"))
}

/// A single-record answer: its body, typed, with the record's `ETag`; 304 instead when the
/// client's copy is current. Handlers return it, so their signature names the body they send.
pub struct Tagged<B> {
    status: StatusCode,
    etag: String,
    body: Option<B>,
}

impl<B: Serialize> IntoResponse for Tagged<B> {
    fn into_response(self) -> Response {
        let response = match self.body {
            Some(body) => (self.status, axum::Json(body)).into_response(),
            None => StatusCode::NOT_MODIFIED.into_response(),
        };
        with_etag(response, &self.etag)
    }
}

/// `body` as record `row`'s answer with its `ETag`, or 304 when `headers` hold that ETag already
/// (a read, `200`, only).
pub fn tagged<R, B: Serialize>(row: &Row<R>, headers: Option<&HeaderMap>, status: StatusCode, body: B) -> Tagged<B> {
    let etag = row.etag();
    let current = status == StatusCode::OK && headers.is_some_and(|h| not_modified(h, &etag));
    Tagged { status, etag, body: (!current).then_some(body) }
}

fn with_etag(mut response: Response, etag: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(ETAG, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_accepts_the_forms_clients_send() {
        let cases = [
            ("\"3\"", Precondition::Revision(3)),
            ("W/\"3\"", Precondition::Revision(3)),
            ("\"e-12-7\"", Precondition::Revision(7)),
            ("*", Precondition::Any),
            ("\"4\", \"5\"", Precondition::Revision(4)),
        ];
        for (header, expected) in cases {
            let mut h = HeaderMap::new();
            h.insert(IF_MATCH, header.parse().unwrap());
            assert_eq!(if_match(&h).unwrap(), expected, "{header}");
        }
        let mut h = HeaderMap::new();
        h.insert(IF_MATCH, "\"banana\"".parse().unwrap());
        assert!(if_match(&h).is_err());
    }
}
