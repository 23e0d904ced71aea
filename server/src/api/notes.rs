//! Notes: free text with a date, about one contact or unassigned. Full replacement on PUT
//! (leaving `contact_id` out unassigns the note), conditional writes, soft deletes.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use mycorrhizal_engine::{Row, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::calendar::{date_range, instant};
use crate::crm::contact::ops::require_contacts;
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::notes;
use crate::crm::records::{BY_CONTACT, Note};
use crate::error::ApiError;
use crate::http::conditional::{if_match, tagged};
use crate::http::json::Json;
use crate::http::params::{self};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct NoteInput {
    /// 1 to 5000 characters.
    pub content: String,
    /// RFC 3339 instant or `YYYY-MM-DD`; default now.
    pub date: Option<String>,
    /// The contact it is about; absent or null for an unassigned note.
    pub contact_id: Option<u64>,
}

/// `date` defaults to `fallback` (now for a new note, the stored date on update).
fn note(input: NoteInput, contact: Option<u64>, fallback: jiff::Timestamp) -> Result<Note, ApiError> {
    let date = match input.date.as_deref() {
        Some(d) if !d.trim().is_empty() => instant("date", d)?,
        _ => fallback,
    };
    Ok(Note { content: input.content, date, contact_id: contact })
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct NoteQuery {
    /// Case-insensitive substring of the content.
    pub search: Option<String>,
    /// Inclusive `YYYY-MM-DD` bounds on the note date.
    pub from_date: Option<String>,
    pub to_date: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<String>,
    /// `desc` (default, newest first) or `asc`.
    pub order: Option<String>,
}

fn page(view: &UserView, contact: u64, q: &NoteQuery) -> Result<Value, ApiError> {
    let (lo, hi) = date_range(q.from_date.as_deref(), q.to_date.as_deref())?;
    let descending = q.order.as_deref() != Some("asc");
    let limit = params::limit(q.limit.as_deref());
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let from = format!("{contact:020}{lo:020}");
    let to = if hi == i64::MAX { format!("{:020}", contact + 1) } else { format!("{contact:020}{hi:020}") };
    let needle = q.search.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let walk = Walk {
        index: BY_CONTACT,
        from: &from,
        to: Some(&to),
        after: after.as_ref().map(|(v, id)| (v.as_str(), *id)),
        descending,
    };
    let keep = |r: &Row<Note>| needle.as_ref().is_none_or(|n| r.body.content.to_lowercase().contains(n));
    let found = view.walk::<Note>(walk, limit, keep)?;
    let next = found.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default();
    let notes: Vec<Value> = found.rows.iter().map(notes::view_fn).collect();
    let mut body = json!({ "notes": notes, "next_cursor": next, "limit": limit });
    if contact == 0 {
        body["total"] = json!(view.walk::<Note>(Walk { after: None, ..walk }, usize::MAX, keep)?.rows.len());
    }
    Ok(body)
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/notes", tag = "notes", params(("id" = u64, Path), NoteQuery), responses((status = 200, description = "`{notes, next_cursor, limit}`"), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<NoteQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state
        .blocking(move |_| {
            let view = scope.view()?;
            require_contacts(&view, &[id])?;
            page(&view, id, &q)
        })
        .await??;
    Ok(axum::Json(body))
}

#[utoipa::path(get, path = "/api/v1/notes", tag = "notes", params(NoteQuery), responses((status = 200, description = "Unassigned notes: `{notes, next_cursor, limit, total}`")))]
pub async fn list_unassigned(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<NoteQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state.blocking(move |_| page(&scope.view()?, 0, &q)).await??;
    Ok(axum::Json(body))
}

async fn create_with(state: &AppState, user: &AuthUser, note: Note) -> Result<Response, ApiError> {
    let row = state
        .scope(user)
        .write_async(move |tx| {
            if let Some(contact) = note.contact_id {
                tx.get::<crate::crm::contact::Contact>(contact)?;
            }
            tx.create(note.clone())
        })
        .await?;
    Ok(tagged(&row, None, StatusCode::CREATED, &json!({ "message": "Note created", "note": notes::view(&row) })))
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/notes", tag = "notes", params(("id" = u64, Path)), request_body = NoteInput, responses((status = 201, description = "`{message, note}`"), (status = 404, description = "No such contact")))]
pub async fn create_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<NoteInput>,
) -> Result<Response, ApiError> {
    let note = note(input, Some(id), state.engine.clock().now())?;
    create_with(&state, &user, note).await
}

#[utoipa::path(post, path = "/api/v1/notes", tag = "notes", request_body = NoteInput, responses((status = 201, description = "`{message, note}`"), (status = 404, description = "`contact_id` is not your contact")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<NoteInput>,
) -> Result<Response, ApiError> {
    let contact = input.contact_id;
    let note = note(input, contact, state.engine.clock().now())?;
    create_with(&state, &user, note).await
}

#[utoipa::path(get, path = "/api/v1/notes/{id}", tag = "notes", params(("id" = u64, Path)), responses((status = 200, description = "The note, with `ETag`"), (status = 404, description = "No such note")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let row = state.scope(&user).get::<Note>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &notes::view(&row)))
}

#[utoipa::path(put, path = "/api/v1/notes/{id}", tag = "notes", params(("id" = u64, Path)), request_body = NoteInput, responses(
    (status = 200, description = "`{message, note}`"), (status = 404, description = "No such note, or contact not yours"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<NoteInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let contact = input.contact_id;
    let current = state.scope(&user).get::<Note>(id)?;
    let note = note(input, contact, current.body.date)?;
    let row = state
        .scope(&user)
        .write_async(move |tx| {
            if let Some(contact) = note.contact_id {
                tx.get::<crate::crm::contact::Contact>(contact)?;
            }
            tx.put(id, pre, note.clone())
        })
        .await?;
    Ok(tagged(&row, None, StatusCode::OK, &json!({ "message": "Note updated", "note": notes::view(&row) })))
}

#[utoipa::path(delete, path = "/api/v1/notes/{id}", tag = "notes", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such note"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    crate::http::conditional::delete_record::<Note>(&state, &user, &headers, id, "Note deleted").await
}
