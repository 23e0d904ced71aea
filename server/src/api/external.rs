//! External identities and activities over HTTP (`/external-identities`,
//! `/external-activities`), each handler one call of `crm::external::ops`: a contact's links to
//! other systems, and what happened there.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::cursor::SyncInfo;
use crate::crm::external::ops::{self, ActivityInput, ActivityView, Filter, IdentityInput, IdentityView};
use crate::crm::external::{ExternalActivity, ExternalIdentity};
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this contact's (vCard UID or id).
    pub contact_id: Option<String>,
    /// Only this system's (an activity's `source_system`).
    pub system: Option<String>,
    pub cursor: Option<String>,
    /// Page size, default 25; above 100 is 100.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
    /// `desc` (default, most recently changed first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

impl ListQuery {
    fn filter(self) -> Result<Filter, ApiError> {
        Ok(Filter {
            limit: params::page_limit(self.limit.as_deref())?,
            ascending: params::ascending(self.order.as_deref())?,
            contact: self.contact_id,
            system: self.system,
            cursor: self.cursor,
        })
    }
}

/// `{external_identities, total, next_cursor, limit, sync}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityPage {
    pub external_identities: Vec<IdentityView>,
    pub total: u64,
    pub next_cursor: String,
    pub limit: usize,
    pub sync: SyncInfo,
}

/// `{external_activities, total, next_cursor, limit, sync}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityPage {
    pub external_activities: Vec<ActivityView>,
    pub total: u64,
    pub next_cursor: String,
    pub limit: usize,
    pub sync: SyncInfo,
}

/// `{message, external_identity}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityCreated {
    pub message: String,
    pub external_identity: IdentityView,
}

/// `{message, external_activity}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityCreated {
    pub message: String,
    pub external_activity: ActivityView,
}

async fn identity_view(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<ExternalIdentity>,
) -> Result<IdentityView, ApiError> {
    Ok(state.read(user, move |v| Ok(IdentityView::of(v, &row))).await?)
}

async fn activity_view(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<ExternalActivity>,
) -> Result<ActivityView, ApiError> {
    Ok(state.read(user, move |v| Ok(ActivityView::of(v, &row))).await?)
}

#[utoipa::path(get, path = "/api/v1/external-identities", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = IdentityPage), (status = 400, description = "Bad cursor, limit or order, named"),
    (status = 404, description = "No such contact")))]
pub async fn list_identities(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<IdentityPage>, ApiError> {
    let f = q.filter()?;
    let limit = f.limit;
    let body = state
        .read(&user, move |v| {
            let page = ops::identities(v, &f)?;
            Ok(IdentityPage {
                external_identities: page.rows.iter().map(|r| IdentityView::of(v, r)).collect(),
                total: page.total,
                next_cursor: page.next_cursor,
                limit,
                sync: page.sync,
            })
        })
        .await?;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/external-identities", tag = "contacts", request_body = IdentityInput, responses(
    (status = 201, body = IdentityCreated), (status = 400, description = "Invalid, field named (a URL must be http or https)"),
    (status = 404, description = "No such contact"), (status = 409, description = "This system's identifier is linked already (`ALREADY_EXISTS`, `external_id`)")))]
pub async fn create_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<IdentityInput>,
) -> Result<(StatusCode, axum::Json<IdentityCreated>), ApiError> {
    let row = ops::save_identity(&state.scope(&user), None, input).await?;
    let external_identity = identity_view(&state, &user, row).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(IdentityCreated { message: "External identity created".into(), external_identity }),
    ))
}

#[utoipa::path(get, path = "/api/v1/external-identities/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = IdentityView), (status = 404, description = "No such identity")))]
pub async fn get_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<IdentityView>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| Ok(IdentityView::of(v, &v.get::<ExternalIdentity>(id)?))).await?))
}

#[utoipa::path(put, path = "/api/v1/external-identities/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = IdentityInput,
    responses((status = 200, body = IdentityView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such identity or contact"), (status = 409, description = "This system's identifier is linked already")))]
pub async fn replace_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<IdentityInput>,
) -> Result<axum::Json<IdentityView>, ApiError> {
    let row = ops::save_identity(&state.scope(&user), Some(id), input).await?;
    Ok(axum::Json(identity_view(&state, &user, row).await?))
}

#[utoipa::path(delete, path = "/api/v1/external-identities/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such identity")))]
pub async fn delete_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::delete_identity(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("External identity deleted")))
}

#[utoipa::path(get, path = "/api/v1/external-activities", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = ActivityPage), (status = 400, description = "Bad cursor, limit or order, named"),
    (status = 404, description = "No such contact")))]
pub async fn list_activities(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<ActivityPage>, ApiError> {
    let f = q.filter()?;
    let limit = f.limit;
    let body = state
        .read(&user, move |v| {
            let page = ops::activities(v, &f)?;
            Ok(ActivityPage {
                external_activities: page.rows.iter().map(|r| ActivityView::of(v, r)).collect(),
                total: page.total,
                next_cursor: page.next_cursor,
                limit,
                sync: page.sync,
            })
        })
        .await?;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/external-activities", tag = "contacts", request_body = ActivityInput, responses(
    (status = 201, body = ActivityCreated), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such contact"), (status = 409, description = "This system's event is recorded already (`ALREADY_EXISTS`, `external_id`)")))]
pub async fn create_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ActivityInput>,
) -> Result<(StatusCode, axum::Json<ActivityCreated>), ApiError> {
    let row = ops::save_activity(&state.scope(&user), None, input).await?;
    let external_activity = activity_view(&state, &user, row).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(ActivityCreated { message: "External activity created".into(), external_activity }),
    ))
}

#[utoipa::path(get, path = "/api/v1/external-activities/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = ActivityView), (status = 404, description = "No such activity")))]
pub async fn get_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<ActivityView>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| Ok(ActivityView::of(v, &v.get::<ExternalActivity>(id)?))).await?))
}

#[utoipa::path(put, path = "/api/v1/external-activities/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = ActivityInput,
    responses((status = 200, body = ActivityView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such activity or contact"), (status = 409, description = "This system's event is recorded already")))]
pub async fn replace_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<ActivityInput>,
) -> Result<axum::Json<ActivityView>, ApiError> {
    let row = ops::save_activity(&state.scope(&user), Some(id), input).await?;
    Ok(axum::Json(activity_view(&state, &user, row).await?))
}

#[utoipa::path(delete, path = "/api/v1/external-activities/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such activity")))]
pub async fn delete_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::delete_activity(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("External activity deleted")))
}
