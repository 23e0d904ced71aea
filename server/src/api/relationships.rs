//! Relationships over HTTP: each handler extracts, calls one operation of `crm::relationship`,
//! and maps the result.

use crate::http::extract::Path;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::Row;

use crate::auth::AuthUser;
use crate::crm::relationship::Relationship;
use crate::crm::relationship::ops as relationships;
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/contacts/{id}/relationships", tag = "relationships", params(("id" = u64, Path)), responses((status = 200, description = "`{relationships: [edge]}` starting at this contact", body = relationships::RelationshipList), (status = 404, description = "No such contact")))]
pub async fn outgoing(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<relationships::RelationshipList>, ApiError> {
    let list = state.read(&user, move |v| relationships::listed(v, id, true)).await?;
    Ok(axum::Json(list))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/incoming-relationships", tag = "relationships", params(("id" = u64, Path)), responses((status = 200, description = "`{relationships: [edge]}` ending at this contact", body = relationships::RelationshipList), (status = 404, description = "No such contact")))]
pub async fn incoming(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<relationships::RelationshipList>, ApiError> {
    let list = state.read(&user, move |v| relationships::listed(v, id, false)).await?;
    Ok(axum::Json(list))
}

async fn respond(
    state: &AppState,
    user: &AuthUser,
    row: Row<Relationship>,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let view = state.read(user, move |v| relationships::shown(v, &row)).await?;
    Ok((status, axum::Json(view)).into_response())
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/relationships", tag = "relationships", params(("id" = u64, Path)), request_body = relationships::RelationshipInput, responses(
    (status = 201, description = "The edge", body = relationships::RelationshipView), (status = 400, description = "Invalid, field named"), (status = 404, description = "Either contact is not yours")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<relationships::RelationshipInput>,
) -> Result<Response, ApiError> {
    let row = relationships::create(&state.scope(&user), id, input).await?;
    respond(&state, &user, row, StatusCode::CREATED).await
}

#[utoipa::path(put, path = "/api/v1/contacts/{id}/relationships/{rid}", tag = "relationships", params(("id" = u64, Path), ("rid" = u64, Path)), request_body = relationships::RelationshipInput, responses(
    (status = 200, description = "The edge", body = relationships::RelationshipView), (status = 404, description = "No such edge of this contact")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, rid)): Path<(u64, u64)>,
    Json(input): Json<relationships::RelationshipInput>,
) -> Result<Response, ApiError> {
    let row = relationships::update(&state.scope(&user), id, rid, input).await?;
    respond(&state, &user, row, StatusCode::OK).await
}

#[utoipa::path(delete, path = "/api/v1/contacts/{id}/relationships/{rid}", tag = "relationships", params(("id" = u64, Path), ("rid" = u64, Path)), responses(
    (status = 200, body = crate::crm::Message, description = "Deleted"), (status = 404, description = "No such edge of this contact")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, rid)): Path<(u64, u64)>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    relationships::delete(&state.scope(&user), id, rid).await?;
    Ok(axum::Json(crate::crm::Message::new("Relationship deleted")))
}

/// The user's network: contacts joined by relationships, plus activities shared by two or more.
#[utoipa::path(get, path = "/api/v1/graph", tag = "relationships", responses((status = 200, description = "`{nodes: [{id, type, label}], edges: [{id, source, target, type, label}]}`; every active contact is a node", body = relationships::Graph)))]
pub async fn graph(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<relationships::Graph>, ApiError> {
    let body = state.read(&user, |v| relationships::graph(v, true)).await?;
    Ok(axum::Json(body))
}

#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConnectionsQuery {
    /// The contact to start from: its vCard UID (or id).
    #[param(required = true, min_length = 1)]
    pub from: Option<String>,
    /// Most hops, 1 to 5 (default 3).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 5)]
    pub depth: Option<String>,
    /// Only chains through this relation: a token (`sibling_of`) or a word (`brothers`).
    pub relation: Option<String>,
}

/// The shortest chain of confirmed, non-secret relationships to each contact reachable.
#[utoipa::path(get, path = "/api/v1/graph/connections", tag = "relationships", params(ConnectionsQuery), responses(
    (status = 200, body = crate::crm::relationship::connections::Connections),
    (status = 400, description = "`from` missing, or `depth` not 1 to 5"), (status = 404, description = "No such contact")))]
pub async fn connections(
    State(state): State<AppState>,
    user: AuthUser,
    crate::http::extract::Query(q): crate::http::extract::Query<ConnectionsQuery>,
) -> Result<axum::Json<crate::crm::relationship::connections::Connections>, ApiError> {
    let depth = match q.depth.as_deref().map(str::trim) {
        None | Some("") => 3,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|d| (1..=5).contains(d))
            .ok_or_else(|| ApiError::invalid_input("depth", "must be 1 to 5"))?,
    };
    let from = q.from.unwrap_or_default();
    let found = state
        .read(&user, move |v| {
            crate::crm::relationship::connections::connections(v, &from, depth, q.relation.as_deref())
        })
        .await?;
    Ok(axum::Json(found))
}
