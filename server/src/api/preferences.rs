//! Preferences over HTTP (`/preferences`), each handler one call of `crm::preference::ops`: what
//! a person likes, dislikes or wears, each naming its contact by vCard UID (`entity_id`).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::preference::Preference;
use crate::crm::preference::ops::{self, PreferenceInput, PreferencePage, PreferenceView};
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this contact's (vCard UID or id).
    pub entity_id: Option<String>,
    pub cursor: Option<String>,
    /// Page size, default 25; above 100 is 100.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
    /// `desc` (default, most recently changed first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

/// `{message, preference}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreferenceCreated {
    pub message: String,
    pub preference: PreferenceView,
}

async fn shown(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<Preference>,
) -> Result<PreferenceView, ApiError> {
    Ok(state.read(user, move |v| Ok(PreferenceView::of(v, &row))).await?)
}

#[utoipa::path(get, path = "/api/v1/preferences", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = PreferencePage), (status = 400, description = "Bad cursor, limit or order, named"),
    (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<PreferencePage>, ApiError> {
    let limit = params::page_limit(q.limit.as_deref())?;
    let ascending = params::ascending(q.order.as_deref())?;
    let page =
        state.read(&user, move |v| ops::list(v, q.entity_id.as_deref(), q.cursor.as_deref(), limit, ascending)).await?;
    Ok(axum::Json(page))
}

#[utoipa::path(post, path = "/api/v1/preferences", tag = "contacts", request_body = PreferenceInput, responses(
    (status = 201, body = PreferenceCreated), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such contact")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<PreferenceInput>,
) -> Result<(StatusCode, axum::Json<PreferenceCreated>), ApiError> {
    let row = ops::save(&state.scope(&user), None, input).await?;
    let preference = shown(&state, &user, row).await?;
    Ok((StatusCode::CREATED, axum::Json(PreferenceCreated { message: "Preference created".into(), preference })))
}

#[utoipa::path(get, path = "/api/v1/preferences/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = PreferenceView), (status = 404, description = "No such preference")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<PreferenceView>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| Ok(PreferenceView::of(v, &v.get::<Preference>(id)?))).await?))
}

#[utoipa::path(put, path = "/api/v1/preferences/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = PreferenceInput,
    responses((status = 200, body = PreferenceView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such preference or contact")))]
pub async fn replace(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<PreferenceInput>,
) -> Result<axum::Json<PreferenceView>, ApiError> {
    let row = ops::save(&state.scope(&user), Some(id), input).await?;
    Ok(axum::Json(shown(&state, &user, row).await?))
}

#[utoipa::path(delete, path = "/api/v1/preferences/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such preference")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::delete(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("Preference deleted")))
}
