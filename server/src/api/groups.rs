//! Circles and tags over HTTP: listed with counts, renamed or deleted through `crm::groups`.

use crate::http::extract::Path;
use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::groups::{self, CircleList, Group, GroupChanged, GroupCount, TagList};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

async fn counts(state: &AppState, user: &AuthUser, group: Group) -> Result<Vec<GroupCount>, ApiError> {
    Ok(state.read(user, move |v| groups::counts(v, group)).await?)
}

/// Renames (`to`) or removes a circle or tag on every contact, answering `{message, contacts_updated}`.
async fn change(
    state: &AppState,
    user: &AuthUser,
    group: Group,
    from: String,
    to: Option<String>,
    message: &str,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    let contacts_updated = groups::change(&state.scope(user), group, from, to).await?;
    Ok(axum::Json(GroupChanged { message: message.into(), contacts_updated }))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct Rename {
    /// The new name.
    #[schema(value_type = crate::crm::schema::GroupName)]
    pub name: String,
}

#[utoipa::path(get, path = "/api/v1/circles", tag = "contacts", responses((status = 200, body = CircleList)))]
pub async fn circles(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<CircleList>, ApiError> {
    Ok(axum::Json(CircleList { circles: counts(&state, &user, Group::Circle).await? }))
}

#[utoipa::path(put, path = "/api/v1/circles/{name}", tag = "contacts", params(("name" = String, Path)), request_body = Rename, responses((status = 200, body = GroupChanged), (status = 404, description = "No contact is in that circle")))]
pub async fn rename_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(body): Json<Rename>,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    change(&state, &user, Group::Circle, name, Some(body.name), "Circle renamed").await
}

#[utoipa::path(delete, path = "/api/v1/circles/{name}", tag = "contacts", params(("name" = String, Path)), responses((status = 200, body = GroupChanged), (status = 404, description = "No contact is in that circle")))]
pub async fn delete_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    change(&state, &user, Group::Circle, name, None, "Circle removed from every contact").await
}

#[utoipa::path(get, path = "/api/v1/tags", tag = "contacts", responses((status = 200, body = TagList)))]
pub async fn tags(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<TagList>, ApiError> {
    Ok(axum::Json(TagList { tags: counts(&state, &user, Group::Tag).await? }))
}

#[utoipa::path(put, path = "/api/v1/tags/{name}", tag = "contacts", params(("name" = String, Path)), request_body = Rename, responses((status = 200, body = GroupChanged), (status = 404, description = "No contact has that tag")))]
pub async fn rename_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(body): Json<Rename>,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    change(&state, &user, Group::Tag, name, Some(body.name), "Tag renamed").await
}

#[utoipa::path(delete, path = "/api/v1/tags/{name}", tag = "contacts", params(("name" = String, Path)), responses((status = 200, body = GroupChanged), (status = 404, description = "No contact has that tag")))]
pub async fn delete_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    change(&state, &user, Group::Tag, name, None, "Tag removed from every contact").await
}
