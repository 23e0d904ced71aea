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

/// A page size from the query, for the lists documented as a positive integer: absent, the
/// default; above 100, 100 (the existing clients ask for 200); anything but a positive integer
/// is refused with `limit` named.
pub fn page_limit(raw: Option<&str>) -> Result<usize, ApiError> {
    match raw {
        None => Ok(DEFAULT_LIMIT),
        Some(text) => match text.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok((n.min(MAX_LIMIT as u64)) as usize),
            _ => Err(ApiError::invalid_input("limit", "must be a positive whole number")),
        },
    }
}

/// A list's `order`: `desc` (the default) or `asc`, which is `true`; anything else refused with
/// `order` named.
pub fn ascending(raw: Option<&str>) -> Result<bool, ApiError> {
    match raw {
        None | Some("desc") => Ok(false),
        Some("asc") => Ok(true),
        Some(_) => Err(ApiError::invalid_input("order", "must be asc or desc")),
    }
}

/// Parses a `true`/`false` flag from the query, naming the parameter when it is neither.
pub fn flag(raw: Option<&str>, name: &str) -> Result<bool, ApiError> {
    match raw {
        None | Some("") | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(ApiError::invalid_input(name, "must be true or false")),
    }
}

/// The query of a list of dated records (notes, activities): text filter, inclusive
/// `YYYY-MM-DD` bounds, cursor, page size and order.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct DatedQuery {
    /// Case-insensitive substring of the record's text.
    pub search: Option<String>,
    /// Inclusive `YYYY-MM-DD` lower bound on the record's date.
    #[param(value_type = Option<crate::crm::schema::DayOrBlank>)]
    pub from_date: Option<String>,
    /// Inclusive `YYYY-MM-DD` upper bound on the record's date.
    #[param(value_type = Option<crate::crm::schema::DayOrBlank>)]
    pub to_date: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// `desc` (default, newest first) or `asc`.
    #[param(pattern = "^(asc|desc)?$")]
    pub order: Option<String>,
}

impl DatedQuery {
    pub fn filter(self) -> Result<crate::crm::cursor::DatedFilter, ApiError> {
        let ascending = match self.order.as_deref() {
            None | Some("") | Some("desc") => false,
            Some("asc") => true,
            Some(_) => return Err(ApiError::invalid_input("order", "must be asc or desc")),
        };
        Ok(crate::crm::cursor::DatedFilter {
            limit: limit(self.limit.as_deref()),
            ascending,
            search: self.search,
            from_date: self.from_date,
            to_date: self.to_date,
            cursor: self.cursor,
        })
    }
}
