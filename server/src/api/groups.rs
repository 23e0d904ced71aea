//! Circles and tags over HTTP: listed with counts, renamed or deleted through `crm::groups`.

use crate::http::extract::Path;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::groups::{self, Group, GroupCount};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

async fn counts(state: &AppState, user: &AuthUser, group: Group) -> Result<Vec<GroupCount>, ApiError> {
    state.read(user, move |v| groups::counts(v, group)).await
}

async fn change(
    state: &AppState,
    user: &AuthUser,
    group: Group,
    from: String,
    to: Option<String>,
) -> Result<u64, ApiError> {
    Ok(groups::change(&state.scope(user), group, from, to).await?)
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct Rename {
    /// The new name.
    #[schema(value_type = crate::crm::schema::GroupName)]
    pub name: String,
}

#[utoipa::path(get, path = "/api/v1/circles", tag = "contacts", responses((status = 200, description = "`{circles: [{name, count}]}`")))]
pub async fn circles(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(json!({ "circles": counts(&state, &user, Group::Circle).await? })))
}

#[utoipa::path(put, path = "/api/v1/circles/{name}", tag = "contacts", params(("name" = String, Path)), request_body = Rename, responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact is in that circle")))]
pub async fn rename_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(body): Json<Rename>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Circle, name, Some(body.name)).await?;
    Ok(axum::Json(json!({ "message": "Circle renamed", "contacts_updated": n })))
}

#[utoipa::path(delete, path = "/api/v1/circles/{name}", tag = "contacts", params(("name" = String, Path)), responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact is in that circle")))]
pub async fn delete_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Circle, name, None).await?;
    Ok(axum::Json(json!({ "message": "Circle removed from every contact", "contacts_updated": n })))
}

#[utoipa::path(get, path = "/api/v1/tags", tag = "contacts", responses((status = 200, description = "`{tags: [{name, count}]}`")))]
pub async fn tags(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(json!({ "tags": counts(&state, &user, Group::Tag).await? })))
}

#[utoipa::path(put, path = "/api/v1/tags/{name}", tag = "contacts", params(("name" = String, Path)), request_body = Rename, responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact has that tag")))]
pub async fn rename_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(body): Json<Rename>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Tag, name, Some(body.name)).await?;
    Ok(axum::Json(json!({ "message": "Tag renamed", "contacts_updated": n })))
}

#[utoipa::path(delete, path = "/api/v1/tags/{name}", tag = "contacts", params(("name" = String, Path)), responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact has that tag")))]
pub async fn delete_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Tag, name, None).await?;
    Ok(axum::Json(json!({ "message": "Tag removed from every contact", "contacts_updated": n })))
}
