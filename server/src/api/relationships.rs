//! Relationships between two of the user's contacts: typed edges (known tokens such as
//! `spouse_of`, `parent_of`, `friend_of`, everyday words mapped onto them, or a custom type),
//! listed from either end, and the network graph.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::{Precondition, Row, UserView};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::contact::Contact;
use crate::crm::records::{Activity, Relationship, relation_token};
use crate::crm::relationships;
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

fn listed(view: &UserView, contact: u64, outgoing: bool) -> Result<Vec<Value>, ApiError> {
    let me = view.get::<Contact>(contact)?;
    let mut out = Vec::new();
    for (edge, from_here) in relationships::edges_of(view, contact)? {
        if from_here != outgoing {
            continue;
        }
        let other = view.get::<Contact>(if outgoing { edge.body.target } else { edge.body.source })?;
        let (source, target) = if outgoing { (&me, &other) } else { (&other, &me) };
        let mut item = relationships::edge_view(&edge, source, target);
        item["other_party_contact_id"] = json!(other.id);
        item["other_party_name"] = json!(other.body.name());
        out.push(item);
    }
    Ok(out)
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/relationships", tag = "relationships", params(("id" = u64, Path)), responses((status = 200, description = "`{relationships: [edge]}` starting at this contact"), (status = 404, description = "No such contact")))]
pub async fn outgoing(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let list = state.blocking(move |_| listed(&scope.view()?, id, true)).await??;
    Ok(axum::Json(json!({ "relationships": list })))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/incoming-relationships", tag = "relationships", params(("id" = u64, Path)), responses((status = 200, description = "`{relationships: [edge]}` ending at this contact"), (status = 404, description = "No such contact")))]
pub async fn incoming(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let list = state.blocking(move |_| listed(&scope.view()?, id, false)).await??;
    Ok(axum::Json(json!({ "relationships": list })))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RelationshipInput {
    /// The other contact (integer id).
    pub target_id: u64,
    /// A relation token (`spouse_of`, `parent_of`, ...), an everyday word (`sister`), or a custom type.
    #[serde(rename = "type")]
    pub kind: String,
    /// `normal` (default), `private` or `secret`.
    pub sensitivity: Option<String>,
    pub note: Option<String>,
}

fn relationship(source: u64, input: RelationshipInput) -> Relationship {
    Relationship {
        source,
        target: input.target_id,
        kind: relation_token(&input.kind),
        sensitivity: input.sensitivity.unwrap_or_else(|| "normal".into()),
        note: input.note.unwrap_or_default(),
    }
}

fn respond(view: &UserView, row: &Row<Relationship>, status: StatusCode) -> Result<Response, ApiError> {
    let (source, target) = (view.get::<Contact>(row.body.source)?, view.get::<Contact>(row.body.target)?);
    Ok((status, axum::Json(relationships::edge_view(row, &source, &target))).into_response())
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/relationships", tag = "relationships", params(("id" = u64, Path)), request_body = RelationshipInput, responses(
    (status = 201, description = "The edge"), (status = 400, description = "Invalid, field named"), (status = 404, description = "Either contact is not yours")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<RelationshipInput>,
) -> Result<Response, ApiError> {
    let edge = relationship(id, input);
    let scope = state.scope(&user);
    let row = scope
        .write_async(move |tx| {
            tx.get::<Contact>(edge.source)?;
            tx.get::<Contact>(edge.target)?;
            tx.create(edge.clone())
        })
        .await?;
    let view = scope.view()?;
    respond(&view, &row, StatusCode::CREATED)
}

#[utoipa::path(put, path = "/api/v1/contacts/{id}/relationships/{rid}", tag = "relationships", params(("id" = u64, Path), ("rid" = u64, Path)), request_body = RelationshipInput, responses(
    (status = 200, description = "The edge"), (status = 404, description = "No such edge of this contact")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, rid)): Path<(u64, u64)>,
    Json(input): Json<RelationshipInput>,
) -> Result<Response, ApiError> {
    let edge = relationship(id, input);
    let scope = state.scope(&user);
    let row = scope
        .write_async(move |tx| {
            let current = tx.get::<Relationship>(rid)?;
            if current.body.source != id && current.body.target != id {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            tx.get::<Contact>(edge.target)?;
            tx.put(rid, Precondition::Any, edge.clone())
        })
        .await?;
    let view = scope.view()?;
    respond(&view, &row, StatusCode::OK)
}

#[utoipa::path(delete, path = "/api/v1/contacts/{id}/relationships/{rid}", tag = "relationships", params(("id" = u64, Path), ("rid" = u64, Path)), responses(
    (status = 200, description = "Deleted"), (status = 404, description = "No such edge of this contact")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, rid)): Path<(u64, u64)>,
) -> Result<axum::Json<Value>, ApiError> {
    state
        .scope(&user)
        .write_async(move |tx| {
            let current = tx.get::<Relationship>(rid)?;
            if current.body.source != id && current.body.target != id {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            tx.delete::<Relationship>(rid, Precondition::Any)
        })
        .await?;
    Ok(axum::Json(json!({ "message": "Relationship deleted" })))
}

/// The user's network: contacts joined by relationships, plus activities shared by two or more.
#[utoipa::path(get, path = "/api/v1/graph", tag = "relationships", responses((status = 200, description = "`{nodes: [{id, type, label}], edges: [{id, source, target, type, label}]}`")))]
pub async fn graph(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state
        .blocking(move |_| {
            let view = scope.view()?;
            let mut nodes = Vec::new();
            let mut edges = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            let mut node = |id: u64, nodes: &mut Vec<Value>| -> Result<(), ApiError> {
                if seen.insert(id) {
                    let c = view.get::<Contact>(id)?;
                    nodes.push(json!({ "id": format!("c-{id}"), "type": "contact", "label": c.body.name() }));
                }
                Ok(())
            };
            for edge in view.list::<Relationship>()? {
                node(edge.body.source, &mut nodes)?;
                node(edge.body.target, &mut nodes)?;
                edges.push(json!({ "id": format!("r-{}", edge.id), "source": format!("c-{}", edge.body.source), "target": format!("c-{}", edge.body.target), "type": "relationship", "label": edge.body.kind }));
            }
            for activity in view.list::<Activity>()?.into_iter().filter(|a| a.body.contact_ids.len() >= 2) {
                nodes.push(json!({ "id": format!("a-{}", activity.id), "type": "activity", "label": activity.body.title }));
                for cid in &activity.body.contact_ids {
                    if view.get::<Contact>(*cid).is_ok() {
                        node(*cid, &mut nodes)?;
                        edges.push(json!({ "id": format!("a-{}-c-{cid}", activity.id), "source": format!("a-{}", activity.id), "target": format!("c-{cid}"), "type": "activity", "label": activity.body.title }));
                    }
                }
            }
            Ok::<_, ApiError>(json!({ "nodes": nodes, "edges": edges }))
        })
        .await??;
    Ok(axum::Json(body))
}
