//! Query parameters every list shares: page sizes and `true`/`false` flags, the latter refused
//! with the parameter named.

use crate::error::ApiError;

/// Default and largest page sizes of cursor lists.
pub const DEFAULT_LIMIT: usize = 25;
pub const MAX_LIMIT: usize = 100;

/// A page size from the query: default 25, at most 100; anything that is not a positive integer
/// falls back to the default.
pub fn limit(raw: Option<&str>) -> usize {
    raw.and_then(|v| v.parse::<usize>().ok()).filter(|v| *v > 0).map(|v| v.min(MAX_LIMIT)).unwrap_or(DEFAULT_LIMIT)
}

/// Parses a `true`/`false` flag from the query, naming the parameter when it is neither.
pub fn flag(raw: Option<&str>, name: &str) -> Result<bool, ApiError> {
    match raw {
        None | Some("") | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(ApiError::invalid_input(name, "must be true or false")),
    }
}
