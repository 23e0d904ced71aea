//! What every resource handler shares: conditional requests (`If-Match` -> 412, `If-None-Match`
//! -> 304, `ETag` on single-record responses), opaque cursors, page sizes and "today".

use axum::http::header::{ETAG, IF_MATCH, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use jiff::civil::Date;
use mycorrhizal_engine::{Precondition, Row};
use serde::Serialize;

use crate::error::ApiError;
use crate::state::AppState;

/// Default and largest page sizes of cursor lists.
pub const DEFAULT_LIMIT: usize = 25;
pub const MAX_LIMIT: usize = 100;

/// A page size from the query: default 25, at most 100; anything that is not a positive integer
/// falls back to the default.
pub fn limit(raw: Option<&str>) -> usize {
    raw.and_then(|v| v.parse::<usize>().ok()).filter(|v| *v > 0).map(|v| v.min(MAX_LIMIT)).unwrap_or(DEFAULT_LIMIT)
}

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

/// A single-record response with its `ETag`, or 304 when the client's copy is current.
pub fn tagged<R, B: Serialize>(row: &Row<R>, headers: Option<&HeaderMap>, status: StatusCode, body: &B) -> Response {
    let etag = row.etag();
    if status == StatusCode::OK && headers.is_some_and(|h| not_modified(h, &etag)) {
        return with_etag(StatusCode::NOT_MODIFIED.into_response(), &etag);
    }
    with_etag((status, axum::Json(body)).into_response(), &etag)
}

fn with_etag(mut response: Response, etag: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(ETAG, value);
    }
    response
}

/// An opaque position in an index walk: base64url of `"<value>|<id>"`.
pub fn encode_cursor(value: &str, id: u64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{value}|{id}"))
}

pub fn decode_cursor(cursor: &str) -> Result<(String, u64), ApiError> {
    let bad = || ApiError::invalid_input("cursor", "is not a cursor this server issued");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor.trim()).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (value, id) = text.rsplit_once('|').ok_or_else(bad)?;
    Ok((value.to_string(), id.parse().map_err(|_| bad())?))
}

/// "Today" for every date decision: the one server clock in `REMINDER_TIMEZONE`.
pub fn today(state: &AppState) -> Date {
    crate::crm::calendar::today(state.engine.clock().now(), &state.config.reminder_timezone)
}

/// Deletes the caller's record `id` of kind `R`, conditional on `If-Match`; answers `{message}`.
pub async fn delete_record<R: mycorrhizal_engine::Record>(
    state: &AppState,
    user: &crate::auth::AuthUser,
    headers: &HeaderMap,
    id: u64,
    message: &str,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let pre = if_match(headers)?;
    state.engine.user(user.id).write_async(move |tx| tx.delete::<R>(id, pre)).await?;
    Ok(axum::Json(serde_json::json!({ "message": message })))
}

/// Parses a `true`/`false` flag from the query, naming the parameter when it is neither.
pub fn flag(raw: Option<&str>, name: &str) -> Result<bool, ApiError> {
    match raw {
        None | Some("") | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(ApiError::invalid_input(name, "must be true or false")),
    }
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

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = encode_cursor("lovelace ada|x", 42);
        assert_eq!(decode_cursor(&c).unwrap(), ("lovelace ada|x".to_string(), 42));
        assert!(decode_cursor("!!!").is_err());
        assert!(decode_cursor(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("no-id")).is_err());
    }
}

/// An instant from a request: RFC 3339 with `Z` or an offset, or a bare `YYYY-MM-DD` (midnight UTC).
pub fn instant(field: &str, text: &str) -> Result<jiff::Timestamp, ApiError> {
    let text = text.trim();
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    text.parse::<Date>().map(crate::crm::calendar::midnight).map_err(|_| {
        ApiError::validation(field, "must be an RFC 3339 instant (e.g. 2026-11-22T10:00:00Z) or YYYY-MM-DD")
    })
}

/// `fromDate`/`toDate` (inclusive `YYYY-MM-DD`) as a half-open microsecond range.
pub fn date_range(from: Option<&str>, to: Option<&str>) -> Result<(i64, i64), ApiError> {
    let day = |field: &str, text: &str| {
        text.parse::<Date>().map_err(|_| ApiError::invalid_input(field, "must be YYYY-MM-DD"))
    };
    let lo = match from {
        Some(f) if !f.is_empty() => crate::crm::calendar::midnight(day("fromDate", f)?).as_microsecond().max(0),
        _ => 0,
    };
    let hi = match to {
        Some(t) if !t.is_empty() => {
            let next =
                day("toDate", t)?.tomorrow().map_err(|_| ApiError::invalid_input("toDate", "is out of range"))?;
            crate::crm::calendar::midnight(next).as_microsecond()
        }
        _ => i64::MAX,
    };
    Ok((lo, hi))
}
