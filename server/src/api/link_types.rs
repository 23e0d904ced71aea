//! Link field types over HTTP (`/link-field-types`), each handler one call of
//! `crm::link_type::ops`: listed in order (the defaults seeded for a user with none), created,
//! replaced, deleted, and reordered as a whole.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::link_type::LinkFieldType;
use crate::crm::link_type::ops::{self, LinkTypeInput, LinkTypeList, LinkTypeView};
use crate::error::ApiError;
use crate::http::extract::Path;
use crate::http::json::Json;
use crate::state::AppState;

/// `{message, link_field_type}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkTypeCreated {
    pub message: String,
    pub link_field_type: LinkTypeView,
}

/// `{order}`: every one of the user's link type ids, in the order wanted.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReorderInput {
    #[schema(value_type = Vec<u64>)]
    pub order: Vec<u64>,
}

#[utoipa::path(get, path = "/api/v1/link-field-types", tag = "contacts", responses(
    (status = 200, description = "By category, position and name; a user with none gets the 19 defaults first", body = LinkTypeList)))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<LinkTypeList>, ApiError> {
    Ok(axum::Json(ops::list_seeded(&state.scope(&user)).await?))
}

#[utoipa::path(post, path = "/api/v1/link-field-types", tag = "contacts", request_body = LinkTypeInput, responses(
    (status = 201, body = LinkTypeCreated), (status = 400, description = "Invalid, field named"),
    (status = 409, description = "`ALREADY_EXISTS`: a link type has that name")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<LinkTypeInput>,
) -> Result<(StatusCode, axum::Json<LinkTypeCreated>), ApiError> {
    let row = ops::create(&state.scope(&user), input).await?;
    let body = LinkTypeCreated { message: "Link field type created".into(), link_field_type: LinkTypeView::of(&row) };
    Ok((StatusCode::CREATED, axum::Json(body)))
}

#[utoipa::path(get, path = "/api/v1/link-field-types/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = LinkTypeView), (status = 404, description = "No such link type")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<LinkTypeView>, ApiError> {
    let row = state.read(&user, move |v| Ok(v.get::<LinkFieldType>(id)?)).await?;
    Ok(axum::Json(LinkTypeView::of(&row)))
}

#[utoipa::path(put, path = "/api/v1/link-field-types/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = LinkTypeInput,
    responses((status = 200, body = LinkTypeView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such link type"), (status = 409, description = "`ALREADY_EXISTS`: another link type has that name")))]
pub async fn replace(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<LinkTypeInput>,
) -> Result<axum::Json<LinkTypeView>, ApiError> {
    Ok(axum::Json(LinkTypeView::of(&ops::replace(&state.scope(&user), id, input).await?)))
}

#[utoipa::path(delete, path = "/api/v1/link-field-types/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such link type")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::delete(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("Link field type deleted")))
}

#[utoipa::path(put, path = "/api/v1/link-field-types/reorder", tag = "contacts", request_body = ReorderInput, responses(
    (status = 200, body = LinkTypeList), (status = 400, description = "`order` does not name every link type exactly once")))]
pub async fn reorder(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ReorderInput>,
) -> Result<axum::Json<LinkTypeList>, ApiError> {
    Ok(axum::Json(ops::reorder(&state.scope(&user), input.order).await?))
}
