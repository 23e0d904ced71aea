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
use crate::crm::external::ops::{
    self, ExternalActivityInput, ExternalActivityView, ExternalIdentityInput, ExternalIdentityView, Filter,
};
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
pub struct ExternalIdentityPage {
    pub external_identities: Vec<ExternalIdentityView>,
    pub total: u64,
    pub next_cursor: String,
    pub limit: usize,
    pub sync: SyncInfo,
}

/// `{external_activities, total, next_cursor, limit, sync}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExternalActivityPage {
    pub external_activities: Vec<ExternalActivityView>,
    pub total: u64,
    pub next_cursor: String,
    pub limit: usize,
    pub sync: SyncInfo,
}

/// `{message, external_identity}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExternalIdentityCreated {
    pub message: String,
    pub external_identity: ExternalIdentityView,
}

/// `{message, external_activity}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExternalActivityCreated {
    pub message: String,
    pub external_activity: ExternalActivityView,
}

async fn identity_view(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<ExternalIdentity>,
) -> Result<ExternalIdentityView, ApiError> {
    Ok(state.read(user, move |v| Ok(ExternalIdentityView::of(v, &row))).await?)
}

async fn activity_view(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<ExternalActivity>,
) -> Result<ExternalActivityView, ApiError> {
    Ok(state.read(user, move |v| Ok(ExternalActivityView::of(v, &row))).await?)
}

#[utoipa::path(get, path = "/api/v1/external-identities", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = ExternalIdentityPage), (status = 400, description = "Bad cursor, limit or order, named"),
    (status = 404, description = "No such contact")))]
pub async fn list_identities(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<ExternalIdentityPage>, ApiError> {
    let f = q.filter()?;
    let limit = f.limit;
    let body = state
        .read(&user, move |v| {
            let page = ops::identities(v, &f)?;
            Ok(ExternalIdentityPage {
                external_identities: page.rows.iter().map(|r| ExternalIdentityView::of(v, r)).collect(),
                total: page.total,
                next_cursor: page.next_cursor,
                limit,
                sync: page.sync,
            })
        })
        .await?;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/external-identities", tag = "contacts", request_body = ExternalIdentityInput, responses(
    (status = 201, body = ExternalIdentityCreated), (status = 400, description = "Invalid, field named (a URL must be http or https)"),
    (status = 404, description = "No such contact"), (status = 409, description = "This system's identifier is linked already (`ALREADY_EXISTS`, `external_id`)")))]
pub async fn create_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ExternalIdentityInput>,
) -> Result<(StatusCode, axum::Json<ExternalIdentityCreated>), ApiError> {
    let row = ops::save_identity(&state.scope(&user), None, input).await?;
    let external_identity = identity_view(&state, &user, row).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(ExternalIdentityCreated { message: "External identity created".into(), external_identity }),
    ))
}

#[utoipa::path(get, path = "/api/v1/external-identities/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = ExternalIdentityView), (status = 404, description = "No such identity")))]
pub async fn get_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<ExternalIdentityView>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| Ok(ExternalIdentityView::of(v, &v.get::<ExternalIdentity>(id)?))).await?))
}

#[utoipa::path(put, path = "/api/v1/external-identities/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = ExternalIdentityInput,
    responses((status = 200, body = ExternalIdentityView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such identity or contact"), (status = 409, description = "This system's identifier is linked already")))]
pub async fn replace_identity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<ExternalIdentityInput>,
) -> Result<axum::Json<ExternalIdentityView>, ApiError> {
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
    (status = 200, body = ExternalActivityPage), (status = 400, description = "Bad cursor, limit or order, named"),
    (status = 404, description = "No such contact")))]
pub async fn list_activities(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<ExternalActivityPage>, ApiError> {
    let f = q.filter()?;
    let limit = f.limit;
    let body = state
        .read(&user, move |v| {
            let page = ops::activities(v, &f)?;
            Ok(ExternalActivityPage {
                external_activities: page.rows.iter().map(|r| ExternalActivityView::of(v, r)).collect(),
                total: page.total,
                next_cursor: page.next_cursor,
                limit,
                sync: page.sync,
            })
        })
        .await?;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/external-activities", tag = "contacts", request_body = ExternalActivityInput, responses(
    (status = 201, body = ExternalActivityCreated), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such contact"), (status = 409, description = "This system's event is recorded already (`ALREADY_EXISTS`, `external_id`)")))]
pub async fn create_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ExternalActivityInput>,
) -> Result<(StatusCode, axum::Json<ExternalActivityCreated>), ApiError> {
    let row = ops::save_activity(&state.scope(&user), None, input).await?;
    let external_activity = activity_view(&state, &user, row).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(ExternalActivityCreated { message: "External activity created".into(), external_activity }),
    ))
}

#[utoipa::path(get, path = "/api/v1/external-activities/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = ExternalActivityView), (status = 404, description = "No such activity")))]
pub async fn get_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<ExternalActivityView>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| Ok(ExternalActivityView::of(v, &v.get::<ExternalActivity>(id)?))).await?))
}

#[utoipa::path(put, path = "/api/v1/external-activities/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = ExternalActivityInput,
    responses((status = 200, body = ExternalActivityView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such activity or contact"), (status = 409, description = "This system's event is recorded already")))]
pub async fn replace_activity(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<ExternalActivityInput>,
) -> Result<axum::Json<ExternalActivityView>, ApiError> {
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
