//! Activities: things done with one or more contacts (a call, a dinner), dated, listed overall
//! or per contact.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use mycorrhizal_engine::Row;

use crate::auth::AuthUser;
use crate::crm::activity::Activity;
use crate::crm::{
    activity::ops as activities, activity::ops::ActivityPage, activity::ops::ActivitySaved, activity::ops::ActivityView,
};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::http::params::DatedQuery;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/activities", tag = "activities", params(DatedQuery), responses((status = 200, description = "`{activities, next_cursor, limit}`, newest first", body = crate::crm::activity::ops::ActivityPage)))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<DatedQuery>,
) -> Result<axum::Json<ActivityPage>, ApiError> {
    let filter = q.filter()?;
    Ok(axum::Json(state.read(&user, move |v| activities::page(v, None, &filter)).await?))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/activities", tag = "activities", params(("id" = u64, Path), DatedQuery), responses((status = 200, description = "`{activities, next_cursor, limit}`"), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<DatedQuery>,
) -> Result<axum::Json<ActivityPage>, ApiError> {
    let filter = q.filter()?;
    Ok(axum::Json(state.read(&user, move |v| activities::page(v, Some(id), &filter)).await?))
}

/// The activity with its contacts named, read after the write.
async fn shown(state: &AppState, user: &AuthUser, id: u64) -> Result<(Row<Activity>, ActivityView), ApiError> {
    Ok(state.read(user, move |v| activities::get(v, id)).await?)
}

#[utoipa::path(post, path = "/api/v1/activities", tag = "activities", request_body = activities::ActivityInput, responses((status = 201, body = activities::ActivitySaved), (status = 404, description = "A contact is not yours")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<activities::ActivityInput>,
) -> Result<Tagged<ActivitySaved>, ApiError> {
    let created = activities::save(&state.scope(&user), None, input).await?;
    let (row, activity) = shown(&state, &user, created.id).await?;
    let body = activities::ActivitySaved { message: "Activity created".into(), activity };
    Ok(tagged(&row, None, StatusCode::CREATED, body))
}

#[utoipa::path(get, path = "/api/v1/activities/{id}", tag = "activities", params(("id" = u64, Path)), responses((status = 200, description = "The activity with its contacts", body = crate::crm::activity::ops::ActivityView), (status = 404, description = "No such activity")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<ActivityView>, ApiError> {
    let (row, activity) = shown(&state, &user, id).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, activity))
}

#[utoipa::path(put, path = "/api/v1/activities/{id}", tag = "activities", params(("id" = u64, Path)), request_body = activities::ActivityInput, responses(
    (status = 200, description = "The activity"), (status = 404, description = "No such activity, or a contact is not yours"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<activities::ActivityInput>,
) -> Result<Tagged<ActivityView>, ApiError> {
    let pre = if_match(&headers)?;
    let saved = activities::save(&state.scope(&user), Some((id, pre)), input).await?;
    let (row, activity) = shown(&state, &user, saved.id).await?;
    Ok(tagged(&row, None, StatusCode::OK, activity))
}

#[utoipa::path(delete, path = "/api/v1/activities/{id}", tag = "activities", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such activity"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    crate::crm::activity::ops::delete(&state.scope(&user), id, crate::http::conditional::if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Activity deleted")))
}
