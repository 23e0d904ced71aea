//! `GET /search` over HTTP: reads the parameters and calls `crm::search`.

use crate::http::extract::Query;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::search::{self, DEFAULT_LIMIT, MAX_LIMIT, SearchParams, SearchResults};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// What to look for: words (all must match, any field), prefixes (`ali` finds Alice; two
    /// letters find names and titles only), one typo on words of five letters or more,
    /// `"quoted phrases"`, numbers of four digits or more also by their ending (`4567`, or a
    /// national phone number typed with its leading zero); case and accents are ignored.
    /// Blank gives 400; fewer than two characters gives empty groups.
    #[param(required = true, pattern = r"\S")]
    pub q: Option<String>,
    /// Hits per group: default 10; larger values than 50 give 50.
    #[param(value_type = Option<i64>, minimum = 1)]
    pub limit: Option<String>,
    /// Hits to skip in each group (for a next page).
    #[param(value_type = Option<u64>, minimum = 0)]
    pub offset: Option<String>,
    /// Only members of this household (its integer id) and the notes and activities that carry
    /// one of them. Unknown, another user's, or not an integer (such as a UUID): 404.
    pub household_id: Option<String>,
}

fn positive(raw: Option<&str>, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
    match raw {
        None => Ok(default),
        Some(text) => match text.trim().parse::<i64>() {
            Ok(n) if n > 0 => Ok((n as usize).min(max)),
            _ => Err(ApiError::invalid_input(name, "must be a positive integer")),
        },
    }
}

/// With `household_id`, results are restricted to the household's members (every membership
/// row, past ones included): the contacts group holds only members, and notes and activities
/// only those that carry a member (through the engine's contact filter). Household ids are
/// integers like every id here; a value that is not one (a UUID from another server, say) names
/// no household of the caller's and gives 404, as an unknown or another user's household does.
#[utoipa::path(get, path = "/api/v1/search", tag = "search", params(SearchQuery), responses(
    (status = 200, body = SearchResults, description = "`{query, contacts, notes, activities, totals}`; `resolved_relation` when `q` names a relation. `totals` counts the matches per group exactly up to 1,000; 1,000 means 1,000 or more"),
    (status = 400, description = "`q` blank, or a bad `limit`/`offset`, named"), (status = 404, description = "Unknown household")))]
pub async fn search(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<SearchQuery>,
) -> Result<axum::Json<SearchResults>, ApiError> {
    let limit = positive(q.limit.as_deref(), "limit", DEFAULT_LIMIT, MAX_LIMIT)?;
    let offset = match q.offset.as_deref() {
        None => 0,
        Some(raw) => raw.trim().parse::<usize>().map_err(|_| ApiError::invalid_input("offset", "must be 0 or more"))?,
    };
    // A household id that is not an integer names no household of the caller's: 404.
    let household = match q.household_id.as_deref().map(str::trim).filter(|h| !h.is_empty()) {
        None => None,
        Some(raw) => Some(raw.parse::<u64>().map_err(|_| ApiError::NotFound)?),
    };
    let params = SearchParams { text: q.q.unwrap_or_default(), limit, offset, household };
    let scope = state.scope(&user);
    Ok(axum::Json(state.blocking(move |_| search::search(&scope, params)).await??))
}
