//! Notes: free text with a date, about one contact or unassigned. Full replacement on PUT
//! (leaving `contact_id` out unassigns the note), conditional writes, soft deletes.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use crate::auth::AuthUser;
use crate::crm::note::Note;
use crate::crm::{
    note::ops as notes, note::ops::NoteInput, note::ops::NotePage, note::ops::NoteSaved, note::ops::NoteView,
};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::http::params::DatedQuery;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/contacts/{id}/notes", tag = "notes", params(("id" = u64, Path), DatedQuery), responses((status = 200, description = "`{notes, next_cursor, limit}`", body = NotePage), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<DatedQuery>,
) -> Result<axum::Json<NotePage>, ApiError> {
    let filter = q.filter()?;
    Ok(axum::Json(state.read(&user, move |v| notes::page(v, Some(id), &filter)).await?))
}

#[utoipa::path(get, path = "/api/v1/notes", tag = "notes", params(DatedQuery), responses((status = 200, description = "Unassigned notes: `{notes, next_cursor, limit, total}`", body = NotePage)))]
pub async fn list_unassigned(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<DatedQuery>,
) -> Result<axum::Json<NotePage>, ApiError> {
    let filter = q.filter()?;
    Ok(axum::Json(state.read(&user, move |v| notes::page(v, None, &filter)).await?))
}

fn created(row: &mycorrhizal_engine::Row<Note>) -> Tagged<NoteSaved> {
    tagged(row, None, StatusCode::CREATED, NoteSaved { message: "Note created".into(), note: NoteView::of(row) })
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/notes", tag = "notes", params(("id" = u64, Path)), request_body = NoteInput, responses((status = 201, body = NoteSaved), (status = 404, description = "No such contact")))]
pub async fn create_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<NoteInput>,
) -> Result<Tagged<NoteSaved>, ApiError> {
    Ok(created(&notes::create(&state.scope(&user), Some(id), input, state.engine.clock().now()).await?))
}

#[utoipa::path(post, path = "/api/v1/notes", tag = "notes", request_body = NoteInput, responses((status = 201, body = NoteSaved), (status = 404, description = "`contact_id` is not your contact")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<NoteInput>,
) -> Result<Tagged<NoteSaved>, ApiError> {
    let contact = input.contact_id;
    Ok(created(&notes::create(&state.scope(&user), contact, input, state.engine.clock().now()).await?))
}

#[utoipa::path(get, path = "/api/v1/notes/{id}", tag = "notes", params(("id" = u64, Path)), responses((status = 200, description = "The note, with `ETag`", body = NoteView), (status = 404, description = "No such note")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<NoteView>, ApiError> {
    let row = state.read(&user, move |v| notes::get(v, id)).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, NoteView::of(&row)))
}

#[utoipa::path(put, path = "/api/v1/notes/{id}", tag = "notes", params(("id" = u64, Path)), request_body = NoteInput, responses(
    (status = 200, body = NoteSaved), (status = 404, description = "No such note, or contact not yours"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<NoteInput>,
) -> Result<Tagged<NoteSaved>, ApiError> {
    let pre = if_match(&headers)?;
    let row = notes::update(&state.scope(&user), id, pre, input).await?;
    Ok(tagged(&row, None, StatusCode::OK, NoteSaved { message: "Note updated".into(), note: NoteView::of(&row) }))
}

#[utoipa::path(delete, path = "/api/v1/notes/{id}", tag = "notes", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such note"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    crate::crm::note::ops::delete(&state.scope(&user), id, crate::http::conditional::if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Note deleted")))
}
