//! Admin user management (admin session only; API tokens refused): list, create (when
//! registration is closed), get, patch (admin flag, password reset), delete, reset two-factor;
//! the maintenance triggers and the diagnostics checklist.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::accounts::{self, NewAccount};
use crate::auth::view::{CurrentUser, UserPage};
use crate::crm::Message;
use crate::diagnostics::Diagnostics;
use crate::error::ApiError;
use crate::http::caller::AdminUser;
use crate::http::json::Json;
use crate::maintenance::{DerivedRebuilt, SearchRebuilt};
use crate::state::AppState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1-based page (default 1).
    pub page: Option<usize>,
    /// Page size, default 25, at most 100.
    pub limit: Option<usize>,
}

#[utoipa::path(get, path = "/api/v1/admin/users", tag = "admin", params(PageQuery), responses((status = 200, body = UserPage), (status = 403, description = "Not an admin session")))]
pub async fn list_users(
    State(state): State<AppState>,
    _admin: AdminUser,
    Query(q): Query<PageQuery>,
) -> Result<axum::Json<UserPage>, ApiError> {
    let page = q.page.unwrap_or(1).max(1);
    let limit = q.limit.unwrap_or(25).clamp(1, 100);
    let (users, total) = accounts::page(&state.engine, page, limit).await?;
    let users: Vec<CurrentUser> = users.iter().map(|(id, a)| CurrentUser::from(*id, a)).collect();
    Ok(axum::Json(UserPage { users, total, page, limit }))
}

#[derive(Deserialize, ToSchema)]
pub struct NewUserBody {
    pub username: String,
    pub email: String,
    pub password: String,
    #[serde(default)]
    pub is_admin: bool,
}

/// Creates an account (the way in when `DISABLE_REGISTRATION` is on).
#[utoipa::path(post, path = "/api/v1/admin/users", tag = "admin", request_body = NewUserBody, responses((status = 201, body = CurrentUser), (status = 409, description = "Taken")))]
pub async fn create_user(
    State(state): State<AppState>,
    _admin: AdminUser,
    Json(body): Json<NewUserBody>,
) -> Result<Response, ApiError> {
    let new = NewAccount {
        username: body.username,
        email: body.email,
        password: Some(body.password),
        language: None,
        oidc: None,
        is_admin: body.is_admin,
    };
    let (id, account) = accounts::create(&state.auth, &state.engine, new).await?;
    Ok((StatusCode::CREATED, axum::Json(CurrentUser::from(id, &account))).into_response())
}

#[utoipa::path(get, path = "/api/v1/admin/users/{id}", tag = "admin", params(("id" = u64, Path)), responses((status = 200, body = CurrentUser), (status = 404, description = "No such user")))]
pub async fn get_user(
    State(state): State<AppState>,
    _admin: AdminUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<CurrentUser>, ApiError> {
    let account = accounts::get(&state.engine, id).await?;
    Ok(axum::Json(CurrentUser::from(id, &account)))
}

#[derive(Deserialize, ToSchema)]
pub struct PatchUserBody {
    pub is_admin: Option<bool>,
    /// Resets the password: every session and API token of the user ends.
    pub password: Option<String>,
}

#[utoipa::path(patch, path = "/api/v1/admin/users/{id}", tag = "admin", params(("id" = u64, Path)), request_body = PatchUserBody, responses(
    (status = 200, body = CurrentUser), (status = 404, description = "No such user"), (status = 409, description = "Would remove the last admin")))]
pub async fn patch_user(
    State(state): State<AppState>,
    _admin: AdminUser,
    Path(id): Path<u64>,
    Json(body): Json<PatchUserBody>,
) -> Result<axum::Json<CurrentUser>, ApiError> {
    let mut account = accounts::get(&state.engine, id).await?;
    if let Some(password) = body.password {
        account = accounts::reset_password(&state.auth, &state.engine, id, password).await?;
    }
    if let Some(is_admin) = body.is_admin {
        account = accounts::set_admin(&state.engine, id, is_admin).await?;
    }
    Ok(axum::Json(CurrentUser::from(id, &account)))
}

#[utoipa::path(delete, path = "/api/v1/admin/users/{id}", tag = "admin", params(("id" = u64, Path)), responses(
    (status = 200, body = Message, description = "Deleted with all data"), (status = 404, description = "No such user"), (status = 409, description = "The last admin")))]
pub async fn delete_user(
    State(state): State<AppState>,
    _admin: AdminUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    crate::account_removal::delete(&state.auth, &state.engine, id).await?;
    tracing::info!(event = "account_deleted", component = "auth", user_id = id);
    Ok(axum::Json(Message::new("User deleted")))
}

