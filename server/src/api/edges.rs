//! Relationship edges at the existing clients' shape (`/relationship-edges`), each handler one
//! call of `crm::relationship::edges`. An edge names its ends by vCard UID (`source_id`,
//! `target_id`); a new contact can be made from a name on the way (`source_thin`,
//! `target_thin`). Suggestions (`status: suggested`) are accepted with `PATCH .../accept` and
//! turned down with `DELETE`. Accept and suggest take no body.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::relationship::edges::{self, EdgeFilter, EdgeInput, EdgePage, Suggested};
use crate::crm::relationship::ops::{RelationshipView, shown};
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only edges touching this contact (vCard UID or id).
    pub contact_id: Option<String>,
    /// `confirmed` or `suggested`.
    #[param(pattern = "^(confirmed|suggested)?$")]
    pub status: Option<String>,
    /// A relation token.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub cursor: Option<String>,
    /// Page size, default 25; above 100 is 100.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
    /// `desc` (default, most recently changed first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

/// `{relationship_edge}` (no message, as the existing clients read it).
#[derive(Debug, Serialize, ToSchema)]
pub struct EdgeCreated {
    pub relationship_edge: RelationshipView,
}

async fn view_of(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<crate::crm::relationship::Relationship>,
) -> Result<RelationshipView, ApiError> {
    Ok(state.read(user, move |v| shown(v, &row)).await?)
}

#[utoipa::path(get, path = "/api/v1/relationship-edges", tag = "relationships", params(ListQuery), responses(
    (status = 200, body = EdgePage), (status = 400, description = "Bad cursor, status or order, named"),
    (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<EdgePage>, ApiError> {
    if let Some(status) = q.status.as_deref().filter(|s| !s.is_empty() && !matches!(*s, "confirmed" | "suggested")) {
        return Err(ApiError::invalid_input("status", format!("{status:?} is not confirmed or suggested")));
    }
    let filter = EdgeFilter {
        contact: q.contact_id,
        status: q.status,
        kind: q.kind,
        cursor: q.cursor,
        limit: params::page_limit(q.limit.as_deref())?,
        ascending: params::ascending(q.order.as_deref())?,
    };
    Ok(axum::Json(state.read(&user, move |v| edges::list(v, &filter)).await?))
}

#[utoipa::path(post, path = "/api/v1/relationship-edges", tag = "relationships", request_body = EdgeInput, responses(
    (status = 201, body = EdgeCreated), (status = 400, description = "Invalid, field named (`source_id`, `target_id`, `type`, ...)"),
    (status = 404, description = "No such contact")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<EdgeInput>,
) -> Result<(StatusCode, axum::Json<EdgeCreated>), ApiError> {
    let row = edges::create(&state.scope(&user), input).await?;
    Ok((StatusCode::CREATED, axum::Json(EdgeCreated { relationship_edge: view_of(&state, &user, row).await? })))
}

#[utoipa::path(get, path = "/api/v1/relationship-edges/{id}", tag = "relationships", params(("id" = u64, Path)), responses(
    (status = 200, body = RelationshipView), (status = 404, description = "No such edge")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<RelationshipView>, ApiError> {
    let view = state.read(&user, move |v| shown(v, &v.get::<crate::crm::relationship::Relationship>(id)?)).await?;
    Ok(axum::Json(view))
}

#[utoipa::path(put, path = "/api/v1/relationship-edges/{id}", tag = "relationships", params(("id" = u64, Path)), request_body = EdgeInput,
    responses((status = 200, body = RelationshipView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such edge or contact")))]
pub async fn replace(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<EdgeInput>,
) -> Result<axum::Json<RelationshipView>, ApiError> {
    let row = edges::replace(&state.scope(&user), id, input).await?;
    Ok(axum::Json(view_of(&state, &user, row).await?))
}

#[utoipa::path(delete, path = "/api/v1/relationship-edges/{id}", tag = "relationships", params(("id" = u64, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such edge")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    edges::delete(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("Relationship edge deleted")))
}

#[utoipa::path(patch, path = "/api/v1/relationship-edges/{id}/accept", tag = "relationships", params(("id" = u64, Path)), responses(
    (status = 200, body = RelationshipView), (status = 404, description = "No such edge"),
    (status = 409, description = "`CONFLICT`: the edge is not a pending suggestion")))]
pub async fn accept(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<RelationshipView>, ApiError> {
    let row = edges::accept(&state.scope(&user), id).await?;
    Ok(axum::Json(view_of(&state, &user, row).await?))
}

#[utoipa::path(post, path = "/api/v1/relationship-edges/suggest", tag = "relationships", responses(
    (status = 200, description = "The edges this run suggested (none when nothing new follows)", body = Suggested)))]
pub async fn suggest(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Suggested>, ApiError> {
    let rows = edges::suggest(&state.scope(&user)).await?;
    let suggested_edges: Vec<RelationshipView> =
        state.read(&user, move |v| rows.iter().map(|r| shown(v, r)).collect::<crate::crm::Result<_>>()).await?;
    Ok(axum::Json(Suggested {
        message: "Relationship suggestions generated".into(),
        total: suggested_edges.len() as u64,
        suggested_edges,
    }))
}
