//! The duplicate scan and merging over HTTP, at the existing clients' paths: each handler extracts, calls
//! one operation of `crm::duplicate::ops`, and maps the result.

use axum::extract::State;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::duplicate::merge::{self, MergeInput, MergePreview, Merged};
use crate::crm::duplicate::ops::{self, DismissInput, DuplicatePage, DuplicateQuery};
use crate::error::ApiError;
use crate::http::extract::Query;
use crate::http::json::Json;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/contacts/duplicates", tag = "contacts", params(DuplicateQuery), responses(
    (status = 200, description = "Pairs of your contacts that are probably one person, best first: the reasons (same email, phone or name; a close name with a shared organisation or address) and a confidence; dismissed pairs left out", body = DuplicatePage),
    (status = 400, description = "A page or limit out of its bounds, named")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(query): Query<DuplicateQuery>,
) -> Result<axum::Json<DuplicatePage>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| ops::scan(v, &query)).await?))
}

#[utoipa::path(post, path = "/api/v1/contacts/duplicates/dismiss", tag = "contacts", request_body = DismissInput, responses(
    (status = 200, description = "The pair is never offered again (dismissing it twice is fine)", body = Message),
    (status = 404, description = "Not two different contacts of yours")))]
pub async fn dismiss(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<DismissInput>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::dismiss(&state.scope(&user), input).await?;
    Ok(axum::Json(Message::new("Pair dismissed")))
}

#[utoipa::path(post, path = "/api/v1/contacts/merge/preview", tag = "contacts", request_body = MergeInput, responses(
    (status = 200, description = "What the kept contact will hold, field by field: the lists joined, each field with one value, the conflicts to choose from (keeper_value, loser_value), and what moves", body = MergePreview),
    (status = 400, description = "keep_id and merge_id are the same (INVALID_INPUT naming merge_id)"),
    (status = 404, description = "Not a contact of yours")))]
pub async fn merge_preview(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<MergeInput>,
) -> Result<axum::Json<MergePreview>, ApiError> {
    Ok(axum::Json(merge::preview(&state.scope(&user), input).await?))
}

#[utoipa::path(post, path = "/api/v1/contacts/merge", tag = "contacts", request_body = MergeInput, responses(
    (status = 200, description = "Merged in one transaction: the kept contact, and what moved to it; the merged one is deleted", body = Merged),
    (status = 400, description = "A conflict without a chosen value (VALIDATION_ERROR naming resolutions), or the same contact twice"),
    (status = 404, description = "Not a contact of yours")))]
pub async fn merge_contacts(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<MergeInput>,
) -> Result<axum::Json<Merged>, ApiError> {
    let undo_id = input.merge_id;
    let (row, moved) = merge::merge(&state.scope(&user), input).await?;
    let id = row.id;
    let (_, contact) = state.read(&user, move |v| crate::crm::contact::detail::get(v, id)).await?;
    Ok(axum::Json(Merged { message: "Contacts merged".into(), contact, moved, undo_id }))
}

#[utoipa::path(post, path = "/api/v1/contacts/merge/{id}/undo", tag = "contacts", params(("id" = u64, Path, description = "The merged contact's id (the merge's undo_id)")), responses(
    (status = 200, description = "Undone: both contacts and every record the merge moved or set aside are back as they were, at their own ids; the contact merged away is the answer", body = crate::crm::contact::view::ContactView),
    (status = 404, description = "No merge of yours to undo under this id"),
    (status = 409, description = "Something the merge touched changed since: it cannot be undone exactly")))]
pub async fn merge_undo(
    State(state): State<AppState>,
    user: AuthUser,
    crate::http::extract::Path(id): crate::http::extract::Path<u64>,
) -> Result<axum::Json<crate::crm::contact::view::ContactView>, ApiError> {
    let restored = merge::undo(&state.scope(&user), id).await?;
    let (_, contact) = state.read(&user, move |v| crate::crm::contact::detail::get(v, restored)).await?;
    Ok(axum::Json(contact))
}

#[utoipa::path(post, path = "/api/v1/contacts/bulk", tag = "contacts", request_body = crate::crm::contact::bulk::BulkInput, responses(
    (status = 200, description = "Done in one transaction: how many succeeded, and each contact that could not be acted on with why (not yours, not there)", body = crate::crm::contact::bulk::BulkResult),
    (status = 400, description = "No contact or more than 500 named, or the circle or tag missing for its action; field named")))]
pub async fn bulk(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<crate::crm::contact::bulk::BulkInput>,
) -> Result<axum::Json<crate::crm::contact::bulk::BulkResult>, ApiError> {
    Ok(axum::Json(crate::crm::contact::bulk::run(&state.scope(&user), input).await?))
}
