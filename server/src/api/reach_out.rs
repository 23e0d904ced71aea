//! Reach-out suggestions made by the `reach_out_scan` job for contacts whose cadence is overdue
//! or whose organization, title or address changed: list them, accept one (a one-off reminder for the contact, linked to the suggestion), dismiss
//! one (never resurfaced by a later scan) or delete one (removed outright).

use crate::http::extract::{Path, Query};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::reach_out::ops as suggestions;
use crate::crm::reach_out::{DISMISSED, PENDING};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `pending` (default), `dismissed` or `all`.
    #[param(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(pending|dismissed|all)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub status: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/reach-out-suggestions", tag = "reach-out", params(ListQuery), responses(
    (status = 200, description = "`{suggestions, total}`: pending ones unless `status` says otherwise, most overdue first", body = suggestions::SuggestionList),
    (status = 400, description = "Unknown status")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<suggestions::SuggestionList>, ApiError> {
    let status = match q.status.as_deref().map(str::trim) {
        None | Some("") | Some(PENDING) => Some(PENDING),
        Some(DISMISSED) => Some(DISMISSED),
        Some("all") => None,
        Some(_) => return Err(ApiError::validation("status", "must be pending, dismissed or all")),
    };
    let scope = state.scope(&user);
    let now = state.engine.clock().now();
    let list = state.blocking(move |_| suggestions::listed(&scope.view()?, status, now)).await??;
    Ok(axum::Json(list))
}

/// Creates a one-off reminder for the suggestion's contact and links it. The body is optional.
#[utoipa::path(post, path = "/api/v1/reach-out-suggestions/{id}/accept", tag = "reach-out", params(("id" = u64, Path)), request_body = suggestions::AcceptInput, responses(
    (status = 201, description = "`{message, suggestion, reminder}`", body = suggestions::SuggestionAccepted), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such suggestion"), (status = 409, description = "Dismissed, or already accepted with a live reminder")))]
pub async fn accept(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: suggestions::AcceptInput = if body.iter().all(u8::is_ascii_whitespace) {
        suggestions::AcceptInput::default()
    } else {
        crate::http::json::parse(&body)?
    };
    let (suggestion, reminder) = suggestions::accept(&state.scope(&user), id, state.today(), input).await?;
    let today = state.today();
    let scope = state.scope(&user);
    let now = state.engine.clock().now();
    let body = state
        .blocking(move |_| Ok::<_, ApiError>(suggestions::accepted(&scope.view()?, &suggestion, &reminder, today, now)))
        .await??;
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// Marks the suggestion dismissed; later scans leave the contact alone. Idempotent; no body.
#[utoipa::path(post, path = "/api/v1/reach-out-suggestions/{id}/dismiss", tag = "reach-out", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{message, suggestion}`", body = suggestions::SuggestionDismissed), (status = 404, description = "No such suggestion")))]
pub async fn dismiss(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<suggestions::SuggestionDismissed>, ApiError> {
    let scope = state.scope(&user);
    let row = suggestions::dismiss(&scope, id).await?;
    let now = state.engine.clock().now();
    let body = state.blocking(move |_| Ok::<_, ApiError>(suggestions::dismissed(&scope.view()?, &row, now))).await??;
    Ok(axum::Json(body))
}

/// Removes the suggestion outright (a later scan may propose the contact again). A linked
/// reminder stays.
#[utoipa::path(delete, path = "/api/v1/reach-out-suggestions/{id}", tag = "reach-out", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{message}`", body = crate::crm::Message), (status = 404, description = "No such suggestion"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    suggestions::delete(&state.scope(&user), id, crate::http::conditional::if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Suggestion deleted")))
}