#[utoipa::path(post, path = "/api/v1/admin/users/{id}/reset-2fa", tag = "admin", params(("id" = u64, Path)), responses((status = 200, body = Message, description = "Two-factor cleared"), (status = 404, description = "No such user")))]
pub async fn reset_2fa(
    State(state): State<AppState>,
    _admin: AdminUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    accounts::reset_second_factor(&state.engine, id).await?;
    Ok(axum::Json(Message::new("Two-factor authentication reset; the user can enrol again")))
}

/// Recomputes every contact's derived columns from its card (the save hook), writing only the
/// rows whose projection changed; running it twice changes nothing the second time.
#[utoipa::path(post, path = "/api/v1/admin/contacts/rebuild-derived", tag = "admin", responses((status = 200, body = DerivedRebuilt)))]
pub async fn rebuild_derived(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<DerivedRebuilt>, ApiError> {
    let (scanned, updated) = crate::maintenance::rebuild_derived(&state.engine).await?;
    Ok(axum::Json(DerivedRebuilt::of(scanned, updated)))
}

/// Rebuilds the full-text index from the database, aside from the live one, and swaps it in:
/// searches see the old index until then, writes made meanwhile are carried over, and a failure
/// leaves the old index serving. Synchronous. Recorded as job run `search_index_rebuild`.
#[utoipa::path(post, path = "/api/v1/admin/search/rebuild", tag = "admin", responses(
    (status = 200, body = SearchRebuilt, description = "`{message, indexed: {contacts, notes, activities}}` (live rows, all users)"),
    (status = 409, description = "A rebuild is already in progress"), (status = 500, description = "The rebuild failed; the previous index is untouched")))]
pub async fn rebuild_search(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<SearchRebuilt>, ApiError> {
    let report = crate::jobs::search_rebuild_now(&state).await?;
    Ok(axum::Json(SearchRebuilt::of(&report)))
}

/// Runs the retention purge now (tombstones, audit events, expired credentials, system events,
/// job runs and finished outbox rows past their windows), recorded as a `manual` job run.
#[utoipa::path(post, path = "/api/v1/admin/trigger-purge", tag = "admin", responses((status = 200, body = Message, description = "`{message}`: the purge ran (its outcome is the job run `retention_purge`)")))]
pub async fn trigger_purge(State(state): State<AppState>, _admin: AdminUser) -> Result<axum::Json<Message>, ApiError> {
    let run = crate::jobs::run(&state, crate::jobs::PURGE, mycorrhizal_engine::system::Trigger::Manual).await?;
    let message = match run.result {
        mycorrhizal_engine::system::JobResult::Success => {
            format!("Purge completed: {} rows removed", run.items_processed.unwrap_or(0))
        }
        _ => format!("Purge ran and failed: {}", run.error.unwrap_or_default()),
    };
    Ok(axum::Json(Message { message }))
}

/// Runs the daily digest now for today in `REMINDER_TIMEZONE` (job run `daily_digest`, trigger
/// `manual`): each user with something due today whose digest for today has not gone out gets it
/// (queued on the outbox); a user already sent today's digest gets nothing new.
#[utoipa::path(post, path = "/api/v1/admin/trigger-reminders", tag = "admin", responses(
    (status = 200, body = Message, description = "`{message}`: the digest ran (how many digests it queued)"),
    (status = 401, description = "Not signed in"),
    (status = 403, description = "Not an admin session"),
    (status = 500, description = "The run failed (its job run says why)")))]
pub async fn trigger_reminders(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<Message>, ApiError> {
    let run = crate::jobs::run(&state, crate::jobs::DIGEST, mycorrhizal_engine::system::Trigger::Manual).await?;
    match run.result {
        mycorrhizal_engine::system::JobResult::Failure => {
            Err(ApiError::internal(run.error.unwrap_or_else(|| "the digest run failed".into())))
        }
        _ => {
            let queued = run.items_processed.unwrap_or(0);
            let noun = if queued == 1 { "digest" } else { "digests" };
            Ok(axum::Json(Message { message: format!("Reminders sent: {queued} {noun} queued") }))
        }
    }
}

/// The one-pass diagnostics checklist: database, migrations, filesystem, disk space, version and
/// one `notification_<channel>` per channel in use. Always 200 for an admin; configuration
/// values are never echoed.
#[utoipa::path(get, path = "/api/v1/admin/diagnostics", tag = "admin", responses(
    (status = 200, body = Diagnostics, description = "The checklist with its summary (the worst status, and how many checks are ok, warnings and errors)"),
    (status = 401, description = "Not signed in"),
    (status = 403, description = "Not an admin session")))]
pub async fn diagnostics(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<Diagnostics>, ApiError> {
    Ok(axum::Json(crate::diagnostics::sweep(&state, crate::jobs::activity(&state.config)).await?))
}
