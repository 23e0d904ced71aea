//! Custom fields over HTTP: the definitions (`/field-definitions`) and a contact's values
//! (`/contacts/{id}/field-values`), each handler one call of `crm::field::ops`. A definition's
//! `type` is `string`, `text`, `number`, `boolean`, `date`, `datetime`, `uri` (or `url`),
//! `email`, `phone` or `enum` (or `choice`, its options in `constraints.values`);
//! `constraints.multi` makes it a list. Values are replaced as a whole, all or nothing.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::field::ops::{self, DefinitionInput, DefinitionPage, DefinitionView, ValueInput, ValueList};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, default 25; above 100 is 100.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
}

/// `{message, field_definition}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DefinitionCreated {
    pub message: String,
    pub field_definition: DefinitionView,
}

/// `{field_values}`: every value of the contact, replacing what it had.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ValuesInput {
    pub field_values: Vec<ValueInput>,
}

const ID: &str = "The field definition's id";

#[utoipa::path(get, path = "/api/v1/field-definitions", tag = "contacts", params(ListQuery), responses(
    (status = 200, description = "By key", body = DefinitionPage), (status = 400, description = "Bad cursor")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<DefinitionPage>, ApiError> {
    let limit = params::page_limit(q.limit.as_deref())?;
    Ok(axum::Json(state.read(&user, move |v| ops::list(v, q.cursor.as_deref(), limit)).await?))
}

#[utoipa::path(post, path = "/api/v1/field-definitions", tag = "contacts", request_body = DefinitionInput, responses(
    (status = 201, body = DefinitionCreated), (status = 400, description = "Invalid, field named"),
    (status = 409, description = "`ALREADY_EXISTS`: a definition has that key")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<DefinitionInput>,
) -> Result<Tagged<DefinitionCreated>, ApiError> {
    let row = ops::create(&state.scope(&user), input).await?;
    let body =
        DefinitionCreated { message: "Field definition created".into(), field_definition: DefinitionView::of(&row) };
    Ok(tagged(&row, None, StatusCode::CREATED, body))
}

#[utoipa::path(get, path = "/api/v1/field-definitions/{id}", tag = "contacts", params(("id" = u64, Path, description = ID)),
    responses((status = 200, body = DefinitionView), (status = 404, description = "No such definition")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Tagged<DefinitionView>, ApiError> {
    let row = state.read(&user, move |v| Ok(v.get::<crate::crm::field::FieldDefinition>(id)?)).await?;
    Ok(tagged(&row, None, StatusCode::OK, DefinitionView::of(&row)))
}

/// Replaces label, type and constraints (projection and sensitivity when given). The key cannot
/// change; values already stored are kept.
#[utoipa::path(put, path = "/api/v1/field-definitions/{id}", tag = "contacts", params(("id" = u64, Path, description = ID)),
    request_body = DefinitionInput, responses((status = 200, body = DefinitionView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such definition"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<DefinitionInput>,
) -> Result<Tagged<DefinitionView>, ApiError> {
    let pre = if_match(&headers)?;
    let row = ops::update(&state.scope(&user), id, pre, input).await?;
    Ok(tagged(&row, None, StatusCode::OK, DefinitionView::of(&row)))
}

/// Deletes the definition and its value on every contact, in one transaction.
#[utoipa::path(delete, path = "/api/v1/field-definitions/{id}", tag = "contacts", params(("id" = u64, Path, description = ID)),
    responses((status = 200, body = Message), (status = 404, description = "No such definition"),
    (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    let pre = if_match(&headers)?;
    ops::delete(&state.scope(&user), id, pre).await?;
    Ok(axum::Json(Message::new("Field definition deleted")))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/field-values", tag = "contacts", params(("id" = u64, Path)),
    responses((status = 200, body = ValueList), (status = 404, description = "No such contact")))]
pub async fn values(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<ValueList>, ApiError> {
    let field_values = state.read(&user, move |v| ops::values(v, id)).await?;
    Ok(axum::Json(ValueList { message: None, field_values }))
}

#[utoipa::path(put, path = "/api/v1/contacts/{id}/field-values", tag = "contacts", params(("id" = u64, Path)),
    request_body = ValuesInput, responses((status = 200, body = ValueList),
    (status = 400, description = "A value breaks its definition, or names none: `field_values[i].value` or `.field_definition_id`"),
    (status = 404, description = "No such contact")))]
pub async fn put_values(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<ValuesInput>,
) -> Result<axum::Json<ValueList>, ApiError> {
    let field_values = ops::put_values(&state.scope(&user), id, input.field_values).await?;
    Ok(axum::Json(ValueList { message: Some("Field values saved".into()), field_values }))
}
