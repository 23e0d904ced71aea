//! Contact shares over HTTP (`/contact-shares`), each handler one call of `crm::share::ops`:
//! a copy of one contact sent to another user of this instance, which the recipient previews
//! and accepts through the import pipeline, or declines. The other user is checked here
//! (accounts are not CRM data).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::import::ConfirmRequest;
use crate::auth::{AuthUser, accounts};
use crate::crm::Message;
use crate::crm::cursor::SyncInfo;
use crate::crm::import::{Decision, ImportResult};
use crate::crm::share::ops::{self, ShareError, ShareInput, ShareView};
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

impl From<ShareError> for ApiError {
    fn from(e: ShareError) -> Self {
        match e {
            ShareError::Share(e) => e.into(),
            ShareError::Import(e) => e.into(),
        }
    }
}

/// `{message, contact_share}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShareCreated {
    pub message: String,
    pub contact_share: ShareView,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    pub cursor: Option<String>,
    /// Page size, default 25; above 100 is 100.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
    /// `desc` (default, most recently changed first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

/// `{contact_shares, usernames, total, next_cursor, limit, sync}`: `usernames` names the other
/// user of each share by id (a deleted account is absent).
#[derive(Debug, Serialize, ToSchema)]
pub struct SharePage {
    pub contact_shares: Vec<ShareView>,
    pub usernames: BTreeMap<String, String>,
    pub total: u64,
    pub next_cursor: String,
    pub limit: usize,
    pub sync: SyncInfo,
}

#[utoipa::path(post, path = "/api/v1/contact-shares", tag = "contacts", request_body = ShareInput, responses(
    (status = 200, body = ShareCreated), (status = 400, description = "Invalid, field named (`to_user_id` yourself, `sections` unknown or none)"),
    (status = 404, description = "No such recipient, or no such contact of yours")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ShareInput>,
) -> Result<axum::Json<ShareCreated>, ApiError> {
    let to = input.to_user_id;
    if to == 0 {
        return Err(ApiError::validation("to_user_id", "is required: the recipient's id (GET /users/directory)"));
    }
    if to != user.id.0 && !accounts::directory(&state.engine, user.id.0).await?.iter().any(|(id, _)| *id == to) {
        return Err(ApiError::NotFound);
    }
    let row = ops::create(&state.engine, user.id, mycorrhizal_engine::UserId(to), input).await?;
    let contact_share = ShareView::of(user.id.0, &row);
    Ok(axum::Json(ShareCreated { message: "Share created".into(), contact_share }))
}

async fn page(
    state: AppState,
    user: AuthUser,
    q: ListQuery,
    incoming: bool,
) -> Result<axum::Json<SharePage>, ApiError> {
    let limit = params::page_limit(q.limit.as_deref())?;
    let ascending = params::ascending(q.order.as_deref())?;
    let me = user.id.0;
    let page = state.read(&user, move |v| ops::list(v, incoming, q.cursor.as_deref(), limit, ascending)).await?;
    let names: BTreeMap<u64, String> = accounts::directory(&state.engine, me).await?.into_iter().collect();
    let contact_shares: Vec<ShareView> = page.shares.iter().map(|r| ShareView::of(me, r)).collect();
    let usernames = page
        .shares
        .iter()
        .filter_map(|r| names.get(&r.body.other_user).map(|n| (r.body.other_user.to_string(), n.clone())))
        .collect();
    Ok(axum::Json(SharePage {
        contact_shares,
        usernames,
        total: page.total,
        next_cursor: page.next_cursor,
        limit,
        sync: SyncInfo::full_resync(),
    }))
}

#[utoipa::path(get, path = "/api/v1/contact-shares/incoming", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = SharePage, description = "Shares sent to you, every status"),
    (status = 400, description = "Bad cursor, limit or order, named")))]
pub async fn incoming(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<SharePage>, ApiError> {
    page(state, user, q, true).await
}

#[utoipa::path(get, path = "/api/v1/contact-shares/outgoing", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = SharePage, description = "Shares you sent, every status"),
    (status = 400, description = "Bad cursor, limit or order, named")))]
pub async fn outgoing(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<SharePage>, ApiError> {
    page(state, user, q, false).await
}

#[utoipa::path(post, path = "/api/v1/contact-shares/{id}/accept", tag = "contacts", params(("id" = String, Path)), responses(
    (status = 200, description = "An import preview of the copy (`{session_id, rows, total_rows, valid_rows, duplicate_count, error_count}`), bound to the share; nothing is written until the confirm"),
    (status = 404, description = "No such share sent to you"), (status = 409, description = "Already accepted or declined"),
    (status = 429, description = "Too many import previews wait for a confirm")))]
pub async fn accept(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (sessions, scope) = (state.imports.clone(), state.engine.user(user.id));
    crate::api::import::preview_answer(&state, move |out| ops::accept(&sessions, &scope, &id, out)).await
}

#[utoipa::path(post, path = "/api/v1/contact-shares/{id}/confirm", tag = "contacts", params(("id" = String, Path)),
    request_body = ConfirmRequest, responses(
    (status = 200, body = ImportResult, description = "The import's result; the share is accepted"),
    (status = 400, description = "`session_id` is not a preview of this share, or a bad action"),
    (status = 404, description = "No such share sent to you"), (status = 409, description = "Already accepted or declined")))]
pub async fn confirm(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
    Json(req): Json<ConfirmRequest>,
) -> Result<axum::Json<ImportResult>, ApiError> {
    let decisions: Vec<Decision> =
        req.actions.into_iter().map(|a| Decision { row_index: a.row_index, action: a.action }).collect();
    let scope = state.engine.user(user.id);
    let batch = state.config.import.batch_rows;
    let result =
        ops::confirm(&state.engine, state.imports.clone(), scope, &id, req.session_id, &decisions, None, batch).await?;
    Ok(axum::Json(result))
}

#[utoipa::path(post, path = "/api/v1/contact-shares/{id}/decline", tag = "contacts", params(("id" = String, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such share sent to you"),
    (status = 409, description = "Already accepted or declined")))]
pub async fn decline(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::decline(&state.engine, &state.engine.user(user.id), &id).await?;
    Ok(axum::Json(Message::new("Share declined")))
}
